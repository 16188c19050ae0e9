"""Benchmark `gpudoctor explain`: accuracy on the corpus and speed/memory on a huge log.

Usage:
    python benchmarks/bench_explain.py [--corpus DIR ...] [--size-mb 1024] [--skip-speed]

Accuracy, per corpus (tests/corpus and every tests/corpus_unseen*): is a report's confirmed
cause (or one of its ``also_ok`` causes) the top diagnosis (top-1), among the first three (top-3)?
Negatives (cause "none") count as right when no environment diagnosis is confident. Prints both,
per class top-1/top-3/false positives (gpudoctor.explain.evaluate), and the misses. Speed: writes a log of --size-mb of build/training
noise (with CUDA words that hit the scanner's anchors) ending in a real error, runs the scanner over
it in-process and prints MB/s and the peak RSS. Targets (checked here, never in tests): a 1 GB log
in seconds, memory bounded by the chunk size.
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpudoctor.explain.diagnose import diagnose  # noqa: E402
from gpudoctor.explain.evaluate import evaluate, load_corpus, report  # noqa: E402
from gpudoctor.explain.kb import load_kb  # noqa: E402
from gpudoctor.explain.scan import scan_stream  # noqa: E402


CORPORA = (
    ("tests/corpus", "development corpus (the KB's hand signatures were written from these threads)"),
    ("tests/corpus_unseen", "held-out corpus 1 (gathered for issue 11; measured before tuning: "
                            "docs/explain/unseen-before.txt, unseen-after-general.txt; then tuned on)"),
    ("tests/corpus_unseen2", "held-out corpus 2 (gathered after tuning; then tuned on)"),
    ("tests/corpus_unseen3", "held-out corpus 3 (unusual tools and eras; measured before tuning, then tuned on)"),
    ("tests/corpus_unseen4", "held-out corpus 4 (a representative sample; measured before tuning, then tuned on)"),
    ("tests/corpus_unseen5", "held-out corpus 5 (62 threads never used before; 77.4% before tuning: "
                             "docs/explain/unseen5.txt; then tuned on)"),
    ("tests/corpus_unseen6", "held-out corpus 6 (40 threads, gathered after corpus 5's round; measured once, never tuned on)"),
    ("tests/corpus_unseen7", "held-out corpus 7 (31 threads, same KB as corpus 6; 71.0% before tuning: "
                             "docs/explain/unseen7.txt; then tuned on)"),
    ("tests/corpus_unseen8", "held-out corpus 8 (27 threads, KB after corpus 7's round; 88.9% before tuning: "
                             "docs/explain/unseen8.txt; then tuned on)"),
    ("tests/corpus_unseen9", "held-out corpus 9 (66 threads, a later session, after a round of families from the tools' "
                             "sources; 77.3% before tuning: docs/explain/unseen9.txt; then tuned on)"),
    ("tests/corpus_unseen10", "held-out corpus 10 (60 threads, KB after corpus 9's round; 75.0% before tuning: "
                              "docs/explain/unseen10.txt; then tuned on)"),
    ("tests/corpus_unseen11", "held-out corpus 11 (35 threads from less common places, KB after corpus 10's round and a "
                              "second round from the tools' sources; 85.7% before tuning: docs/explain/unseen11.txt; "
                              "then tuned on)"),
    ("tests/corpus_unseen12", "held-out corpus 12 (21 threads, recent years and new tools, KB after corpus 11's round and a "
                              "third round from the tools' sources; 61.9% before tuning: docs/explain/unseen12.txt; "
                              "then tuned on)"),
    ("tests/corpus_unseen13", "held-out corpus 13 (64 threads, a later session, KB with the version facts and weak hints; "
                              "75.0% before tuning: docs/explain/unseen13.txt; then tuned on)"),
    ("tests/corpus_unseen14", "held-out corpus 14 (48 threads, KB after corpus 13's round; 79.2% before tuning: "
                              "docs/explain/unseen14.txt; then tuned on)"),
    ("tests/corpus_unseen15", "held-out corpus 15 (30 threads, KB after corpus 14's round; 66.7% before tuning: "
                              "docs/explain/unseen15.txt; then tuned on)"),
    ("tests/corpus_unseen16", "held-out corpus 16 (61 threads, a later session; 82.0% before tuning: "
                              "docs/explain/unseen16.txt; then tuned on)"),
    ("tests/corpus_unseen17", "held-out corpus 17 (24 threads, KB after corpus 16's round; 70.8% before tuning: "
                              "docs/explain/unseen17.txt; then tuned on)"),
    ("tests/corpus_unseen18", "held-out corpus 18 (12 threads, KB after corpus 17's round; 50.0% before tuning: "
                              "docs/explain/unseen18.txt; then tuned on)"),
)


def accuracy(corpora) -> int:
    """Per corpus: top-1, top-3, confident diagnoses on negatives, and per class top-1/top-3/false positives."""
    kb = load_kb()
    for directory, title in corpora:
        entries = load_corpus(Path(directory))
        if entries:
            print(report(evaluate(entries, kb), f"{directory}: {title}"))
            print()
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
    ap.add_argument("--corpus", action="append", help="corpus directory (repeatable; default: every corpus in tests/)")
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--skip-speed", action="store_true")
    args = ap.parse_args()
    root = Path(__file__).resolve().parents[1]
    corpora = [(c, "") for c in args.corpus] if args.corpus else [(str(root / d), t) for d, t in CORPORA]
    accuracy(corpora)
    if not args.skip_speed:
        speed(args.size_mb)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
