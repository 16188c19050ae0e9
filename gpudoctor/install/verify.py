"""Is every requirement a plan names served where it will be fetched from? (issue 26)

:class:`IndexSession` asks the indexes (one checker per :data:`~gpudoctor.install.index_types.KINDS` kind,
:func:`gpudoctor.install.pip_index.served` for pip), remembers each answer for the run, and bounds the run's
network time: all requests together get ``timeout`` seconds; a host that did not answer is not asked again.
Its :meth:`IndexSession.oracle` is what the solver takes (requirement, index URL -> None or why not served);
:func:`verify_plan` checks a finished plan's pip requirements and the apt/dnf/winget packages its steps name.
An index that cannot answer makes a requirement "unverified", with the reason, never a failure.
"""
from __future__ import annotations

import functools
import re
import time
from dataclasses import dataclass
from typing import Callable, Dict, List, Mapping, Optional, Tuple
from urllib.parse import urlsplit

from packaging.requirements import InvalidRequirement, Requirement

from gpudoctor.install.index_types import IndexAnswer

__all__ = ["Check", "Verification", "IndexSession", "verify_plan", "verify_requirements", "default_checkers",
           "os_packages", "index_label"]

#: checker(name, index, *, offline, timeout) -> IndexAnswer; ``index`` is the pip index URL (None: pip's own)
#: or, for apt/dnf, the plan's OS id (the checker knows that OS's repositories).
Checker = Callable[..., IndexAnswer]

SERVED, NOT_SERVED, UNVERIFIED = "served", "not served", "unverified"


def index_label(index: str) -> str:
    """"PyPI" for PyPI's simple pages, else the index URL up to the project ("https://h/simple")."""
    if index.startswith("https://pypi.org/simple/"):
        return "PyPI"
    return index.rstrip("/").rsplit("/", 1)[0] if index.startswith("http") else index


@dataclass(frozen=True)
class Check:
    """One requirement against one index: ``status`` is "served", "not served" or "unverified";
    ``matching`` the served versions that satisfy it (oldest first), ``newest`` the newest served at all;
    ``reason`` one line for "not served" and "unverified"."""

    kind: str
    requirement: str
    name: str
    index: str
    status: str
    matching: Tuple[str, ...] = ()
    newest: Optional[str] = None
    reason: Optional[str] = None
    fetched_at: Optional[float] = None
    from_cache: bool = False

    def to_dict(self) -> dict:
        return {"kind": self.kind, "requirement": self.requirement, "name": self.name, "index": self.index,
                "status": self.status, "matching": list(self.matching), "newest": self.newest,
                "reason": self.reason, "fetched_at": self.fetched_at, "from_cache": self.from_cache}


@dataclass(frozen=True)
class Verification:
    """Every check of one plan, and how they were made (``offline``, the ``timeout`` budget in seconds)."""

    checks: Tuple[Check, ...]
    offline: bool
    timeout: float

    def of(self, status: str) -> Tuple[Check, ...]:
        return tuple(c for c in self.checks if c.status == status)

    def to_dict(self) -> dict:
        return {"offline": self.offline, "timeout_s": self.timeout,
                "counts": {s: len(self.of(s)) for s in (SERVED, NOT_SERVED, UNVERIFIED)},
                "checks": [c.to_dict() for c in self.checks]}

    def summary_lines(self) -> List[str]:
        """What the plan's header says: per index, what was checked, when, from the cache or not."""
        if not self.checks:
            return ["Nothing this plan fetches from a package index needed checking."]
        lines: List[str] = []
        by_index: Dict[str, List[Check]] = {}
        for c in self.checks:
            by_index.setdefault(f"{c.kind} {index_label(c.index)}", []).append(c)
        for where, checks in by_index.items():
            ok = [c for c in checks if c.status == SERVED]
            if ok:
                times = [c.fetched_at for c in ok if c.fetched_at]
                when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(min(times))) if times else "unknown time"
                cached = sum(c.from_cache for c in ok)
                lines.append(f"Verified against {where.split(' ', 1)[1]} ({where.split(' ', 1)[0]}) as of {when}"
                             + (f" ({cached} of {len(ok)} answers from the cache)" if cached else "")
                             + ": " + ", ".join(c.requirement for c in ok))
            for c in checks:
                if c.status == NOT_SERVED:
                    lines.append(f"NOT SERVED: {c.reason}")
            bad = [c for c in checks if c.status == UNVERIFIED]
            if bad:
                reasons = sorted({c.reason or "unknown" for c in bad})
                lines.append(f"Unverified ({where}: {'; '.join(reasons)}): " + ", ".join(c.requirement for c in bad))
        if self.offline:
            lines.append("--offline: indexes were not asked; only answers cached within the hour were used.")
        return lines


