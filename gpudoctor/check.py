"""`gpudoctor check`: run the probes, judge their facts, build a report (no rendering here)."""
from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional

from gpudoctor import __version__
from gpudoctor.findings import Finding, Severity, worst
from gpudoctor.rules.fixes import OsFlavor
from gpudoctor.process.runner import ProbeContext, ProbeResult, start_probes

#: Version of the JSON report's shape (docs/json-report.md). Bump on incompatible changes.
REPORT_SCHEMA_VERSION = 1


@dataclass
class Report:
    probes: Dict[str, ProbeResult]
    findings: List[Finding]
    elapsed_s: float
    matrix_version: Optional[str]
    os: OsFlavor
    options: dict = field(default_factory=dict)
    #: Where the matrix came from: bundled, downloaded by `matrix update` (URL, date), or --matrix DIR.
    matrix_origin: Optional[str] = None

    @property
    def worst(self) -> Severity:
        return worst(self.findings)

    def count(self, sev: Severity) -> int:
        return sum(1 for f in self.findings if f.severity == sev)

    def to_dict(self) -> dict:
        return {
            "schema_version": REPORT_SCHEMA_VERSION,
            "gpudoctor_version": __version__,
            "matrix_data_version": self.matrix_version,
            "matrix_origin": self.matrix_origin,
            "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "host": socket.gethostname(),  # names the node in `gpudoctor fleet`; removed by --redact
            "elapsed_s": round(self.elapsed_s, 3),
            "options": self.options,
            "summary": {s.value: self.count(s) for s in Severity},
            "findings": [f.to_dict() for f in self.findings],
            "probes": {name: r.to_dict() for name, r in self.probes.items()},
        }


#: Longest a quick query (a tool's --version, a child asking a library) may take, seconds; never more than a
#: third of the budget, so one hanging tool leaves time for the rest of the check.
QUERY_TIMEOUT = 10.0


def probe_budget(timeout: float) -> float:
    """The probes' share of ``check --timeout S``: S less about a second for rules and rendering."""
    return max(timeout - 1.0, timeout * 0.7)


def prestart_children(env: Mapping[str, str], smoke: bool = True, cache: bool = True) -> None:
    """Start the slowest children of a check now: the CUDA, NVML and NVRTC-smoke workers and the cached
    smoke binary (each takes a few hundred ms, mostly CUDA initialisation). The probes adopt them
    when their arguments match; :func:`run_check` kills the ones nobody adopted. ``gpudoctor check``
    calls this before even parsing its options."""
    import atexit
    import sys

    from gpudoctor.probes._worker import discard_prestarted, prestart, prestart_libraries

    atexit.register(discard_prestarted)  # a check that stops early (bad option) leaves nothing running
    env = dict(env)
    nvrtc = ("nvrtc-smoke",) if cache else ("nvrtc-smoke", "--no-cache")
    prestart(sys.executable, env, (nvrtc, "cuda", "nvml") if smoke else ("cuda", "nvml"))
    try:  # starting early is an optimisation only: whatever goes wrong here, the probes run as usual
        if cache:
            prestart_libraries(sys.executable, env)
        if smoke and cache:
            from gpudoctor.process.cache import Cache
            from gpudoctor.probes import smoke_nvcc

            atexit.register(smoke_nvcc.discard_prestarted)
            smoke_nvcc.prestart(env, Cache("smoke-nvcc", env=env))
    except Exception:  # noqa: BLE001
        pass


