#!/usr/bin/env bash
# Issue 16 (and 12/15) on the lent GPU machine: gpudoctor check's multi-GPU area, the multi-GPU smoke
# test's plumbing on one GPU (--self-test with the framework's real NCCL), the hidden-GPU and NCCL
# variable findings, then bench_check. Outputs under $OUT.
set -u
. "$(dirname "$0")/device_env.sh"
unset PYTHONDONTWRITEBYTECODE
nvidia-smi -L; nvidia-smi topo -m 2>&1 | head -12
NCCL=$(python3 -c "import nvidia.nccl, os, glob; print(glob.glob(os.path.join(list(nvidia.nccl.__path__)[0], 'lib', 'libnccl.so*'))[0])" 2>/dev/null)
echo "NCCL library: $NCCL"
echo "== check -v"; COLUMNS=140 NO_COLOR=1 python3 -m gpudoctor check -v > "$OUT/check-v.txt" 2>&1; echo "exit=$?"
awk '/^. (Multi-GPU & NCCL|Smoke tests)/{on=1} on{print} /^$/{on=0}' "$OUT/check-v.txt"; tail -3 "$OUT/check-v.txt"
python3 -m gpudoctor check --json -o "$OUT/check.json"; echo "json exit=$?"
python3 - "$OUT/check.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
nv = r["probes"]["driver"]["facts"]["nvml"]
print("nvml pairs:", nv.get("pairs"), "nvlinks:", [g.get("nvlinks") for g in nv["gpus"]])
print("pci_gpus:", r["probes"]["driver"]["facts"].get("pci_gpus"))
n = r["probes"]["nccl"]["facts"]; print("nccl:", json.dumps({k: n[k] for k in ("libraries", "loader_pick", "vars", "infiniband_devices", "shm")})[:900])
print("hypervisor:", r["probes"]["platform"]["facts"].get("hypervisor"))
for f in r["findings"]:
    if f["area"] in ("multigpu", "devices") or f["id"].startswith(("smoke.p2p", "smoke.nccl", "gpu.", "nccl.", "p2p.", "nvlink.")):
        print(f["severity"], f["id"], f["title"])
PY
echo "== multigpu-smoke --self-test (one GPU: copy to itself, one-rank NCCL all-reduce)"
CUDA_DEVICE_MAX_CONNECTIONS=1 /usr/bin/time -f "wall %e s maxrss %M KB" python3 -m gpudoctor.process.worker multigpu-smoke --self-test --nccl "$NCCL" 2>&1 | tail -3
echo "== same, NCCL_P2P_DISABLE=1 NCCL_DEBUG unset"; NCCL_P2P_DISABLE=1 python3 -m gpudoctor.process.worker multigpu-smoke --self-test --nccl "$NCCL" 2>&1 | tail -1 | cut -c1-600
echo "== CUDA_VISIBLE_DEVICES=1 (hides the only GPU)"; CUDA_VISIBLE_DEVICES=1 NO_COLOR=1 python3 -m gpudoctor check --no-smoke 2>&1 | grep -E "✗|!" | head -8
echo "== NCCL_P2P_DISABLE=1 NCCL_SOCKET_IFNAME=ib99"; NCCL_P2P_DISABLE=1 NCCL_SOCKET_IFNAME=ib99 NO_COLOR=1 python3 -m gpudoctor check --no-smoke -v 2>&1 | sed -n '/Multi-GPU/,/^$/p'
echo "== bench"; python3 benchmarks/bench_check.py --runs "${RUNS:-5}" --json "$OUT/bench-check.json" 2>&1 | tee "$OUT/bench-check.txt"