def default_checkers(cache_dir: Optional[str] = None) -> Dict[str, Checker]:
    """pip's checker, and apt/dnf/winget ones where gpudoctor has them (gpudoctor.install.apt_index)."""
    from gpudoctor.install import pip_index

    checkers: Dict[str, Checker] = {"pip": functools.partial(pip_index.served, cache_dir=cache_dir)}
    try:
        from gpudoctor.install import apt_index  # type: ignore[attr-defined]
    except ImportError:
        return checkers
    for kind in ("apt", "dnf", "winget"):
        fn = getattr(apt_index, "checker_for", None)
        checker = fn(kind) if callable(fn) else (getattr(apt_index, "served", None) if kind in ("apt", "dnf") else None)
        if checker is not None:
            checkers[kind] = checker
    return checkers


class IndexSession:
    """Index answers for one run: memoised, with one network budget of ``timeout`` seconds in all."""

    def __init__(self, *, offline: bool = False, timeout: float = 5.0,
                 checkers: Optional[Mapping[str, Checker]] = None, cache_dir: Optional[str] = None) -> None:
        self.offline = offline
        self.timeout = timeout
        self.checkers = dict(default_checkers(cache_dir) if checkers is None else checkers)
        self._answers: Dict[Tuple[str, str, Optional[str]], IndexAnswer] = {}
        self._down: Dict[str, str] = {}
        self._deadline: Optional[float] = None

    def answer(self, kind: str, name: str, index: Optional[str]) -> IndexAnswer:
        """The index's answer for ``name`` (memoised); never raises."""
        key = (kind, name, index)
        if key not in self._answers:
            self._answers[key] = self._ask(kind, name, index)
        return self._answers[key]

    def _ask(self, kind: str, name: str, index: Optional[str]) -> IndexAnswer:
        checker = self.checkers.get(kind)
        if checker is None:
            return IndexAnswer(kind, name, index or kind, None, "no checker for this kind of index yet")
        if self._deadline is None:
            self._deadline = time.monotonic() + self.timeout
        left = self._deadline - time.monotonic()
        host = urlsplit(index).netloc if index and "://" in index else (index or "")
        gave_up = (self._down.get(host) if host in self._down else
                   f"gave up: the indexes' time budget ({self.timeout:g} s, --index-timeout) was spent" if left <= 0.05
                   else None)
        offline = self.offline or gave_up is not None
        try:
            ans = checker(name, index, offline=offline, timeout=max(0.05, min(self.timeout, left)))
        except Exception as exc:  # a checker's bug is an unverified requirement, not a failed plan
            return IndexAnswer(kind, name, index or kind, None, f"checker failed: {type(exc).__name__}: {exc}"[:200])
        if gave_up and not ans.known:
            return IndexAnswer(ans.kind, ans.name, ans.index, None, gave_up)
        if not ans.known and ans.error and not self.offline and ans.error.startswith(("unreachable", "no answer")):
            self._down[host] = f"{ans.error} (an earlier request to {host or 'it'} got no answer)"
        return ans

    def check(self, kind: str, requirement: str, index: Optional[str]) -> Check:
        """``requirement`` ("tensorrt-cu12==11.5.*" for pip, "pkg" or "pkg=1.2-1" for apt/dnf) against its index."""
        name, matches = _parse(kind, requirement)
        ans = self.answer(kind, name, index)
        if not ans.known:
            return Check(kind, requirement, name, ans.index, UNVERIFIED, reason=ans.error or "no answer",
                         fetched_at=ans.fetched_at, from_cache=ans.from_cache)
        versions = tuple(ans.versions or ())
        matching = matches(versions)
        newest = versions[-1] if versions else None
        if matching:
            return Check(kind, requirement, name, ans.index, SERVED, matching, newest, None, ans.fetched_at,
                         ans.from_cache)
        where = index_label(ans.index)
        if not versions:
            why = f"{requirement} is not on {where}: it has no project {name}"
        else:
            recent = ", ".join(versions[-5:]) + (f" and {len(versions) - 5} older" if len(versions) > 5 else "")
            why = f"{requirement} is not on {where}; newest served: {newest} (served: {recent})"
        return Check(kind, requirement, name, ans.index, NOT_SERVED, (), newest, why, ans.fetched_at, ans.from_cache)

    def oracle(self, requirement: str, index: Optional[str]) -> Optional[str]:
        """For the solver: None when ``requirement`` is served or cannot be checked now, else why it is not."""
        c = self.check("pip", requirement, index)
        return c.reason if c.status == NOT_SERVED else None


