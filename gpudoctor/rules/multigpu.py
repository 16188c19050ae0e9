"""Between the GPUs of one node: a GPU missing, GPUs that differ, peer access, NVLink, and what NCCL needs.

Sources: NVML API Reference (topology levels, P2P status, NVLink state), NCCL User Guide
"Troubleshooting" (https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html: PCI
ACS and the IOMMU break GPU Direct P2P; Docker's default /dev/shm is too small, use ``--shm-size=1g`` or
``--ipc=host``) and "Environment Variables" (https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html).
"""
from __future__ import annotations

import shlex
from typing import Dict, List

from gpudoctor.findings import Finding, Fix, Severity
from gpudoctor.formats import nccl_env as nccl_env_fmt
from gpudoctor.process.tail import tail
from gpudoctor.process.nvml_topology import NVIDIA_SMI_NAMES, nvlink_pairs, norm_bus

TROUBLESHOOTING = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html"
NCCL_ENV_DOC = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html"
#: Pairs this close share a board or PCIe switches (no host bridge in between): peer access is expected.
CLOSE_LEVELS = ("INTERNAL", "SINGLE", "MULTIPLE")
#: NCCL's troubleshooting guide asks for --shm-size=1g in containers.
SHM_MIN_BYTES = 1 << 30
WHERE_SET = "grep -n NCCL_ ~/.bashrc ~/.profile /etc/nccl.conf ~/.nccl.conf /etc/environment 2>/dev/null"

# nvidia-smi's names for the PCIe levels, as users see them in `nvidia-smi topo -m`.
TOPO_SHORT = NVIDIA_SMI_NAMES  # as users see them in `nvidia-smi topo -m`


def _nvml(facts) -> dict:
    nvml = facts["driver"].get("nvml") or {}
    return nvml if nvml.get("status") == "ok" else {}


def _gpus(facts) -> List[dict]:
    return [g for g in _nvml(facts).get("gpus") or [] if "error" not in g]


def gpu_missing(facts, ctx) -> List[Finding]:
    """sysfs lists an NVIDIA GPU bound to the nvidia driver (or to none) that NVML does not see."""
    plat = facts["platform"]
    if (plat.get("container") or {}).get("is_container") or (plat.get("wsl") or {}).get("is_wsl"):
        return []  # a container sees the host's PCI bus but only the GPUs it was given
    nvml = _nvml(facts)
    if not nvml:
        return []  # driver_state explains why NVML sees nothing
    seen = {norm_bus(g.get("pci_bus_id")) for g in nvml.get("gpus") or [] if g.get("pci_bus_id")}
    pci = facts["driver"].get("pci_gpus") or []
    missing = [g for g in pci if g.get("driver") in ("nvidia", None) and norm_bus(g["bus_id"]) not in seen]
    if not missing:
        return []
    other = [f"{g['bus_id']} ({g['driver']})" for g in pci if g.get("driver") not in ("nvidia", None)]
    names = ", ".join(g["bus_id"] + ("" if g.get("driver") else " (no driver bound)") for g in missing)
    return [Finding(
        id="gpu.missing", severity=Severity.FAIL, area="devices",
        title=f"{len(missing)} of {len(pci)} NVIDIA GPUs on the PCI bus are not seen by the driver: {names}",
        evidence={"pci_gpus": len(pci), "nvml_gpus": len(nvml.get("gpus") or []), "missing": [g["bus_id"] for g in missing],
                  "held_by_other_drivers": other or "none"},
        detail="A GPU that fell off the bus or failed to initialise (Xid 79 'GPU has fallen off the bus', Xid 119/120 "
               "GSP errors) is still on the PCI bus but not in NVML's list; jobs that expect the full count fail or hang.",
        fixes=(Fix("See why the driver dropped it (Xid errors name the cause), then reset the GPU or reboot the node.",
                   ("sudo dmesg -T | grep -E 'NVRM|Xid' | tail -20",
                    "sudo nvidia-smi -r -i " + missing[0]["bus_id"],
                    "sudo reboot")),),
    )]


