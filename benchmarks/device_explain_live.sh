#!/usr/bin/env bash
# Issue 11 on the lent GPU machine: real failures diagnosed by `explain` (device_explain_live.py),
# then `gpudoctor check` as always. Outputs under $OUT.
set -u
# shellcheck source=benchmarks/device_env.sh
. "$(dirname "$0")/device_env.sh"
python3 benchmarks/device_explain_live.py 2>&1 | tee "$OUT/explain-live.txt"
{ time NO_COLOR=1 python3 -m gpudoctor check; } > "$OUT/check.txt" 2>&1; echo "check exit=$?" >> "$OUT/check.txt"
tail -40 "$OUT/check.txt"
# Piped (no terminal): never wrapped, no colour; the first-run build, then the cached one.
python3 -m gpudoctor check -v > "$OUT/check-piped-v.txt" 2>&1; echo "exit=$?" >> "$OUT/check-piped-v.txt"
python3 -m gpudoctor matrix --version >> "$OUT/check-piped-v.txt"
