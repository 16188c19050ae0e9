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


def norm_bus(bus: str) -> str:
    """``00000000:17:00.0`` (NVML) and ``0000:17:00.0`` (sysfs) name the same function."""
    bus = (bus or "").lower()
    parts = bus.split(":")
    if len(parts) == 3 and all(c in "0123456789abcdef" for c in parts[0]) and parts[0]:
        return f"{int(parts[0], 16):04x}:{parts[1]}:{parts[2]}"
    return bus


def nvlink_pairs(gpus, pairs=()) -> Dict[tuple, int]:
    """{(a, b): active NVLinks between GPU a and GPU b (a < b)}, as ``nvidia-smi topo -m`` counts them (NV#).

    A link whose remote end is a GPU counts for that pair; a link is seen from both ends, so each direction
    is counted and the larger count kept. Links to an NVSwitch (HGX boards; in a VM the switch is not on
    the guest's bus and NVML gives its bus id as ffffffff:ff:ff.0) join every pair of GPUs that both have
    active switch links and whose NVLink P2P status is not refused: min(a's, b's) links, which is what
    nvidia-smi printed on a real 2-GPU H200 VM (18 switch links each, NV18).
    """
    by_bus = {norm_bus(g.get("pci_bus_id")): g["index"] for g in gpus if g.get("pci_bus_id")}
    directed: Dict[tuple, int] = {}
    switch_links: Dict[int, int] = {}
    for g in gpus:
        for link in g.get("nvlinks") or []:
            if not link.get("active"):
                continue
            if link.get("remote_type") == "SWITCH":
                switch_links[g["index"]] = switch_links.get(g["index"], 0) + 1
                continue
            other = by_bus.get(norm_bus(link.get("remote_bus_id") or ""))
            if other is not None and other != g["index"]:
                directed[(g["index"], other)] = directed.get((g["index"], other), 0) + 1
    out: Dict[tuple, int] = {}
    for (a, b), n in directed.items():
        key = (min(a, b), max(a, b))
        out[key] = max(out.get(key, 0), n)
    refused = {(p["a"], p["b"]) for p in pairs if (p.get("p2p") or {}).get("nvlink") not in (None, "OK")}
    for a in switch_links:
        for b in switch_links:
            if a < b and (a, b) not in out and (a, b) not in refused:
                out[(a, b)] = min(switch_links[a], switch_links[b])
    return out
