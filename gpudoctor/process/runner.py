"""Run probes concurrently, each isolated: an exception or a hang becomes a visible fact.

Probes run in daemon threads so that one stuck in a native call (NVML, a driver
ioctl) cannot keep the process alive: the runner stops waiting at its deadline,
records ``timeout`` and moves on.
"""
from __future__ import annotations

import os
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterable, Mapping, Optional, Tuple

from gpudoctor.process import subproc


@dataclass
class ProbeContext:
    """What every probe may read: the environment it diagnoses and shared, memoised scans.

    ``env`` is a snapshot of the environment (tests pass their own); ``smoke`` says
    whether smoke tests (compiles and launches) may run; ``timeout`` is the longest a
    quick query (``nvcc --version``, a child asking a library) may take, in seconds;
    ``budget`` is the whole run's wall-clock budget in seconds (None: each probe's own
    limit only): no command outlives it (see :func:`gpudoctor.process.subproc.budget`).
    """

    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    smoke: bool = True
    timeout: float = 10.0
    budget: Optional[float] = None
    #: Interpreter whose environment the child-process probes inspect (cuda-python, NVRTC, imports).
    python: str = field(default_factory=lambda: sys.executable)
    #: TensorRT engine plans to read (``check --engine FILE``).
    engines: Tuple[str, ...] = ()
    #: Use the on-disk cache of pure functions of files (smoke builds, fatbin scans); ``--no-cache``: False.
    cache: bool = True
    #: The system judged (:class:`gpudoctor.sysroot.view.SystemView`): None for this one, as it runs; a root
    #: on disk for ``check --root`` / ``--image`` (probes that read files read them through it).
    view: Optional[object] = None
    _memo: Dict[str, object] = field(default_factory=dict, repr=False)
    _locks: Dict[str, threading.Lock] = field(default_factory=dict, repr=False)
    _guard: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def memo(self, key: str, compute: Callable[[], object]) -> object:
        """Compute ``key`` once per run, even when several probes ask at the same time."""
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            if key not in self._memo:
                self._memo[key] = compute()
            return self._memo[key]


@dataclass
class ProbeResult:
    """``status``: ok | error | timeout. ``facts`` is the probe's JSON-serialisable dict (None unless ok)."""

    name: str
    status: str
    facts: Optional[dict]
    error: Optional[str]
    elapsed_s: float

    def to_dict(self) -> dict:
        return {"status": self.status, "error": self.error, "elapsed_s": round(self.elapsed_s, 4), "facts": self.facts}


@dataclass(frozen=True)
class Probe:
    name: str
    area: str
    func: Callable[[ProbeContext], dict]
    timeout: float


def run_probes(probes: Iterable[Probe], ctx: ProbeContext) -> Dict[str, ProbeResult]:
    """Run all ``probes`` at once; return results keyed by probe name, in the given order."""
    return start_probes(probes, ctx)()


#: Started first (each probe is a thread; the first ones get the interpreter before the others' imports
#: and parsing): the slowest chains, as measured on an H100 (benchmarks/bench_check.py, check -v).
START_FIRST = ("smoke_nvrtc", "smoke_nvcc", "cuda", "cudnn", "driver", "tensorrt", "toolkit")


def start_probes(probes: Iterable[Probe], ctx: ProbeContext) -> Callable[[], Dict[str, ProbeResult]]:
    """Start all ``probes``; the returned function waits (each probe up to its own timeout,
    counted from the start, and never past ``ctx.budget``) and returns the results keyed by
    name, in the given order. At the budget's end every command still running is killed, the
    probes get :data:`gpudoctor.process.subproc.GRACE` seconds to record that, and any probe still busy
    is reported as ``timeout``."""
    probes = list(probes)
    results: Dict[str, ProbeResult] = {}
    threads = []
    start = time.monotonic()
    budget = subproc.Budget(ctx.budget) if ctx.budget else None
    if budget is not None:
        subproc.install(budget)

    def body(p: Probe) -> None:
        t0 = time.monotonic()
        try:
            facts = p.func(ctx)
            results[p.name] = ProbeResult(p.name, "ok", facts, None, time.monotonic() - t0)
        except Exception as exc:  # isolation: a probe's bug becomes a fact, not a traceback
            where = traceback.extract_tb(exc.__traceback__)[-1]
            msg = f"{type(exc).__name__}: {exc} (at {os.path.basename(where.filename)}:{where.lineno})"
            results[p.name] = ProbeResult(p.name, "error", None, msg, time.monotonic() - t0)

    rank = {name: i for i, name in enumerate(START_FIRST)}
    for p in sorted(probes, key=lambda p: rank.get(p.name, len(rank))):
        t = threading.Thread(target=body, args=(p,), name=f"probe-{p.name}", daemon=True)
        t.start()
        threads.append((p, t))
    threads.sort(key=lambda pt: probes.index(pt[0]))

    def wait(abort: bool = False) -> Dict[str, ProbeResult]:
        """``abort``: the caller gave up (bad input found meanwhile): kill what runs, wait only the grace."""
        try:
            if abort and budget is not None:
                budget.expire()
            return _collect(probes, threads, results, start, budget)
        finally:
            if budget is not None:
                subproc.uninstall(budget)

    return wait


def _collect(probes, threads, results, start, budget) -> Dict[str, ProbeResult]:
    end = budget.deadline if budget is not None else float("inf")
    for p, t in threads:
        t.join(max(0.0, min(start + p.timeout, end) - time.monotonic()))
    if budget is not None and any(t.is_alive() for _, t in threads):
        budget.expire()  # kill what still runs; the probes record it as a fact
        grace_end = time.monotonic() + subproc.GRACE
        for _, t in threads:
            t.join(max(0.0, grace_end - time.monotonic()))
    for p, t in threads:
        if p.name not in results:
            over_budget = budget is not None and time.monotonic() >= budget.deadline
            why = (f"did not finish within the check's {budget.seconds:g} s budget (--timeout)" if over_budget
                   else f"timed out after {p.timeout:g} s")
            results[p.name] = ProbeResult(p.name, "timeout", None, f"{p.name} probe {why}", time.monotonic() - start)
    return {p.name: results[p.name] for p in probes}
