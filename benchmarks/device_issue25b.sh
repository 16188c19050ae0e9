#!/usr/bin/env bash
# Issue 25, last GPU run: the healthy live check; the same machine live (`--no-gpu`) against its files
# (`--root /`, nothing executed), finding for finding (device_root_parity.py); the root check's report and time;
# the live check's speed against .carry/base interleaved, next to collect_env. Outputs under $OUT.
set -u
. "$(dirname "$0")/device_env.sh"
drv=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)
python3 -m gpudoctor check -v > "$OUT/live_v.txt" 2>&1; echo "exit=$?" >> "$OUT/live_v.txt"
python3 benchmarks/device_root_parity.py --target-gpu H100 > "$OUT/parity.txt" 2>&1; echo "exit=$?" >> "$OUT/parity.txt"
env > "$OUT/env.txt"
t0=$(date +%s.%N); python3 -m gpudoctor check --root / --env "$OUT/env.txt" --driver "$drv" --target-gpu H100 --target-gpu B200 -v > "$OUT/root_v.txt" 2>&1
echo "exit=$? wall=$(python3 -c "import sys,time; print(round(time.time()-float(sys.argv[1]),2))" "$t0") s" >> "$OUT/root_v.txt"
rm -f "$OUT/env.txt"
RUNS=${RUNS:-5} bash benchmarks/device_bench_interleaved.sh > "$OUT/bench.log" 2>&1
cat "$OUT/parity.txt"; tail -3 "$OUT/root_v.txt"; cat "$OUT/interleaved.txt"
