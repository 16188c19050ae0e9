"""Where a CUDA process's resident memory goes, step by step (issue 12's 120 MiB per process): Python,
cuda-bindings, cuInit, primary context, module load, launch; and NVRTC's share. Prints one line per step
with VmRSS/VmHWM (MiB). Usage (GPU machine): python benchmarks/device_rss_probe.py [nvrtc]"""
from __future__ import annotations

import os
import sys
import time


def rss() -> str:
    vals = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(("VmRSS", "VmHWM", "RssAnon", "RssFile")):
                k, v = line.split(":")
                vals[k] = int(v.split()[0]) / 1024
    return "  ".join(f"{k} {v:6.1f}" for k, v in vals.items())


T0 = time.perf_counter()


def step(what: str) -> None:
    print(f"{time.perf_counter() - T0:7.3f} s  {what:28} {rss()}", flush=True)


step("python")
from cuda.bindings import driver as d  # noqa: E402

step("import cuda.bindings.driver")
d.cuInit(0)
step("cuInit")
_, dev = d.cuDeviceGet(0)
_, ctx = d.cuDevicePrimaryCtxRetain(dev)
d.cuCtxSetCurrent(ctx)
step("primary context current")
_, ptr = d.cuMemAlloc(1 << 20)
step("cuMemAlloc 1 MiB")
if "nvrtc" in sys.argv:
    from cuda.bindings import nvrtc

    nvrtc.nvrtcVersion()
    step("NVRTC loaded")
    src = b'extern "C" __global__ void k(float* x){ x[threadIdx.x] += 1.0f; }'
    _, prog = nvrtc.nvrtcCreateProgram(src, b"k.cu", 0, [], [])
    _, ma = d.cuDeviceGetAttribute(d.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)
    _, mi = d.cuDeviceGetAttribute(d.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)
    nvrtc.nvrtcCompileProgram(prog, 1, [f"--gpu-architecture=sm_{ma}{mi}".encode()])
    _, n = nvrtc.nvrtcGetCUBINSize(prog)
    buf = b" " * n
    nvrtc.nvrtcGetCUBIN(prog, buf)
    step("NVRTC compiled")
    _, mod = d.cuModuleLoadData(buf)
    step("cuModuleLoadData")
print("env:", {k: v for k, v in os.environ.items() if k.startswith("CUDA_")})
