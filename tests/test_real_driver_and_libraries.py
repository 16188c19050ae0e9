"""Real driver-535 user space without a kernel module, cuda-python 13, NVRTC, and real pip wheels
(.ci/fetch-real-wheels) reproducing broken installs on this CPU machine."""
from __future__ import annotations

import os
import sys

import pytest

from gpudoctor.findings import Severity
from gpudoctor.probes import cuda, cudnn, driver, environment, frameworks, smoke_nvrtc, tensorrt
from tests.conftest import CACHE, by_id, ctx, judge, need


@pytest.fixture(scope="module")
def broken_host():
    """Driver 535 user space installed, kernel module absent, cuda-python 13 in this venv: probe it all."""
    import glob

    need(bool(glob.glob("/usr/lib/x86_64-linux-gnu/nvidia/current/libnvidia-ml.so.535*")), "libnvidia-ml1 (driver 535)")
    need(bool(glob.glob("/usr/lib/x86_64-linux-gnu/nvidia/current/libcuda.so.535*")), "libcuda1 (driver 535)")
    if os.path.exists("/proc/driver/nvidia/version"):
        pytest.skip("a real NVIDIA kernel module is loaded here")
    c = ctx()
    return {"driver": driver.probe(c), "cuda": cuda.probe(c), "smoke_nvrtc": smoke_nvrtc.probe(c),
            "environment": environment.probe(c)}


def test_nvml_driver_not_loaded(broken_host):
    nvml = broken_host["driver"]["nvml"]
    assert nvml["status"] == "error" and nvml["reason"] == "driver_not_loaded"
    assert broken_host["driver"]["user_space_version"].startswith("535.")
    (f,) = by_id(judge(broken_host), "driver.not_loaded")
    assert f.severity == Severity.FAIL
    assert "535." in f.title
    assert f.fixes and all(fx.summary for fx in f.fixes)


def test_cuinit_reports_no_device(broken_host):
    api = broken_host["cuda"]["api"]
    assert api["cuInit"]["result"] == "CUDA_ERROR_NO_DEVICE"
    assert api["cuDriverGetVersion"]["value"] == 12020  # libcuda 535 = CUDA 12.2
    assert broken_host["cuda"]["driver_cuda_version"] == "12.2"


def test_driver_535_too_old_for_cuda_13_runtime(broken_host):
    assert broken_host["cuda"]["runtime_version"].startswith("13.")
    assert broken_host["cuda"]["api"]["cudaGetDeviceCount"]["result"] == "cudaErrorInsufficientDriver"
    (f,) = by_id(judge(broken_host), "driver.too_old")
    assert f.severity == Severity.FAIL
    assert f.evidence["cudaGetDeviceCount"] == "cudaErrorInsufficientDriver"
    assert any("580" in r for r in f.evidence["requirement"])  # CUDA 13.x minor-version floor
    assert "12.2" in f.fixes[-1].summary  # or stay on the driver with CUDA ≤ 12.2 components


def test_nvrtc_compiles_a_cubin_without_a_gpu(broken_host):
    s = broken_host["smoke_nvrtc"]
    need("nvrtc_error" not in s, "nvidia-cuda-nvrtc wheel")
    (run,) = s["runs"]
    assert run["compile_result"] == "NVRTC_SUCCESS", run["log"]
    assert run["cubin_bytes"] > 1000
    assert run["arch"] == s["nvrtc_supported_archs"][0]
    assert "no CUDA device" in run["launch"]["skipped"]
    f = by_id(judge(broken_host), "smoke.nvrtc")
    assert f and f[0].severity == Severity.INFO and "launch skipped" in f[0].title


def test_nvrtc_missing_is_library_not_found():
    """cuda-bindings alone (no nvidia-cuda-nvrtc wheel) under a Python that has no other CUDA wheels."""
    site = os.path.join(CACHE, "bindings-only", "site-packages")
    need(os.path.isdir(site), ".ci/cache/bindings-only")
    python = "/usr/bin/python3"
    need(os.path.isfile(python), "/usr/bin/python3")
    c = ctx(PYTHONPATH=site)
    c.python = python
    s = smoke_nvrtc.probe(c)
    assert "nvrtc_error" in s and "libnvrtc" in s["nvrtc_error"]
    f = [x for x in by_id(judge({"smoke_nvrtc": s}), "library.not_found") if "NVRTC" in x.title]
    assert f and "nvidia-cuda-nvrtc" in " ".join(f[0].fixes[0].commands)


