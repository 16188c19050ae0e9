#!/usr/bin/env bash
# Issue 12 on the lent GPU machine: bench_check (cold, warm, --no-smoke, collect_env, nvidia-smi -q, the
# floor, per-process peak RSS), `check -v` twice (cold then warm: the smoke build is cached), and where
# the main process spends its import time. Outputs under $OUT.
set -u
# shellcheck source=benchmarks/device_env.sh
. "$(dirname "$0")/device_env.sh"
export XDG_CACHE_HOME=/tmp/gpudoctor-device-cache
rm -rf "$XDG_CACHE_HOME"
{ NO_COLOR=1 python3 -m gpudoctor check -v; echo "exit=$?"; } > "$OUT/check-cold-v.txt" 2>&1
{ NO_COLOR=1 python3 -m gpudoctor check -v; echo "exit=$?"; } > "$OUT/check-warm-v.txt" 2>&1
tail -25 "$OUT/check-warm-v.txt"
python3 -X importtime -m gpudoctor check --json > /dev/null 2> "$OUT/importtime.txt"
sort -t'|' -k2 -n -r "$OUT/importtime.txt" | head -15
python3 benchmarks/bench_check.py --runs "${RUNS:-3}" --json "$OUT/bench-check.json" 2>&1 | tee "$OUT/bench-check.txt"
