#!/usr/bin/env bash
# A third set of states, written after every fix of the second GPU run and tested by no one before this run
# (see unseen.sh). Needs GD and OUTDIR.
set -u
W=$(mktemp -d /tmp/unseen3.XXXX); trap 'rm -rf "$W"' EXIT
check() {
  local name=$1; shift
  env "$@" $GD check --timeout 30 > "$OUTDIR/$name.txt" 2>&1; echo "exit=$?" >> "$OUTDIR/$name.txt"
  env "$@" $GD check --json --timeout 30 -o "$OUTDIR/$name.json" >/dev/null 2>&1
  echo "[$name] $(tail -2 "$OUTDIR/$name.txt" | head -1)"
}
truth() { local name=$1; shift; { "$@"; echo "exit=$?"; } > "$OUTDIR/truth-$name.txt" 2>&1; echo "[$name] truth: $(tail -3 "$OUTDIR/truth-$name.txt" | tr '\n' ' ' | cut -c1-200)"; }
torch_ok() { python3 -c 'import torch; x = torch.ones(1 << 20, device="cuda"); print("torch ok", float(x.sum()))'; }
libdir=$(python3 -c 'import nvidia, os, glob; print(next(p for d in nvidia.__path__ for p in glob.glob(os.path.join(d, "cu13", "lib")) ))' 2>/dev/null)

# 1. A GNU ld linker script saved as libcuda.so.1 (what some -dev packages install as libX.so), first on LD_LIBRARY_PATH.
mkdir -p "$W/script"; printf '/* GNU ld script */\nINPUT(/usr/local/nvidia/lib64/libcuda.so.1)\n' > "$W/script/libcuda.so.1"
truth ldscript_libcuda env LD_LIBRARY_PATH="$W/script" bash -c "$(declare -f torch_ok); torch_ok"
check ldscript_libcuda LD_LIBRARY_PATH="$W/script"

# 2. The wheel's libcublas.so.13 copied as libcudart.so.13 into a directory first on LD_LIBRARY_PATH.
if [ -n "$libdir" ] && [ -f "$libdir/libcublas.so.13" ]; then
  mkdir -p "$W/swap"; cp "$libdir/libcublas.so.13" "$W/swap/libcudart.so.13"
  truth cublas_as_cudart env LD_LIBRARY_PATH="$W/swap" python3 -c 'import ctypes; l = ctypes.CDLL("libcudart.so.13"); l.cudaGetDeviceCount; print("has cudaGetDeviceCount")'
  check cublas_as_cudart LD_LIBRARY_PATH="$W/swap"
else
  echo "[cublas_as_cudart] skipped: no libcublas.so.13 in the nvidia wheels"
fi

# 3. A stale wrapper named nvcc first on PATH (a module system's shim that lost its target).
mkdir -p "$W/shim"; printf '#!/bin/sh\necho "module: cuda/12.4 is not loaded; run: module load cuda" >&2\nexit 3\n' > "$W/shim/nvcc"; chmod +x "$W/shim/nvcc"
truth shim_nvcc env PATH="$W/shim:$PATH" nvcc --version
check shim_nvcc PATH="$W/shim:$PATH"
