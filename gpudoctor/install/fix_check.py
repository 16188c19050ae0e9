"""`check`'s fixes that pin a pip wheel, checked against the index they would fetch it from (issue 26).

:func:`check_fix_wheels` runs after the rules, before a report is rendered: for each problem shown with its
fixes (warnings and failures), the pinned requirements of its ``pip install`` commands are asked of their index
(:class:`gpudoctor.install.verify.IndexSession`, the plan's own checker and cache); a fix whose wheel is not
served gets a note with the versions that are. A report with no such fix costs nothing: no import of the
index machinery, no network. An index that cannot answer changes nothing (the fix stays as written).
"""
from __future__ import annotations

import dataclasses
import shlex
from typing import List, Optional, Tuple

__all__ = ["pip_pins", "check_fix_wheels"]


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


def check_fix_wheels(report, timeout: float = 5.0, offline: bool = False) -> int:
    """Add a note to each shown fix (of a warning or failure in ``report.findings``) whose pinned pip wheel its
    index does not serve; ``timeout``: seconds for all index requests together. Returns how many fixes got a
    note. Findings are replaced in ``report.findings`` (they are frozen)."""
    from gpudoctor.findings import Severity

    shown = [(i, f) for i, f in enumerate(report.findings)
             if f.severity.rank >= Severity.WARN.rank and any(pip_pins(c) for fx in f.fixes for c in fx.commands)]
    if not shown:
        return 0
    import functools

    from gpudoctor.install.pip_index import served
    from gpudoctor.install.verify import NOT_SERVED, IndexSession

    session = IndexSession(offline=offline, timeout=timeout, checkers={"pip": functools.partial(served)})
    noted = 0
    for i, f in shown:
        fixes = []
        for fx in f.fixes:
            reasons = [c.reason for cmd in fx.commands for req, index in pip_pins(cmd)
                       for c in [session.check("pip", req, index)] if c.status == NOT_SERVED]
            if reasons:
                noted += 1
                fx = dataclasses.replace(fx, summary=fx.summary + " NOTE: " + "; ".join(reasons))
            fixes.append(fx)
        report.findings[i] = dataclasses.replace(f, fixes=tuple(fixes))
    return noted