# (fact, label, fix) of the properties that must agree across the GPUs of a node.
_CONSISTENT = (
    ("name", "model", Fix("Use GPUs of one model for one job: list them, then pick them by index.",
                          ("nvidia-smi --query-gpu=index,name,pci.bus_id --format=csv",
                           "export CUDA_VISIBLE_DEVICES=0,1  # the indices of one model"))),
    ("memory_total_mib", "memory (MiB)", Fix("GPUs of one model with different memory: one runs MIG or reserves "
                                             "memory (vGPU profile, ECC); compare them.",
                                             ("nvidia-smi --query-gpu=index,name,memory.total,ecc.mode.current,mig.mode.current --format=csv",))),
    ("ecc_mode_current", "ECC mode", Fix("Set one ECC mode on every GPU (takes effect after a reset or reboot).",
                                         ("sudo nvidia-smi -e 1", "sudo reboot"))),
    ("mig_mode_current", "MIG mode", Fix("Turn MIG off on every GPU (or on for every GPU and create the same instances).",
                                         ("sudo nvidia-smi -mig 0", "sudo nvidia-smi -r"))),
    ("persistence_mode", "persistence mode", Fix("Keep the driver loaded on every GPU (nvidia-persistenced).",
                                                 ("sudo systemctl enable --now nvidia-persistenced", "sudo nvidia-smi -pm 1"))),
    ("pcie_gen_max", "PCIe max generation", Fix("A GPU in a slower slot or behind an older switch: compare the links.",
                                                 ("sudo lspci -vv -d 10de: | grep -E '^[0-9a-f]|LnkCap:|LnkSta:'",))),
    ("pcie_width_max", "PCIe max width", Fix("A GPU in a narrower slot or riser: compare the links.",
                                             ("sudo lspci -vv -d 10de: | grep -E '^[0-9a-f]|LnkCap:|LnkSta:'",))),
)


def gpus_differ(facts, ctx) -> List[Finding]:
    """GPUs of one node that differ in model, memory, ECC, MIG, persistence mode or PCIe link capability."""
    gpus = _gpus(facts)
    if len(gpus) < 2:
        return []
    out = []
    for key, label, fix in _CONSISTENT:
        values: Dict[str, List[int]] = {}
        for g in gpus:
            if g.get(key) is not None:
                values.setdefault(str(g[key]), []).append(g["index"])
        if len(values) < 2:
            continue
        if key == "memory_total_mib" and len({g.get("name") for g in gpus}) > 1:
            continue  # different models: the model finding says it
        shown = "; ".join(f"{v} on GPU {','.join(map(str, idx))}" for v, idx in sorted(values.items(), key=lambda kv: -len(kv[1])))
        out.append(Finding(
            id="gpu.inconsistent", severity=Severity.WARN, area="devices",
            title=f"The GPUs of this node differ in {label}: {shown}",
            evidence={"property": key, "values": {v: idx for v, idx in values.items()}},
            detail="A multi-GPU job runs at the pace of its slowest GPU, and NCCL or a framework may refuse "
                   "or mis-plan GPUs that differ (MIG instances cannot take part in peer-to-peer or NCCL).",
            fixes=(fix,),
        ))
    return out


def _wiring(facts):
    """(GPUs, NVML's pairs, {(a, b): NVLink links}) of a node with two or more GPUs, else None."""
    gpus = _gpus(facts)
    pairs = _nvml(facts).get("pairs") or []
    return (gpus, pairs, nvlink_pairs(gpus, pairs)) if len(gpus) >= 2 and pairs else None


def topology(facts, ctx) -> List[Finding]:
    """The wiring of a multi-GPU node, pair by pair, as a ✓ line (the problems have their own findings)."""
    wiring = _wiring(facts)
    if wiring is None:
        return []
    gpus, pairs, nvl = wiring
    ev, ok, links = {}, 0, 0
    for p in pairs:
        n = nvl.get((p["a"], p["b"]))
        links += bool(n)
        rw = {(p.get("p2p") or {}).get(k) for k in ("read", "write")}
        ok += rw == {"OK"}
        ev[f"GPU {p['a']}-{p['b']}"] = (f"NV{n}" if n else TOPO_SHORT.get(p.get("topology"), p.get("topology"))) + \
            ", P2P " + ("OK" if rw == {"OK"} else "/".join(sorted(str(x) for x in rw)))
    title = (f"{len(gpus)} GPUs: {links} of {len(pairs)} pairs joined by NVLink, P2P read/write OK for "
             f"{ok} of {len(pairs)} pairs")
    return [Finding("gpu.topology", Severity.OK, "multigpu", title, evidence=ev)]


