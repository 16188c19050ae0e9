#!/usr/bin/env bash
# `gpudoctor explain` on the lent GPU machine: a real "no kernel image" failure (a binary built for sm_80
# only, launched on the H100) diagnosed with `explain -- CMD`, which joins the live GPU facts; and a
# driver-too-old log with --here, which the healthy driver there must not confirm. Outputs under $OUT.
set -u
# shellcheck source=benchmarks/device_env.sh
. "$(dirname "$0")/device_env.sh"
tmp=$(mktemp -d)
cat > "$tmp/k.cu" <<'CU'
#include <cstdio>
__global__ void k(float *x) { x[threadIdx.x] = 1.0f; }
int main() { float *d; cudaMalloc(&d, 512); k<<<1, 128>>>(d); cudaError_t e = cudaDeviceSynchronize();
  if (e == cudaSuccess) e = cudaGetLastError();
  if (e != cudaSuccess) { fprintf(stderr, "CUDA error: %s\n", cudaGetErrorString(e)); return 1; } return 0; }
CU
nvcc -gencode arch=compute_80,code=sm_80 -o "$tmp/sm80" "$tmp/k.cu"
{
  echo "== explain -- ./sm80 (sm_80 SASS only, on this GPU)"
  python3 -m gpudoctor explain -- "$tmp/sm80"; echo "exit=$?"
  echo "== explain --here on a driver-too-old log (the driver here is fine: must not be confirmed)"
  echo "RuntimeError: CUDA driver version is insufficient for CUDA runtime version" > "$tmp/old.log"
  python3 -m gpudoctor explain --here --json "$tmp/old.log" | python3 -c "import json,sys; d=json.load(sys.stdin)['diagnoses'][0]; print(d['id'], d['confidence'], 'confirmed_by=', d['confirmed_by'])"
} > "$OUT/explain-run.txt" 2>&1
cat "$OUT/explain-run.txt"
