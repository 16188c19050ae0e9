#!/usr/bin/env bash
# Issue 14 on the GPU machine: `check --engine` with the real TensorRT 11.4 lean runtime importable
# (its wheels carried in .carry/trt-wheels), for a few real plans (.carry/engines: transient copies of
# ../shared/engines): the header verdict and TensorRT's own answer, side by side. Outputs under $OUT.
set -u
# shellcheck source=benchmarks/device_env.sh
. "$(dirname "$0")/device_env.sh"
python3 -m pip install -q --no-index --no-deps --target /tmp/trt-lean .carry/trt-wheels/*.whl
export PYTHONPATH="/tmp/trt-lean:$PYTHONPATH"
for f in .carry/engines/*; do
  echo "== $(basename "$f")"
  NO_COLOR=1 python3 -m gpudoctor check --no-smoke --engine "$f" | grep -E "engine_|TensorRT 11|TensorRT smoke|lean runtime|dispatch runtime"
done > "$OUT/engines.txt" 2>&1
NO_COLOR=1 python3 -m gpudoctor check 2>&1 | grep -E "smoke.tensorrt|tensorrt.ok" >> "$OUT/engines.txt"
cat "$OUT/engines.txt"
