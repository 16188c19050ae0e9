"""Speed and memory of `gpudoctor check`, next to what people run instead, in one run with ratios.

Each command runs as a fresh process, N times; the table gives median/min/max wall seconds and the
peak RSS of the largest process of its process tree (every child, grandchild, the smoke binary:
sampled from /proc/<pid>/status VmHWM every few milliseconds), with the command that had it.

Rows: cold check (smoke-build cache emptied before each run), warm check (cache filled), --no-smoke,
`python -m torch.utils.collect_env`, `nvidia-smi -q`, and the floor: a fresh Python that only does
NVML init + a device query and `cuInit` + a device count (what any GPU check must at least pay).
Targets (issue 12, on the H100): warm <= 0.8 s and >= 6x faster than collect_env, cold <= 1.6 s,
--no-smoke <= 0.5 s, every process <= 120 MiB. They are printed here, never asserted in tests.

Bytecode is compiled first, as `pip install .` does (a checkout run with PYTHONDONTWRITEBYTECODE set would
otherwise compile every module from source on every run: on the H100 on 2026-11-27 the warm check took
0.67-0.75 s that way and 0.49-0.53 s with bytecode); --source-only keeps that condition and says so.

Usage: python benchmarks/bench_check.py [--runs N] [--no-collect-env] [--json FILE] [--source-only]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLOOR = r"""
import ctypes, sys
nvml = ctypes.CDLL("libnvidia-ml.so.1")
assert nvml.nvmlInit_v2() == 0
n = ctypes.c_uint(); nvml.nvmlDeviceGetCount_v2(ctypes.byref(n))
h = ctypes.c_void_p(); nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(h))
name = ctypes.create_string_buffer(96); nvml.nvmlDeviceGetName(h, name, 96)
cuda = ctypes.CDLL("libcuda.so.1")
rc = cuda.cuInit(0); c = ctypes.c_int(); cuda.cuDeviceGetCount(ctypes.byref(c))
print(n.value, name.value.decode(), rc, c.value)
"""


def _children(root: int) -> list:
    """All live descendants of ``root`` (by /proc/<pid>/stat ppid)."""
    parents = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat", "rb") as fh:
                    stat = fh.read().decode(errors="replace")
                parents[int(d)] = int(stat.rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    out, frontier = [], {root}
    while frontier:
        nxt = {p for p, pp in parents.items() if pp in frontier}
        out += list(nxt)
        frontier = nxt
    return out


def _hwm(pid: int):
    """(peak RSS KiB, name): the command line, or for a forked gpudoctor worker (whose command line is
    its parent's) its process name, e.g. ``gd:nvrtc-smoke (forked)``."""
    try:
        kb, comm = 0, ""
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    kb = int(line.split()[1])
                elif line.startswith("Name:"):
                    comm = line.split(None, 1)[1].strip()
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            cmd = fh.read().replace(b"\0", b" ").decode(errors="replace").strip()
        if comm.startswith("gd:"):
            cmd = f"{comm} (forked)"
        return kb, cmd
    except OSError:
        return 0, ""


def run_sampled(argv, env) -> tuple:
    """(wall seconds, exit code, peak RSS KiB of the largest process, its command line)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    peak = {"kb": 0, "cmd": "", "procs": {}}
    done = threading.Event()

    def sample():
        while not done.is_set():
            for pid in [p.pid] + _children(p.pid):
                kb, cmd = _hwm(pid)
                cmd = " ".join(cmd.split())[:100]
                if kb > peak["procs"].get(cmd, 0):
                    peak["procs"][cmd] = kb
                if kb > peak["kb"]:
                    peak.update(kb=kb, cmd=cmd)
            time.sleep(0.003)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    killer = threading.Timer(600, p.kill)  # a hung check ends the benchmark, not the session
    killer.start()
    rc = p.wait()  # blocking waitpid: Popen.wait(timeout=...) polls with sleeps of up to 50 ms, which
    wall = time.perf_counter() - t0  # rounded every wall time up to the next poll (0.516, 0.566, 0.616 ...)
    killer.cancel()
    done.set()
    th.join()
    run_sampled.procs = peak["procs"]
    return wall, rc, peak["kb"], peak["cmd"]


def measure(label, argv, runs, env, before=None) -> dict:
    walls, rss, rc, cmd, procs = [], 0, None, "", {}
    for _ in range(runs):
        if before:
            before()
        wall, rc, kb, c = run_sampled(argv, env)
        walls.append(wall)
        for k, v in run_sampled.procs.items():
            procs[k] = max(v, procs.get(k, 0))
        if kb > rss:
            rss, cmd = kb, c
    top = sorted(procs.items(), key=lambda kv: -kv[1])[:6]
    return {"label": label, "median_s": statistics.median(walls), "min_s": min(walls), "max_s": max(walls),
            "runs": runs, "exit": rc, "peak_rss_mib": round(rss / 1024, 1), "peak_process": cmd,
            "processes_mib": {k: round(v / 1024, 1) for k, v in top}}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--no-collect-env", action="store_true")
    ap.add_argument("--json", help="also write the rows here")
    ap.add_argument("--source-only", action="store_true",
                    help="do not compile gpudoctor's bytecode first (with PYTHONDONTWRITEBYTECODE set, every run then "
                         "compiles every module from source, a cost no installed copy pays)")
    a = ap.parse_args()
    py = sys.executable
    if not a.source_only:  # as `pip install .` leaves it: every module compiled to bytecode once
        import compileall

        compileall.compile_dir(os.path.join(ROOT, "gpudoctor"), quiet=1)
    print("bytecode: " + ("not compiled first (--source-only); PYTHONDONTWRITEBYTECODE="
                          f"{os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r}" if a.source_only else
                          "compiled first, as `pip install .` does"))
    cache = tempfile.mkdtemp(prefix="gpudoctor-bench-cache-")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), XDG_CACHE_HOME=cache)

    def empty_cache():
        shutil.rmtree(cache, ignore_errors=True)
        os.makedirs(cache, exist_ok=True)

    check = [py, "-m", "gpudoctor", "check", "--json"]
    rows = [measure("gpudoctor check, cold (no smoke-build cache)", check, a.runs, env, before=empty_cache)]
    subprocess.run(check, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)  # fill the cache
    rows.append(measure("gpudoctor check, warm", check, a.runs, env))
    rows.append(measure("gpudoctor check --no-smoke", check + ["--no-smoke"], a.runs, env))
    if not a.no_collect_env:
        rows.append(measure("python -m torch.utils.collect_env", [py, "-m", "torch.utils.collect_env"], max(1, min(a.runs, 3)), env))
    if shutil.which("nvidia-smi"):
        rows.append(measure("nvidia-smi -q", ["nvidia-smi", "-q"], a.runs, env))
    rows.append(measure("floor: NVML init+query, cuInit (fresh python)", [py, "-c", FLOOR], a.runs, env))
    shutil.rmtree(cache, ignore_errors=True)
    warm = rows[1]["median_s"]
    print(f"{'command':48} {'median s':>9} {'min s':>7} {'max s':>7} {'x warm':>7} {'peak RSS MiB':>13}  largest process")
    for r in rows:
        print(f"{r['label']:48} {r['median_s']:9.3f} {r['min_s']:7.3f} {r['max_s']:7.3f} {r['median_s'] / warm:7.2f} "
              f"{r['peak_rss_mib']:13.1f}  {r['peak_process']}")
    for r in rows[:3]:
        print(f"processes of '{r['label']}' by peak RSS (MiB): "
              + "; ".join(f"{v} {k}" for k, v in r["processes_mib"].items()))
    by = {r["label"]: r for r in rows}
    ce = by.get("python -m torch.utils.collect_env")
    if ce:
        print(f"collect_env / warm check = {ce['median_s'] / warm:.1f}x (target >= 6x)")
    print(f"targets: warm <= 0.8 s ({warm:.2f}), cold <= 1.6 s ({rows[0]['median_s']:.2f}), "
          f"--no-smoke <= 0.5 s ({rows[2]['median_s']:.2f}), every process <= 120 MiB "
          f"({max(r['peak_rss_mib'] for r in rows[:3]):.0f})")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
