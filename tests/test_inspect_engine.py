"""`gpudoctor inspect engine` and `check --engine`: verdicts against the TensorRT states this machine has.

Real states: no TensorRT at all (this machine) and the real tensorrt-cu13-bindings wheel without its
libraries. An importable TensorRT cannot be installed here, so "TensorRT X is installed" uses the FAKE
tensorrt module of tests/fakes (its version set by FAKE_TENSORRT_VERSION). Engine headers are FAKE
(synthetic, built with the documented layout: no public engine file with its version could be found).
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpudoctor.cli import main
from gpudoctor.rules.engine_verdict import engine_verdict
from tests.conftest import CACHE, need
from tests.test_engine_plan import fake_plan, fake_ultralytics

ROOT = Path(__file__).resolve().parent.parent
FAKE_TRT = ROOT / "tests" / "fakes" / "fake_tensorrt"


def _run(args, pythonpath=(), env_extra=None):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([*map(str, pythonpath), str(ROOT)]), **(env_extra or {}))
    return subprocess.run([sys.executable, "-m", "gpudoctor", *args], capture_output=True, text=True, timeout=180,
                          env=env, cwd=ROOT)


@pytest.fixture
def plan(tmp_path):
    def make(version, name="model.engine", wrap=False):
        p = tmp_path / name
        data = fake_plan(version=version)
        p.write_bytes(fake_ultralytics(data) if wrap else data)
        return str(p)
    return make


def test_no_tensorrt_here(plan):
    out = _run(["inspect", "engine", plan((10, 3, 0, 26)), "--json"])
    assert out.returncode == 1, out.stderr
    data = json.loads(out.stdout)
    assert data["verdict"] == "no_tensorrt" and data["header"]["trt_version_text"] == "10.3.0.26"
    assert any("tensorrt-cu12==10.3.0.26" in c for f in data["fixes"] for c in f["commands"])


def test_bindings_without_libraries_is_not_a_usable_tensorrt(plan):
    site = os.path.join(CACHE, "trt-bindings", "site-packages")
    need(os.path.isdir(site), ".ci/cache/trt-bindings")
    out = _run(["inspect", "engine", plan((11, 4, 0, 106))], pythonpath=[site])
    assert out.returncode == 1 and "no importable TensorRT or libnvinfer here" in out.stdout


@pytest.mark.parametrize("built,verdict,rc", [
    ((10, 3, 0, 26), "loads", 0),
    ((10, 8, 0, 43), "version_mismatch", 1),          # built newer than the runtime: never loads
    ((10, 3, 0, 20), "only_if_version_compatible", 0),  # an older build: only if built --versionCompatible
    ((8, 6, 1, 6), "only_if_version_compatible", 0),   # 8.6+ version-compatible plans load on later majors
])
def test_against_an_installed_fake_tensorrt(plan, built, verdict, rc):
    out = _run(["inspect", "engine", plan(built), "--json"], pythonpath=[FAKE_TRT],
               env_extra={"FAKE_TENSORRT_VERSION": "10.3.0.26"})
    assert out.returncode == rc, out.stdout + out.stderr
    data = json.loads(out.stdout)
    assert data["verdict"] == verdict and data["installed"] == "10.3.0.26"
    if verdict == "version_mismatch":
        text = ".".join(map(str, built))
        assert f"expecting library version 10.3.0.26 got {text}, please rebuild" in data["reasons"][0]
        assert any("trtexec --onnx=model.onnx --saveEngine=model.engine" in c for f in data["fixes"] for c in f["commands"])


def test_ultralytics_wrapped_plan_is_explained(plan):
    header = {"trt_version": [10, 3, 0, 26], "trt_version_text": "10.3.0.26", "layout": "ultralytics+trt8.6+",
              "plan_offset": 80}
    v = engine_verdict(header, {"modules": [{"name": "tensorrt", "import_ok": True, "version": "10.3.0.26"}]}, [])
    assert v["verdict"] == "loads" and "wrapped by Ultralytics" in v["reasons"][0]
    out = _run(["inspect", "engine", plan((10, 3, 0, 26), wrap=True)])
    assert "Ultralytics" in out.stdout


@pytest.mark.parametrize("content,reason", [
    (b"", "empty"), (b"ftrt\x00\x00", "truncated"), (b"hello, this is text\n" * 10, "not"),
])
def test_unreadable_engine_exits_2(tmp_path, capsys, content, reason):
    p = tmp_path / "bad.engine"
    p.write_bytes(content)
    assert main(["inspect", "engine", str(p)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("gpudoctor: error:") and reason in err.lower()


def test_check_with_engine_reports_the_mismatch(plan, tmp_path):
    good, bad = plan((10, 3, 0, 26), "good.engine"), plan((10, 8, 0, 43), "newer.plan")
    junk = tmp_path / "model.onnx.engine"
    junk.write_bytes(b"\x08\x08\x12\x07pytorch")
    out = _run(["check", "--no-smoke", "--json", "--engine", good, "--engine", bad, "--engine", str(junk)],
               pythonpath=[FAKE_TRT], env_extra={"FAKE_TENSORRT_VERSION": "10.3.0.26"})
    report = json.loads(out.stdout)
    ids = {f["id"]: f for f in report["findings"] if f["id"].startswith("tensorrt.engine")}
    assert set(ids) == {"tensorrt.engine_ok", "tensorrt.engine_mismatch", "tensorrt.engine_invalid"}
    assert "10.8.0.43" in ids["tensorrt.engine_mismatch"]["title"] and ids["tensorrt.engine_mismatch"]["severity"] == "fail"
    assert out.returncode == 1