def p2p_unavailable(facts, ctx) -> List[Finding]:
    """Peer access refused between GPUs that share a PCIe switch, a board or NVLink."""
    wiring = _wiring(facts)
    if wiring is None:
        return []
    gpus, pairs, nvl = wiring
    bad = []
    for p in pairs:
        key = (p["a"], p["b"])
        close = p.get("topology") in CLOSE_LEVELS or nvl.get(key)
        p2p = p.get("p2p") or {}
        refused = {k: v for k, v in p2p.items() if k in ("read", "write") and v != "OK"}
        if close and refused:
            bad.append((p, refused, nvl.get(key)))
    if not bad:
        return []
    statuses = sorted({v for _, r, _ in bad for v in r.values()})
    vm = facts["platform"].get("hypervisor")
    shown = ", ".join(f"GPU {p['a']}-{p['b']} ({'NVLink x%d' % n if n else TOPO_SHORT.get(p.get('topology'), p.get('topology'))}: "
                      f"{'/'.join(sorted(set(r.values())))})" for p, r, n in bad[:6])
    fixes = []
    if "DISABLED_BY_REGKEY" in statuses:
        fixes.append(Fix("P2P is switched off by a driver registry key: find it in the module options and remove it.",
                         ("grep -rn NVreg_RegistryDwords /etc/modprobe.d/ /proc/driver/nvidia/params 2>/dev/null",)))
    if vm:
        fixes.append(Fix("This is a virtual machine: GPUs see each other only if the hypervisor passes P2P through "
                         "(GPUs behind one passed-through switch, or NVLink with the fabric exposed); ask the provider "
                         "for a P2P-capable instance type.", ("nvidia-smi topo -p2p r",)))
    fixes.append(Fix("On bare metal, PCI Access Control Services (ACS) or the IOMMU route P2P through the CPU: check "
                     "ACS on the switches and disable it (or set the IOMMU to passthrough), as NCCL's troubleshooting guide says.",
                     ("sudo lspci -vvv | grep ACSCtl", "nvidia-smi topo -p2p r",
                      "sudo sed -i 's/GRUB_CMDLINE_LINUX_DEFAULT=\"/&iommu=pt /' /etc/default/grub && sudo update-grub")))
    return [Finding(
        id="p2p.unavailable", severity=Severity.WARN, area="multigpu",
        title=f"Peer-to-peer access refused between GPUs that share a switch or NVLink: {shown}"
              + (f" and {len(bad) - 6} more pairs" if len(bad) > 6 else ""),
        evidence={"pairs": [{"gpus": [p["a"], p["b"]], "topology": p.get("topology"), "nvlinks": n or 0,
                             "p2p": p.get("p2p")} for p, _, n in bad], "hypervisor": vm},
        detail="Without P2P, NCCL and cudaMemcpyPeer stage every transfer through host memory: all-reduce "
               "bandwidth drops several-fold and NCCL logs 'P2P is disabled between ...'.",
        fixes=tuple(fixes), doc=TROUBLESHOOTING,
    )]


def nvlink_down(facts, ctx) -> List[Finding]:
    """NVLink links inactive on a GPU whose other links (or whose peers' links) are up."""
    gpus = [g for g in _gpus(facts) if g.get("nvlinks")]
    if not gpus:
        return []
    active = {g["index"]: sum(1 for link in g["nvlinks"] if link.get("active")) for g in gpus}
    most = max(active.values())
    down = {}
    for g in gpus:
        links = g["nvlinks"]
        if active[g["index"]] < most:  # fewer links up than its siblings: the rest are down
            down[g["index"]] = [link["link"] for link in links if not link.get("active")]
    errors = {g["index"]: [link["link"] for link in g["nvlinks"] if link.get("error")] for g in gpus}
    errors = {k: v for k, v in errors.items() if v}
    if not down and not errors:
        return []
    switch = any(link.get("remote_type") == "SWITCH" for g in gpus for link in g["nvlinks"])
    shown = "; ".join(f"GPU {i}: {active[i]} of {len(next(g for g in gpus if g['index'] == i)['nvlinks'])} active"
                      + (f" (down: {', '.join(map(str, links[:8]))}{' ...' if len(links) > 8 else ''})" if links else "")
                      for i, links in sorted(down.items()))
    fixes = [Fix("See each link's state and error counters.",
                 tuple(f"nvidia-smi nvlink --status -i {i}" for i in sorted(down or errors)[:4]) + ("nvidia-smi nvlink -e",))]
    if switch:
        fixes.append(Fix("The links go to NVSwitches: the fabric manager must run (same version as the driver).",
                         ("systemctl status nvidia-fabricmanager", "sudo systemctl restart nvidia-fabricmanager")))
    fixes.append(Fix("Links that stay down after a reset are hardware (baseboard, cable or bridge): reset, then "
                     "ask the vendor with the output of nvidia-bug-report.", ("sudo nvidia-smi -r", "sudo nvidia-bug-report.sh")))
    return [Finding(
        id="nvlink.down", severity=Severity.FAIL if down else Severity.WARN, area="multigpu",
        title=(f"NVLink links down: {shown}" if down else
               f"NVLink state unreadable on GPU {', '.join(map(str, sorted(errors)))}"),
        evidence={"active_links": active, "most_active": most, "down": down, "query_errors": errors or "none",
                  "nvswitch": switch},
        detail="Traffic between GPUs falls back to fewer links or to PCIe: NCCL bandwidth drops, and on NVSwitch "
               "systems CUDA may refuse to start (cudaErrorSystemNotReady) until the fabric is up.",
        fixes=tuple(fixes),
    )]


