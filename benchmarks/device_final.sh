#!/usr/bin/env bash
# Closing run on the lent GPU: gpudoctor check (console and JSON), -v timings for --no-smoke, the
# multi-GPU self-test with the framework's NCCL, and bench_check (issue 12's figures). Outputs under $OUT.
set -u
. "$(dirname "$0")/device_env.sh"
unset PYTHONDONTWRITEBYTECODE
NCCL=$(python3 -c "import nvidia.nccl, os, glob; print(glob.glob(os.path.join(list(nvidia.nccl.__path__)[0], 'lib', 'libnccl.so*'))[0])" 2>/dev/null)
python3 -m gpudoctor check > /dev/null 2>&1  # first run: bytecode and caches, as after an install
NO_COLOR=1 python3 -m gpudoctor check > "$OUT/check.txt" 2>&1; echo "check exit=$?"; cat "$OUT/check.txt"
python3 -m gpudoctor check --json -o "$OUT/check.json"; echo "json exit=$?"
for i in 1 2 3; do NO_COLOR=1 python3 -m gpudoctor check --no-smoke -v 2>&1 | tail -2; done
echo "== self-test"; python3 -m gpudoctor.process.worker multigpu-smoke --self-test --nccl "$NCCL" 2>&1 | tail -1
echo "== bench"; python3 benchmarks/bench_check.py --runs "${RUNS:-5}" --json "$OUT/bench-check.json" 2>&1 | tee "$OUT/bench-check.txt"
