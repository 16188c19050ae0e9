"""The process and what it shares: its resource limits (inherited from the user's shell), its memory cgroup,
/dev/shm, and the other processes that hold a context on each GPU (NVML), resolved to command and user.

Facts only; :mod:`gpudoctor.rules.sharing` judges them. Everything here is read from /proc, /sys and the
NVML snapshot the driver probe takes anyway (:func:`gpudoctor.probes.driver.nvml_snapshot`): no new child
process. The reruns that prove a limit breaks CUDA run in the CUDA workers, and only when a step failed
(:mod:`gpudoctor.process.limits`).
"""
from __future__ import annotations

import os

from gpudoctor.process import limits
from gpudoctor.probes.driver import nvml_snapshot
from gpudoctor.probes.facts import Origin
from gpudoctor.probes.facts_system import ProcessLimitsFacts
from gpudoctor.probes.nccl import shm_size

#: Lines of /proc/self/status kept as facts (proc(5)): seccomp filtering, threads, allowed CPUs.
STATUS_KEYS = ("Threads", "Seccomp", "NoNewPrivs", "Cpus_allowed_list")
#: Most file descriptors of one process read to see whether it has a GPU open.
MAX_FDS = 4096


def probe(ctx, proc: str = "/proc") -> dict:
    """``{"rlimits": {RLIMIT_*: {"soft", "hard"}} (bytes or counts, None = unlimited), "privileged": bool|None (CAP_SYS_RESOURCE),
    "uid": int, "status": {key: str}, "shm": {path, size_bytes, free_bytes}, "cgroup_memory": {path,
    max_bytes (None = max), current_bytes}|None, "gpu_processes": [{"gpu", "pid", "used_mib", "type",
    "found": bool (a /proc entry of this PID namespace that has a GPU open, or could not be checked),
    "why_not_found", "ours": bool, "uid", "program", "nofile_soft" (its own RLIMIT_NOFILE, None = unlimited),
    "user" and "command" (only this user's processes)}],
    "gpus": [{"index", "compute_mode", "memory_total_mib", "memory_free_mib"}], "problems": []}``; limits, sizes,
    PIDs and memory use validated (:class:`~gpudoctor.probes.facts_system.ProcessLimitsFacts`)."""
    out = _read_all(ctx, proc)
    return ProcessLimitsFacts.parse(out, Origin("getrlimit(2)", "the gpudoctor process")).to_dict()


def _read_all(ctx, proc: str) -> dict:
    problems: list = []
    out = {
        "rlimits": limits.read(),
        "privileged": limits.privileged(),
        "uid": os.getuid(),
        "status": _status(os.path.join(proc, "self", "status")),
        "shm": shm_size(),
        "cgroup_memory": _cgroup_memory(proc),
        "gpu_processes": [],
        "gpus": [],
        "problems": problems,
    }
    nvml = nvml_snapshot(ctx)
    if nvml.get("status") != "ok":
        return out
    me = os.getpid()
    for g in nvml.get("gpus") or []:
        if "error" in g:
            continue
        out["gpus"].append({k: g.get(k) for k in ("index", "name", "uuid", "compute_mode", "memory_total_mib",
                                                  "memory_used_mib", "memory_free_mib")})
        for p in g.get("processes") or []:
            seen = {"pid": p.get("pid"), "found": True, "ours": True} if p.get("ours") else \
                _resolve(proc, p.get("pid"), me, out["uid"])
            out["gpu_processes"].append(dict(seen, gpu=g.get("index"), used_mib=p.get("used_mib"), type=p.get("type")))
    return out


def _status(path: str) -> dict:
    try:
        with open(path) as fh:
            pairs = (line.split(":", 1) for line in fh if ":" in line)
            return {k: v.strip() for k, v in pairs if k in STATUS_KEYS}
    except OSError:
        return {}


def _cgroup_memory(proc: str):
    """cgroup v2's memory.max and memory.current of this process's cgroup; None on cgroup v1 or when unreadable."""
    try:
        with open(os.path.join(proc, "self", "cgroup")) as fh:
            rel = next((line.strip()[3:] for line in fh if line.startswith("0::")), None)
        if rel is None:
            return None
        base = os.path.join("/sys/fs/cgroup", rel.lstrip("/"))
        with open(os.path.join(base, "memory.max")) as fh:
            raw = fh.read().strip()
        with open(os.path.join(base, "memory.current")) as fh:
            current = int(fh.read().strip())
    except (OSError, ValueError):
        return None
    return {"path": base, "max_bytes": None if raw == "max" else int(raw), "current_bytes": current}


def _read(path: str, limit: int = 65536) -> bytes:
    with open(path, "rb") as fh:
        return fh.read(limit)


def _resolve(proc: str, pid, me: int, my_uid: int) -> dict:
    """What /proc says about a PID NVML named. NVML reports PIDs in the driver's (host) namespace: in a
    container the entry may be missing, or belong to an unrelated process that has no GPU open."""
    d = os.path.join(proc, str(pid))
    try:
        st = os.stat(d)
        comm = _read(os.path.join(d, "comm")).decode(errors="replace").strip()
    except (OSError, TypeError):
        return {"pid": pid, "found": False, "why_not_found": "no such process in this PID namespace "
                "(another container or namespace, or it has exited)", "ours": False}
    gpu_open = _has_gpu_open(d)
    if gpu_open is False:
        return {"pid": pid, "found": False, "ours": False,
                "why_not_found": f"PID {pid} here is {comm!r}, which has no GPU open: the GPU user is in another PID namespace"}
    out = {"pid": pid, "found": True, "ours": _descends_from(proc, pid, me), "uid": st.st_uid, "program": comm,
           "nofile_soft": _nofile_soft(d)}
    if st.st_uid == my_uid:  # another user's command line and name stay out of the report (it may be pasted)
        try:
            argv = _read(os.path.join(d, "cmdline")).split(b"\0")
            out["command"] = " ".join(a.decode(errors="replace") for a in argv if a)[:500]
        except OSError:
            pass
        import pwd

        try:
            out["user"] = pwd.getpwuid(st.st_uid).pw_name
        except KeyError:
            pass
    return out


def _nofile_soft(d: str):
    """The process's soft RLIMIT_NOFILE from /proc/PID/limits (proc(5)); None when unlimited or unreadable."""
    try:
        for line in _read(os.path.join(d, "limits")).decode(errors="replace").splitlines():
            if line.startswith("Max open files"):
                soft = line[len("Max open files"):].split()[0]
                return int(soft) if soft.isdigit() else None
    except OSError:
        pass
    return None


def _has_gpu_open(d: str):
    """True when the process holds /dev/nvidia* open, False when its fds say it does not, None when unreadable."""
    try:
        fds = os.listdir(os.path.join(d, "fd"))
    except OSError:
        return None
    for fd in fds[:MAX_FDS]:
        try:
            if os.readlink(os.path.join(d, "fd", fd)).startswith(("/dev/nvidia", "/dev/dxg")):
                return True
        except OSError:
            continue
    return False if len(fds) <= MAX_FDS else None


def _descends_from(proc: str, pid: int, ancestor: int) -> bool:
    """Whether ``pid`` is ``ancestor`` or one of its descendants (gpudoctor's own CUDA workers hold contexts too)."""
    for _ in range(64):
        if pid == ancestor:
            return True
        try:
            stat = _read(os.path.join(proc, str(pid), "stat")).decode(errors="replace")
            pid = int(stat.rsplit(")", 1)[1].split()[1])  # field 4, after the parenthesised comm
        except (OSError, ValueError, IndexError):
            return False
        if pid <= 1:
            return False
    return False
