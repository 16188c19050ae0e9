#!/usr/bin/env bash
# Issue 24 item 3 (loader integrity): damaged copies of real NVIDIA libraries of this machine put where the
# dynamic loader picks them, each state with a real program's ground truth in the same environment
# (ctypes / PyTorch / CuPy / nvidia-smi), then `gpudoctor check` (text and JSON), then undone. Every state
# lives in a subshell (its LD_LIBRARY_PATH / LD_PRELOAD go with it) and a scratch dir removed on EXIT.
#   lfs_nvrtc       a Git LFS pointer (made from the real file's hash and size) as libnvrtc.so.13 first on
#                   LD_LIBRARY_PATH -> library.damaged (fail) naming it; CuPy's/ctypes' NVRTC load fails
#   empty_nvml      an empty libnvidia-ml.so.1 first on LD_LIBRARY_PATH -> library.damaged (fail); nvidia-smi and
#                   NVML fail, and the report blames the file, not python3 or nvidia-smi
#   trunc_cudnn     the cuDNN wheel's libcudnn.so.9 cut to half, in a dir first on LD_LIBRARY_PATH -> library.damaged
#                   (fail), the crashed cuDNN version child attributed to it; PyTorch (whose RUNPATH comes after
#                   LD_LIBRARY_PATH) is expected to die of SIGBUS on import
#   preload_lfs     LD_PRELOAD of a Git LFS pointer named libcudart.so.13 -> library.damaged (warn: ld.so prints
#                   'cannot be preloaded ... ignored' in every program and runs without it), fix `unset LD_PRELOAD`
#   i386_nccl       a 32-bit i386 libnccl.so.2 (assembled with binutils) first on LD_LIBRARY_PATH ->
#                   library.wrong_arch: the loader passes over it (warn) or, when no other libnccl.so.2 is on the
#                   search path, dlopen fails 'wrong ELF class' (fail). Skipped where `as`/`ld` are missing.
# Env: GD (command that runs gpudoctor), OUTDIR (outputs). Each state well under 25 s.
set -u
: "${GD:=python3 -m gpudoctor}" "${OUTDIR:=/tmp/loader-out}"
mkdir -p "$OUTDIR"
SCRATCH=$(mktemp -d /tmp/gd-loader.XXXXXX)
trap 'rm -rf "$SCRATCH"' EXIT

truth() {  # STATE LABEL COMMAND...: a real program in the state, its output and exit code
  { echo "\$ $2"; timeout 60 "${@:3}"; echo "exit=$?"; } >> "$OUTDIR/$1.truth.txt" 2>&1
}
pytruth() {  # STATE LABEL PYTHON-CODE
  truth "$1" "python3 -c <$2>" python3 -c "$3"
}
check() {  # STATE: gpudoctor in the state, text and JSON
  $GD check --timeout 30 > "$OUTDIR/$1.txt" 2>&1; echo "exit=$?" >> "$OUTDIR/$1.txt"
  $GD check --json --timeout 30 -o "$OUTDIR/$1.json" > /dev/null 2>&1
  grep -E '\[library\.|\[tool\.failed\]' "$OUTDIR/$1.txt" | head -6
}
lfs_pointer() {  # REAL-FILE DEST: what a clone without `git lfs pull` leaves in place of REAL-FILE
  local real; real=$(readlink -f "$1")
  printf 'version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize %s\n' \
    "$(sha256sum "$real" | cut -d' ' -f1)" "$(stat -c %s "$real")" > "$2"
}
site_lib() {  # GLOB under site-packages (e.g. nvidia/cudnn/lib/libcudnn.so.9): the first file found
  python3 - "$1" <<'EOF'
import glob, os, site, sys
dirs = site.getsitepackages() + [site.getusersitepackages()]
hits = [h for d in dirs for h in sorted(glob.glob(os.path.join(d, sys.argv[1])))]
print(hits[0] if hits else "")
EOF
}
first_file() { for f in "$@"; do [ -f "$f" ] && { readlink -f "$f"; return; }; done; echo ""; }
state() { echo "== $1"; echo "# $2" > "$OUTDIR/$1.truth.txt"; }

TORCH='import torch; x = torch.ones(4, device="cuda"); print("ok:", (x + x).sum().item(), torch.cuda.get_device_name(0))'
CUPY_NVRTC='import cupy as cp; k = cp.RawKernel(r"extern \"C\" __global__ void f(float* x){x[threadIdx.x]=1;}", "f"); a = cp.zeros(32, dtype=cp.float32); k((1,), (32,), (a,)); print("ok: NVRTC kernel ran, sum", float(a.sum()))'
TORCH_CONV='import torch; print("cudnn", torch.backends.cudnn.version()); c = torch.nn.Conv2d(3, 8, 3).cuda(); print("ok: conv", c(torch.randn(1, 3, 16, 16, device="cuda")).shape)'
NVML='import pynvml; pynvml.nvmlInit(); print("ok: NVML driver", pynvml.nvmlSystemGetDriverVersion())'

