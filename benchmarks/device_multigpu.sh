#!/usr/bin/env bash
# Issue 16 on the lent GPU machine (one GPU or several): gpudoctor check's multi-GPU area and smoke
# tests; the same with one GPU hidden (CUDA_VISIBLE_DEVICES=0) and with NCCL_P2P_DISABLE=1; on one GPU
# the smoke test's plumbing with --self-test and the framework's real NCCL; then bench_check.
# Outputs under $OUT. Usage: bash benchmarks/device_multigpu.sh   (kind nvidia-h200-x2 / -x4 for pairs)
set -u
. "$(dirname "$0")/device_env.sh"
unset PYTHONDONTWRITEBYTECODE
nvidia-smi -L; nvidia-smi topo -m 2>&1 | head -14; nvidia-smi topo -p2p r 2>&1 | head -12
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
NCCL=$(python3 -c "import nvidia.nccl, os, glob; print(glob.glob(os.path.join(list(nvidia.nccl.__path__)[0], 'lib', 'libnccl.so*'))[0])" 2>/dev/null)
echo "GPUs: $NGPU; NCCL library: $NCCL"
section() { awk '/^[^ ]+ (GPUs|Multi-GPU & NCCL|Smoke tests)$/{on=1} on{print} /^$/{on=0}' "$1"; tail -2 "$1"; }
echo "== check -v"; COLUMNS=160 NO_COLOR=1 python3 -m gpudoctor check -v > "$OUT/check-v.txt" 2>&1; echo "exit=$?"; section "$OUT/check-v.txt"
python3 -m gpudoctor check --json -o "$OUT/check.json"; echo "json exit=$?"
python3 - "$OUT/check.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
nv = r["probes"]["driver"]["facts"]["nvml"]
print("pairs:", json.dumps(nv.get("pairs"))[:1500])
print("nvlinks active per GPU:", [sum(1 for x in (g.get("nvlinks") or []) if x.get("active")) for g in nv["gpus"]])
print("pci_gpus:", r["probes"]["driver"]["facts"].get("pci_gpus"), "nvswitches:", r["probes"]["driver"]["facts"].get("pci_nvswitches"))
print("smoke_multigpu:", json.dumps(r["probes"].get("smoke_multigpu", {}).get("facts"))[:2500])
PY
echo "== CUDA_VISIBLE_DEVICES=0 (hides every GPU but the first)"; CUDA_VISIBLE_DEVICES=0 COLUMNS=160 NO_COLOR=1 python3 -m gpudoctor check -v > "$OUT/check-cvd0.txt" 2>&1; section "$OUT/check-cvd0.txt"
echo "== NCCL_P2P_DISABLE=1"; NCCL_P2P_DISABLE=1 COLUMNS=160 NO_COLOR=1 python3 -m gpudoctor check -v > "$OUT/check-p2p-off.txt" 2>&1; section "$OUT/check-p2p-off.txt"
echo "== NCCL_SOCKET_IFNAME=ib99"; NCCL_SOCKET_IFNAME=ib99 NO_COLOR=1 python3 -m gpudoctor check --no-smoke 2>&1 | grep -A3 "nccl.device_not_found" | head -4
if [ "$NGPU" -lt 2 ] && [ -n "$NCCL" ]; then
  echo "== multigpu-smoke --self-test (one GPU: copy to itself, one-rank NCCL all-reduce)"
  python3 -m gpudoctor.process.worker multigpu-smoke --self-test --nccl "$NCCL" 2>&1 | tail -1 | cut -c1-1200
fi
[ "${BENCH:-1}" = 1 ] && echo "== bench" && python3 benchmarks/bench_check.py --runs "${RUNS:-5}" --json "$OUT/bench-check.json" 2>&1 | tee "$OUT/bench-check.txt"
