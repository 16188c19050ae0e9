#!/usr/bin/env bash
# One lent-GPU run for issues 11 and 12 (session of 2026-11-25): real failures diagnosed by `explain`
# (device_explain_live.py), a cold then warm `gpudoctor check`, and the speed benchmark. Outputs under
# $OUT. Carry .whl. BENCH=0 skips the benchmark.
set -u
# shellcheck source=benchmarks/device_env.sh
. "$(dirname "$0")/device_env.sh"
unset PYTHONDONTWRITEBYTECODE
nvidia-smi -L
export XDG_CACHE_HOME=/tmp/gd-cache-cold; rm -rf "$XDG_CACHE_HOME"
echo "== check (cold cache)"; { time NO_COLOR=1 python3 -m gpudoctor check; } > "$OUT/check-cold.txt" 2>&1; echo "exit=$?" >> "$OUT/check-cold.txt"; tail -8 "$OUT/check-cold.txt"
echo "== check -v (warm)"; NO_COLOR=1 python3 -m gpudoctor check -v > "$OUT/check-warm-v.txt" 2>&1; echo "exit=$?"; tail -3 "$OUT/check-warm-v.txt"
NO_COLOR=1 python3 -m gpudoctor check --json > "$OUT/check.json" 2>/dev/null
unset XDG_CACHE_HOME
echo "== explain live"; python3 benchmarks/device_explain_live.py > "$OUT/explain-live.txt" 2>&1; tail -25 "$OUT/explain-live.txt"
[ "${BENCH:-1}" = 0 ] || { echo "== bench"; python3 benchmarks/bench_check.py --runs "${RUNS:-7}" --json "$OUT/bench-check.json" 2>&1 | tee "$OUT/bench-check.txt"; }
