#!/usr/bin/env bash
# One lent-GPU run that re-measures what changed: issue 10's fault suite (device_faults.sh), then the
# speed benchmark (bench_check.py) and a warm `check -v`. Outputs under $OUT. Carry .whl.
set -u
# shellcheck source=benchmarks/device_env.sh
. "$(dirname "$0")/device_env.sh"
unset PYTHONDONTWRITEBYTECODE
nvidia-smi -L
bash "$(dirname "$0")/device_faults.sh" > /dev/null 2>&1; echo "faults: see faults-run.txt"
grep -E "^(== |exit=|wall )|named|driver.stub_library|explain|killed after" "$OUT/faults-run.txt" | head -60
echo "== bench"; python3 benchmarks/bench_check.py --runs "${RUNS:-7}" --json "$OUT/bench-check.json" 2>&1 | tee "$OUT/bench-check.txt"
echo "== check -v (warm)"; NO_COLOR=1 python3 -m gpudoctor check -v > "$OUT/check-v.txt" 2>&1; echo "exit=$?"; tail -4 "$OUT/check-v.txt"
