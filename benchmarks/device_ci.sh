#!/usr/bin/env bash
# Issue-6 features on the lent GPU machine: policies, CI formats, --no-gpu/--target-gpu, compare, fleet.
set -u
# shellcheck source=benchmarks/device_env.sh
. "$(dirname "$0")/device_env.sh"
gd() { python3 -m gpudoctor "$@"; }
{
  echo "== check --require (real GPU)"
  COLUMNS=120 gd check --no-smoke --require "cuda>=12.4" --require "cudnn==9.*" --require "driver>=550" \
    --require "torch.arch>=sm_90" --require "gpu.count>=2" | sed -n '/Requirements/,/^$/p'; echo "exit=${PIPESTATUS[0]}"
  echo "== --format github (first lines)"; gd check --no-smoke --format github | head -5
  echo "== --format junit (summary)"; gd check --no-smoke --format junit | head -c 300; echo
  echo "== --format markdown (head)"; gd check --no-smoke --format markdown | head -8
  echo "== --no-gpu --target-gpu B200 --target-gpu 'GeForce GTX 1080'"
  COLUMNS=120 gd check --no-gpu --target-gpu B200 --target-gpu "GeForce GTX 1080" | grep -E "arch\.|no-gpu|failure"; echo "exit=${PIPESTATUS[0]}"
  gd check --json --no-smoke > "$OUT/a.json"; CUDA_VISIBLE_DEVICES='' gd check --json --no-smoke > "$OUT/b.json"
  echo "== compare (working vs CUDA_VISIBLE_DEVICES empty)"; gd compare "$OUT/a.json" "$OUT/b.json" | head -8
  echo "== fleet of the two"; gd fleet "$OUT/a.json" "$OUT/b.json" | tail -8; echo "exit=${PIPESTATUS[0]}"
} > "$OUT/ci-run.txt" 2>&1
cat "$OUT/ci-run.txt"