FABRIC_MANAGER_DOC = "https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/index.html"


def fabric_manager(facts, ctx) -> List[Finding]:
    """An NVSwitch system whose fabric is not up: cuInit answers CUDA_ERROR_SYSTEM_NOT_READY (802, "system
    not yet initialized"), or every NVLink of every GPU is down while NVSwitches are on the bus."""
    switches = facts["driver"].get("pci_nvswitches") or []
    init = ((facts["cuda"].get("api") or {}).get("cuInit") or {}).get("result")
    gpus = _gpus(facts)
    linked = [g for g in gpus if g.get("nvlinks")]
    all_down = bool(switches) and bool(linked) and not any(x.get("active") for g in linked for x in g["nvlinks"])
    if init != "CUDA_ERROR_SYSTEM_NOT_READY" and not all_down:
        return []
    why = ("cuInit answers CUDA_ERROR_SYSTEM_NOT_READY (802, 'system not yet initialized')"
           if init == "CUDA_ERROR_SYSTEM_NOT_READY" else f"every NVLink of the {len(linked)} GPUs is down")
    return [Finding(
        id="nvlink.fabric_down", severity=Severity.FAIL, area="multigpu",
        title=f"The NVSwitch fabric is not up: {why}" + (f"; {len(switches)} NVSwitches on the bus" if switches else ""),
        evidence={"cuInit": init or "unknown", "nvswitches": [s_["bus_id"] for s_ in switches] or "none seen in sysfs",
                  "gpus_with_nvlink": len(linked)},
        detail="On HGX/DGX systems the GPUs reach each other through NVSwitches that the fabric manager "
               "(nvidia-fabricmanager, same version as the driver) must configure; until it has, CUDA refuses "
               "to start ('system not yet initialized') and NVLink stays down.",
        fixes=(Fix("Start the fabric manager, and check that its version is the driver's.",
                   ("sudo systemctl enable --now nvidia-fabricmanager", "systemctl status nvidia-fabricmanager",
                    "nvidia-smi --query-gpu=driver_version --format=csv,noheader",
                    "dpkg -l | grep -i fabricmanager")),),
        doc=FABRIC_MANAGER_DOC,
    )]


def shm_small(facts, ctx) -> List[Finding]:
    """A container with two or more GPUs and a /dev/shm smaller than NCCL needs."""
    if not (facts["platform"].get("container") or {}).get("is_container") or len(_gpus(facts)) < 2:
        return []
    shm = facts["nccl"].get("shm") or {}
    size = shm.get("size_bytes")
    if size is None or size >= SHM_MIN_BYTES:
        return []
    return [Finding(
        id="nccl.shm_too_small", severity=Severity.WARN, area="multigpu",
        title=f"/dev/shm is {size / 2**20:.0f} MiB in this container: NCCL needs more for its shared-memory transport",
        evidence={"path": shm.get("path"), "size_mib": round(size / 2**20, 1), "recommended_mib": SHM_MIN_BYTES >> 20},
        detail="Docker gives containers 64 MiB of /dev/shm; NCCL then fails with 'Error while creating shared memory "
               "segment' or 'unhandled system error', and PyTorch DataLoader workers die with 'bus error'.",
        fixes=(Fix("Start the container with more shared memory (or share the host's IPC namespace).",
                   ("docker run --gpus all --shm-size=1g --ulimit memlock=-1 IMAGE", "docker run --gpus all --ipc=host IMAGE")),
               Fix("Kubernetes: mount a memory-backed emptyDir at /dev/shm (volumes: emptyDir: {medium: Memory}).", ())),
        doc=TROUBLESHOOTING,
    )]


