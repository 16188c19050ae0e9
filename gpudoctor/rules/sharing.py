"""The process and the GPU it shares: resource limits that break CUDA or NCCL, and GPUs held by other processes.

Sources:
* CUDA reserves virtual address space for Unified Virtual Addressing when it creates a context; when that
  fails, the context fails with (CUDA_)ERROR_OUT_OF_MEMORY (MPS guide, "Troubleshooting",
  https://docs.nvidia.com/deploy/mps/index.html). ``RLIMIT_AS`` caps a process's address space and the kernel
  refuses mmap past it with ENOMEM (getrlimit(2), https://man7.org/linux/man-pages/man2/getrlimit.2.html).
* NCCL shares data between ranks in shared memory and pinned host memory, "the operating system's limits on
  these resources may need to be increased"; in Docker ``--shm-size=1g --ulimit memlock=-1`` (NCCL
  troubleshooting, https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html);
  InfiniBand memory registration pins pages under ``RLIMIT_MEMLOCK`` unless the process has CAP_IPC_LOCK
  (mlock(2), https://man7.org/linux/man-pages/man2/mlock.2.html).
* Compute modes: EXCLUSIVE_PROCESS allows one context on the device, PROHIBITED none; a context refused for
  that is CUDA_ERROR_DEVICE_UNAVAILABLE (46, cuda.h: "Devices are often unavailable due to use of
  CU_COMPUTEMODE_EXCLUSIVE_PROCESS or CU_COMPUTEMODE_PROHIBITED"; runtime: cudaErrorDevicesUnavailable, which
  also names "memory constraints on a device that already has active CUDA work"),
  https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__TYPES.html.
* Which processes hold a GPU and how much memory: nvmlDeviceGetComputeRunningProcesses /
  GetGraphicsRunningProcesses, nvmlDeviceGetMemoryInfo, nvmlDeviceGetComputeMode
  (https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceQueries.html).

A limit is named as the cause only when a rerun with it raised made CUDA work (verified), or, when it cannot
be raised, when CUDA failed in the way its documented mechanism fails; with nothing failed yet, a warning says
what will fail. Other users' names and command lines never enter a finding (reports get pasted).
"""
from __future__ import annotations

import errno
import os
from typing import List

from gpudoctor.findings import Finding, Fix, Severity
from gpudoctor.process import problems as P

MPS_DOC = "https://docs.nvidia.com/deploy/mps/index.html"
NCCL_DOC = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html"
MODES_DOC = "https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceEnumvs.html"
#: The MPS server's descriptor limit NVIDIA recommends (MPS guide, "Troubleshooting").
MPS_NOFILE = 16384
#: nvmlComputeMode_t (nvml.h).
EXCLUSIVE_PROCESS, PROHIBITED = 3, 2
#: Free memory below this share of the total, with other processes holding most of the rest, is a GPU
#: a new job cannot count on (a context alone takes hundreds of MiB).
FREE_SHARE = 0.10
#: ``ulimit`` option and limits.conf item of each limit; bytes limits are given to ulimit in KiB.
ULIMIT = {"RLIMIT_AS": ("-v", "as", True), "RLIMIT_DATA": ("-d", "data", True), "RLIMIT_MEMLOCK": ("-l", "memlock", True),
          "RLIMIT_STACK": ("-s", "stack", True), "RLIMIT_NOFILE": ("-n", "nofile", False), "RLIMIT_NPROC": ("-u", "nproc", False)}
WHERE_SET = ("grep -n ulimit ~/.bashrc ~/.profile ~/.bash_profile /etc/profile /etc/profile.d/*.sh 2>/dev/null; "
             "grep -rnE '^[[:space:]]*[^#[:space:]]' /etc/security/limits.conf /etc/security/limits.d/ 2>/dev/null")


#: The error a process gets when it reaches a limit (getrlimit(2)): open/pipe/dup past RLIMIT_NOFILE fail with
#: EMFILE, fork/clone past RLIMIT_NPROC with EAGAIN. Read in the strerror text the failed steps recorded.
LIMIT_ERRNO = {"RLIMIT_NOFILE": errno.EMFILE, "RLIMIT_NPROC": errno.EAGAIN}
GETRLIMIT_DOC = "https://man7.org/linux/man-pages/man2/getrlimit.2.html"


