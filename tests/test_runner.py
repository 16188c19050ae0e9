"""Probe isolation: an exception or a hang in one probe becomes a fact; the others still report."""
from __future__ import annotations

import time

from gpudoctor.process.runner import Probe, ProbeContext, run_probes
from gpudoctor.process.subproc import run


def test_exception_and_hang_become_facts():
    def boom(ctx):
        raise RuntimeError("NVML exploded")

    def hang(ctx):
        time.sleep(30)

    def fine(ctx):
        return {"answer": 42}

    t0 = time.monotonic()
    res = run_probes([Probe("boom", "x", boom, 5), Probe("hang", "x", hang, 0.5), Probe("fine", "x", fine, 5)],
                     ProbeContext(env={}))
    assert time.monotonic() - t0 < 5
    assert res["boom"].status == "error" and "RuntimeError: NVML exploded" in res["boom"].error
    assert res["hang"].status == "timeout" and "timed out after 0.5 s" in res["hang"].error
    assert res["fine"].status == "ok" and res["fine"].facts == {"answer": 42}
    assert list(res) == ["boom", "hang", "fine"]


def test_subprocess_timeout_kills_the_whole_group():
    t0 = time.monotonic()
    r = run(["sh", "-c", "sleep 30 & sleep 30; wait"], timeout=0.5)
    assert r.timed_out and r.returncode is None and "timed out after 0.5 s" in r.error
    assert time.monotonic() - t0 < 5


def test_missing_binary_and_huge_output_are_data():
    r = run(["/nonexistent/nvcc", "--version"])
    assert not r.ok and r.error == "/nonexistent/nvcc: not found"
    big = run(["sh", "-c", "head -c 5000000 /dev/zero | tr '\\0' x"], timeout=10)
    # Kept: the head and a tail of a huge log, never all of it.
    assert big.ok and big.truncated and len(big.stdout) <= 256 * 1024 + 16 * 1024 + 64


def test_memo_computes_once_under_concurrency():
    ctx = ProbeContext(env={})
    calls = []

    def slow():
        calls.append(1)
        time.sleep(0.2)
        return "x"

    res = run_probes([Probe(f"p{i}", "x", lambda c: {"v": c.memo("k", slow)}, 5) for i in range(4)], ctx)
    assert all(r.facts == {"v": "x"} for r in res.values()) and len(calls) == 1


def test_children_that_create_a_cuda_context_get_one_work_queue_unless_the_user_chose():
    """CUDA_DEVICE_MAX_CONNECTIONS=1 keeps a smoke child's context at 79 MiB instead of 126 on an H100
    (issue 12's 120 MiB per process); a value the user set is part of what is checked and is kept."""
    import sys

    from gpudoctor.probes._worker import _argv_env

    _, env = _argv_env(sys.executable, {"PATH": "/usr/bin"}, "nvrtc-smoke")
    assert env["CUDA_DEVICE_MAX_CONNECTIONS"] == "1"
    _, env = _argv_env(sys.executable, {"CUDA_DEVICE_MAX_CONNECTIONS": "32"}, "trt-smoke")
    assert env["CUDA_DEVICE_MAX_CONNECTIONS"] == "32"
    _, env = _argv_env(sys.executable, {"PATH": "/usr/bin"}, "nvml")  # no context: the user's world as is
    assert "CUDA_DEVICE_MAX_CONNECTIONS" not in env


