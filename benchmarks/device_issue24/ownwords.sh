#!/usr/bin/env bash
# Issue 24 item 1 (the tool's own words): broken states made for real, each with a real program's ground truth
# in the same environment, then `gpudoctor check` (text and JSON), then undone. Every state lives in a
# subshell (its variables go with it) and a scratch dir removed on EXIT. What each should show:
#   ptxas_flag      NVCC_APPEND_FLAGS='-Xptxas --no-such-ptxas-option': nvcc runs, ptxas refuses. smoke.nvcc (fail)
#                   quotes ptxas's own line ("ptxas fatal : Unknown option ..."), evidence.stderr_tail holds it,
#                   evidence.cause is explain's reading where the knowledge base knows the message
#   host_flag       NVCC_APPEND_FLAGS='-Xcompiler -fno-such-gcc-option': the host compiler refuses. smoke.nvcc and
#                   toolkit findings quote gcc's own "unrecognized command-line option" line, not "exited with code 1"
#   cvd_bogus_uuid  CUDA_VISIBLE_DEVICES=GPU-<a UUID no GPU has>: torch sees no GPU. device.not_visible (fail); the
#                   NVRTC smoke launch failure carries cuInit's words, read as device.not_visible by explain
#   shadow_cuda     a stray package directory cuda/ (an empty __init__.py) first on PYTHONPATH, as a project folder
#                   named "cuda" does: `from cuda.bindings import driver` fails. smoke.nvrtc / library.not_found say
#                   "'cuda' resolves to <scratch>/cuda/__init__.py, which shadows the installed cuda-bindings ..."
#                   (evidence.provided_by.shadowed = true), fix: rename it or take it off PYTHONPATH
#   no_trt_module   `import tensorrt` in this python (no TensorRT on the machine): the truth is Python's
#                   ModuleNotFoundError; gpudoctor's provider lookup must name tensorrt-cu13 (from the real wheels'
#                   metadata) and `python -m pip install tensorrt-cu13`
#   lean_refuses    (only when .ci/cache/trt-lean and ../shared/engines exist) the real TensorRT 11.4 lean runtime
#                   on PYTHONPATH, `check --engine` on a real TensorRT 10.0 plan: the runtime refuses it in its own
#                   words -> tensorrt.engine_mismatch is a FAIL (it was a warning), its words in evidence.stderr_tail
#   nccl_net_bogus  (only with 2+ GPUs) NCCL_NET=bogus and NCCL_DEBUG=VERSION (so NCCL's warnings are not captured):
#                   torch's NCCL all-reduce is the ground truth; smoke.nccl (fail) shows NCCL's error and, where NCCL
#                   asked for NCCL_DEBUG=WARN, evidence.rerun with what the rerun said ("rerun with NCCL_DEBUG=WARN,
#                   NCCL said: ...")
# Env: GD (command that runs gpudoctor), OUTDIR (outputs). Each state well under 25 s.
set -u
: "${GD:=python3 -m gpudoctor}" "${OUTDIR:=/tmp/ownwords-out}"
mkdir -p "$OUTDIR"
SCRATCH=$(mktemp -d /tmp/gd-ownwords.XXXXXX)
trap 'rm -rf "$SCRATCH"' EXIT
REPO=$(pwd)

truth() {  # STATE LABEL COMMAND...: a real program in the state, its output and exit code
  { echo "\$ $2"; timeout 60 "${@:3}"; echo "exit=$?"; } >> "$OUTDIR/$1.truth.txt" 2>&1
}
pytruth() { truth "$1" "python3 -c <$2>" python3 -c "$3"; }
check() {  # STATE [ARGS...]: gpudoctor in the state, text and JSON
  local s=$1; shift
  $GD check --timeout 30 "$@" > "$OUTDIR/$s.txt" 2>&1; echo "exit=$?" >> "$OUTDIR/$s.txt"
  $GD check --json --timeout 30 -o "$OUTDIR/$s.json" "$@" > /dev/null 2>&1
  grep -E ' said: |provided by|shadows|refused|rerun with' "$OUTDIR/$s.txt" | head -6
}
state() { echo "== $1"; echo "# $2" > "$OUTDIR/$1.truth.txt"; }
KERNEL="$REPO/gpudoctor/smoke/vector_add.cu"
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
TORCH='import torch; x = torch.ones(4, device="cuda"); print("ok:", (x + x).sum().item(), torch.cuda.get_device_name(0))'
BINDINGS='from cuda.bindings import driver; print("ok: cuInit", driver.cuInit(0))'

# ---- ptxas_flag ------------------------------------------------------------------------------------------------
state ptxas_flag "NVCC_APPEND_FLAGS='-Xptxas --no-such-ptxas-option'"
( export NVCC_APPEND_FLAGS='-Xptxas --no-such-ptxas-option'
  truth ptxas_flag "nvcc vector_add.cu -o x" "$NVCC" "$KERNEL" -o "$SCRATCH/ptxas_x"
  check ptxas_flag ) || echo "ptxas_flag: state failed"

