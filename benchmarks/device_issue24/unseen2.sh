#!/usr/bin/env bash
# A second set of states written apart from every scenario script and from the fixes made after the first
# GPU run (see unseen.sh). Needs GD and OUTDIR.
set -u
W=$(mktemp -d /tmp/unseen2.XXXX); trap 'rm -rf "$W"' EXIT
cat > "$W/k.cu" <<'CU'
#include <cstdio>
__global__ void k(int *x) { *x = 42; }
int main() { int *d, h = 0; if (cudaMalloc(&d, 4)) return 2; k<<<1,1>>>(d); cudaMemcpy(&h, d, 4, cudaMemcpyDeviceToHost); printf("got %d\n", h); return h == 42 ? 0 : 1; }
CU
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
build() { "$NVCC" -arch=sm_90 "$W/k.cu" -o "$W/k" && "$W/k"; }
torch_ok() { python3 -c 'import torch; x = torch.ones(1 << 20, device="cuda"); print("torch ok", float(x.sum()))'; }
check() {
  local name=$1; shift
  env "$@" $GD check --timeout 30 > "$OUTDIR/$name.txt" 2>&1; echo "exit=$?" >> "$OUTDIR/$name.txt"
  env "$@" $GD check --json --timeout 30 -o "$OUTDIR/$name.json" >/dev/null 2>&1
  echo "[$name] $(tail -2 "$OUTDIR/$name.txt" | head -1)"
}
truth() { local name=$1; shift; { "$@"; echo "exit=$?"; } > "$OUTDIR/truth-$name.txt" 2>&1; echo "[$name] truth: $(tail -3 "$OUTDIR/truth-$name.txt" | tr '\n' ' ' | cut -c1-200)"; }

# 1. A zero-filled file as libcudart.so.13 first on LD_LIBRARY_PATH (a copy that never finished).
mkdir -p "$W/zeros"; head -c 1048576 /dev/zero > "$W/zeros/libcudart.so.13"
truth zeros_cudart env LD_LIBRARY_PATH="$W/zeros" bash -c "$(declare -f torch_ok); torch_ok"
truth zeros_cudart_byname env LD_LIBRARY_PATH="$W/zeros" python3 -c 'import ctypes; ctypes.CDLL("libcudart.so.13"); print("loaded")' 
check zeros_cudart LD_LIBRARY_PATH="$W/zeros"

# 2. An option for cudafe++ (nvcc's front end) that it does not have, through NVCC_PREPEND_FLAGS.
truth cudafe_flag env NVCC_PREPEND_FLAGS='-Xcudafe --bogus' bash -c "$(declare -f build); NVCC=$NVCC W=$W build"
check cudafe_flag NVCC_PREPEND_FLAGS='-Xcudafe --bogus'

# 3. CPATH naming a directory whose <cstdio> is a stale project header.
mkdir -p "$W/inc"; printf '#error "stale cstdio in a project include dir"\n' > "$W/inc/cstdio"
truth cpath env CPATH="$W/inc" bash -c "$(declare -f build); NVCC=$NVCC W=$W build"
check cpath CPATH="$W/inc"

# 4. A soft-only address-space limit of 4 GiB (ulimit -Sv): the hard limit stays unlimited.
truth soft_as bash -c "ulimit -Sv 4194304; $(declare -f torch_ok); torch_ok"
( ulimit -Sv 4194304; check soft_as )
