#!/usr/bin/env bash
# Warm-check speed of several checkouts on one machine, interleaved round by round (each from its own
# directory, bytecode compiled): ROOTS="dir1 dir2 ..." (default: .carry/base and this checkout), ROUNDS, RUNS.
set -u
. "$(dirname "$0")/device_env.sh"
site=${PYTHONPATH#*:}
roots=${ROOTS:-"$PWD/.carry/base $PWD"}
for round in $(seq 1 "${ROUNDS:-2}"); do
  for root in $roots; do
    echo "== round $round: $root"
    (cd "$root" && PYTHONPATH="$root:$site" python3 benchmarks/bench_check.py --runs "${RUNS:-5}" --no-collect-env) 2>&1 \
      | grep -E "^gpudoctor check, warm|^gpudoctor check --no-smoke" | tee -a "$OUT/roots.txt"
  done
done
