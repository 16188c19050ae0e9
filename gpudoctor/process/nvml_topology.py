"""Between-GPU facts from NVML, read in the NVML child (:func:`gpudoctor.process.worker.task_nvml`).

Per GPU, its NVLink links; per pair of GPUs, the PCIe topology level and the peer-to-peer status.
Names and numbers are nvml.h's (NVML API Reference, "Topology Queries" and "NvLink Methods"):

* ``nvmlGpuTopologyLevel_t``: INTERNAL 0 (one board), SINGLE 10 (one PCIe switch), MULTIPLE 20 (several
  switches, no host bridge), HOSTBRIDGE 30, NODE 40 (same NUMA node), SYSTEM 50 (across the SMP
  interconnect); nvidia-smi topo -m calls them PIX/PXB/PHB/NODE/SYS.
* ``nvmlGpuP2PCapsIndex_t``: READ 0, WRITE 1, NVLINK 2, ATOMICS 3, PROP 4. nvidia-ml-py 13.615 defines
  ``NVML_P2P_CAPS_INDEX_READ`` as the tuple ``(0,)`` (a stray comma), which ctypes refuses: the
  numbers are used here, not its constants.
* ``nvmlGpuP2PStatus_t``: OK 0, CHIPSET_NOT_SUPPORTED 1, GPU_NOT_SUPPORTED 2, IOH_TOPOLOGY_NOT_SUPPORTED 3,
  DISABLED_BY_REGKEY 4, NOT_SUPPORTED 5, UNKNOWN 6.
"""
from __future__ import annotations

from typing import Dict, List, Optional

TOPOLOGY_LEVELS = {0: "INTERNAL", 10: "SINGLE", 20: "MULTIPLE", 30: "HOSTBRIDGE", 40: "NODE", 50: "SYSTEM"}
#: The same levels as ``nvidia-smi topo -m`` names them (its legend), for reports users compare with it.
NVIDIA_SMI_NAMES = {"INTERNAL": "board", "SINGLE": "PIX", "MULTIPLE": "PXB", "HOSTBRIDGE": "PHB", "NODE": "NODE",
                    "SYSTEM": "SYS"}
P2P_CAPS = {"read": 0, "write": 1, "nvlink": 2, "atomics": 3}
P2P_STATUS = {0: "OK", 1: "CHIPSET_NOT_SUPPORTED", 2: "GPU_NOT_SUPPORTED", 3: "IOH_TOPOLOGY_NOT_SUPPORTED",
              4: "DISABLED_BY_REGKEY", 5: "NOT_SUPPORTED", 6: "UNKNOWN"}
NVLINK_DEVICE_TYPES = {0: "GPU", 1: "IBMNPU", 2: "SWITCH", 255: "UNKNOWN"}
MAX_LINKS = 36  # NVML_NVLINK_MAX_LINKS in nvml.h of CUDA 13 (18 in older headers)


def _err(exc) -> str:
    return str(exc) or type(exc).__name__


def nvlinks(handle) -> Optional[List[dict]]:
    """Every NVLink of a GPU: ``[{"link", "active", "version", "remote_bus_id", "remote_type"}]``;
    None when the GPU has no NVLink (NVML answers NotSupported for link 0)."""
    import pynvml

    remote_pci = getattr(pynvml, "nvmlDeviceGetNvLinkRemotePciInfo_v2", None) or \
        getattr(pynvml, "nvmlDeviceGetNvLinkRemotePciInfo", None)
    links = []
    for link in range(MAX_LINKS):
        try:
            state = pynvml.nvmlDeviceGetNvLinkState(handle, link)
        except pynvml.NVMLError_NotSupported:
            break
        except pynvml.NVMLError as exc:  # InvalidArgument past the GPU's last link; anything else is a fact
            if isinstance(exc, pynvml.NVMLError_InvalidArgument):
                break
            links.append({"link": link, "error": _err(exc)})
            continue
        entry = {"link": link, "active": bool(state)}
        if state:
            for key, fn, conv in (("version", pynvml.nvmlDeviceGetNvLinkVersion, None),
                                  ("remote_bus_id", remote_pci, lambda v: _bus_id(getattr(v, "busId", v))),
                                  ("remote_type", getattr(pynvml, "nvmlDeviceGetNvLinkRemoteDeviceType", None),
                                   lambda v: NVLINK_DEVICE_TYPES.get(v, str(v)))):
                if fn is None:
                    continue
                try:
                    value = fn(handle, link)
                    entry[key] = conv(value) if conv else value
                except pynvml.NVMLError:
                    entry[key] = None
        links.append(entry)
    return links or None


def _bus_id(value) -> Optional[str]:
    if value is None:
        return None
    text = value.decode() if isinstance(value, bytes) else str(value)
    return text.lower()


def pairs(handles: Dict[int, object]) -> List[dict]:
    """Every unordered pair of GPUs (NVML indices): ``[{"a", "b", "topology", "topology_level",
    "p2p": {"read": "OK", "write": ..., "nvlink": ..., "atomics": ...}}]``; a query NVML refuses is
    ``"error: <NVML message>"`` in place of the value."""
    import pynvml

    out = []
    indices = sorted(handles)
    for n, a in enumerate(indices):
        for b in indices[n + 1:]:
            ha, hb = handles[a], handles[b]
            entry: dict = {"a": a, "b": b}
            try:
                level = pynvml.nvmlDeviceGetTopologyCommonAncestor(ha, hb)
                entry["topology_level"] = level
                entry["topology"] = TOPOLOGY_LEVELS.get(level, str(level))
            except pynvml.NVMLError as exc:
                entry["topology"] = f"error: {_err(exc)}"
            p2p = {}
            for cap, index in P2P_CAPS.items():
                try:
                    p2p[cap] = P2P_STATUS.get(pynvml.nvmlDeviceGetP2PStatus(ha, hb, index), "UNKNOWN")
                except pynvml.NVMLError as exc:
                    p2p[cap] = f"error: {_err(exc)}"
            entry["p2p"] = p2p
            out.append(entry)
    return out