def _shown(name: str, value) -> str:
    if value is None:
        return "unlimited"
    if ULIMIT[name][2]:
        return f"{value / 2**30:.1f} GiB" if value >= 2**30 else f"{value / 2**20:.0f} MiB"
    return str(value)


def _ulimit_value(name: str, value) -> str:
    if value is None:
        return "unlimited"
    return str(value // 1024) if ULIMIT[name][2] else str(value)


def _failures(facts) -> List[dict]:
    """Each failed CUDA step of this check: ``{"step", "error", "ordinal", "limits_rerun"}``."""
    out = []
    api = facts["cuda"].get("api") or {}
    init = (api.get("cuInit") or {}).get("result")
    if init and init != "CUDA_SUCCESS":
        out.append({"step": "cuInit", "error": init, "ordinal": None, "limits_rerun": api.get("limits_rerun")})
    for run in facts["smoke_nvrtc"].get("runs") or []:
        err = (run.get("launch") or {}).get("error")
        if err:
            out.append({"step": "context", "error": err, "ordinal": run.get("ordinal"), "limits_rerun": run.get("limits_rerun")})
    return out


def limits(facts, ctx) -> List[Finding]:
    """A resource limit that makes CUDA fail (verified by a rerun), or one that will."""
    pl = facts["process_limits"]
    rl = pl.get("rlimits") or {}
    if not rl:
        return []
    fails = _failures(facts)
    for f in fails:
        rerun = f.get("limits_rerun") or {}
        if rerun.get("verified") and rerun.get("cause"):
            return [_verified(f, rerun, rl, rerun.get("privileged"))]
    out = [x for x in (_memory_limit(facts, name, rl, fails) for name in MEMORY_LIMITS) if x]
    memlock = (rl.get("RLIMIT_MEMLOCK") or {}).get("soft")
    ib = facts["nccl"].get("infiniband_devices") or []
    memlock_hard = (rl.get("RLIMIT_MEMLOCK") or {}).get("hard")
    if ib and memlock is not None and not pl.get("privileged"):
        out.append(Finding(
            id="process.memlock_low", severity=Severity.WARN, area="multigpu",
            title=f"RLIMIT_MEMLOCK is {_shown('RLIMIT_MEMLOCK', memlock)} on a node with InfiniBand ({', '.join(ib[:4])}): "
                  "NCCL's InfiniBand transport cannot pin its buffers",
            evidence={"RLIMIT_MEMLOCK": _shown("RLIMIT_MEMLOCK", memlock),
                      "hard": _shown("RLIMIT_MEMLOCK", (rl.get("RLIMIT_MEMLOCK") or {}).get("hard")), "infiniband_devices": ib},
            detail="Registering memory with an InfiniBand HCA pins it, counted against RLIMIT_MEMLOCK (mlock(2)); past it "
                   "ibv_reg_mr fails and NCCL reports a system error or falls back to sockets. NCCL asks for "
                   "--ulimit memlock=-1 in containers.",
            fixes=(Fix("Raise the locked-memory limit for this shell, then where it is set." if memlock_hard is None else
                       "The hard limit is finite too: raise both for every login (RDMA's usual limits.d entry), then log in again.",
                       ("ulimit -l unlimited", WHERE_SET) if memlock_hard is None else
                       ("printf '* soft memlock unlimited\\n* hard memlock unlimited\\n' | sudo tee /etc/security/limits.d/rdma.conf",)),
                   Fix("Containers: start with an unlimited memlock limit.", ("docker run --gpus all --ulimit memlock=-1 IMAGE",))),
            doc=NCCL_DOC))
    return out


#: The limits whose documented failure inside CUDA is out of memory: the UVA reservation is an mmap, refused
#: past RLIMIT_AS, and since Linux 4.7 private writable mappings also count against RLIMIT_DATA (getrlimit(2)).
MEMORY_LIMITS = ("RLIMIT_AS", "RLIMIT_DATA")


def limit_explains(facts) -> str:
    """The id of the process.* finding that explains this check's failed cuInit/context, or None: for rules that
    would otherwise blame something else for the same failure (device.not_visible, smoke.nvcc)."""
    rl = facts["process_limits"].get("rlimits") or {}
    if not rl:
        return None
    fails = _failures(facts)
    if any((f.get("limits_rerun") or {}).get("verified") and (f.get("limits_rerun") or {}).get("cause") for f in fails):
        return "process.limit_breaks_cuda"
    for name in MEMORY_LIMITS:
        if (rl.get(name) or {}).get("soft") is not None and _unverified_oom(name, fails):
            return "process.address_space_limit"
    return None


def _acquits(fail: dict, name: str) -> bool:
    """Whether the rerun of ``fail`` clears ``name``: the steps passed under the same limits, or still failed
    with ``name`` really raised."""
    rerun = fail.get("limits_rerun") or {}
    if (rerun.get("baseline") or {}).get("ok"):
        return True
    return bool(rerun.get("all_raised")) and name in (rerun.get("raised") or []) and not rerun.get("verified")


def _unverified_oom(name: str, fails: List[dict]):
    """The failed step that ran out of memory under ``name`` with no rerun able to raise ``name`` (verification
    impossible, e.g. soft == hard without CAP_SYS_RESOURCE), or None."""
    if any(_acquits(f, name) for f in fails):
        return None
    for f in fails:
        rerun = f.get("limits_rerun") or {}
        if "OUT_OF_MEMORY" not in f["error"] or rerun.get("skipped", "").startswith("no NVIDIA kernel driver"):
            continue
        if name in (rerun.get("not_raised") or {}) or (rerun.get("all_raised") and name not in (rerun.get("raised") or [])):
            return f
    return None


def _memory_limit(facts, name: str, rl: dict, fails: List[dict]):
    """process.address_space_limit for ``name`` (RLIMIT_AS or RLIMIT_DATA): fail when CUDA ran out of memory
    under it and no rerun could raise it, warn when no context ran to show it is enough; None otherwise."""
    if (rl.get(name) or {}).get("soft") is None or any(_acquits(f, name) for f in fails):
        return None
    failed = _unverified_oom(name, fails)
    if failed or (not _context_ran(facts) and name == "RLIMIT_AS"):
        return _as_limit(rl, failed, name)
    return None


def _context_ran(facts) -> bool:
    """Whether this check created a context and allocated on a GPU, proving the current limits are enough."""
    runs = facts["smoke_nvrtc"].get("runs") or []
    return any((r.get("launch") or {}).get("vadd") for r in runs)


def _verified(fail: dict, rerun: dict, rl: dict, privileged) -> Finding:
    names = rerun["cause"]
    shown = ", ".join(f"{n}={_shown(n, (rl.get(n) or {}).get('soft'))}" for n in names)
    raised = (rerun.get("single") or rerun.get("all_raised") or {}).get("raised") or {}
    fixes = []
    for n in names:
        flag, item, _ = ULIMIT[n]
        hard = (rl.get(n) or {}).get("hard")
        if privileged:  # may raise the hard limit too (the rerun did)
            cmds = [f"ulimit {flag} unlimited" if n != "RLIMIT_STACK" else f"ulimit -S{flag[1:]} {_ulimit_value(n, hard)}"]
        else:
            cmds = [f"ulimit -S{flag[1:]} {_ulimit_value(n, hard)}"] if hard != (rl.get(n) or {}).get("soft") else []
        fixes.append(Fix(f"Raise {n} for this shell" + (" (to its hard limit)" if cmds else
                                                        ": its hard limit is the same, so raise it where it is set") +
                         f", then remove the lower value where it is set (limits.conf item '{item}').",
                         tuple(cmds) + (WHERE_SET,)))
    fixes.append(Fix("Batch jobs and containers pass limits on: Slurm `srun --propagate=NONE`, `docker run --ulimit "
                     "<item>=-1`, systemd `Limit<NAME>=infinity`.", ()))
    return Finding(
        id="process.limit_breaks_cuda", severity=Severity.FAIL, area="cuda",
        title=f"CUDA fails under this shell's resource limit {shown}: {fail['step']} returned {fail['error'][:120]}; "
              f"with it raised, CUDA works (verified)",
        evidence={"failed_step": fail["step"], "error": fail["error"], "limits": shown,
                  "raised_in_rerun": {k: v for k, v in raised.items()}, "reruns": rerun.get("reruns")},
        detail="Every process inherits its shell's ulimits. CUDA reserves a large virtual address range when it creates a "
               "context (Unified Virtual Addressing) and opens several device files; a limit below what it needs makes "
               "cuInit or the first context fail, usually as out of memory although the GPU is free.",
        fixes=tuple(fixes), doc=MPS_DOC)


def _as_limit(rl: dict, failed, name: str = "RLIMIT_AS") -> Finding:
    soft, hard = (rl.get(name) or {}).get("soft"), (rl.get(name) or {}).get("hard")
    flag, item, _ = ULIMIT[name]
    shown = f"{name}={_shown(name, soft)} (ulimit {flag})"
    if failed:
        title = (f"CUDA fails with {failed['error'][:80]} under {shown}: the likely cause, as CUDA reserves its "
                 "address range at init; not verified (this process may not raise the limit to try)")
    else:
        title = (f"{name} is {_shown(name, soft)} (ulimit {flag}): CUDA context creation may fail with out of memory "
                 "(not tried: no context was created in this check)")
    if hard is None or soft is None or soft < hard:
        lift = Fix("Lift the limit for this shell (up to the hard limit), then where it is set.",
                   (f"ulimit -S{flag[1:]} {_ulimit_value(name, hard)}", WHERE_SET))
    else:  # `ulimit -v N` in bash sets both: only a new shell, or CAP_SYS_RESOURCE, gets past it
        lift = Fix(f"The hard limit is the same ({_shown(name, hard)}), so this shell cannot raise it: start a new shell "
                   f"without the `ulimit {flag}` that set it (limits.conf item '{item}'), or raise it as root with "
                   "CAP_SYS_RESOURCE.", (WHERE_SET, f"ulimit {flag} unlimited   # root with CAP_SYS_RESOURCE only"))
    return Finding(
        id="process.address_space_limit", severity=Severity.FAIL if failed else Severity.WARN, area="cuda",
        title=title,
        evidence={name: _shown(name, soft), "hard": _shown(name, hard),
                  **({"failed_step": failed["step"], "error": failed["error"],
                      "not_raised": (failed.get("limits_rerun") or {}).get("not_raised", {}).get(name)} if failed else {})},
        detail="CUDA reserves virtual address space for Unified Virtual Addressing at context creation; the kernel refuses "
               f"mappings past {name}, and CUDA reports CUDA_ERROR_OUT_OF_MEMORY / 'CUDA error: out of memory' "
               "although the GPU's memory is free.",
        fixes=(lift,
               Fix("Batch systems: do not pass a virtual-memory limit to GPU jobs (Slurm: `srun --propagate=NONE`, or "
                   "limit memory with cgroups instead of VSizeFactor/`ulimit -v`).", ())),
        doc=MPS_DOC)


def _label(g: dict) -> str:
    return f"GPU {g.get('index')} ({g.get('name') or '?'})"


def _who(p: dict, my_uid) -> str:
    """PID, program and owner of a process as the report may show it (another user's stays anonymous)."""
    if not p.get("found"):
        return f"PID {p['pid']} (not visible here: {p.get('why_not_found', 'another PID namespace')})"
    if p.get("uid") == my_uid:
        return f"PID {p['pid']} ({p.get('command') or p.get('program')}, user {p.get('user', p.get('uid'))})"
    return f"PID {p['pid']} ({p.get('program') or '?'}, another user, uid {p.get('uid')})"


def _stop(procs: List[dict], my_uid) -> List[str]:
    cmds = []
    for p in procs:
        if not p.get("found"):
            cmds.append(f"nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv   # PID {p['pid']} is outside this namespace: stop it on the host")
        elif p.get("uid") == my_uid:
            cmds.append(f"kill {p['pid']}")
        else:
            cmds.append(f"ps -o user=,args= -p {p['pid']}   # another user's job: ask its owner, or as root: sudo kill {p['pid']}")
    return cmds


def _other_gpu(gpus: List[dict], busy_index) -> List[str]:
    best = max((g for g in gpus if g.get("index") != busy_index and g.get("compute_mode") not in (EXCLUSIVE_PROCESS, PROHIBITED)),
               key=lambda g: g.get("memory_free_mib") or 0, default=None)
    if best is None:
        return []
    return [f"export CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES={best['index']}   # {best.get('memory_free_mib')} MiB free"]


def _context_failure(facts, gpu: dict, words) -> dict:
    """The failure of this check's CUDA steps on ``gpu`` whose error contains one of ``words``, or None."""
    devices = (facts["cuda"].get("api") or {}).get("devices") or []
    uuid_of = {d.get("ordinal"): d.get("uuid") for d in devices}
    for f in _failures(facts):
        if not any(w in f["error"] for w in words):
            continue
        if f["ordinal"] is None or uuid_of.get(f["ordinal"]) in (None, gpu.get("uuid")):
            return f
    return None


def _mps_nofile(facts, g: dict, others: List[dict], ev: dict) -> List[Finding]:
    """An MPS server on this GPU whose own descriptor limit is below NVIDIA's recommendation: its clients'
    allocations and contexts fail ("MPS Server failed to create/open SHM segment", MPS guide)."""
    out = []
    for p in others:
        n = p.get("nofile_soft")
        if p.get("program") != "nvidia-cuda-mps-server" or n is None or n >= MPS_NOFILE:
            continue
        failed = _context_failure(facts, g, ("CUDA_ERROR",))
        out.append(Finding(
            id="gpu.mps_nofile_low", severity=Severity.FAIL if failed else Severity.WARN, area="devices",
            title=f"{_label(g)}: the MPS server (PID {p['pid']}) may open only {n} files (NVIDIA recommends {MPS_NOFILE} "
                  "or more): its clients' contexts and allocations fail when it runs out"
                  + (f"; this check's CUDA step failed: {failed['error'][:80]}" if failed else ""),
            evidence=dict(ev, mps_server_pid=p["pid"], mps_server_nofile=n),
            detail="The MPS server opens shared-memory segments per client allocation; past its RLIMIT_NOFILE it logs "
                   "'MPS Server failed to create/open SHM segment' and the client's call fails.",
            fixes=(Fix("Restart the MPS control daemon from a shell with a higher limit (it passes the limit to the server).",
                       ("echo quit | nvidia-cuda-mps-control", f"ulimit -n {MPS_NOFILE} && nvidia-cuda-mps-control -d")),),
            doc=MPS_DOC))
    return out


def gpu_sharing(facts, ctx) -> List[Finding]:
    """Per GPU: a compute mode that refuses this process a context, and memory other processes hold."""
    pl = facts["process_limits"]
    gpus = pl.get("gpus") or []
    if not gpus:
        return []
    my_uid = pl.get("uid")
    out = []
    for g in gpus:
        others = [p for p in pl.get("gpu_processes") or [] if p.get("gpu") == g.get("index") and not p.get("ours")]
        mode = g.get("compute_mode")
        held = sum(p.get("used_mib") or 0 for p in others)
        ev = {"gpu": g.get("index"), "compute_mode": mode, "memory_total_mib": g.get("memory_total_mib"),
              "memory_free_mib": g.get("memory_free_mib"), "other_processes": [_who(p, my_uid) for p in others],
              "held_by_others_mib": held}
        alt = _other_gpu(gpus, g.get("index"))
        if mode == PROHIBITED or (mode == EXCLUSIVE_PROCESS and any(p.get("type", "").startswith("compute") for p in others)):
            failed = _context_failure(facts, g, ("DEVICE_UNAVAILABLE", "DevicesUnavailable"))
            why = ("is in PROHIBITED compute mode: no process may create a context on it" if mode == PROHIBITED else
                   "is in EXCLUSIVE_PROCESS compute mode and already held by " + ", ".join(_who(p, my_uid) for p in others))
            out.append(Finding(
                id="gpu.compute_mode_blocks", severity=Severity.FAIL if failed else Severity.WARN, area="devices",
                title=f"{_label(g)} {why}" + (f"; this check's context was refused ({failed['error'][:80]})" if failed else
                                              ": a new CUDA context on it will fail with CUDA_ERROR_DEVICE_UNAVAILABLE"),
                evidence=dict(ev, **({"failed_step": failed["step"], "error": failed["error"]} if failed else {})),
                detail="The compute mode is set by the administrator (nvidia-smi -c) or the batch scheduler. In EXCLUSIVE_PROCESS "
                       "mode the first process to create a context owns the GPU until it exits.",
                fixes=tuple(f for f in (
                    Fix("Use another GPU.", tuple(alt)) if alt else None,
                    Fix("Wait for, or stop, the process that holds it.", tuple(_stop(others, my_uid))) if others else None,
                    Fix("If this node should share its GPUs, the administrator sets the default mode (root).",
                        (f"sudo nvidia-smi -i {g.get('index')} -c DEFAULT",)),
                ) if f is not None),
                doc=MODES_DOC))
            continue
        out.extend(_mps_nofile(facts, g, others, ev))
        total, free = g.get("memory_total_mib"), g.get("memory_free_mib")
        if not others or not total or free is None:
            continue
        failed = _context_failure(facts, g, ("OUT_OF_MEMORY",))
        if failed or (free < FREE_SHARE * total and held * 2 >= total - free):
            top = sorted(others, key=lambda p: -(p.get("used_mib") or 0))
            out.append(Finding(
                id="gpu.memory_held", severity=Severity.FAIL if failed else Severity.WARN, area="devices",
                title=f"{_label(g)}: other processes hold {held} of {total} MiB, {free} MiB free: "
                      + ", ".join(f"{_who(p, my_uid)} {p.get('used_mib', '?')} MiB" for p in top[:3])
                      + (f"; this check's CUDA step failed: {failed['error'][:80]}" if failed else
                         "; a job that needs more than the free memory fails with CUDA out of memory"),
                evidence=dict(ev, **({"failed_step": failed["step"], "error": failed["error"]} if failed else {})),
                detail="GPU memory is not shared fairly: whatever another process has allocated (PyTorch's caching "
                       "allocator keeps what it freed) is unavailable to new contexts until that process exits.",
                fixes=tuple(f for f in (
                    Fix("Stop the job that holds the memory (if it is a leftover).", tuple(_stop(top, my_uid))),
                    Fix("Or run on another GPU.", tuple(alt)) if alt else None,
                ) if f is not None),
                doc="https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceQueries.html"))
        elif any(p.get("found") for p in others):  # an unresolved PID alone may be our own worker seen from a container
            out.append(Finding(
                id="gpu.shared", severity=Severity.INFO, area="devices",
                title=f"{_label(g)} is shared: " + ", ".join(f"{_who(p, my_uid)} {p.get('used_mib', '?')} MiB" for p in others[:3])
                      + f"; {free} of {total} MiB free",
                evidence=ev))
    return out


def limit_hit(facts, ctx) -> List[Finding]:
    """Steps of this check that failed with the error a finite limit produces (EMFILE, EAGAIN): the limit, not the
    tool, is why they failed; programs run from this shell meet the same wall."""
    rl = facts["process_limits"].get("rlimits") or {}
    out = []
    for name, code in LIMIT_ERRNO.items():
        soft, hard = (rl.get(name) or {}).get("soft"), (rl.get(name) or {}).get("hard")
        if soft is None:
            continue
        words = os.strerror(code)
        hit = sorted({rec["path"] for _, v in facts.items() for rec in P.walk(v)
                      if any(words in str(rec.get(k) or "") for k in ("what", "last_line", "stderr_tail"))})
        if not hit:
            continue
        flag, item, _ = ULIMIT[name]
        out.append(Finding(
            id="process.limit_hit", severity=Severity.FAIL, area="cuda",
            title=f"{name}={_shown(name, soft)} (ulimit {flag}) is too low: {len(hit)} step(s) of this check failed with "
                  f"'{words}' ({', '.join(os.path.basename(h) for h in hit[:4])}); the tools are not at fault",
            evidence={name: _shown(name, soft), "hard": _shown(name, hard), "errno": errno.errorcode[code], "failed": hit[:10]},
            detail=f"Past {name} the kernel refuses the call with {errno.errorcode[code]} ('{words}', getrlimit(2)); every "
                   "program started from this shell inherits the limit (CUDA opens several device files per process, "
                   "NCCL and data loaders many descriptors and threads).",
            fixes=(Fix(f"Raise it for this shell, then find where it is lowered (limits.conf item '{item}').",
                       (f"ulimit -S{flag[1:]} {_ulimit_value(name, hard)}", WHERE_SET)),),
            doc=GETRLIMIT_DOC))
    return out
