"""Real failures made on the GPU machine, diagnosed by `gpudoctor explain` (run on the lent H100).

Each case runs a command that really fails there (a hidden GPU, a stub libcuda, an out-of-memory,
a device-side assert, an illegal address, a PTX ISA the driver does not know, an arch nvcc does
not know, ...), captures what the tools themselves print (PyTorch, CuPy, JAX, cuda-python, nvcc,
NVRTC, the loader), prefixes the command line as a user would paste it, and asks `explain` for its
diagnosis. None of these outputs was seen when the KB was written: it is a live held-out test.
Writes $OUT/explain-live/<case>.log, cases.json (for tests/data/explain-h100/) and summary.txt.

Usage (on the GPU machine, from the repository root):  python3 benchmarks/device_explain_live.py
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpudoctor.explain.diagnose import confidence_label, diagnose  # noqa: E402
from gpudoctor.explain.kb import load_kb  # noqa: E402
from gpudoctor.explain.scan import Scanner  # noqa: E402

TMP = Path(tempfile.mkdtemp())
PY = sys.executable

ILLEGAL = r'''
#include <cstdio>
__global__ void k(int *p) { p[threadIdx.x + (1 << 30)] = 1; }
int main() { int *d; cudaMalloc(&d, 64); k<<<1, 32>>>(d); cudaError_t e = cudaDeviceSynchronize();
  printf("CUDA error: %s (%s)\n", cudaGetErrorString(e), cudaGetErrorName(e)); return e != cudaSuccess; }
'''
KERNEL = r'''
#include <cstdio>
__global__ void k(float *x) { x[threadIdx.x] = 1.0f; }
int main() { float *d; cudaMalloc(&d, 512); k<<<1, 128>>>(d); cudaError_t e = cudaDeviceSynchronize();
  if (e == cudaSuccess) e = cudaGetLastError();
  if (e != cudaSuccess) { fprintf(stderr, "CUDA error: %s\n", cudaGetErrorString(e)); return 1; } return 0; }
'''
PTX_TOO_NEW = r'''
from cuda.bindings import driver as d
print(d.cuInit(0))
err, dev = d.cuDeviceGet(0)
err, ctx = d.cuDevicePrimaryCtxRetain(dev)
print(d.cuCtxSetCurrent(ctx))
ptx = b".version 99.0\n.target sm_90\n.address_size 64\n.visible .entry k() { ret; }\n\0"
print("cuModuleLoadData:", d.cuModuleLoadData(ptx))
'''
NVRTC_ARCH = r'''
from cuda.bindings import nvrtc
err, prog = nvrtc.nvrtcCreateProgram(b"__global__ void k(){}", b"k.cu", 0, [], [])
res = nvrtc.nvrtcCompileProgram(prog, 1, [b"--gpu-architecture=compute_999"])
print("nvrtcCompileProgram:", res)
err, size = nvrtc.nvrtcGetProgramLogSize(prog)
log = b" " * size
nvrtc.nvrtcGetProgramLog(prog, log)
print(log.decode(errors="replace"))
'''

# a CUDA library copied incompletely (an interrupted download, a 0-byte placeholder a container mounted):
# glibc's own "file too short" for the real cuDNN's first bytes
TRUNCATED = r'''
import ctypes, glob, os, sys
import nvidia  # the CUDA wheels' namespace: cuDNN where installed, else the CUDA runtime
found = [p for d in nvidia.__path__ for pat in ("cudnn/lib/libcudnn.so*", "*/lib/libcudart.so*")
         for p in sorted(glob.glob(os.path.join(d, pat)))]
lib = found[0]
dst = os.path.join(sys.argv[1], os.path.basename(lib))
with open(lib, "rb") as src, open(dst, "wb") as out:
    out.write(src.read(40))
ctypes.CDLL(dst)
'''


def _cases():
    (TMP / "illegal.cu").write_text(ILLEGAL)
    (TMP / "k.cu").write_text(KERNEL)
    (TMP / "ptx.py").write_text(PTX_TOO_NEW)
    (TMP / "nvrtc.py").write_text(NVRTC_ARCH)
    (TMP / "truncated.py").write_text(TRUNCATED)
    stubdir = TMP / "stubs"
    stubdir.mkdir()
    for stub in ("/usr/local/cuda/targets/x86_64-linux/lib/stubs/libcuda.so", "/usr/local/cuda/lib64/stubs/libcuda.so"):
        if os.path.exists(stub):
            os.symlink(stub, stubdir / "libcuda.so.1")
            break
    t = "import torch; torch.zeros(1, device='cuda')"
    return [
        ("torch-hidden", "device.not_visible", f'CUDA_VISIBLE_DEVICES="" {PY} -c "{t}"'),
        ("torch-out-of-range", "device.not_visible", f'CUDA_VISIBLE_DEVICES=7 {PY} -c "{t}"'),
        ("cupy-hidden", "device.not_visible", f'CUDA_VISIBLE_DEVICES=-1 {PY} -c "import cupy; cupy.zeros(1)"'),
        ("jax-hidden", "device.not_visible", f'CUDA_VISIBLE_DEVICES="" {PY} -c "import jax; print(jax.devices(\'gpu\'))"'),
        ("torch-stub", "driver.stub_library", f'LD_LIBRARY_PATH={stubdir} {PY} -c "{t}"'),
        ("cupy-stub", "driver.stub_library", f'LD_LIBRARY_PATH={stubdir} {PY} -c "import cupy; cupy.zeros(1)"'),
        ("torch-oom", "cuda.out_of_memory", f'{PY} -c "import torch; torch.empty(2**40, dtype=torch.uint8, device=\'cuda\')"'),
        ("jax-oom", "cuda.out_of_memory",
         f'XLA_PYTHON_CLIENT_PREALLOCATE=false {PY} -c "import jax.numpy as j; j.zeros((2**39,), dtype=j.uint8).block_until_ready()"'),
        ("cupy-oom", "cuda.out_of_memory", f'{PY} -c "import cupy; cupy.empty(2**40, dtype=cupy.uint8)"'),
        ("torch-device-assert", "none",
         f'{PY} -c "import torch; e=torch.nn.Embedding(10,4).cuda(); e(torch.tensor([11]).cuda()); torch.cuda.synchronize()"'),
        ("illegal-address", "none", f"nvcc -o {TMP}/illegal {TMP}/illegal.cu && {TMP}/illegal"),
        ("no-kernel-image", "arch.binary_missing", f"nvcc -gencode arch=compute_80,code=sm_80 -o {TMP}/sm80 {TMP}/k.cu && {TMP}/sm80"),
        ("nvcc-unknown-arch", "arch.toolkit_unsupported", f"nvcc -arch=sm_30 -o {TMP}/x {TMP}/k.cu"),
        ("nvrtc-unknown-arch", "arch.toolkit_unsupported", f"{PY} {TMP}/nvrtc.py"),
        ("ptx-too-new", "driver.ptx_too_new", f"{PY} {TMP}/ptx.py"),
        ("missing-cublas11", "library.not_found", f"{PY} -c \"import ctypes; ctypes.CDLL('libcublasLt.so.11')\""),
        ("truncated-cudnn", "library.not_found", f"{PY} {TMP}/truncated.py {TMP}"),
        ("script-runs-nvidia-smi", "driver.missing",
         f"env PATH=/nonexistent {PY} -c \"import subprocess; subprocess.run(['nvidia-smi', '-L'])\""),
        ("shell-nvidia-smi", "driver.missing", "env PATH=/nonexistent /bin/bash -c 'nvidia-smi -L'"),
        # the versions people paste beside an error (gpudoctor/explain/facts.py): true facts of a healthy machine
        # must not become a diagnosis, nor displace the real cause
        ("stated-versions-healthy", "none",
         f"nvidia-smi; nvcc --version; gcc --version; {PY} -c \"import torch; print('torch', torch.__version__)\"; "
         f"{PY} -c \"import torch; e=torch.nn.Embedding(10,4).cuda(); e(torch.tensor([11]).cuda()); torch.cuda.synchronize()\""),
        ("stated-versions-hidden", "device.not_visible",
         f"nvidia-smi; {PY} -c \"import torch; print('torch', torch.__version__)\"; CUDA_VISIBLE_DEVICES=\"\" {PY} -c \"{t}\""),
        ("cuda-home-list", "env.cuda_home",
         f"CUDA_HOME=/usr/local/cuda:/opt/cuda {PY} -c \"from torch.utils.cpp_extension import load_inline; "
         f"load_inline('x', '', cuda_sources='__global__ void k(){{}}', functions=[], build_directory='{TMP}')\""),
    ]


def main() -> int:
    out = Path(os.environ.get("OUT", "/tmp/out")) / "explain-live"
    out.mkdir(parents=True, exist_ok=True)
    kb = load_kb()
    rows, cases, hits = [], [], 0
    for name, expected, cmd in _cases():
        try:
            p = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=240)
            text, rc = (p.stdout + p.stderr)[-20000:], p.returncode
        except subprocess.TimeoutExpired as exc:
            text, rc = f"(timed out) {exc}", -1
        log = f"$ {cmd}\n{text}"
        (out / f"{name}.log").write_text(log)
        sc = Scanner(kb)
        sc.feed(log.encode())
        sc.close()
        ranked = diagnose(sc)
        got = [(d.finding.id, round(d.score, 2)) for d in ranked[:3]]
        if expected == "none":
            ok = not any(d.score >= 0.75 and d.finding.id != "program.error" for d in ranked)
        else:
            ok = bool(ranked) and ranked[0].finding.id == expected
        hits += ok
        conf = confidence_label(ranked[0].score) if ranked else "-"
        rows.append(f"{'OK  ' if ok else 'MISS'} {name:24} rc={rc:<4} expected {expected:26} got {got} ({conf})")
        cases.append({"name": name, "expected": expected, "command": cmd, "exit": rc, "log": log})
    summary = "\n".join(rows) + f"\n\nlive cases: top-1 {hits}/{len(rows)}\n"
    (out / "summary.txt").write_text(summary)
    (out / "cases.json").write_text(json.dumps(cases, indent=1))
    print(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