def _parse(kind: str, requirement: str):
    """(name, versions -> matching versions) for one requirement of ``kind``."""
    if kind == "pip":
        try:
            req = Requirement(requirement)
        except InvalidRequirement:
            name = re.split(r"[<>=!~\[; ]", requirement, 1)[0]
            return name, lambda versions: ()
        return req.name, lambda versions: tuple(req.specifier.filter(versions))
    name, _, version = requirement.partition("=")
    if not version:
        return name, lambda versions: versions
    pattern = re.compile(re.escape(version).replace(r"\*", ".*") + r"\Z")
    return name, lambda versions: tuple(v for v in versions if pattern.match(v))


_INSTALL = re.compile(r"^(?:sudo\s+|\$SUDO\s+)?(apt-get|dnf)\s+install\s+(.*)$")
_WINGET = re.compile(r"\bwinget install --id (\S+)")


def os_packages(plan) -> List[Tuple[str, str]]:
    """(kind, package or "package=version") of every apt/dnf/winget package the plan's steps install."""
    from gpudoctor.install.steps import linux_steps, windows_steps

    out: List[Tuple[str, str]] = []
    if plan.target.os.family == "windows":
        for step in windows_steps(plan):
            for cmd in step.root + step.user:
                out += [("winget", m.group(1)) for m in _WINGET.finditer(cmd)]
        return list(dict.fromkeys(out))
    for step in linux_steps(plan):
        for cmd in step.root:
            m = _INSTALL.match(cmd)
            if not m:
                continue
            kind = "apt" if m.group(1) == "apt-get" else "dnf"
            for tok in m.group(2).split():
                if tok.startswith("-") or "$" in tok or '"' in tok:
                    continue  # flags; kernel headers named by the running kernel cannot be checked ahead
                out.append((kind, tok))
    return list(dict.fromkeys(out))


def verify_requirements(reqs, session: IndexSession, os_id: Optional[str] = None) -> List[Check]:
    """Checks of ``reqs`` = [(kind, requirement, index URL or None)]; apt/dnf ones are asked for ``os_id``."""
    return [session.check(kind, req, index if kind == "pip" else os_id) for kind, req, index in reqs]


def verify_plan(plan, *, offline: bool = False, timeout: float = 5.0,
                checkers: Optional[Mapping[str, Checker]] = None,
                session: Optional[IndexSession] = None) -> Verification:
    """Every requirement ``plan`` fetches (its pip requirements, its apt/dnf/winget packages) checked against
    the index it comes from. ``session`` reuses a solver run's answers; otherwise one is made from
    ``offline``, ``timeout`` (seconds, all requests together) and ``checkers`` (kind -> checker)."""
    from gpudoctor.install.steps import pip_requirements

    session = session or IndexSession(offline=offline, timeout=timeout, checkers=checkers)
    reqs = [("pip", r, i) for r, i in pip_requirements(plan)] + [(k, p, None) for k, p in os_packages(plan)]
    checks = verify_requirements(reqs, session, plan.target.os.os)
    return Verification(tuple(checks), session.offline, session.timeout)
