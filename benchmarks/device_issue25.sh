#!/usr/bin/env bash
# Issue 25 on the GPU machine: the live check's speed after the library index reads through a SystemView
# (this checkout against .carry/base, interleaved, bytecode compiled), the healthy live report, and the same
# machine judged from its files (`check --root /`: nothing executed) next to it. Outputs under $OUT.
set -u
. "$(dirname "$0")/device_env.sh"
drv=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)
python3 -m gpudoctor check -v > "$OUT/live_v.txt" 2>&1; echo "exit=$?" >> "$OUT/live_v.txt"
python3 -m gpudoctor check --json -o "$OUT/live.json" >/dev/null 2>&1
t0=$(date +%s.%N); python3 -m gpudoctor check --root / --driver "$drv" --target-gpu H100 -v > "$OUT/root_v.txt" 2>&1; echo "exit=$? wall=$(python3 -c "import sys,time; print(round(time.time()-float(sys.argv[1]),2))" "$t0") s" >> "$OUT/root_v.txt"
python3 -m gpudoctor check --root / --driver "$drv" --json -o "$OUT/root.json" >/dev/null 2>&1
RUNS=${RUNS:-7} bash benchmarks/device_bench_interleaved.sh > "$OUT/bench.log" 2>&1
