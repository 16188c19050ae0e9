"""Benchmark `gpudoctor explain`: accuracy on the corpus and speed/memory on a huge log.

Usage:
    python benchmarks/bench_explain.py [--corpus tests/corpus] [--size-mb 1024] [--skip-speed]

Accuracy: for every tests/corpus/*.json report, is its established cause (or one of its ``also_ok``
causes) the top diagnosis (top-1), among the first three (top-3)? Prints both, and a confusion list
(expected -> what came first) for the misses. Speed: writes a log of --size-mb of build/training
noise (with CUDA words that hit the scanner's anchors) ending in a real error, runs the scanner over
it in-process and prints MB/s and the peak RSS. Targets (checked here, never in tests): a 1 GB log
in seconds, memory bounded by the chunk size.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpudoctor.explain.diagnose import diagnose  # noqa: E402
from gpudoctor.explain.kb import load_kb  # noqa: E402
from gpudoctor.explain.scan import Scanner, scan_stream  # noqa: E402


def accuracy(corpus: Path) -> int:
    kb = load_kb()
    files = sorted(corpus.glob("*.json"))
    top1 = top3 = 0
    misses = []
    per_cause = Counter()
    for f in files:
        entry = json.loads(f.read_text())
        ok = {entry["cause"], *entry.get("also_ok", [])}
        sc = Scanner(kb)
        sc.feed(entry["log"].encode("utf-8", errors="replace"))
        sc.close()
        ranked = [d.finding.id for d in diagnose(sc)]
        per_cause[entry["cause"]] += 1
        if ranked[:1] and ranked[0] in ok:
            top1 += 1
        if ok & set(ranked[:3]):
            top3 += 1
        else:
            misses.append((f.name, entry["cause"], ranked[:3] or ["(no known signature)"]))
        if ranked[:1] and ranked[0] not in ok and ok & set(ranked[:3]):
            misses.append((f.name, entry["cause"], ranked[:3]))
    n = len(files)
    print(f"corpus: {n} reports, {len(per_cause)} causes")
    if n:
        print(f"top-1 accuracy: {top1}/{n} = {top1 / n:.1%}")
        print(f"top-3 accuracy: {top3}/{n} = {top3 / n:.1%}")
    if misses:
        print("confusions (file: expected -> ranked):")
        for name, want, got in misses:
            print(f"  {name}: {want} -> {', '.join(got)}")
    return 0


NOISE = (b"[2026-11-23 10:00:01] INFO train.py:212 epoch 3 step 1200/5000 loss=0.4312 lr=3.0e-4 "
         b"gpu_mem=10.2GiB cuda:0 throughput=812 samples/s\n"
         b"  building extension: nvcc -O3 -gencode arch=compute_80,code=sm_80 kernel.cu -o kernel.o\n"
         b"WARNING: tensorflow: driver libcudnn found, cudnn version 9.1.0, NVIDIA driver OK\n")


def speed(size_mb: int) -> None:
    kb = load_kb()
    with tempfile.NamedTemporaryFile(suffix=".log", delete=False) as fh:
        path = fh.name
        block = NOISE * (1 << 20 // len(NOISE) + 1)
        written = 0
        while written < size_mb << 20:
            fh.write(block)
            written += len(block)
        fh.write(b"RuntimeError: CUDA error: no kernel image is available for execution on the device\n")
    try:
        t0 = time.perf_counter()
        with open(path, "rb") as fh:
            sc = scan_stream(kb, fh)
        dt = time.perf_counter() - t0
        top = diagnose(sc)[0].finding.id
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(f"speed: {written / 2**20:.0f} MiB, {sc.lines} lines in {dt:.2f} s = {written / 2**20 / dt:.0f} MiB/s; "
              f"peak RSS {rss / 1024:.0f} MiB; top diagnosis {top}")
    finally:
        os.unlink(path)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default=str(Path(__file__).resolve().parents[1] / "tests" / "corpus"))
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--skip-speed", action="store_true")
    args = ap.parse_args()
    accuracy(Path(args.corpus))
    if not args.skip_speed:
        speed(args.size_mb)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