# ---- host_flag -------------------------------------------------------------------------------------------------
state host_flag "NVCC_APPEND_FLAGS='-Xcompiler -fno-such-gcc-option'"
( export NVCC_APPEND_FLAGS='-Xcompiler -fno-such-gcc-option'
  truth host_flag "nvcc vector_add.cu -o x" "$NVCC" "$KERNEL" -o "$SCRATCH/host_x"
  truth host_flag "nvcc --version" "$NVCC" --version
  check host_flag ) || echo "host_flag: state failed"

# ---- cvd_bogus_uuid --------------------------------------------------------------------------------------------
state cvd_bogus_uuid "CUDA_VISIBLE_DEVICES=GPU-12345678-90ab-cdef-1234-567890abcdef (no GPU has it)"
( export CUDA_VISIBLE_DEVICES=GPU-12345678-90ab-cdef-1234-567890abcdef
  pytruth cvd_bogus_uuid torch "$TORCH"
  pytruth cvd_bogus_uuid cuda-bindings "$BINDINGS"
  check cvd_bogus_uuid ) || echo "cvd_bogus_uuid: state failed"

# ---- shadow_cuda -----------------------------------------------------------------------------------------------
state shadow_cuda "a stray package dir cuda/ (empty __init__.py) first on PYTHONPATH"
( mkdir -p "$SCRATCH/shadow/cuda" && : > "$SCRATCH/shadow/cuda/__init__.py"
  export PYTHONPATH="$SCRATCH/shadow${PYTHONPATH:+:$PYTHONPATH}"
  pytruth shadow_cuda cuda-bindings "$BINDINGS"
  pytruth shadow_cuda torch "$TORCH"
  pytruth shadow_cuda cuda.__file__ 'import cuda; print(cuda.__file__)'
  check shadow_cuda ) || echo "shadow_cuda: state failed"

# ---- lean_refuses ----------------------------------------------------------------------------------------------
LEAN="$REPO/.ci/cache/trt-lean/site-packages"
PLAN="$REPO/../shared/engines/onjackay--model-deploy-tutorial--mnist.engine"
state lean_refuses "TensorRT 11.4 lean runtime on PYTHONPATH, check --engine on a TensorRT 10.0.1.6 plan"
if [ -d "$LEAN/tensorrt_lean_bindings" ] && [ -f "$PLAN" ]; then
  ( export PYTHONPATH="$LEAN${PYTHONPATH:+:$PYTHONPATH}"
    pytruth lean_refuses "deserialize with tensorrt_lean" "
import tensorrt_lean_bindings as trt
class L(trt.ILogger):
    def __init__(s): trt.ILogger.__init__(s)
    def log(s, sev, msg): print(sev, msg)
rt = trt.Runtime(L()); rt.engine_host_code_allowed = True
e = rt.deserialize_cuda_engine(open('$PLAN', 'rb').read()); print('loaded' if e else 'refused')
import os; os._exit(0)"
    check lean_refuses --no-smoke --engine "$PLAN" ) || echo "lean_refuses: state failed"
else
  echo "skipped: $LEAN or $PLAN missing" | tee -a "$OUTDIR/lean_refuses.truth.txt"
fi

# ---- no_trt_module ---------------------------------------------------------------------------------------------
state no_trt_module "import tensorrt in this python (TensorRT not installed): which distribution provides it"
pytruth no_trt_module "import tensorrt" 'import tensorrt'
( cd "$REPO" && python3 -c "from gpudoctor.probes.providers import provider; print(provider(module='tensorrt'))" \
    >> "$OUTDIR/no_trt_module.truth.txt" 2>&1 ) || echo "no_trt_module: state failed"

# ---- nccl_net_bogus --------------------------------------------------------------------------------------------
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
state nccl_net_bogus "NCCL_NET=bogus NCCL_DEBUG=VERSION ($NGPU GPUs)"
if [ "${NGPU:-0}" -ge 2 ]; then
  ( export NCCL_NET=bogus NCCL_DEBUG=VERSION
    pytruth nccl_net_bogus "torch NCCL all-reduce" 'import torch, torch.cuda.nccl as n; xs = [torch.ones(4, device=f"cuda:{i}") for i in range(torch.cuda.device_count())]; n.all_reduce(xs); torch.cuda.synchronize(); print("ok:", xs[0].tolist())'
    check nccl_net_bogus ) || echo "nccl_net_bogus: state failed"
else
  echo "skipped: $NGPU GPU(s); the multi-GPU smoke test needs two" | tee -a "$OUTDIR/nccl_net_bogus.truth.txt"
fi
echo "ownwords: done"
