#!/usr/bin/env bash
# One batched run on the lent GPU machine (device tool): gpudoctor check (console + JSON),
# timings next to torch's collect_env, and the test suite. Writes everything under $OUT.
set -u
export PYTHONUNBUFFERED=1
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi -L
COLUMNS=110 python3 -m gpudoctor check > "$OUT/check.txt" 2> "$OUT/check.err"; echo "check exit=$?"
COLUMNS=110 python3 -m gpudoctor check -v > "$OUT/check-verbose.txt" 2>&1; echo "check -v exit=$?"
python3 -m gpudoctor check --json > "$OUT/check.json" 2> "$OUT/check-json.err"; echo "json exit=$?"
cat "$OUT/check.txt"; cat "$OUT/check.err"
python3 benchmarks/bench_check.py --runs ${RUNS:-5} 2>&1 | tee "$OUT/bench.txt"
