"""`check`'s fixes that pin a pip wheel, checked against the index they would fetch it from (issue 26).

:func:`check_fix_wheels` runs after the rules, before a report is rendered: for each problem shown with its
fixes (warnings and failures), the pinned requirements of its ``pip install`` commands are asked of their index
(:class:`gpudoctor.install.verify.IndexSession`, the plan's own checker and cache); a fix whose wheel is not
served gets a note with the versions that are. A report with no such fix costs nothing: no import of the
index machinery, no network. An index that cannot answer changes nothing (the fix stays as written).
"""
from __future__ import annotations

import dataclasses
import re
import shlex
from typing import List, Optional, Tuple

__all__ = ["pip_pins", "os_packages", "check_fix_wheels"]


def pip_pins(command: str) -> List[Tuple[str, Optional[str]]]:
    """(requirement, --index-url or None) of each pinned requirement ("name==1.2.*", "name>=3") that the
    ``pip install`` in ``command`` names; [] for any other command or one shlex cannot read."""
    if "pip install" not in command:
        return []
    try:
        words = shlex.split(command, comments=True)
    except ValueError:
        return []
    try:
        start = next(i for i in range(len(words) - 1) if words[i] == "pip" and words[i + 1] == "install") + 2
    except StopIteration:
        return []
    reqs: List[str] = []
    index: Optional[str] = None
    rest = iter(words[start:])
    for w in rest:
        if w in ("&&", "||", ";", "|"):
            break
        if w in ("--index-url", "-i"):
            index = next(rest, None)
        elif w.startswith("--index-url="):
            index = w.split("=", 1)[1]
        elif w in ("-r", "-c", "--requirement", "--constraint", "--extra-index-url", "-f", "--find-links"):
            next(rest, None)  # an argument that is not a requirement
        elif not w.startswith("-") and any(op in w for op in ("==", ">=", "<=", "~=", "!=", "<", ">")):
            reqs.append(w)
    return [(r, index) for r in reqs]


_OS_INSTALL = re.compile(r"(?:^|[;&|]\s*)(?:sudo\s+)?(apt-get|apt|dnf)\s+install\b([^;&|]*)")


def os_packages(command: str) -> List[Tuple[str, str]]:
    """(kind "apt" | "dnf", package) of each package an ``apt-get install`` / ``dnf install`` in ``command``
    names by plain name ("libcudnn9-cuda-12", "cuda-drivers-580"); names built by the shell (``$(...)``,
    ``linux-headers-$(uname -r)``) and options are left out."""
    out = []
    for tool, args in _OS_INSTALL.findall(command):
        for w in args.split():
            if re.fullmatch(r"[a-z0-9][a-z0-9+.-]+", w):
                out.append(("dnf" if tool == "dnf" else "apt", w))
    return out


def _os_sources(report, kind: str) -> List[str]:
    """The repositories this machine's OS takes packages from, for ``kind``: NVIDIA's CUDA repository and the
    distribution's archive (:func:`gpudoctor.install.apt_index.repository_for`); [] when the OS is not one the
    matrix knows."""
    from gpudoctor.install.apt_index import repository_for
    from gpudoctor.install.target import os_id_from_facts
    from gpudoctor.matrix import load_matrix

    platform = getattr((getattr(report, "probes", None) or {}).get("platform"), "facts", None) or {}
    os_id = os_id_from_facts(platform)
    try:
        info = load_matrix().os_info(os_id) if os_id else None
    except (KeyError, ValueError):
        info = None
    if info is None or (info.family == "rhel") != (kind == "dnf"):
        return []
    return [u for u in (repository_for(info, "nvidia"), repository_for(info, "distro")) if u]


def check_fix_wheels(report, timeout: float = 5.0, offline: bool = False, ask_os_indexes: bool = True) -> int:
    """Add a note to each shown fix (of a warning or failure in ``report.findings``) whose pinned pip wheel its
    index does not serve, or whose apt/dnf package no repository of this OS serves; ``timeout``: seconds for all
    index requests together. ``ask_os_indexes=False`` answers OS packages from the cache only (what
    ``gpudoctor install`` fetched within its lifetime): an OS repository's index is megabytes (Debian's three
    components: 1.7 s cold here), more than ``check`` may spend. Returns how many fixes got a note. Findings are
    replaced in ``report.findings`` (they are frozen)."""
    from gpudoctor.findings import Severity

    shown = [(i, f) for i, f in enumerate(report.findings)
             if f.severity.rank >= Severity.WARN.rank
             and any(pip_pins(c) or os_packages(c) for fx in f.fixes for c in fx.commands)]
    if not shown:
        return 0
    from gpudoctor.install.verify import NOT_SERVED, IndexSession, default_checkers

    session = IndexSession(offline=offline, timeout=timeout, checkers=default_checkers())
    os_session = session if ask_os_indexes else IndexSession(offline=True, timeout=timeout, checkers=default_checkers())
    sources = {kind: _os_sources(report, kind) for kind in ("apt", "dnf")}

    def not_served(cmd: str) -> List[str]:
        out = [c.reason for req, index in pip_pins(cmd) for c in [session.check("pip", req, index)]
               if c.status == NOT_SERVED]
        for kind, name in os_packages(cmd):
            # a package is missing only when every repository this OS uses answered without it
            checks = [os_session.check(kind, name, src) for src in sources[kind]]
            if checks and all(c.status == NOT_SERVED for c in checks):
                out.append(f"{name} is in none of {', '.join(c.index for c in checks)}")
        return out

    noted = 0
    for i, f in shown:
        fixes = []
        for fx in f.fixes:
            reasons = [r for cmd in fx.commands for r in not_served(cmd)]
            if reasons:
                noted += 1
                fx = dataclasses.replace(fx, summary=fx.summary + " NOTE: " + "; ".join(reasons))
            fixes.append(fx)
        report.findings[i] = dataclasses.replace(f, fixes=tuple(fixes))
    return noted
