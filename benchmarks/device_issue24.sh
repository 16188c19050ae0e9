#!/usr/bin/env bash
# Issue 24's one GPU run: every broken state of benchmarks/device_issue24/*.sh (each makes its states for
# real, records a real program's ground truth, runs `gpudoctor check`, and undoes the state), then the
# speed benchmark of this checkout next to the code before issue 24 (.carry/base: `git archive bedf95a`)
# and collect_env, on the same machine in the same run. Carry .whl and .carry. Outputs: $OUT/*.txt and
# $OUT/states.tar.gz. ONLY=name runs one scenario script; BENCH=0 skips the benchmark.
set -u
. "$(dirname "$0")/device_env.sh"
unset PYTHONDONTWRITEBYTECODE
nvidia-smi -L | tee "$OUT/gpus.txt"
export GD="python3 -m gpudoctor" NO_COLOR=1
STATES=/tmp/issue24-states; rm -rf "$STATES"; mkdir -p "$STATES"
# A healthy check first: what every broken state is compared with.
export XDG_CACHE_HOME=/tmp/gd-cache; rm -rf "$XDG_CACHE_HOME"
$GD check > "$STATES/healthy-cold.txt" 2>&1; echo "exit=$?" >> "$STATES/healthy-cold.txt"
$GD check -v > "$STATES/healthy-warm.txt" 2>&1; echo "exit=$?" >> "$STATES/healthy-warm.txt"
tail -3 "$STATES/healthy-warm.txt"
for s in benchmarks/device_issue24/*.sh; do
  name=$(basename "$s" .sh)
  [ -n "${ONLY:-}" ] && [ "$ONLY" != "$name" ] && continue
  echo "== $name"; mkdir -p "$STATES/$name"
  t0=$(date +%s.%N)
  OUTDIR="$STATES/$name" timeout "${SCRIPT_TIMEOUT:-100}" bash "$s" > "$STATES/$name/script.log" 2>&1
  echo "$name exit=$? $(python3 -c "import time,sys; print(round(time.time()-float(sys.argv[1]),1))" "$t0") s" | tee -a "$OUT/scenarios.txt"
  tail -4 "$STATES/$name/script.log"
done
# A short summary of every state: its check's last line and its failures.
for f in "$STATES"/*/*.txt; do
  case "$f" in *script.log) continue;; esac
  echo "--- ${f#$STATES/}"; grep -E '^\s+✗|^\s+!|failures?,' "$f" | head -12
done > "$OUT/summary.txt" 2>&1
tar -czf "$OUT/states.tar.gz" -C "$STATES" .
unset XDG_CACHE_HOME
if [ "${BENCH:-1}" != 0 ]; then
  echo "== bench (this checkout)"; python3 benchmarks/bench_check.py --runs "${RUNS:-7}" 2>&1 | tee "$OUT/bench-new.txt"
  if [ -d .carry/base ]; then
    echo "== bench (before issue 24, bedf95a)"
    (cd .carry/base && PYTHONPATH="$PWD:${PYTHONPATH#*:}" python3 benchmarks/bench_check.py --runs "${RUNS:-7}" --no-collect-env) 2>&1 | tee "$OUT/bench-base.txt"
  fi
fi
