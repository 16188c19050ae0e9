#!/usr/bin/env bash
# Issue 24 item 5 (the process and the GPU it shares): broken states made for real on the GPU machine, each
# with a real program's ground truth in the same state, then `gpudoctor check` (text and JSON), then undone.
# Limits are set in a subshell (gone when it exits); GPU memory is held by a background PyTorch process
# this script starts and kills (trap on EXIT). No GPU setting is changed.
#   as_limit     ulimit -v 8 GiB: CUDA's context reserves more address space -> out of memory
#   memory_97    another process holds ~97% of GPU memory: a 4 GiB allocation fails, small contexts still work
#   memory_full  another process holds all it can: a new context fails with out of memory
#   nofile_low   ulimit -Sn 48: exploratory: does PyTorch+CUDA fail? do the check's own steps (EMFILE)?
# Env: GD (command that runs gpudoctor), OUTDIR (outputs). Each state well under 60 s.
set -u
: "${GD:=python3 -m gpudoctor}" "${OUTDIR:=/tmp/sharing-out}"
mkdir -p "$OUTDIR"
HOLDER=""
cleanup() {
  if [ -n "$HOLDER" ]; then kill "$HOLDER" 2>/dev/null; wait "$HOLDER" 2>/dev/null; HOLDER=""; fi
  rm -f /tmp/sharing_holder.py /tmp/sharing_holder.ready
}
trap cleanup EXIT
trap 'exit 143' INT TERM  # so that a killed script still runs cleanup (the holder keeps GPU memory otherwise)

TORCH_CTX='import torch; torch.zeros(1).cuda(); torch.cuda.synchronize(); print("ok: context and a tensor on", torch.cuda.get_device_name(0))'
TORCH_4G='import torch; x = torch.empty(4 << 30, dtype=torch.uint8, device="cuda"); print("ok: 4 GiB allocated")'
DRIVER_CTX='
from cuda.bindings import driver as d
e = d.cuInit(0)[0]; print("cuInit", e.name)
if e == d.CUresult.CUDA_SUCCESS:
    e, dev = d.cuDeviceGet(0); e, ctx = d.cuDevicePrimaryCtxRetain(dev); print("cuDevicePrimaryCtxRetain", e.name)
'

truth() {  # STATE LABEL PYTHON-CODE: a real program in the state, its output and exit code
  { echo "\$ python3 -c <$2>"; timeout 60 python3 -c "$3"; echo "exit=$?"; } >> "$OUTDIR/$1.truth.txt" 2>&1
}
check() {  # STATE: gpudoctor in the state, text and JSON
  $GD check --timeout 30 > "$OUTDIR/$1.txt" 2>&1; echo "exit=$?" >> "$OUTDIR/$1.txt"
  $GD check --json --timeout 30 -o "$OUTDIR/$1.json" > /dev/null 2>&1
  grep -E '\[(process|gpu)\.' "$OUTDIR/$1.txt" | head -5
}
limits() { ulimit -a > "$OUTDIR/$1.limits.txt" 2>&1; }

hold() {  # FRACTION: start a PyTorch process holding that share of the GPU's memory (>= 1: all it can get)
  cat > /tmp/sharing_holder.py <<'EOF'
import sys, time, torch
frac = float(sys.argv[1])
free, total = torch.cuda.mem_get_info()
bufs = []
if frac < 1:
    bufs.append(torch.empty(min(int(total * frac), free - (256 << 20)), dtype=torch.uint8, device="cuda"))
else:
    chunk = 1 << 30
    while chunk >= 2 << 20:
        try:
            bufs.append(torch.empty(chunk, dtype=torch.uint8, device="cuda"))
        except RuntimeError:
            chunk //= 2
free, total = torch.cuda.mem_get_info()
open("/tmp/sharing_holder.ready", "w").write(f"holding; free {free >> 20} MiB of {total >> 20} MiB\n")
import os
parent = os.getppid()
for _ in range(180):  # at most 3 minutes, and never beyond the script that started it
    if os.getppid() != parent:
        break
    time.sleep(1)
EOF
  rm -f /tmp/sharing_holder.ready
  python3 /tmp/sharing_holder.py "$1" > "$OUTDIR/holder.$1.log" 2>&1 &
  HOLDER=$!
  for _ in $(seq 120); do [ -f /tmp/sharing_holder.ready ] && break; kill -0 "$HOLDER" 2>/dev/null || break; sleep 0.25; done
  cat /tmp/sharing_holder.ready 2>/dev/null || echo "holder not ready (see holder.$1.log)"
}

state() { echo "== $1"; }

state as_limit
( ulimit -v 8388608; limits as_limit
  truth as_limit torch-tensor "$TORCH_CTX"; truth as_limit driver-context "$DRIVER_CTX"
  check as_limit ) || echo "as_limit: state failed"

state memory_97
hold 0.97
nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv > "$OUTDIR/memory_97.apps.txt" 2>&1
truth memory_97 torch-4GiB "$TORCH_4G"; truth memory_97 torch-tensor "$TORCH_CTX"
check memory_97 || echo "memory_97: state failed"
cleanup

state memory_full
hold 1
nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv > "$OUTDIR/memory_full.apps.txt" 2>&1
truth memory_full torch-tensor "$TORCH_CTX"; truth memory_full driver-context "$DRIVER_CTX"
check memory_full || echo "memory_full: state failed"
cleanup

state nofile_low
( ulimit -Sn 48; limits nofile_low
  truth nofile_low torch-tensor "$TORCH_CTX"; truth nofile_low driver-context "$DRIVER_CTX"
  check nofile_low ) || echo "nofile_low: state failed"

for s in as_limit memory_97 memory_full nofile_low; do
  echo "-- $s: truth: $(grep -E '^(ok|exit=|.*Error|cuInit|cuDevice)' "$OUTDIR/$s.truth.txt" 2>/dev/null | tr '\n' ' ' | cut -c1-300)"
  echo "   check: $(tail -2 "$OUTDIR/$s.txt" 2>/dev/null | tr '\n' ' ')"
done
