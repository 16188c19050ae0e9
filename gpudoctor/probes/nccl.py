"""What NCCL will find on this node: its library copies, its environment variables, the devices those
variables name (InfiniBand HCAs, network interfaces), and the shared memory it needs (``/dev/shm``).

Facts only; :mod:`gpudoctor.rules.multigpu` judges them. NCCL's version is asked of each library in a
child (``ncclGetVersion``), so a library that crashes on load is a recorded problem, not a crash; its answer
and the file name's version are validated (:class:`gpudoctor.probes.facts_frameworks.NcclFacts`).
"""
from __future__ import annotations

import os

from gpudoctor.probes import facts_frameworks as typed
from gpudoctor.probes._worker import ask_libraries
from gpudoctor.probes.libfind import index_for

SYS_CLASS = "/sys/class"


def _names(directory: str, problems: list) -> list:
    """Entries of a sysfs class directory; [] when the class does not exist (no such hardware)."""
    try:
        return sorted(os.listdir(directory))
    except FileNotFoundError:
        return []
    except OSError as exc:
        from gpudoctor.process import problems as P

        problems.append(P.record(directory, "unreadable", f"cannot list {directory}: {exc.strerror or exc}"))
        return []


def shm_size(path: str = "/dev/shm"):
    """``{"path", "size_bytes", "free_bytes"}`` of the shared-memory mount, or ``{"path", "error"}``."""
    try:
        st = os.statvfs(path)
    except OSError as exc:
        return {"path": path, "error": exc.strerror or str(exc)}
    return {"path": path, "size_bytes": st.f_blocks * st.f_frsize, "free_bytes": st.f_bavail * st.f_frsize}


def probe(ctx, sys_class: str = SYS_CLASS) -> dict:
    """``{"libraries": [{path, realpath, origin, version, package, api: {"ncclGetVersion": int}}],
    "loader_pick": path|None, "vars": {NCCL_*: value}, "infiniband_devices": [names],
    "net_interfaces": [names], "shm": {path, size_bytes, free_bytes}, "problems": [...]}``."""
    problems: list = []
    idx = index_for(ctx)
    copies = idx.copies("libnccl")
    api = ask_libraries(ctx, [c.realpath for c in copies])
    libs = []
    for c in copies:
        info = c.to_dict()
        info["api"] = api.get(c.realpath) or {}
        info["api_version"] = None  # ncclGetVersion's int as 2.x.y, validated by NcclLibrary
        libs.append(info)
    raw = {
        "libraries": libs,
        "loader_pick": idx.loader_pick("libnccl.so.2"),
        "vars": {k: v for k, v in sorted(ctx.env.items()) if k.startswith("NCCL_")},
        "infiniband_devices": _names(os.path.join(sys_class, "infiniband"), problems),
        "net_interfaces": _names(os.path.join(sys_class, "net"), problems),
        "shm": shm_size(),
        "problems": problems,
    }
    return typed.NcclFacts.parse(raw, typed.Origin(None, "the nccl probe's library worker")).to_dict()
