#!/usr/bin/env bash
# Issue 24 item 1, the knowledge half: do the templates read out of NVIDIA's binaries on the CPU machine
# (kb/tools/generated.json: CUDA 11.8/13.0 tools, driver 535's libcuda/NVML, libnccl 2.32.3, TensorRT 11.4)
# recognise what the real tools of the GPU machine print (driver 580, PyTorch's own NCCL release)? For each
# state: a real program's words in the state (ground truth), `gpudoctor explain` of those words (text and
# JSON), then `gpudoctor check` (text and JSON), then undone (each state lives in a subshell; scratch files
# are removed on EXIT). What each should show:
#   nccl_no_iface   NCCL_SOCKET_IFNAME=gd-no-such-if0 NCCL_DEBUG=WARN: torch.distributed (nccl, world size 1)
#                   fails at NCCL's bootstrap. The truth has NCCL's own "NCCL WARN Bootstrap : no socket interface
#                   found" (or the NET/Socket variant); explain names libnccl as the tool that said it
#                   ([tool.message], low) or a class its family gives, after the NCCL error code's own reading
#   nvcc_no_flag    nvcc --no-such-gd-flag on the machine's CUDA 13.0: the truth is "nvcc fatal : Unknown option";
#                   explain: "nvcc said: Unknown option '--no-such-gd-flag'" [tool.message]
#   ptxas_extern    ptxas on a PTX file that calls an undefined function: "ptxas fatal : Unresolved extern function
#                   'gd_missing'"; explain: "ptxas said: Unresolved extern function 'gd_missing'" [tool.message]
#   jit_ptx_new     the driver's JIT (cuModuleLoadDataEx through ctypes, an error-log buffer) on PTX .version 99.9:
#                   the driver 580's JIT log ("Unsupported .version 99.9; current version is ...") and
#                   CUDA_ERROR_UNSUPPORTED_PTX_VERSION; explain: driver.ptx_too_new
# Env: GD (command that runs gpudoctor), OUTDIR (outputs). Each state well under 25 s.
set -u
: "${GD:=python3 -m gpudoctor}" "${OUTDIR:=/tmp/toolkb-out}"
mkdir -p "$OUTDIR"
SCRATCH=$(mktemp -d /tmp/gd-toolkb.XXXXXX)
trap 'rm -rf "$SCRATCH"' EXIT

truth() {  # STATE LABEL COMMAND...: a real program in the state, its output and exit code
  { echo "\$ $2"; timeout 60 "${@:3}"; echo "exit=$?"; } >> "$OUTDIR/$1.truth.txt" 2>&1
}
explain() {  # STATE: explain the real program's words, text and JSON
  $GD explain "$OUTDIR/$1.truth.txt" --top 5 > "$OUTDIR/$1.explain.txt" 2>&1; echo "exit=$?" >> "$OUTDIR/$1.explain.txt"
  $GD explain "$OUTDIR/$1.truth.txt" --json --top 5 > "$OUTDIR/$1.explain.json" 2>/dev/null
  grep -E '^[0-9]+\. ' "$OUTDIR/$1.explain.txt" | head -5
  return 0
}
check() {  # STATE [ARGS...]: gpudoctor in the state, text and JSON
  local s=$1; shift
  $GD check --timeout 30 "$@" > "$OUTDIR/$s.txt" 2>&1; echo "exit=$?" >> "$OUTDIR/$s.txt"
  $GD check --json --timeout 30 -o "$OUTDIR/$s.json" "$@" > /dev/null 2>&1
  return 0
}
state() { echo "== $1"; echo "# $2" > "$OUTDIR/$1.truth.txt"; }
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
PTXAS=$(dirname "$NVCC")/ptxas

# ---- nccl_no_iface -----------------------------------------------------------------------------------------------
state nccl_no_iface "NCCL_SOCKET_IFNAME=gd-no-such-if0 NCCL_DEBUG=WARN"
( export NCCL_SOCKET_IFNAME=gd-no-such-if0 NCCL_DEBUG=WARN MASTER_ADDR=127.0.0.1 MASTER_PORT=29533
  truth nccl_no_iface "torch.distributed nccl all_reduce, world size 1" python3 -c '
import torch, torch.distributed as dist
dist.init_process_group("nccl", rank=0, world_size=1)
x = torch.ones(4, device="cuda"); dist.all_reduce(x); torch.cuda.synchronize(); print("ok:", x.tolist())
dist.destroy_process_group()'
  explain nccl_no_iface
  check nccl_no_iface ) || echo "nccl_no_iface: state failed"

# ---- nvcc_no_flag ------------------------------------------------------------------------------------------------
state nvcc_no_flag "nvcc --no-such-gd-flag"
( printf '__global__ void k() {}\n' > "$SCRATCH/k.cu"
  truth nvcc_no_flag "nvcc --no-such-gd-flag -c k.cu" "$NVCC" --no-such-gd-flag -c "$SCRATCH/k.cu" -o "$SCRATCH/k.o"
  explain nvcc_no_flag ) || echo "nvcc_no_flag: state failed"

# ---- ptxas_extern ------------------------------------------------------------------------------------------------
state ptxas_extern "ptxas on PTX calling an undefined function"
( printf '.version 7.0\n.target sm_70\n.address_size 64\n.extern .func gd_missing();\n.visible .entry k() { call gd_missing; ret; }\n' > "$SCRATCH/k.ptx"
  truth ptxas_extern "ptxas -arch=sm_90 k.ptx" "$PTXAS" -arch=sm_90 "$SCRATCH/k.ptx" -o "$SCRATCH/k.cubin"
  explain ptxas_extern ) || echo "ptxas_extern: state failed"

# ---- jit_ptx_new -------------------------------------------------------------------------------------------------
state jit_ptx_new "the driver's JIT on PTX .version 99.9"
( truth jit_ptx_new "cuModuleLoadDataEx(PTX .version 99.9) with an error log" python3 -c '
import ctypes
cu = ctypes.CDLL("libcuda.so.1")
dev, ctx, mod = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_void_p()
assert cu.cuInit(0) == 0 and cu.cuDeviceGet(ctypes.byref(dev), 0) == 0
assert cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0 and cu.cuCtxSetCurrent(ctx) == 0
ptx = b".version 99.9\n.target sm_90\n.address_size 64\n.visible .entry k() { ret; }\n"
log = ctypes.create_string_buffer(8192)
opts = (ctypes.c_int * 2)(5, 6)  # CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES
vals = (ctypes.c_void_p * 2)(ctypes.cast(log, ctypes.c_void_p), ctypes.c_void_p(8192))
rc = cu.cuModuleLoadDataEx(ctypes.byref(mod), ctypes.c_char_p(ptx), 2, opts, vals)
name = ctypes.c_char_p(); cu.cuGetErrorName(rc, ctypes.byref(name))
print(log.value.decode(errors="replace")); print("cuModuleLoadDataEx:", rc, name.value.decode() if name.value else "?")
raise SystemExit(0 if rc == 0 else 1)'
  explain jit_ptx_new ) || echo "jit_ptx_new: state failed"

echo "toolkb: outputs in $OUTDIR"
