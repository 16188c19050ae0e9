"""The command line: exit codes, JSON shape, clear errors, never a traceback."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

from tests.conftest import ROOT


def gd(*args, env=None):
    e = dict(os.environ, PYTHONPATH=ROOT, **(env or {}))
    return subprocess.run([sys.executable, "-m", "gpudoctor", *args], capture_output=True, text=True, env=e, timeout=300)


def test_check_json_on_this_broken_cpu_machine_exits_1_with_findings():
    r = gd("check", "--json", "--no-smoke")
    assert "Traceback" not in r.stderr + r.stdout
    rep = json.loads(r.stdout)
    assert rep["schema_version"] == 1
    assert set(rep) >= {"gpudoctor_version", "matrix_data_version", "summary", "findings", "probes", "elapsed_s"}
    for f in rep["findings"]:
        assert set(f) >= {"id", "severity", "area", "title", "evidence", "fixes", "doc"}
        assert f["severity"] in ("ok", "info", "warn", "fail")
        if f["severity"] == "fail":
            assert f["fixes"] or f["id"].startswith(("smoke.", "library.")), f
    assert all(p["status"] == "ok" for p in rep["probes"].values()), rep["probes"]
    assert r.returncode == (1 if rep["summary"]["fail"] else 0)


def test_console_report_groups_areas_and_prints_fixes():
    r = gd("check", "--no-smoke", env={"COLUMNS": "200"})
    assert "Traceback" not in r.stderr + r.stdout
    assert "took" in r.stdout and ("failure" in r.stdout or "No issues found" in r.stdout)
    if r.returncode == 1:
        assert "fix 1:" in r.stdout and "✗" in r.stdout


def test_corrupt_matrix_is_a_clear_error_exit_2(tmp_path):
    src = os.path.join(ROOT, "compat_matrix")
    for name in os.listdir(src):
        if name.endswith(".json"):
            shutil.copy(os.path.join(src, name), tmp_path / name)
    (tmp_path / "cuda.json").write_text('{"schema_version": 1, "data_version": "2026-11-23", "rel')
    r = gd("check", "--matrix", str(tmp_path), "--no-smoke")
    assert r.returncode == 2
    assert "compatibility matrix is invalid" in r.stderr and "cuda.json" in r.stderr
    assert "Traceback" not in r.stderr


def test_usage_errors_exit_2():
    assert gd("check", "--timeout", "-3").returncode == 2
    assert gd("check", "--no-such-flag").returncode == 2
    assert gd("frobnicate").returncode == 2


def test_odd_environment_gives_findings_not_tracebacks():
    env = {"CUDA_VISIBLE_DEVICES": "GPU-\u00e9\u0000x,,-1" .replace("\u0000", ""), "LD_LIBRARY_PATH": "::/nope:\u00ff",
           "CUDA_HOME": "/does/not/exist", "PATH": os.environ["PATH"] + ":/also/missing"}
    r = gd("check", "--json", "--no-smoke", env=env)
    assert "Traceback" not in r.stderr
    rep = json.loads(r.stdout)
    ids = {f["id"] for f in rep["findings"]}
    assert "env.ld_library_path" in ids and "env.cuda_home" in ids
