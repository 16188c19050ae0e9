#!/usr/bin/env bash
# States no mechanism of issue 24 was built or tested on (written apart from the scenario scripts, to see
# whether the mechanisms generalize). Each: make the state for real, a real program's ground truth
# (truth-*.txt), `gpudoctor check` text and JSON, undo. Needs GD and OUTDIR.
set -u
W=$(mktemp -d /tmp/unseen.XXXX); trap 'rm -rf "$W"' EXIT
cat > "$W/k.cu" <<'CU'
#include <cstdio>
__global__ void k(int *x) { *x = 42; }
int main() { int *d, h = 0; if (cudaMalloc(&d, 4)) return 2; k<<<1,1>>>(d); cudaMemcpy(&h, d, 4, cudaMemcpyDeviceToHost); printf("got %d\n", h); return h == 42 ? 0 : 1; }
CU
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
build() { "$NVCC" -arch=sm_90 "$W/k.cu" -o "$W/k" && "$W/k"; }
torch_ok() { python3 -c 'import torch; x = torch.ones(1 << 20, device="cuda"); print("torch ok", float(x.sum()))'; }
check() {  # $1: state name; the rest: env assignments for the check
  local name=$1; shift
  env "$@" $GD check --timeout 30 > "$OUTDIR/$name.txt" 2>&1; echo "exit=$?" >> "$OUTDIR/$name.txt"
  env "$@" $GD check --json --timeout 30 -o "$OUTDIR/$name.json" >/dev/null 2>&1
  echo "[$name] $(tail -2 "$OUTDIR/$name.txt" | head -1)"
}
truth() { local name=$1; shift; { "$@"; echo "exit=$?"; } > "$OUTDIR/truth-$name.txt" 2>&1; echo "[$name] truth: $(tail -3 "$OUTDIR/truth-$name.txt" | tr '\n' ' ' | cut -c1-200)"; }

# 1. LIBRARIES in the environment: nvcc.profile appends to it ("LIBRARIES =+ ..."), so nvcc links -lfoo.
truth libraries env LIBRARIES=-lgpudoctor_nonexistent bash -c "$(declare -f build); NVCC=$NVCC W=$W build"
check libraries LIBRARIES=-lgpudoctor_nonexistent

# 2. DEPENDENCIES_OUTPUT (read by gcc's preprocessor) names a file in a missing directory.
truth depout env DEPENDENCIES_OUTPUT=/nonexistent/deps.d bash -c "$(declare -f build); NVCC=$NVCC W=$W build"
check depout DEPENDENCIES_OUTPUT=/nonexistent/deps.d

# 3. nvcc told to build for an arch this CUDA dropped, through NVCC_APPEND_FLAGS.
truth oldarch env NVCC_APPEND_FLAGS=-arch=sm_35 bash -c "$(declare -f build); NVCC=$NVCC W=$W build"
check oldarch NVCC_APPEND_FLAGS=-arch=sm_35

# 4. RLIMIT_DATA (ulimit -d) of 2 GiB: private anonymous mappings are capped (Linux >= 4.7).
truth rlimitdata bash -c "ulimit -d 2097152; $(declare -f torch_ok); torch_ok"
( ulimit -d 2097152; check rlimitdata )

# 5. An HTML error page saved as libnvidia-ml.so.1, first on LD_LIBRARY_PATH (a failed download).
mkdir -p "$W/html"; printf '<!DOCTYPE html>\n<html><head><title>404 Not Found</title></head><body>Not Found</body></html>\n' > "$W/html/libnvidia-ml.so.1"
truth htmlnvml env LD_LIBRARY_PATH="$W/html" nvidia-smi
check htmlnvml LD_LIBRARY_PATH="$W/html"

# 6. An empty libnvrtc-builtins.so.13.0 first on LD_LIBRARY_PATH (NVRTC loads it at compile time).
mkdir -p "$W/empty"; : > "$W/empty/libnvrtc-builtins.so.13.0"; : > "$W/empty/libnvrtc-builtins.so.13"
truth emptybuiltins env LD_LIBRARY_PATH="$W/empty" python3 -c 'import cupy; print(cupy.ElementwiseKernel("float32 x", "float32 y", "y = x * 2", "twice")(cupy.ones(4, dtype="float32")))'
check emptybuiltins LD_LIBRARY_PATH="$W/empty"

# 7. A CUDA_VISIBLE_DEVICES that names a MIG-style id that does not exist: every GPU is hidden.
truth badmig env CUDA_VISIBLE_DEVICES=MIG-00000000-0000-0000-0000-000000000000 python3 -c 'import torch; print(torch.cuda.device_count()); torch.zeros(1).cuda()'
check badmig CUDA_VISIBLE_DEVICES=MIG-00000000-0000-0000-0000-000000000000