def nccl_env(facts, ctx) -> List[Finding]:
    """NCCL variables that switch a transport off, or name network devices this node does not have."""
    nccl = facts["nccl"]
    env = nccl.get("vars") or {}
    if not env:
        return []
    out = []
    ngpu = len(_gpus(facts))
    off = [(k, v) for k, v in env.items() if k in nccl_env_fmt.TRANSPORT_SWITCHES and nccl_env_fmt.is_true(v)]
    level = nccl_env_fmt.p2p_level(env.get("NCCL_P2P_LEVEL", "")) if "NCCL_P2P_LEVEL" in env else None
    if level == "LOC":
        off.append(("NCCL_P2P_LEVEL", env["NCCL_P2P_LEVEL"]))
    if off:
        what = "; ".join(f"{k}={v} turns off {nccl_env_fmt.TRANSPORT_SWITCHES.get(k, 'peer-to-peer between GPUs')}" for k, v in off)
        out.append(Finding(
            id="nccl.transport_disabled", severity=Severity.WARN if ngpu > 1 or "NCCL_IB_DISABLE" in dict(off) else Severity.INFO,
            area="multigpu", title=f"NCCL transports switched off by the environment: {what}",
            evidence={k: v for k, v in off} | {"gpus": ngpu},
            detail="Often left over from debugging a hang: collectives still work, over a slower path. "
                   "Unset the variable unless the fault it worked around is still there.",
            fixes=(Fix("Unset it for this shell, then find where it is set.",
                       ("unset " + " ".join(k for k, _ in off), WHERE_SET)),),
            doc=NCCL_ENV_DOC,
        ))
    for var, existing, kind in (("NCCL_IB_HCA", nccl.get("infiniband_devices") or [], "InfiniBand/RoCE device"),
                                ("NCCL_SOCKET_IFNAME", nccl.get("net_interfaces") or [], "network interface")):
        if var not in env:
            continue
        parsed = nccl_env_fmt.parse_prefix_list(env[var])
        unknown = parsed.unmatched(existing)
        if not unknown:
            continue
        out.append(Finding(
            id="nccl.device_not_found", severity=Severity.WARN, area="multigpu",
            title=f"{var}={env[var]} names no {kind} of this node: {', '.join(unknown)}",
            evidence={var: env[var], "unmatched": unknown, "present": existing or "none",
                      "matching": "exact (=)" if parsed.exact else "prefix"},
            detail=f"NCCL uses only the {kind}s this variable names; names that match nothing leave it without "
                   "a network ('no socket interface found', 'NET/IB : No device found') or on the wrong one.",
            fixes=(Fix(f"Point it at a {kind} that exists here (list them first), or unset it to let NCCL choose.",
                       (f"ls /sys/class/{'infiniband' if var == 'NCCL_IB_HCA' else 'net'}",
                        f"export {var}={shlex.quote(existing[0]) if existing else '...'}" if existing else f"unset {var}")),),
            doc=NCCL_ENV_DOC,
        ))
    return out


