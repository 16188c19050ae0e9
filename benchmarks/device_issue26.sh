#!/usr/bin/env bash
# Issue 26 on the GPU machine (no network there): the healthy check (its fixes ask no index: there are none),
# a plan for this machine's GPU, whose indexes cannot be reached (every requirement unverified, the time
# bounded by --index-timeout), and the plan's time with --offline next to it. Outputs under $OUT.
set -u
. "$(dirname "$0")/device_env.sh"
python3 -m gpudoctor check > "$OUT/check.txt" 2>&1; echo "exit=$?" >> "$OUT/check.txt"
tail -2 "$OUT/check.txt"
for opt in "--offline" "" "--offline" ""; do
  t0=$(date +%s.%N)
  python3 -m gpudoctor install --gpu auto --tensorrt latest --torch latest $opt > "$OUT/plan$opt.sh" 2>&1; rc=$?
  echo "install ${opt:-(online)}: exit $rc, $(python3 -c "import sys,time; print(round(time.time()-float(sys.argv[1]),2))" "$t0") s"
done
grep -E "^# (gpudoctor install plan|INDEX)" "$OUT/plan.sh" | head -20
