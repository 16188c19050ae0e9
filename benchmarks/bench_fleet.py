"""`gpudoctor fleet` at scale: wall time, peak RSS and output size for N generated node reports.

The reports are the real H100 report (docs/examples/h100-check.json) with a host name gpuNNNNN each,
and a few varied outliers (about 1 in 1,000): another driver version, a missing GPU (and its fail
finding), uncorrected ECC errors, a degraded PCIe link. Each N runs `python -m gpudoctor fleet DIR`
as a fresh process; peak RSS is the largest process of its tree (ru_maxrss of the children).
Targets (issue 12, on the 2-core CPU machine): 20,000 reports <= 30 s, <= 300 MB, <= 200 output
lines naming the outliers; 100,000 scaling linearly. Printed here, never asserted in tests.

Usage: python benchmarks/bench_fleet.py [--sizes 1000,20000,100000] [--keep DIR]
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REAL = os.path.join(ROOT, "docs", "examples", "h100-check.json")


def variants(base: dict) -> list:
    """(name, report) outliers: each differs from the baseline the way a broken node would."""
    drv = copy.deepcopy(base)
    drv["probes"]["driver"]["facts"]["nvml"]["driver_version"] = "580.95.05"
    nogpu = copy.deepcopy(base)
    nogpu["probes"]["driver"]["facts"]["nvml"]["gpus"] = []
    nogpu["findings"] = list(nogpu["findings"]) + [{"id": "device.not_visible", "severity": "fail", "area": "devices",
                                                    "title": "no GPU visible"}]
    ecc = copy.deepcopy(base)
    ecc["probes"]["driver"]["facts"]["nvml"]["gpus"][0]["ecc_uncorrected_volatile"] = 3
    pcie = copy.deepcopy(base)
    g = pcie["probes"]["driver"]["facts"]["nvml"]["gpus"][0]
    g["pcie_gen_current"], g["pcie_width_current"] = 3, 8
    return [("driver", drv), ("nogpu", nogpu), ("ecc", ecc), ("pcie", pcie)]


def generate(directory: str, n: int) -> int:
    """Write n reports; return how many are outliers."""
    base = json.load(open(REAL))
    odd = variants(base)
    outliers = 0
    for i in range(n):
        rep = base
        if i % 997 == 13:  # about one in a thousand, spread over the fleet
            rep = odd[(i // 997) % len(odd)][1]
            outliers += 1
        text = json.dumps(dict(rep, host=f"gpu{i:06d}"), separators=(",", ":"))
        with open(os.path.join(directory, f"gpu{i:06d}.json"), "w") as fh:
            fh.write(text)
    return outliers


def run(directory: str) -> tuple:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    code = ("import resource, subprocess, sys, time; t = time.perf_counter(); "
            "p = subprocess.run([sys.executable, '-m', 'gpudoctor', 'fleet', sys.argv[1]], capture_output=True, text=True); "
            "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, p.returncode); "
            "sys.stdout.write(p.stdout)")
    p = subprocess.run([sys.executable, "-c", code, directory], capture_output=True, text=True, env=env)
    head, _, out = p.stdout.partition("\n")
    wall, rss_kb, rc = head.split()
    return float(wall), int(rss_kb) / 1024, int(rc), out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,20000,100000")
    ap.add_argument("--keep", help="write the reports here and keep them")
    a = ap.parse_args()
    print(f"{'reports':>8} {'outliers':>8} {'wall s':>8} {'ms/report':>10} {'peak RSS MiB':>13} {'lines':>6} {'exit':>5}")
    rows = []
    for n in (int(x) for x in a.sizes.split(",")):
        d = a.keep or tempfile.mkdtemp(prefix="gpudoctor-fleet-")
        os.makedirs(d, exist_ok=True)
        try:
            outliers = generate(d, n)
            wall, rss, rc, out = run(d)
        finally:
            if not a.keep:
                shutil.rmtree(d, ignore_errors=True)
        lines = out.count("\n")
        rows.append((n, wall))
        print(f"{n:8d} {outliers:8d} {wall:8.2f} {wall / n * 1000:10.3f} {rss:13.1f} {lines:6d} {rc:5d}")
        if n == 20000:
            print("---- output for 20,000 reports ----\n" + out + "----")
    if len(rows) > 1:
        (n0, w0), (n1, w1) = rows[0], rows[-1]
        print(f"scaling {n0} -> {n1}: {w1 / w0:.1f}x the time for {n1 / n0:.0f}x the reports")
    return 0


if __name__ == "__main__":
    sys.exit(main())