def test_library_children_of_the_last_check_start_early_and_are_adopted(tmp_path):
    """The library-version children a check asked for are remembered (per interpreter) and started first
    thing by the next check; the probe asking for the same path adopts the running child. A garbled or
    foreign hint file starts nothing."""
    import json
    import os
    import sys

    from gpudoctor.probes import _worker
    from gpudoctor.process.runner import ProbeContext

    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path))
    lib = os.path.realpath(sys.executable)  # any existing file: the child reports it cannot be loaded
    _worker._asked_libraries.clear()  # other tests of this process ran checks
    _worker._asked_libraries.add(lib)
    _worker.remember_asked(sys.executable, env)
    cache = _worker._asked_cache(env)
    entry = cache.get_files(_worker._asked_key(sys.executable))
    assert entry and json.loads(open(entry["files"]["data.json"]).read()) == [lib]
    _worker.prestart_libraries(sys.executable, env)
    key = _worker._key(sys.executable, env, "libversions", (lib,))
    assert key in _worker._prestarted
    answer = _worker.run_worker(ProbeContext(env=env, timeout=30), "libversions", lib)
    assert key not in _worker._prestarted and "load_error" in answer[lib]
    # a tampered entry is dropped; a verified one naming no existing absolute path starts nothing
    with open(entry["files"]["data.json"], "w") as fh:
        fh.write(json.dumps([lib, lib]))
    _worker.prestart_libraries(sys.executable, env)
    assert not _worker._prestarted and cache.get_files(_worker._asked_key(sys.executable)) is None
    for garbage in (["relative/path", 7, "/no/such/file"], {"a": 1}, "text"):
        cache.put_json(_worker._asked_key(sys.executable), garbage)
        _worker.prestart_libraries(sys.executable, env)
        assert not _worker._prestarted


_FORK_SCRIPT = r"""
import os, sys, time
from gpudoctor.probes import _worker
from gpudoctor.process import subproc
from gpudoctor.process.runner import ProbeContext

assert subproc.can_fork(), "a fresh interpreter has one thread"
ctx = ProbeContext(env=dict(os.environ), timeout=30)
_worker.prestart(sys.executable, os.environ, ["cuda"])
(started,) = [v for k, v in _worker._prestarted.items() if k[1] == "cuda"]
assert isinstance(started.proc, subproc._ForkedProc)
forked = _worker.run_worker(ctx, "cuda")
execd = _worker.run_worker(ctx, "cuda")  # nothing prestarted now: a fresh interpreter
for key in ("bindings_version", "cuDriverGetVersion", "devices", "cudaRuntimeGetVersion", "cudaGetDeviceCount"):
    assert forked[key] == execd[key], (key, forked, execd)
assert forked["cuInit"]["result"] == execd["cuInit"]["result"]
r = subproc.fork_start(["fake-crash"], lambda: os.abort(), dict(os.environ)).wait(10)
assert r.error == "fake-crash was killed by SIGABRT", r.error
t0 = time.monotonic()
r = subproc.fork_start(["fake-hang"], lambda: time.sleep(60), dict(os.environ)).wait(1.0)
assert r.timed_out and r.error.startswith("fake-hang timed out after") and time.monotonic() - t0 < 5, r.error
def boom():
    raise RuntimeError("fake failure in the child")
r = subproc.fork_start(["fake-raise"], boom, dict(os.environ)).wait(10)
assert r.returncode == 1 and "fake failure in the child" in r.stderr, r
print("FORK-OK")
"""


def test_a_forked_worker_answers_as_an_exec_one_and_its_failures_are_facts():
    """Prestarted workers of this interpreter are forked (no interpreter start-up); the answer must be the
    one a fresh `python -m gpudoctor.process.worker` gives, and a crash, a hang or an exception in the
    forked child is reported like one in an exec'd child (real cuda-python and libcuda of this machine).
    Run in a fresh interpreter: forking is only done while one thread runs."""
    import os
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-c", _FORK_SCRIPT], capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, PYTHONPATH=root))
    assert out.stdout.strip().endswith("FORK-OK"), out.stdout[-2000:] + out.stderr[-2000:]


def test_a_forked_child_does_not_repeat_the_parents_buffered_output():
    """fork_call flushes before forking: the child's exit flush must not print the parent's pending text again."""
    import os
    import subprocess
    import sys

    script = ("import os, sys\nfrom gpudoctor.process.subproc import fork_call\n"
              "sys.stdout.write('parent line\\n')\n"  # buffered: stdout is a pipe
              "pid = fork_call(lambda: 0)\nos.waitpid(pid, 0)\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # buffered, as for most users
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=env).stdout
    assert out.count("parent line") == 1, out
