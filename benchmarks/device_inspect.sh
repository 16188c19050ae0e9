#!/usr/bin/env bash
# One batched run on the lent GPU machine for `gpudoctor inspect` and the TensorRT/engine parts of check:
# full check (smoke tests incl. TensorRT), inspect binary on the installed frameworks (timed, compared with
# cuobjdump), real kernels built for chosen targets and launched (the verdict against what the GPU does),
# and check --engine on a synthetic plan header. Outputs under $OUT.
set -u
# shellcheck source=benchmarks/device_env.sh
. "$(dirname "$0")/device_env.sh"
gd() { python3 -m gpudoctor "$@"; }
tmp=$(mktemp -d)
{
  echo "== gpudoctor check"; COLUMNS=120 gd check; echo "exit=$?"
  gd check --json > "$OUT/check.json"
  torchlib=$(python3 -c "import importlib.util,os;print(os.path.join(os.path.dirname(importlib.util.find_spec('torch').origin),'lib','libtorch_cuda.so'))")
  ls -la "$torchlib"
  echo "== inspect binary libtorch_cuda.so (timed, 3 runs)"
  for _ in 1 2 3; do /usr/bin/time -f "wall %e s, maxrss %M KiB" python3 -m gpudoctor inspect binary "$torchlib" > "$tmp/t.txt"; done
  cat "$tmp/t.txt"
  echo "== cuobjdump --list-elf / --list-ptx of the same file (reference)"
  if command -v cuobjdump >/dev/null; then
    /usr/bin/time -f "cuobjdump wall %e s" cuobjdump --list-elf "$torchlib" 2>&1 | grep -o 'sm_[0-9]*[af]\?' | sort -u | tr '\n' ' '; echo
    cuobjdump --list-ptx "$torchlib" 2>&1 | grep -o 'sm_[0-9]*[af]\?' | sort -u | tr '\n' ' '; echo
  fi
  for pkg in torch nvidia-cudnn-cu13 cupy-cuda13x jax-cuda13-plugin nvidia-cublas; do
    echo "== inspect binary --package $pkg"; /usr/bin/time -f "wall %e s" python3 -m gpudoctor inspect binary --package "$pkg" | head -8; echo "exit=${PIPESTATUS[0]}"
  done
  echo "== real kernels: verdict vs launch on this GPU"
  cat > "$tmp/k.cu" <<'CU'
#include <cstdio>
__global__ void k(float *x) { x[threadIdx.x] = 2.0f * threadIdx.x; }
int main() { float *d; cudaMalloc(&d, 128 * sizeof(float)); k<<<1, 128>>>(d); cudaError_t e = cudaDeviceSynchronize();
  if (e == cudaSuccess) e = cudaGetLastError(); printf("launch: %s\n", cudaGetErrorString(e)); return e != cudaSuccess; }
CU
  for spec in "sm80:arch=compute_80,code=sm_80" "ptx80:arch=compute_80,code=compute_80" "sm90a:arch=compute_90a,code=sm_90a" "sm90:arch=compute_90,code=sm_90"; do
    name=${spec%%:*}; gen=${spec#*:}
    nvcc -gencode "$gen" -o "$tmp/$name" "$tmp/k.cu" 2>&1 | tail -2
    printf '%s: ' "$name"; python3 -m gpudoctor inspect binary "$tmp/$name" | grep -E '^[✓!✗]'; "$tmp/$name"
  done
  echo "== check --engine (synthetic 10.3.0.26 plan header; no TensorRT on this machine)"
  python3 -c "import sys; h=bytearray(28); h[0:4]=b'ftrt'; h[24:28]=bytes([10,3,0,26]); open(sys.argv[1],'wb').write(bytes(h)+b'\xab'*64)" "$tmp/m.engine"
  gd inspect engine "$tmp/m.engine"; echo "exit=$?"
  COLUMNS=120 gd check --no-smoke --engine "$tmp/m.engine" | grep -A3 -i "engine"; echo "exit=$?"
} > "$OUT/inspect-run.txt" 2>&1
cat "$OUT/inspect-run.txt"
