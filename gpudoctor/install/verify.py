"""Is every requirement a plan names served where it will be fetched from? (issue 26)

:class:`IndexSession` asks the indexes (one checker per :data:`~gpudoctor.install.index_types.KINDS` kind,
:func:`gpudoctor.install.pip_index.served` for pip), remembers each answer for the run, and bounds the run's
network time: all requests together get ``timeout`` seconds; a host that did not answer is not asked again.
Its :meth:`IndexSession.unserved` is what the solver takes (a candidate plan -> None or why it is not served);
:func:`verify_plan` checks a finished plan's pip requirements and the apt/dnf/winget packages its steps name.
An index that cannot answer makes a requirement "unverified", with the reason, never a failure.
"""
from __future__ import annotations

import dataclasses
import functools
import re
import threading
import time
from dataclasses import dataclass
from typing import Callable, Dict, List, Mapping, Optional, Tuple
from urllib.parse import urlsplit

from packaging.requirements import InvalidRequirement, Requirement

from gpudoctor.install.index_types import IndexAnswer

__all__ = ["Check", "Verification", "IndexSession", "verify_plan", "verify_requirements", "default_checkers",
           "index_label"]

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
        """What the plan's header says: per index, what was verified and when (from the cache or not); each
        requirement not served, with the versions that are; the unverified ones grouped by reason."""
        if not self.checks:
            return ["Nothing this plan fetches from a package index needed checking."]
        lines: List[str] = []
        served: Dict[Tuple[str, str], List[Check]] = {}
        unverified: Dict[Tuple[str, str], List[Check]] = {}
        for c in self.checks:
            if c.status == SERVED:
                served.setdefault((c.kind, _where(c)), []).append(c)
            elif c.status == UNVERIFIED:
                where = f"{c.kind} {_where(c)}" if c.kind == "pip" else c.kind
                unverified.setdefault((where, c.reason or "no answer"), []).append(c)
        for (kind, where), ok in served.items():
            times = [c.fetched_at for c in ok if c.fetched_at]
            when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(min(times))) if times else "an unknown time"
            cached = sum(c.from_cache for c in ok)
            lines.append(f"Verified against {where} ({kind}) as of {when}"
                         + (f", {cached} of {len(ok)} answers from the cache" if cached else "")
                         + ": " + ", ".join(c.requirement for c in ok))
        lines += [f"NOT SERVED: {c.reason}" for c in self.of(NOT_SERVED)]
        for (kind, reason), bad in unverified.items():
            lines.append(f"Unverified ({kind}, {reason}): " + ", ".join(c.requirement for c in bad))
        if self.offline:
            lines.append("--offline: no index was asked; only answers cached within their lifetime were used.")
        return lines


def _where(c: Check) -> str:
    """Where a check's answer came from, short: "PyPI", a pip index URL, or the hosts of apt/dnf sources."""
    if c.kind == "pip":
        return index_label(c.index)
    hosts = list(dict.fromkeys(re.findall(r"https?://([^/\s]+)", c.index)))
    return " + ".join(hosts) or c.index


def default_checkers(cache_dir: Optional[str] = None) -> Dict[str, Checker]:
    """pip's checker (:mod:`gpudoctor.install.pip_index`) and the apt/dnf/winget ones
    (:data:`gpudoctor.install.apt_index.CHECKERS`), with ``cache_dir`` as their cache root."""
    from gpudoctor.install import pip_index

    checkers: Dict[str, Checker] = {"pip": pip_index.served}
    try:
        from gpudoctor.install import apt_index
    except ImportError:  # without it, OS packages are "unverified: no checker", never a failed plan
        pass
    else:
        checkers.update(apt_index.CHECKERS)
    return {k: functools.partial(fn, cache_dir=cache_dir) for k, fn in checkers.items()}


