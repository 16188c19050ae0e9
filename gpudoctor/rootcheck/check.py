"""`gpudoctor check --root DIR` / `--image FILE`: judge a system from its files (nothing in it is executed).

The root's probes read through its :class:`~gpudoctor.sysroot.view.SystemView` with the same code as the live
check (the library index, the loader probe); their facts are given the live probes' shapes where a live rule
judges them (the CUDA runtimes against ``--driver``), and the root's own rules add what a root can say.
"""
from __future__ import annotations

import time
from typing import Optional, Sequence, Tuple

from gpudoctor.check import Report
from gpudoctor.process.runner import Probe, ProbeContext, run_probes
from gpudoctor.rules.fixes import OsFlavor

__all__ = ["run_root_check"]


def _os_flavor(view, root_facts: dict) -> OsFlavor:
    if view.os == "windows":
        return OsFlavor.from_platform({"system": "Windows"})
    rel = root_facts.get("os_release") or {}
    # an image runs in a container: its fixes need no sudo
    return OsFlavor.from_platform({"system": "Linux", "os": {"id": rel.get("ID"), "id_like": rel.get("ID_LIKE"),
                                                             "version_id": rel.get("VERSION_ID")},
                                   "container": {"is_container": True}})


def _windows_rules() -> list:
    """The rules that judge a Windows root's facts (:mod:`gpudoctor.rules.windows` when present)."""
    try:
        from gpudoctor.rules import windows
    except ImportError:
        return []
    return list(windows.RULES)


def run_root_check(view, matrix, driver: Optional[str] = None, targets: Sequence[Tuple[str, str]] = (),
                   timeout: float = 30.0) -> Report:
    """Probe the root ``view`` names (Linux: libraries, loader picks, toolkits, frameworks; Windows: see
    :mod:`gpudoctor.windows`), judge the facts (``driver``: the driver version of the host that will run it,
    e.g. "535.104.05"; ``targets``: (name, compute capability) of GPUs it will run on), and return a report."""
    from gpudoctor.probes import cudnn, environment, loader
    from gpudoctor.rules import environment as env_rules
    from gpudoctor.rules import Facts, RuleContext, cuda, evaluate, frameworks, implausible, libraries, root, toolkit
    from gpudoctor.rules import loader as loader_rules
    from gpudoctor.probes import root as linux_probe
    from gpudoctor.probes import root_frameworks
    from gpudoctor.rules import root_libraries

    t0 = time.monotonic()
    ctx = ProbeContext(env=view.env, smoke=False, timeout=min(timeout / 3, 10.0), cache=False, view=view)
    if view.os == "windows":
        from gpudoctor.probes import windows_root

        probes = [Probe("windows", "windows", windows_root.probe, timeout)]
        rules = [root.needs_live_system, cuda.driver_vs_runtimes] + _windows_rules()
    else:
        probes = [Probe("root", "root", linux_probe.probe, timeout), Probe("loader", "loader", loader.probe, timeout),
                  Probe("cudnn", "cudnn", cudnn.probe, timeout), Probe("environment", "environment", environment.probe, timeout),
                  Probe("tensorrt", "tensorrt", root_frameworks.tensorrt_probe, timeout),  # the live shapes, from files
                  Probe("nccl", "nccl", root_frameworks.nccl_probe, timeout)]
        rules = [root.inventory, root.needs_live_system, root.cuda_majors_mixed, cuda.driver_vs_runtimes, cuda.ptx_too_new,
                 loader_rules.loader_integrity, libraries.cudnn_mismatch, env_rules.ld_library_path, env_rules.cuda_home,
                 frameworks.arch_binary_missing, frameworks.cpu_build, root.dependencies_missing,
                 toolkit.compiler_unsupported, toolkit.mixed_toolkit, toolkit.inventory, toolkit.arch_unsupported,
                 root_libraries.nccl_env, frameworks.cuda_mismatch]
    results = run_probes(probes, ctx)
    got = {n: r.facts for n, r in results.items() if r.status == "ok"}
    if "root" in got:
        got["cuda"] = linux_probe.cuda_facts(got["root"])
        got["toolkit"] = got["root"].get("toolkit") or {}
        got["compilers"] = got["root"].get("compilers") or {}
        got["frameworks"] = linux_probe.frameworks_facts(got["root"])
    if "windows" in got:
        from gpudoctor.rules import windows as windows_rules

        got["cuda"] = windows_rules.runtime_facts(got["windows"])
        nvcuda = (got["windows"].get("driver") or {}).get("nvcuda") or {}
        if nvcuda.get("driver_version") and not driver:
            got["driver"] = {"given_version": nvcuda["driver_version"], "given_from": "nvcuda.dll's file version"}
    if driver:
        got["driver"] = {"given_version": driver, "given_from": "--driver"}
    if got.get("driver", {}).get("given_version") and matrix is not None:  # the CUDA it runs, from the matrix
        top = matrix.max_cuda_for_driver(got["driver"]["given_version"], os="windows" if view.os == "windows" else "linux")
        if top:
            got["driver"].update(given_cuda=top, given_cuda_from=f"the matrix, for driver {got['driver']['given_version']}")
    facts = Facts(got, {n: {"status": r.status, "error": r.error} for n, r in results.items()},
                  targets=[{"index": "target", "name": n, "compute_capability": cc} for n, cc in targets])
    osf = _os_flavor(view, got.get("root") or {})
    rctx = RuleContext(matrix=matrix, os=osf)
    findings = evaluate(facts, rctx, rules=rules + [implausible.implausible_values])
    findings.sort(key=lambda f: -f.severity.rank)
    return Report(results, findings, time.monotonic() - t0, getattr(matrix, "data_version", None), osf,
                  matrix_origin=getattr(matrix, "origin", None),
                  options={"root": view.root, "os": view.os, "driver": driver,
                           "target_gpus": [f"{n} ({cc})" for n, cc in targets], "smoke": False, "no_gpu": True})
