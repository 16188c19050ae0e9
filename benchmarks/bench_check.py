"""Wall time of `gpudoctor check` (with and without smoke tests) next to
`python -m torch.utils.collect_env`, each a fresh process, median of N runs.

Also checks that gpudoctor never imports torch/tensorflow in its own process.
Usage: python benchmarks/bench_check.py [--runs N] [--no-collect-env]
Speed targets live here, never in tests (target: `gpudoctor check` ≤ 1 s).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def timed(argv, runs):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    times, rc = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        p = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, timeout=600)
        times.append(time.perf_counter() - t0)
        rc = p.returncode
    return statistics.median(times), min(times), max(times), rc


def heavy_modules_imported():
    sys.path.insert(0, ROOT)
    from gpudoctor.check import run_check
    from gpudoctor.matrix import load_matrix

    run_check(load_matrix(), smoke=False)
    return sorted(m for m in ("torch", "tensorflow", "jax", "jaxlib", "cupy", "tensorrt") if m in sys.modules)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--no-collect-env", action="store_true")
    a = ap.parse_args()
    py = sys.executable
    rows = [
        ("gpudoctor check --no-smoke", [py, "-m", "gpudoctor", "check", "--no-smoke", "--json"], a.runs),
        ("gpudoctor check (with smoke tests)", [py, "-m", "gpudoctor", "check", "--json"], a.runs),
    ]
    if not a.no_collect_env:
        rows.append(("python -m torch.utils.collect_env", [py, "-m", "torch.utils.collect_env"], max(1, min(a.runs, 3))))
    print(f"{'command':40} {'median s':>9} {'min s':>7} {'max s':>7} {'runs':>5} {'exit':>5}")
    for label, argv, n in rows:
        med, lo, hi, rc = timed(argv, n)
        print(f"{label:40} {med:9.3f} {lo:7.3f} {hi:7.3f} {n:5d} {rc!s:>5}")
    print("heavy modules imported in gpudoctor's own process:", heavy_modules_imported() or "none")


if __name__ == "__main__":
    main()
