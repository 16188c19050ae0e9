"""`check --no-gpu --target-gpu`: validating an image on a machine without its GPU, with the real parts
here (driver-535 user space without a kernel module, Debian's nvcc 11.8, PyTorch's real CPU wheel)."""
import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import CACHE, need

ROOT = Path(__file__).resolve().parent.parent


def _check(*args, pythonpath=()):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([*pythonpath, str(ROOT)]))
    out = subprocess.run([sys.executable, "-m", "gpudoctor", "check", "--json", *args], capture_output=True, text=True,
                         timeout=300, env=env, cwd=ROOT)
    return out, (json.loads(out.stdout) if out.stdout.strip() else None)


def _ids(report, severity=None):
    return {f["id"] for f in report["findings"] if severity is None or f["severity"] == severity}


def test_no_gpu_reports_driver_state_without_failing():
    plain, rep = _check("--no-smoke")
    assert "driver.not_loaded" in _ids(rep, "fail")  # the real state here, without --no-gpu
    out, rep = _check("--no-gpu")
    nl = next(f for f in rep["findings"] if f["id"] == "driver.not_loaded")
    assert nl["severity"] == "info" and nl["title"].startswith("(--no-gpu: needs the GPU host)")
    assert not _ids(rep, "fail") and out.returncode == 0
    assert rep["options"]["no_gpu"] is True and rep["options"]["smoke"] is False


def test_target_gpu_judges_the_toolkit_and_the_framework_build():
    site = os.path.join(CACHE, "torch-cpu", "site-packages")
    need(os.path.isdir(site), ".ci/cache/torch-cpu")
    out, rep = _check("--no-gpu", "--target-gpu", "NVIDIA GeForce RTX 5090", pythonpath=[site])
    arch = [f for f in rep["findings"] if f["id"] == "arch.toolkit_unsupported"]
    assert any("11.8" in f["title"] and "sm_120" in f["title"] for f in arch)  # Debian's real nvcc 11.8
    assert "framework.cpu_build" in _ids(rep, "fail")  # a CPU torch in an image meant for a GPU
    assert out.returncode == 1 and rep["options"]["target_gpus"] == ["NVIDIA GeForce RTX 5090 (12.0)"]


def test_unknown_target_gpu_exits_2():
    out, _ = _check("--no-gpu", "--target-gpu", "RTX 9999")
    assert out.returncode == 2 and "no GPU in the matrix matches" in out.stderr