def p2p_smoke(facts, ctx) -> List[Finding]:
    """The peer-copy and NCCL all-reduce smoke test (:mod:`gpudoctor.process.multigpu_smoke`)."""
    s = facts["smoke_multigpu"]
    if not s:
        return []
    if s.get("skipped"):
        return [Finding("smoke.p2p", Severity.INFO, "smoke", f"Multi-GPU smoke test skipped ({s['skipped']})")]
    if s.get("worker_error") or s.get("import_error"):
        err = s.get("worker_error") or s.get("import_error")
        return [Finding("smoke.p2p", Severity.FAIL, "smoke", f"Multi-GPU smoke test did not finish: {err}",
                        evidence={"stderr_tail": tail(s.get("stderr_tail") or err), "nccl_library": s.get("nccl_library")},
                        detail="A hang here is usually NCCL or a peer copy waiting on a link that never completes: "
                               "rerun with NCCL_DEBUG=INFO to see which transport it tried.",
                        fixes=(Fix("Run the two-GPU test by hand with NCCL's log.",
                                   ("NCCL_DEBUG=INFO python -m gpudoctor.process.worker multigpu-smoke", "nvidia-smi topo -m")),))]
    out = []
    copies = s.get("copies") or []
    failed = [c for c in copies if not c.get("ok")]
    slow = [c for c in copies if c.get("ok") and not c.get("can_access_peer")]
    rates = [c["gb_per_s"] for c in copies if c.get("ok") and c.get("gb_per_s")]
    ev = {f"GPU {c['src']}→{c['dst']}": (f"{c.get('gb_per_s')} GB/s, peer access {'yes' if c.get('can_access_peer') else 'no'}"
                                         if c.get("ok") else f"failed: {c.get('error')}") for c in copies}
    if failed:
        out.append(Finding("smoke.p2p", Severity.FAIL, "smoke",
                           f"Peer copy failed for {len(failed)} of {len(copies)} GPU pairs: "
                           f"GPU {failed[0]['src']}→{failed[0]['dst']}: {failed[0].get('error')}",
                           evidence=ev, fixes=(Fix("See the topology and the P2P matrix NVIDIA reports.",
                                                   ("nvidia-smi topo -m", "nvidia-smi topo -p2p rw")),)))
    else:
        title = (f"Peer copies between all {len(copies)} ordered GPU pairs verified: "
                 f"{min(rates):.1f}–{max(rates):.1f} GB/s" if rates else "Peer copies verified")
        if slow:
            title += f" ({len(slow)} pairs without peer access, staged through host memory)"
        out.append(Finding("smoke.p2p", Severity.WARN if slow else Severity.OK, "smoke", title, evidence=ev))
    out.extend(_nccl_smoke(s))
    return out


def _nccl_smoke(s) -> List[Finding]:
    n = s.get("nccl")
    if n is None:
        return [Finding("smoke.nccl", Severity.INFO, "smoke",
                        "NCCL all-reduce not run: no libnccl.so.2 found (pip install nvidia-nccl-cu12 or -cu13, or a framework's copy)")]
    ev = {"library": n.get("library"), "gpus": n.get("devices"), "init_seconds": n.get("init_seconds")}
    log = [line for line in n.get("nccl_log") or [] if "WARN" in line]
    if log:
        ev["nccl_warnings"] = log[-5:]
    if not n.get("ok"):
        # NCCL's own words: its error and warnings, and those of the rerun its message asked for
        ev["stderr_tail"] = tail("\n".join([n.get("error") or ""] + list(n.get("nccl_log") or [])))
        rerun = n.get("rerun") or {}
        title = f"NCCL all-reduce failed: {n.get('error')}"
        if rerun:
            ev["rerun"] = {k: rerun.get(k) for k in ("setting", "command", "stderr_tail", "error") if rerun.get(k)}
            said = [l for l in (rerun.get("stderr_tail") or "").splitlines() if "WARN" in l]
            if said:
                title += f"; rerun with {rerun['setting']}, NCCL said: {said[0].split('WARN', 1)[-1].strip()[:200]}"
        return [Finding("smoke.nccl", Severity.FAIL, "smoke", title,
                        evidence=ev, fixes=(Fix("Rerun with NCCL's log to see the transport that failed.",
                                                ("NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,P2P,SHM,NET python -m gpudoctor.process.worker multigpu-smoke --nccl "
                                                 + shlex.quote(n.get("library") or "libnccl.so.2"),)),), doc=TROUBLESHOOTING)]
    ev.update(algbw_gb_per_s=n.get("algbw_gb_per_s"), busbw_gb_per_s=n.get("busbw_gb_per_s"), bytes=n.get("bytes"))
    title = (f"NCCL all-reduce over {len(n.get('devices') or [])} GPUs verified: bus bandwidth "
             f"{n.get('busbw_gb_per_s')} GB/s ({(n.get('bytes') or 0) >> 20} MiB float32)")
    return [Finding("smoke.nccl", Severity.WARN if log else Severity.OK, "smoke",
                    title + (f"; NCCL warned: {log[-1][-160:]}" if log else ""), evidence=ev)]
