#!/usr/bin/env bash
# Issue 12/15/16 experiment on the lent GPU: per-step RSS of a CUDA process (with/without
# CUDA_DEVICE_MAX_CONNECTIONS=1), nvcc's per-phase build times, per-probe costs, a check.
set -u
. "$(dirname "$0")/device_env.sh"
unset PYTHONDONTWRITEBYTECODE
echo "== rss"; python3 benchmarks/device_rss_probe.py nvrtc
echo "== rss, CUDA_DEVICE_MAX_CONNECTIONS=1"; CUDA_DEVICE_MAX_CONNECTIONS=1 python3 benchmarks/device_rss_probe.py
echo "== rss, CUDA_MODULE_LOADING=EAGER"; CUDA_MODULE_LOADING=EAGER python3 benchmarks/device_rss_probe.py
echo "== nvcc phases"; T=$(mktemp -d); cp gpudoctor/smoke/vector_add.cu "$T/"
( cd "$T" && for i in 1 2; do /usr/bin/time -f "nvcc wall %e s maxrss %M KB" nvcc -arch=sm_90 --time phases.csv -o smoke vector_add.cu; done; cat phases.csv | tail -30;
  /usr/bin/time -f "nvcc -cubin wall %e s maxrss %M KB" nvcc -arch=sm_90 -cubin -o k.cubin vector_add.cu )
echo "== python start"; for i in 1 2 3; do /usr/bin/time -f "%e s" python3 -c pass; done
echo "== probe costs"; python3 benchmarks/probe_costs.py; python3 benchmarks/probe_costs.py
echo "== check -v x3 (no-smoke, then full)"
for i in 1 2 3; do NO_COLOR=1 python3 -m gpudoctor check --no-smoke -v 2>&1 | tail -2; done
for i in 1 2 3; do /usr/bin/time -f "wall %e s" python3 -m gpudoctor check --json -o /tmp/r.json; python3 -c "import json;print('elapsed', json.load(open('/tmp/r.json'))['elapsed_s'])"; done
for i in 1 2 3; do /usr/bin/time -f "no-smoke wall %e s" python3 -m gpudoctor check --no-smoke --json -o /tmp/r.json; done
python3 -X importtime -m gpudoctor check --no-smoke --json -o /tmp/r.json 2>&1 | sort -t'|' -k2 -n -r | head -12
echo "== nvml multi-gpu facts"; python3 - <<'PY'
import pynvml as N
N.nvmlInit()
n = N.nvmlDeviceGetCount(); print("count", n)
for i in range(n):
    h = N.nvmlDeviceGetHandleByIndex(i)
    print(i, N.nvmlDeviceGetName(h), N.nvmlDeviceGetPciInfo(h).busId)
    for fn in ("nvmlDeviceGetCurrPcieLinkGeneration", "nvmlDeviceGetCurrPcieLinkWidth", "nvmlDeviceGetMaxPcieLinkGeneration",
               "nvmlDeviceGetMaxPcieLinkWidth", "nvmlDeviceGetPersistenceMode", "nvmlDeviceGetEccMode", "nvmlDeviceGetMigMode"):
        try: print("  ", fn, getattr(N, fn)(h))
        except Exception as e: print("  ", fn, "ERR", type(e).__name__, e)
    try: print("   topo self", N.nvmlDeviceGetTopologyCommonAncestor(h, h))
    except Exception as e: print("   topo self ERR", type(e).__name__, e)
    try: print("   p2p self", N.nvmlDeviceGetP2PStatus(h, h, N.NVML_P2P_CAPS_INDEX_READ))
    except Exception as e: print("   p2p self ERR", type(e).__name__, e)
    for l in range(N.NVML_NVLINK_MAX_LINKS):
        try:
            st = N.nvmlDeviceGetNvLinkState(h, l)
        except Exception as e:
            print("   link", l, "ERR", type(e).__name__, e); continue
        out = [f"state={st}"]
        for fn in ("nvmlDeviceGetNvLinkVersion", "nvmlDeviceGetNvLinkRemotePciInfo_v2", "nvmlDeviceGetNvLinkRemoteDeviceType"):
            try:
                v = getattr(N, fn)(h, l); out.append(f"{fn[17:]}={getattr(v, 'busId', v)}")
            except Exception as e: out.append(f"{fn[17:]} ERR {e}")
        print("   link", l, *out)
PY
python3 -c "import nvidia.nccl, os; print(nvidia.nccl.__path__)" 2>&1; pip list 2>/dev/null | grep -i nccl; ls /opt/torch/.venv/lib/python3*/site-packages/nvidia/nccl/lib 2>&1 | head; df -h /dev/shm; env | grep -i nccl
