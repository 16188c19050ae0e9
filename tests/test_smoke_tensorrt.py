"""smoke.tensorrt: TensorRT builds, serializes, deserializes and runs a tiny engine (child process).

Real states first: the real bindings-only TensorRT 11.4 wheel (.ci/fetch-real-wheels) whose import
fails on libnvonnxparser/libnvinfer, and no TensorRT at all. The build/run path needs TensorRT and a
GPU, neither of which exists here: it runs against a FAKE ``tensorrt`` module
(tests/fakes/fake_tensorrt, both API generations) and a FAKE host-memory helper, through the real
worker child process."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time

import pytest

from gpudoctor.findings import Severity
from gpudoctor.probes import smoke_tensorrt
from gpudoctor.probes._worker import run_worker
from gpudoctor.rules import Facts, smoke
from tests.conftest import CACHE, ROOT, ctx, need

FAKE = os.path.join(ROOT, "tests", "fakes", "fake_tensorrt")
FAKE_MEMORY = ("--device-memory", "fake_device_memory:HostMemory")


def findings(s):
    """smoke.tensorrt findings for the facts ``s`` of the smoke_tensorrt probe."""
    out = smoke.tensorrt_smoke(Facts({"smoke_tensorrt": s}), None)
    assert all(f.id == "smoke.tensorrt" for f in out)
    return out


def fake_run(version, fault="", extra=FAKE_MEMORY):
    """The real worker child (``python -m gpudoctor.process.worker trt-smoke``) importing the FAKE TensorRT."""
    c = ctx(PYTHONPATH=FAKE, FAKE_TENSORRT_VERSION=version, FAKE_TENSORRT_FAULT=fault or None)
    return run_worker(c, "trt-smoke", "tensorrt", *extra, timeout=60)


def no_traceback(s, fs):
    text = json.dumps(s) + json.dumps([f.to_dict() for f in fs])
    assert "Traceback" not in text and 'File "' not in text


# --- real states --------------------------------------------------------------------------------

def test_bindings_only_wheel_reports_the_real_import_error():
    site = os.path.join(CACHE, "trt-bindings", "site-packages")
    need(os.path.isdir(os.path.join(site, "tensorrt_bindings")), ".ci/cache/trt-bindings")
    s = smoke_tensorrt.probe(ctx(PYTHONPATH=site))
    assert s["module"] == "tensorrt_bindings" and s["module_path"] == os.path.join(site, "tensorrt_bindings")
    assert "libnvonnxparser.so.11: cannot open shared object file" in s["trt_import_error"]  # the loader's own words
    assert s["distributions"] == {"tensorrt-cu13-bindings": "11.4.0.106"}
    assert "tensorrt" not in sys.modules and "tensorrt_bindings" not in sys.modules
    (f,) = findings(s)
    assert f.severity == Severity.FAIL
    assert "libnvonnxparser.so.11 is missing" in f.title and "11.4.0.106" in f.title
    assert f.evidence["import_error"] == s["trt_import_error"]
    assert f.fixes[0].commands == ("python -m pip install 'tensorrt-cu13-libs==11.4.0.106'",)
    assert f.fixes[1].commands == ("python -m pip install 'tensorrt-cu13==11.4.0.106'",)
    assert f.fixes[2].commands == (f"ldd {site}/tensorrt_bindings/tensorrt*.so | grep 'not found'",)
    # the pasted ldd line really lists what is missing
    out = subprocess.run(f.fixes[2].commands[0], shell=True, capture_output=True, text=True).stdout
    assert "libnvinfer.so.11 => not found" in out


def test_tensorrt_absent_is_a_skip_without_a_child(monkeypatch):
    need(importlib.util.find_spec("tensorrt") is None and importlib.util.find_spec("tensorrt_bindings") is None,
         "a Python without TensorRT (this venv)")
    monkeypatch.setattr(smoke_tensorrt, "run_worker", lambda *a, **k: pytest.fail("spawned a child without TensorRT"))
    c = ctx(PYTHONPATH=None)
    t0 = time.perf_counter()
    s = smoke_tensorrt.probe(c)
    assert time.perf_counter() - t0 < 0.2
    assert s["absent"] is True and s["skipped"] == "TensorRT is not installed"
    (f,) = findings(s)
    assert f.severity == Severity.INFO and "not installed" in f.title


def test_fake_tensorrt_with_real_cuda_runtime_reports_no_cuda_device():
    """FAKE TensorRT imports; the real cuda-python runtime finds no usable GPU here: a fact, no build."""
    if os.path.exists("/proc/driver/nvidia/version"):
        pytest.skip("a real GPU driver is loaded: the FAKE TensorRT must not be handed real device memory")
    s = smoke_tensorrt.probe(ctx(PYTHONPATH=FAKE))
    assert s["version"] == "10.3.0" and s["module"] == "tensorrt"
    assert s["skipped"].startswith("no CUDA device (cudaGetDeviceCount: cudaError")
    assert "build" not in s
    (f,) = findings(s)
    assert f.severity == Severity.INFO
    assert f.title.startswith("TensorRT 10.3.0 imports (tensorrt); engine build skipped: no CUDA device")


# --- build / serialize / deserialize / run, per API generation (FAKE TensorRT) ---------------------

@pytest.mark.parametrize("version,api", [
    ("8.6.1", "execute_v2 (bindings)"),
    ("10.3.0", "execute_async_v3 (named tensors)"),
    ("11.4.0", "execute_async_v3 (named tensors)"),  # no EXPLICIT_BATCH member at all
])
def test_build_serialize_deserialize_run(version, api):
    s = fake_run(version)
    assert "error" not in s, s
    assert s["api"] == api
    assert s["build"]["seconds"] >= 0 and s["build"]["plan_bytes"] > 0
    assert s["engine"] == {"tensorrt_version": version, "version_source": "tensorrt.__version__"}
    assert s["io"] == ["a", "b", "out"]
    assert s["run"]["elements"] == 1024 and s["run"]["mismatches"] == 0
    (f,) = findings(s)
    assert f.severity == Severity.OK
    assert f"TensorRT {version} on GPU 0 (FAKE host memory): built in " in f.title
    assert f"engine TensorRT {version}" in f.title and "1024 elements correctly" in f.title
    assert f.evidence["build_seconds"] == s["build"]["seconds"] and f.evidence["api"] == api


@pytest.mark.parametrize("version", ["8.6.1", "11.4.0"])
def test_wrong_numbers_fail(version):
    s = fake_run(version, "wrong_numbers")
    try:
        assert s["run"]["mismatches"] > 0
        mm = s["run"]["first_mismatch"]
        assert mm["got"] < 0 and mm["expected"] == 0.0  # the ReLU was lost
        (f,) = findings(s)
        assert f.severity == Severity.FAIL and "wrong results" in f.title
        assert f.fixes[0].commands == (f"trtexec --loadEngine={s['plan_file']} --verbose",)
        assert os.path.getsize(s["plan_file"]) == s["build"]["plan_bytes"]
        assert "nvidia-smi -q -d ECC" in f.fixes[1].commands
    finally:
        if s.get("plan_file"):
            os.unlink(s["plan_file"])


@pytest.mark.parametrize("version", ["8.6.1", "10.3.0"])
def test_exception_during_build_is_a_fail_with_the_message(version):
    s = fake_run(version, "build_raises")
    assert s["error"] == {"stage": "build", "message": "RuntimeError: FAKE: [builder] out of device memory while timing tactics"}
    assert "build" not in s and "plan_file" not in s
    (f,) = findings(s)
    assert f.severity == Severity.FAIL
    assert f"TensorRT {version} on GPU 0 (FAKE host memory): engine build failed: RuntimeError: FAKE: [builder] out of device memory" in f.title
    assert any("--force-reinstall" in c for fx in f.fixes for c in fx.commands)
    no_traceback(s, [f])


def test_build_returning_none_reports_the_builder_log():
    s = fake_run("10.3.0", "build_returns_none")
    assert s["error"]["stage"] == "build" and "returned None" in s["error"]["message"]
    (f,) = findings(s)
    assert f.severity == Severity.FAIL
    assert f.evidence["log"] == ["error: FAKE: [builderUtils] Error Code 2: Internal Error (no tactic found)"]


def test_failed_run_keeps_the_plan_for_trtexec():
    s = fake_run("11.4.0", "execute_false")
    try:
        assert s["error"] == {"stage": "run", "message": "RuntimeError: execute_async_v3() returned False"}
        (f,) = findings(s)
        assert f.severity == Severity.FAIL and "inference run failed" in f.title
        assert f.fixes[0].commands[0].startswith("trtexec --loadEngine=") and os.path.isfile(s["plan_file"])
    finally:
        if s.get("plan_file"):
            os.unlink(s["plan_file"])


def test_crash_in_the_builder_is_isolated():
    s = fake_run("10.3.0", "abort")
    assert "worker_error" in s
    (f,) = findings(s)
    assert f.severity == Severity.FAIL and f.title.startswith("TensorRT smoke test crashed")
    no_traceback({}, [f])


def test_no_smoke_skips():
    c = ctx(PYTHONPATH=FAKE)
    c.smoke = False
    s = smoke_tensorrt.probe(c)
    assert s == {"skipped": "--no-smoke"}
    (f,) = findings(s)
    assert f.severity == Severity.INFO and "--no-smoke" in f.title


# --- gpudoctor check ----------------------------------------------------------------------------

def _check(*args, **env):
    e = dict(os.environ)
    e.update(env)
    out = subprocess.run([sys.executable, "-m", "gpudoctor", "check", "--json", *args], capture_output=True, text=True,
                         env=e, cwd=ROOT, timeout=300)
    return json.loads(out.stdout)


def test_check_no_smoke_does_not_run_it():
    """Even with a (FAKE) TensorRT importable, --no-smoke spawns nothing for it."""
    rep = _check("--no-smoke", PYTHONPATH=FAKE + os.pathsep + ROOT)
    p = rep["probes"]["smoke_tensorrt"]
    assert p["status"] == "ok" and p["facts"] == {"skipped": "--no-smoke"}


def test_check_without_tensorrt_skips_fast():
    need(importlib.util.find_spec("tensorrt") is None, "a Python without TensorRT (this venv)")
    rep = _check()
    p = rep["probes"]["smoke_tensorrt"]
    assert p["status"] == "ok" and p["facts"]["absent"] is True
    assert p["elapsed_s"] < 0.2
    ours = [f for f in rep["findings"] if f["id"] == "smoke.tensorrt"]
    assert not ours or (len(ours) == 1 and ours[0]["severity"] == "info" and "not installed" in ours[0]["title"])


def test_rule_is_registered():
    """gpudoctor/rules/__init__.py (not this change's file) must list smoke.tensorrt_smoke in _rules()."""
    from gpudoctor.rules import _rules

    assert smoke.tensorrt_smoke in _rules(), "add smoke.tensorrt_smoke after smoke.nvcc_smoke in gpudoctor/rules/__init__.py"


# ----------------------------------------------------------------------------- the real lean and dispatch runtimes


def test_lean_and_dispatch_runtimes_are_named_for_what_they_can_do():
    """The real tensorrt-{lean,dispatch}-cu13 11.4 wheels (.ci/fetch-real-wheels): runtimes that never build."""
    import json
    import subprocess
    import sys

    site = os.path.join(CACHE, "trt-lean", "site-packages")
    need(os.path.isdir(os.path.join(site, "tensorrt_lean_bindings")), ".ci/cache/trt-lean")
    env = dict(os.environ, PYTHONPATH=site)
    out = subprocess.run([sys.executable, "-m", "gpudoctor", "check", "--json"], capture_output=True, text=True,
                         env=env, timeout=300, cwd=str(ROOT))
    data = json.loads(out.stdout)
    mods = {m["name"]: m for m in data["probes"]["tensorrt"]["facts"]["modules"]}
    assert mods["tensorrt_lean_bindings"]["runtime"] == "lean" and mods["tensorrt_lean_bindings"]["import_ok"]
    assert mods["tensorrt_dispatch_bindings"]["runtime"] == "dispatch"
    assert mods["tensorrt_lean_bindings"]["version"].startswith("11.4")
    titles = {f["id"]: f["title"] for f in data["findings"] if f["id"] == "smoke.tensorrt"}
    assert "lean runtime is installed" in titles["smoke.tensorrt"] and "cannot build" in titles["smoke.tensorrt"]
    oks = [f["title"] for f in data["findings"] if f["id"] == "tensorrt.ok"]
    assert any("lean runtime imports" in t and "never builds" in t for t in oks), oks