class IndexSession:
    """Index answers for one run: memoised, with one network budget of ``timeout`` seconds in all."""

    def __init__(self, *, offline: bool = False, timeout: float = 5.0,
                 checkers: Optional[Mapping[str, Checker]] = None, cache_dir: Optional[str] = None) -> None:
        self.offline = offline
        self.timeout = timeout
        self.cache_dir = cache_dir
        self.checkers = dict(default_checkers(cache_dir) if checkers is None else checkers)
        self._answers: Dict[Tuple[str, str, Optional[str]], IndexAnswer] = {}
        self._checks: Dict[tuple, "Check"] = {}  # the solver asks the same few requirements for every candidate
        self._down: Dict[str, str] = {}
        self._deadline: Optional[float] = None

    def answer(self, kind: str, name: str, index: Optional[str]) -> IndexAnswer:
        """The index's answer for ``name`` (memoised); never raises."""
        key = (kind, name, tuple(index) if isinstance(index, list) else index)
        if key not in self._answers:
            self._answers[key] = self._ask(kind, name, index)
        return self._answers[key]

    def _ask(self, kind: str, name: str, index: Optional[str]) -> IndexAnswer:
        checker = self.checkers.get(kind)
        if checker is None:
            return IndexAnswer(kind, name, _label(index) or kind, None, "no checker for this kind of index yet")
        if index is None and kind != "pip":  # pip's None is pip's own index; an OS package's is none known
            return IndexAnswer(kind, name, kind, None, "no repository index is known for this OS")
        if self._deadline is None:
            self._deadline = time.monotonic() + self.timeout
        left = self._deadline - time.monotonic()
        # One host that did not answer is not asked again; a union of sources is always asked (its parts differ).
        host = urlsplit(index).netloc if isinstance(index, str) and "://" in index and "{" not in index else None
        gave_up = (self._down[host] if host in self._down else
                   f"gave up: the indexes' time budget ({self.timeout:g} s, --index-timeout) was spent" if left <= 0.05
                   else None)
        offline = self.offline or gave_up is not None
        box: Dict[str, object] = {}

        def ask() -> None:
            try:
                box["answer"] = checker(name, index, offline=offline, timeout=max(0.05, min(self.timeout, left)))
            except Exception as exc:  # a checker's bug is an unverified requirement, not a failed plan
                box["answer"] = IndexAnswer(kind, name, _label(index) or kind, None,
                                            f"checker failed: {type(exc).__name__}: {exc}"[:200])

        if offline:
            ask()  # the cache only: local and quick
        else:
            # The budget holds even for a checker whose downloads and parsing outlast its own timeout: the thread
            # is left behind (a daemon; cache entries are renamed into place whole) and the run goes on without it.
            worker = threading.Thread(target=ask, name=f"index-{kind}-{name}", daemon=True)
            worker.start()
            worker.join(max(0.05, left) + 0.2)
            if worker.is_alive():
                self._deadline = time.monotonic()
                return IndexAnswer(kind, name, _label(index) or kind, None,
                                   f"gave up after {self.timeout:g} s (--index-timeout): no answer yet")
        ans = box["answer"]
        assert isinstance(ans, IndexAnswer)
        if gave_up and not ans.known:
            return IndexAnswer(ans.kind, ans.name, ans.index, None, gave_up)
        if host and not ans.known and ans.error and not self.offline and _no_answer(ans.error):
            self._down[host] = f"{ans.error} (an earlier request to {host} got no answer)"
        return ans

    def check(self, kind: str, requirement: str, index, spec: Optional[str] = None) -> Check:
        """``requirement`` ("tensorrt-cu12==11.5.*" for pip; a package name for apt/dnf/winget, with ``spec``
        "=1.2-1" for a pinned one) against ``index`` (pip: the index URL or None for pip's own; others: the
        source :func:`gpudoctor.install.apt_index.repository_for` names). Memoised for the session."""
        return self._memo_check(kind, requirement, index, spec, 0)

    def _memo_check(self, kind: str, requirement: str, index, spec: Optional[str], depth: int) -> Check:
        key = (kind, requirement, tuple(index) if isinstance(index, list) else index, spec)
        if key not in self._checks:
            self._checks[key] = self._check(kind, requirement, index, spec, depth)
        return self._checks[key]

    def _built_from(self, served: Check, sdist_url: str, depth: int) -> Check:
        """A pip requirement whose chosen version is served as an sdist only: pip builds it at install, and what
        that build fetches decides (:mod:`gpudoctor.install.sdist_source`): a wheel-stub's wheel from the index
        its pyproject names, a meta package's pinned parts. The worst of those is this requirement's status,
        with the chain in its reason."""
        from gpudoctor.install.sdist_source import build_source

        if depth >= 2:
            return served
        remaining = (self._deadline - time.monotonic()) if self._deadline else self.timeout
        src = build_source(sdist_url, offline=self.offline, timeout=max(0.5, min(self.timeout, remaining)),
                           cache_dir=self.cache_dir)
        version = served.matching[-1]
        if src.get("error"):
            return dataclasses.replace(served, status=UNVERIFIED, reason=(
                f"{served.name} {version} is an sdist, built at install; {src['error']}"))
        if src.get("stub_index"):  # its wheel comes from that index when pip builds it
            got = self._memo_check("pip", f"{served.name}=={version}", src["stub_index"], None, depth + 1)
            if got.status != SERVED:
                answer = "does not serve it" if got.status == NOT_SERVED else "did not answer"
                return dataclasses.replace(served, status=got.status, reason=(
                    f"{served.name} {version} is a wheel-stub sdist: its wheel comes from {src['stub_index']} at "
                    f"install, and that index {answer} ({got.reason})"))
        for req in src.get("requires") or []:
            if "==" not in req or ";" in req:
                continue  # only the exact parts a meta package pins
            got = self._memo_check("pip", req, served.index.rstrip("/").rsplit("/", 1)[0] + "/", None, depth + 1)
            if got.status != SERVED:
                return dataclasses.replace(served, status=got.status, reason=(
                    f"{served.name} {version} is an sdist that pins {req}: {got.reason}"))
        return served

    def _check(self, kind: str, requirement: str, index, spec: Optional[str], depth: int = 0) -> Check:
        name, matches = _parse(kind, requirement, spec)
        requirement = requirement + (spec or "")
        ans = self.answer(kind, name, index)
        if not ans.known:
            return Check(kind, requirement, name, ans.index, UNVERIFIED, reason=ans.error or "no answer",
                         fetched_at=ans.fetched_at, from_cache=ans.from_cache)
        versions = tuple(ans.versions or ())
        matching = matches(versions)
        newest = versions[-1] if versions else None
        if matching:
            served = Check(kind, requirement, name, ans.index, SERVED, matching, newest, None, ans.fetched_at,
                           ans.from_cache)
            sdist = (ans.extra.get("sdist_only") or {}).get(matching[-1]) if kind == "pip" else None
            if not sdist:
                return served
            from gpudoctor.install.pip_index import with_credentials_of

            return self._built_from(served, with_credentials_of(sdist, index), depth)
        where = index_label(ans.index)
        if not versions:
            why = f"{requirement} is not on {where}: it has no project {name}"
        else:
            recent = ", ".join(versions[-5:]) + (f" and {len(versions) - 5} older" if len(versions) > 5 else "")
            why = f"{requirement} is not on {where}; newest served: {newest} (served: {recent})"
        return Check(kind, requirement, name, ans.index, NOT_SERVED, (), newest, why, ans.fetched_at, ans.from_cache)

    def unserved(self, plan) -> Optional[str]:
        """The solver's oracle (:data:`gpudoctor.install.solver.Served`): why one of ``plan``'s pip requirements
        is not served by its index, or None when all are or cannot be checked now."""
        from gpudoctor.install.steps import pip_requirements

        for req, index in pip_requirements(plan):
            c = self.check("pip", req, index)
            if c.status == NOT_SERVED:
                return c.reason
        return None


