"""Rules judge facts against the compatibility matrix and emit findings; they never probe.

Each rule is ``rule(facts: Facts, ctx: RuleContext) -> list[Finding]``, registered in
:data:`RULES`. A rule that raises becomes a ``gpudoctor.rule_error`` finding, never a traceback.
"""
from __future__ import annotations

import traceback
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional

from gpudoctor.findings import Finding, Severity
from gpudoctor.rules.fixes import OsFlavor


class Facts:
    """Read access to probe results: ``facts["driver"]`` is that probe's dict ({} when it failed)."""

    def __init__(self, results: Dict[str, dict], statuses: Optional[Dict[str, dict]] = None,
                 targets: Optional[List[dict]] = None):
        self._results = results
        self.statuses = statuses or {}
        #: GPUs named with --target-gpu ({"index": "target", "name", "compute_capability"}): judged like real ones.
        self.targets = list(targets or [])

    def __getitem__(self, name: str) -> dict:
        return self._results.get(name) or {}

    def ok(self, name: str) -> bool:
        return bool(self._results.get(name))

    def items(self):
        """(probe name, facts) of every probe that returned facts."""
        return [(k, v) for k, v in self._results.items() if v]

    def driver(self):
        """The driver probe's facts, typed (:class:`gpudoctor.probes.facts.DriverFacts`); values already validated."""
        from gpudoctor.probes.facts import DriverFacts

        return DriverFacts.from_dict(self["driver"])

    def cuda(self):
        """The cuda probe's facts, typed (:class:`gpudoctor.probes.facts.CudaFacts`); values already validated."""
        from gpudoctor.probes.facts import CudaFacts

        return CudaFacts.from_dict(self["cuda"])


@dataclass
class RuleContext:
    matrix: object  # gpudoctor.matrix.Matrix, or None when the matrix failed to load
    os: OsFlavor
    requirements: tuple = ()  # gpudoctor.rules.requirements.Requirement (check --require, gpudoctor.toml)


def _rules() -> List[Callable]:
    from gpudoctor.rules import loader
    from gpudoctor.rules import (
        cuda, devices, differential, driver, engine, environment, frameworks, libraries, multigpu, platform, policy, sharing, smoke, toolkit,
        windows,
    )
    from gpudoctor.rules.implausible import implausible_values

    return [
        driver.driver_state, driver.driver_mismatch, driver.stub_library,
        cuda.driver_vs_runtimes, cuda.ptx_too_new,
        devices.visibility, devices.gpu_health, devices.driver_model,
        multigpu.gpu_missing, multigpu.gpus_differ, multigpu.topology, multigpu.p2p_unavailable, multigpu.nvlink_down,
        multigpu.fabric_manager,
        multigpu.shm_small, multigpu.nccl_env,
        sharing.limits, sharing.limit_hit, sharing.gpu_sharing,
        toolkit.compiler_unsupported, toolkit.compiler_broken, toolkit.toolkit_broken, toolkit.ptxas_on_path_broken, toolkit.mixed_toolkit, toolkit.arch_unsupported, toolkit.inventory,
        libraries.library_not_found, libraries.cudnn_mismatch, libraries.tensorrt_libs,
        loader.loader_integrity,
        engine.engine_plans,
        frameworks.cpu_build, frameworks.cuda_mismatch, frameworks.arch_binary_missing,
        environment.ld_library_path, environment.cuda_home,
        platform.wsl_driver, platform.container,
        smoke.nvrtc_smoke, smoke.nvcc_smoke, smoke.tensorrt_smoke, multigpu.p2p_smoke,
        differential.environment_breaks_step,
        policy.requirements,
        *windows.RULES,  # Windows: what its files say (the probe runs on Windows only; no facts, no findings)
        implausible_values,
        probe_failures,
    ]


def probe_failures(facts: Facts, ctx: RuleContext) -> List[Finding]:
    """A probe that raised or timed out is itself a finding: the report must not silently lack an area."""
    out = []
    for name, st in facts.statuses.items():
        if st.get("status") in ("error", "timeout"):
            out.append(Finding(
                id="gpudoctor.probe_failed", severity=Severity.WARN, area=name,
                title=f"The {name} probe did not finish: {st.get('error')}",
                evidence={"probe": name, "status": st.get("status"), "error": st.get("error")},
                detail="Facts from this probe are missing, so checks that need them were skipped. "
                       "Please report this at https://github.com/gpudoctor/gpudoctor/issues with `gpudoctor check --json`.",
            ))
    return out


def evaluate(facts: Facts, ctx: RuleContext, rules: Optional[List[Callable]] = None) -> List[Finding]:
    """Every rule's findings (``rules``: these instead of all, with :func:`probe_failures`; a check of a root
    on disk runs the ones its facts can feed), then one for each problem a probe recorded that none of them
    names (:func:`gpudoctor.rules.faults.unreported_problems`: nothing broken is reported as fine)."""
    from gpudoctor.rules.faults import unreported_problems

    findings: List[Finding] = []
    for rule in (_rules() if rules is None else list(rules) + [probe_failures]):
        try:
            findings.extend(rule(facts, ctx))
        except Exception as exc:  # isolation: one broken rule must not hide the others' findings
            where = traceback.extract_tb(exc.__traceback__)[-1]
            findings.append(Finding(
                id="gpudoctor.rule_error", severity=Severity.WARN, area="gpudoctor",
                title=f"Internal error in rule {rule.__module__.split('.')[-1]}.{rule.__name__}",
                evidence={"error": f"{type(exc).__name__}: {exc}", "at": f"{where.filename.split('/')[-1]}:{where.lineno}"},
            ))
    return findings + unreported_problems(facts, findings, ctx.os.family)