# ---- lfs_nvrtc -------------------------------------------------------------------------------------------------
NVRTC=$(first_file /usr/local/cuda/lib64/libnvrtc.so.13 /usr/local/cuda/targets/x86_64-linux/lib/libnvrtc.so.13)
[ -n "$NVRTC" ] || NVRTC=$(site_lib 'nvidia/cu13/lib/libnvrtc.so.13')
[ -n "$NVRTC" ] || NVRTC=$(site_lib 'nvidia/cuda_nvrtc/lib/libnvrtc.so.13')
state lfs_nvrtc "Git LFS pointer of $NVRTC as libnvrtc.so.13 first on LD_LIBRARY_PATH"
if [ -n "$NVRTC" ]; then
  ( mkdir -p "$SCRATCH/lfs_nvrtc" && lfs_pointer "$NVRTC" "$SCRATCH/lfs_nvrtc/libnvrtc.so.13"
    export LD_LIBRARY_PATH="$SCRATCH/lfs_nvrtc${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    pytruth lfs_nvrtc ctypes-dlopen 'import ctypes; ctypes.CDLL("libnvrtc.so.13"); print("ok: loaded")'
    pytruth lfs_nvrtc cupy-rawkernel "$CUPY_NVRTC"
    check lfs_nvrtc ) || echo "lfs_nvrtc: state failed"
else
  echo "lfs_nvrtc: no libnvrtc.so.13 on this machine" | tee -a "$OUTDIR/lfs_nvrtc.truth.txt"
fi

# ---- empty_nvml ------------------------------------------------------------------------------------------------
state empty_nvml "an empty libnvidia-ml.so.1 first on LD_LIBRARY_PATH"
( mkdir -p "$SCRATCH/empty_nvml" && : > "$SCRATCH/empty_nvml/libnvidia-ml.so.1"
  export LD_LIBRARY_PATH="$SCRATCH/empty_nvml${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  truth empty_nvml nvidia-smi nvidia-smi -L
  pytruth empty_nvml pynvml "$NVML"
  pytruth empty_nvml torch-tensor "$TORCH"
  check empty_nvml ) || echo "empty_nvml: state failed"

# ---- trunc_cudnn -----------------------------------------------------------------------------------------------
CUDNN=$(site_lib 'nvidia/cudnn/lib/libcudnn.so.9')
state trunc_cudnn "the cuDNN wheel's libcudnn.so.9 ($CUDNN) cut to half, first on LD_LIBRARY_PATH"
if [ -n "$CUDNN" ]; then
  ( mkdir -p "$SCRATCH/trunc_cudnn" && cp "$(readlink -f "$CUDNN")" "$SCRATCH/trunc_cudnn/libcudnn.so.9"
    truncate -s $(( $(stat -c %s "$SCRATCH/trunc_cudnn/libcudnn.so.9") / 2 )) "$SCRATCH/trunc_cudnn/libcudnn.so.9"
    export LD_LIBRARY_PATH="$SCRATCH/trunc_cudnn${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    pytruth trunc_cudnn ctypes-dlopen 'import ctypes; ctypes.CDLL("libcudnn.so.9"); print("ok: loaded")'
    pytruth trunc_cudnn torch-conv "$TORCH_CONV"
    check trunc_cudnn ) || echo "trunc_cudnn: state failed"
else
  echo "trunc_cudnn: no cuDNN 9 wheel here" | tee -a "$OUTDIR/trunc_cudnn.truth.txt"
fi

# ---- preload_lfs -----------------------------------------------------------------------------------------------
CUDART=$(first_file /usr/local/cuda/lib64/libcudart.so.13 /usr/local/cuda/targets/x86_64-linux/lib/libcudart.so.13)
[ -n "$CUDART" ] || CUDART=$(site_lib 'nvidia/cu13/lib/libcudart.so.13')
[ -n "$CUDART" ] || CUDART=$(site_lib 'nvidia/cuda_runtime/lib/libcudart.so.1*')
state preload_lfs "LD_PRELOAD of a Git LFS pointer of $CUDART named libcudart.so.13"
if [ -n "$CUDART" ]; then
  ( mkdir -p "$SCRATCH/preload_lfs" && lfs_pointer "$CUDART" "$SCRATCH/preload_lfs/libcudart.so.13"
    export LD_PRELOAD="$SCRATCH/preload_lfs/libcudart.so.13"
    pytruth preload_lfs torch-tensor "$TORCH"
    truth preload_lfs nvidia-smi nvidia-smi -L
    check preload_lfs ) || echo "preload_lfs: state failed"
else
  echo "preload_lfs: no libcudart.so.13 here" | tee -a "$OUTDIR/preload_lfs.truth.txt"
fi

# ---- i386_nccl -------------------------------------------------------------------------------------------------
state i386_nccl "a 32-bit i386 libnccl.so.2 first on LD_LIBRARY_PATH"
if command -v as >/dev/null && command -v ld >/dev/null; then
  ( mkdir -p "$SCRATCH/i386_nccl" && cd "$SCRATCH/i386_nccl" &&
    printf '.globl ncclGetVersion\n.type ncclGetVersion,@function\nncclGetVersion:\n movl $0,%%eax\n ret\n' > f.s &&
    as --32 -o f.o f.s && ld -m elf_i386 -shared -soname libnccl.so.2 -o libnccl.so.2 f.o && rm -f f.o f.s
    cd - > /dev/null
    export LD_LIBRARY_PATH="$SCRATCH/i386_nccl${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    truth i386_nccl file file -L "$SCRATCH/i386_nccl/libnccl.so.2"
    pytruth i386_nccl ctypes-dlopen 'import ctypes; l = ctypes.CDLL("libnccl.so.2"); print("ok: loaded", l._name)'
    pytruth i386_nccl torch-nccl 'import torch; print("ok: NCCL", torch.cuda.nccl.version())'
    check i386_nccl ) || echo "i386_nccl: state failed"
else
  echo "i386_nccl: binutils (as, ld) not installed: skipped" | tee -a "$OUTDIR/i386_nccl.truth.txt"
fi

echo "== done"