def run_check(matrix, smoke: bool = True, timeout: float = 30.0, env: Optional[Mapping[str, str]] = None,
              probes=None, engines=(), requirements=(), no_gpu: bool = False, target_gpus=(), cache: bool = True,
              setup=None) -> Report:
    """Run ``probes`` (default: all) concurrently, evaluate every rule against ``matrix``.

    ``matrix`` may be a callable returning the matrix: it is then loaded while the probes run
    (its errors, e.g. :class:`gpudoctor.matrix.MatrixError`, propagate). ``setup``, likewise, is
    a callable run while the probes run that returns ``(requirements, target_gpus)`` (reading
    the policy); if it or the matrix raises, the probes' commands are killed and the error
    propagates. ``timeout`` is the
    check's wall-clock budget in seconds: the probes stop (their commands killed, what happened
    recorded) :func:`probe_budget` seconds after the start; no query waits more than
    :data:`QUERY_TIMEOUT`."""
    from gpudoctor.probes._worker import discard_prestarted

    t0 = time.monotonic()
    ctx = ProbeContext(env=dict(env if env is not None else os.environ), smoke=smoke,
                       timeout=min(timeout / 3, QUERY_TIMEOUT), budget=probe_budget(timeout), engines=tuple(engines),
                       cache=cache)
    if probes is None:  # the slowest children first, before the probes (and their imports) exist
        prestart_children(ctx.env, smoke=smoke, cache=cache)
    from gpudoctor.probes import ALL
    from gpudoctor.rules import Facts, RuleContext, _rules, evaluate

    pending = start_probes(probes or ALL, ctx)
    ok = False
    try:
        if callable(setup):
            requirements, target_gpus = setup()
        if callable(matrix):
            matrix = matrix()
        _rules()  # the rule modules' imports, while the probes wait on their children
        ok = True
    finally:
        results = pending(abort=not ok)  # always: it also closes the run's command budget
        discard_prestarted()
        if ok and cache and probes is None:
            from gpudoctor.probes._worker import remember_asked

            remember_asked(ctx.python, ctx.env)
        if smoke and cache and probes is None:
            from gpudoctor.probes import smoke_nvcc

            smoke_nvcc.discard_prestarted()
    facts = Facts({n: r.facts for n, r in results.items() if r.status == "ok"},
                  {n: {"status": r.status, "error": r.error} for n, r in results.items()},
                  targets=[{"index": "target", "name": name, "compute_capability": cc} for name, cc in target_gpus])
    osf = OsFlavor.from_platform(facts["platform"])
    findings = evaluate(facts, RuleContext(matrix=matrix, os=osf, requirements=tuple(requirements)))
    if no_gpu:
        findings = [_not_judged(f) for f in findings]
    findings.sort(key=lambda f: -f.severity.rank)
    return Report(results, findings, time.monotonic() - t0, getattr(matrix, "data_version", None), osf,
                  matrix_origin=getattr(matrix, "origin", None), options=
                  {"smoke": smoke, "cache": cache, "timeout_s": timeout, "engines": list(engines), "no_gpu": no_gpu,
                   "target_gpus": [f"{n} ({cc})" for n, cc in target_gpus],
                   "requirements": [r.text for r in requirements]})


#: What only a machine with its GPU and driver can judge: reported, but not failed, with --no-gpu (image builds).
GPU_DEPENDENT = frozenset({
    "driver.not_loaded", "driver.missing", "driver.version_mismatch", "driver.too_old", "driver.minor_version_compat",
    "driver.ptx_too_new", "driver.no_permission", "device.not_visible", "gpu.health", "container.no_gpu",
    "container.require_cuda", "framework.cuda_mismatch",
})


def _not_judged(f: Finding) -> Finding:
    if f.id not in GPU_DEPENDENT or f.severity.rank <= Severity.INFO.rank:
        return f
    import dataclasses

    return dataclasses.replace(f, severity=Severity.INFO, title=f"(--no-gpu: needs the GPU host) {f.title}")


def collect_facts(names=("platform", "driver"), timeout: float = 10.0,
                  env: Optional[Mapping[str, str]] = None) -> Dict[str, dict]:
    """Run only the named probes (as ``check`` would) and return probe name -> facts ({} when a probe failed)."""
    from gpudoctor.probes import ALL
    from gpudoctor.process.runner import run_probes

    ctx = ProbeContext(env=dict(env if env is not None else os.environ), smoke=False,
                       timeout=min(timeout / 3, QUERY_TIMEOUT), budget=probe_budget(timeout))
    results = run_probes([p for p in ALL if p.name in names], ctx)
    return {name: (r.facts or {}) for name, r in results.items()}
