"""Scratch directories: removed when their step ends, and all at once when `check` must leave while a step
is stuck (os._exit runs no finally), so no run leaves a directory in TMPDIR."""
import os
import subprocess
import sys

from gpudoctor.process import scratch

STUCK = r"""
import os, sys, threading, time
from gpudoctor.process import scratch
from gpudoctor import cli

def probe():  # a step stuck inside its scratch directory
    with scratch.scratch_dir("gpudoctor-") as tmp:
        open(os.path.join(tmp, "probe.cu"), "w").write("__global__ void k() {}\n")
        print(tmp, flush=True)
        time.sleep(60)

threading.Thread(target=probe, name="probe-toolkit", daemon=True).start()
time.sleep(0.5)
cli._exit_now_if_stuck(1)
"""


def test_a_step_ends_and_its_directory_is_gone(tmp_path, monkeypatch):
    tmp_path = tmp_path / "tmp"
    tmp_path.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    with scratch.scratch_dir("gpudoctor-") as d:
        assert os.path.isdir(d) and d.startswith(str(tmp_path))
    assert list(tmp_path.iterdir()) == []
    kept = scratch.make("gpudoctor-x-")
    scratch.remove_all()
    assert not os.path.exists(kept)


def test_leaving_while_a_step_is_stuck_removes_its_scratch_directory(tmp_path):
    tmp_path = tmp_path / "tmp"
    tmp_path.mkdir()
    r = subprocess.run([sys.executable, "-c", STUCK], capture_output=True, text=True, timeout=30,
                       env=dict(os.environ, TMPDIR=str(tmp_path)))
    assert r.returncode == 1, r.stderr
    made = r.stdout.strip()
    assert made.startswith(str(tmp_path)) and not os.path.exists(made) and list(tmp_path.iterdir()) == []
