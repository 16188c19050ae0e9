#!/usr/bin/env bash
# One batched run on the lent GPU machine (device tool): gpudoctor check (console + JSON), a real
# hidden-GPU state (CUDA_VISIBLE_DEVICES=1 on a one-GPU host), and timings next to torch's collect_env.
# Writes everything under $OUT (at most 8 files come back).
set -u
# shellcheck source=benchmarks/device_env.sh
. "$(dirname "$0")/device_env.sh"
nvidia-smi -L
COLUMNS=120 python3 -m gpudoctor check > "$OUT/check.txt" 2> "$OUT/stderr.txt"; echo "check exit=$?"
COLUMNS=120 python3 -m gpudoctor check -v > "$OUT/check-verbose.txt" 2>> "$OUT/stderr.txt"; echo "check -v exit=$?"
python3 -m gpudoctor check --json > "$OUT/check.json" 2>> "$OUT/stderr.txt"; echo "json exit=$?"
CUDA_VISIBLE_DEVICES=1 COLUMNS=120 python3 -m gpudoctor check --no-smoke > "$OUT/check-cvd1.txt" 2>> "$OUT/stderr.txt"; echo "cvd=1 exit=$?"
CUDA_VISIBLE_DEVICES=1 python3 -m gpudoctor check --no-smoke --json > "$OUT/check-cvd1.json" 2>> "$OUT/stderr.txt"
cat "$OUT/check.txt"; echo "--- stderr:"; cat "$OUT/stderr.txt"; echo "--- CUDA_VISIBLE_DEVICES=1:"; grep -E "✗|!" "$OUT/check-cvd1.txt"
python3 benchmarks/bench_check.py --runs "${RUNS:-5}" 2>&1 | tee "$OUT/bench.txt"