def test_cudnn_for_cuda12_beside_cuda13_runtime(broken_host, monkeypatch):
    """The real nvidia-cudnn-cu12 wheel (its dispatcher library, header and dist-info) beside cuda-python 13."""
    site = os.path.join(CACHE, "cudnn-cu12", "site-packages")
    need(os.path.isdir(site), ".ci/cache/cudnn-cu12")
    monkeypatch.syspath_prepend(site)
    facts = cudnn.probe(ctx())
    lib = next(l for l in facts["libraries"] if l.get("package") == "nvidia-cudnn-cu12")
    assert lib["built_for_cuda_major"] == 12
    assert lib["version"].startswith("9.")
    assert any(h["path"].startswith(site) and h["version"].startswith("9.") for h in facts["headers"])
    findings = judge(dict(broken_host, cudnn=facts))
    mism = by_id(findings, "cudnn.mismatch")
    assert mism and "CUDA 12" in mism[0].title and "13" in mism[0].title
    assert "python -m pip install nvidia-cudnn-cu13" in mism[0].fixes[0].commands
    # Without its sub-libraries the real dispatcher aborts the process that asks it: isolated, reported.
    assert "SIGABRT" in lib["api"]["load_error"]
    assert by_id(findings, "cudnn.broken", Severity.FAIL)


def test_tensorrt_bindings_without_libraries(monkeypatch):
    site = os.path.join(CACHE, "trt-bindings", "site-packages")
    need(os.path.isdir(site), ".ci/cache/trt-bindings")
    monkeypatch.syspath_prepend(site)
    facts = tensorrt.probe(ctx(PYTHONPATH=site))
    mod = next(m for m in facts["modules"] if m["name"] == "tensorrt_bindings")
    assert mod["import_ok"] is False
    assert "cannot open shared object file" in mod["import_error"]
    assert any(d.startswith("tensorrt-cu13-bindings") for d in facts["distributions"])
    (f,) = by_id(judge({"tensorrt": facts}), "tensorrt.libs_missing")
    assert f.severity == Severity.FAIL
    assert f"tensorrt-cu13-libs=={mod['version']}" in f.fixes[0].commands[0]


def test_torch_cpu_build_beside_an_nvidia_driver(broken_host, monkeypatch):
    site = os.path.join(CACHE, "torch-cpu", "site-packages")
    need(os.path.isfile(os.path.join(site, "torch", "version.py")), ".ci/cache/torch-cpu")
    monkeypatch.syspath_prepend(site)
    fw = frameworks.probe(ctx())
    assert fw["torch"]["version"].startswith("2.") and fw["torch"]["cuda"] is None
    assert "torch" not in sys.modules  # read statically, never imported
    (f,) = by_id(judge(dict(broken_host, frameworks=fw)), "framework.cpu_build")
    assert f.severity == Severity.WARN  # a driver but no visible GPU
    assert "download.pytorch.org/whl/cu129" in f.fixes[0].commands[-1]  # newest cu12 wheel for driver CUDA 12.2


_NVRTC_SPLIT = r"""
import json, os, sys
from gpudoctor.process import nvrtc_build, worker
mode = sys.argv[1]
if mode == "crash":  # the compiler process dies while loading NVRTC (what a broken libnvrtc does)
    nvrtc_build._nvrtc_info = lambda res: os.abort()
elif mode == "bad-source":
    nvrtc_build.KERNELS = "this is not CUDA %(fp16_include)s %(hadd2_body)s"
res = worker._nvrtc_smoke_in_process(False) if mode == "in-process" else worker.task_nvrtc_smoke(["--no-cache"])
with open("/proc/self/maps") as fh:
    res["nvrtc_mapped_here"] = "libnvrtc" in fh.read()
print(json.dumps(res))
"""


def _split_run(mode):
    import json
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _NVRTC_SPLIT, mode], capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_nvrtc_compiles_in_a_process_of_its_own():
    """Real NVRTC: the worker that creates the CUDA context never maps libnvrtc (the compiler is a forked
    child), and a compiler that dies or fails to compile is reported, not hung on."""
    ok = _split_run("ok")
    need("nvrtc_error" not in ok, "nvidia-cuda-nvrtc wheel")
    assert ok["runs"][0]["compile_result"] == "NVRTC_SUCCESS" and ok["runs"][0]["cubin_bytes"] > 1000
    assert ok["nvrtc_version"] and ok["nvrtc_mapped_here"] is False
    crashed = _split_run("crash")
    assert crashed["nvrtc_error"] == "killed by SIGABRT" and crashed["nvrtc_crashed"] and "runs" not in crashed
    (f,) = [x for x in judge({"smoke_nvrtc": crashed}) if "NVRTC" in x.title and x.severity != Severity.OK]
    assert f.id == "library.load_failed" and f.severity == Severity.FAIL and "killed by SIGABRT" in f.title
    bad = _split_run("bad-source")
    (run,) = bad["runs"]
    assert run["compile_result"] == "NVRTC_ERROR_COMPILATION" and "error" in run["log"] and run["cubin_bytes"] == 0
    assert run["launch"] == {"skipped": "compile failed"}
    here = _split_run("in-process")  # where fork is not available: NVRTC in the worker itself
    assert here["runs"][0]["compile_result"] == "NVRTC_SUCCESS" and here["nvrtc_mapped_here"] is True
    assert {k: v for k, v in here.items() if k not in ("runs", "nvrtc_mapped_here")} == \
        {k: v for k, v in ok.items() if k not in ("runs", "nvrtc_mapped_here")}