def _label(index) -> str:
    return " ".join(index) if isinstance(index, (list, tuple)) else (index or "")


def _no_answer(error: str) -> bool:
    """An error that says the host did not answer (pip_index's words, or apt_index's), not a bad page."""
    return error.startswith(("unreachable", "no answer")) or any(
        w in error for w in ("timed out", "unreachable", "not resolved", "Connection", "connect"))


def _parse(kind: str, requirement: str, spec: Optional[str] = None):
    """(name, versions -> matching versions) for one requirement of ``kind``."""
    if kind == "pip":
        try:
            req = Requirement(requirement)
        except InvalidRequirement:
            name = re.split(r"[<>=!~\[; ]", requirement, 1)[0]
            return name, lambda versions: ()
        return req.name, lambda versions: tuple(req.specifier.filter(versions))
    from gpudoctor.install.pkg_versions import satisfies

    def matches(versions):
        try:
            return tuple(satisfies(kind, versions, spec))
        except ValueError:
            return ()
    return requirement, matches


def verify_requirements(reqs, session: IndexSession) -> List[Check]:
    """Checks of ``reqs`` = [(kind, requirement, spec or None, index)] (see :meth:`IndexSession.check`)."""
    return [session.check(kind, req, index, spec) for kind, req, spec, index in reqs]


def verify_plan(plan, *, offline: bool = False, timeout: float = 5.0,
                checkers: Optional[Mapping[str, Checker]] = None,
                session: Optional[IndexSession] = None) -> Verification:
    """Every requirement ``plan`` fetches (its pip requirements, the apt/dnf/winget packages its steps install,
    :func:`gpudoctor.install.apt_index.os_requirements`) checked against the index it comes from. ``session``
    reuses a solver run's answers; otherwise one is made from ``offline``, ``timeout`` (seconds, all requests
    together) and ``checkers`` (kind -> checker; default :func:`default_checkers`)."""
    from gpudoctor.install.steps import pip_requirements

    session = session or IndexSession(offline=offline, timeout=timeout, checkers=checkers)
    reqs = [("pip", r, None, i) for r, i in pip_requirements(plan)]
    try:
        from gpudoctor.install.apt_index import os_requirements
    except ImportError:  # the OS packages are then not listed; the pip side stands alone
        os_requirements = None
    if os_requirements is not None:
        reqs += [(kind, name, spec, source) for kind, name, spec, source in os_requirements(plan)]
    return Verification(tuple(verify_requirements(reqs, session)), session.offline, session.timeout)
