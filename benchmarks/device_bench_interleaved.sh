#!/usr/bin/env bash
# Warm-check speed of this checkout against the pre-issue-24 code (.carry/base: `git archive bedf95a`), on one
# machine, interleaved (base, this, base, this) so that neither always runs first. Each from its own directory:
# `python -m gpudoctor` imports the package from the working directory.
set -u
. "$(dirname "$0")/device_env.sh"
site=${PYTHONPATH#*:}
for round in 1 2; do
  for root in "$PWD/.carry/base" "$PWD"; do
    echo "== round $round: $root"
    (cd "$root" && PYTHONPATH="$root:$site" python3 benchmarks/bench_check.py --runs "${RUNS:-5}" --no-collect-env) 2>&1 \
      | grep -E "^command|^gpudoctor check, warm|^gpudoctor check --no-smoke" | tee -a "$OUT/interleaved.txt"
  done
done
python3 -c "import time,subprocess; t=time.time(); subprocess.run(['python3','-m','torch.utils.collect_env'],capture_output=True); print('collect_env %.3f s' % (time.time()-t))" | tee -a "$OUT/interleaved.txt"
