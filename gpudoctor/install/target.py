"""Who the plan is for: the OS, GPU and driver, given on the command line or taken from probe facts.

Facts come either from the probes run now (``platform`` and ``driver``, the
same code as ``gpudoctor check``) or from a saved ``gpudoctor check --json``
report (``--from-check FILE``).
"""
from __future__ import annotations

import difflib
import re
from typing import Any, Dict, List, Mapping, Optional

from gpudoctor.install.solver import GpuTarget, PlanError, Target
from gpudoctor.matrix import Matrix

__all__ = ["detect_facts", "os_id_from_facts", "resolve_gpu", "resolve_os", "target_from"]


def detect_facts(timeout: float = 10.0) -> Dict[str, Any]:
    """The ``platform`` and ``driver`` probes' facts for this machine."""
    from gpudoctor.check import collect_facts

    return collect_facts(("platform", "driver"), timeout)


def os_id_from_facts(platform: Mapping[str, Any]) -> Optional[str]:
    """The matrix OS id for the ``platform`` probe's facts ("ubuntu-22.04", "wsl-ubuntu", ...), or None."""
    if platform.get("system") == "Windows":
        return "windows"
    if (platform.get("wsl") or {}).get("is_wsl"):
        return "wsl-ubuntu"
    osr = platform.get("os") or {}
    ident, ver = (osr.get("id") or "").lower(), (osr.get("version_id") or "")
    like = (osr.get("id_like") or "").lower()
    if ident == "ubuntu":
        return f"ubuntu-{ver}"
    if ident == "debian":
        return f"debian-{ver.split('.')[0]}"
    if ident in ("rhel", "rocky", "almalinux", "centos") or "rhel" in like:
        return f"rhel-{ver.split('.')[0]}"
    return None


def resolve_os(m: Matrix, os_id: Optional[str], facts: Mapping[str, Any]):
    """The matrix's OsInfo for ``os_id`` (or the detected OS). Raises PlanError with the known ids."""
    known = [o.os for o in m.oses()]
    wanted = os_id or os_id_from_facts(facts.get("platform") or {})
    if wanted is None:
        raise PlanError("cannot tell which OS this is: pass --os", [f"known: {', '.join(known)}"])
    info = m.os_info(wanted.lower())
    if info is None:
        how = "--os" if os_id else "the detected OS (pass --os to plan for another)"
        raise PlanError(f"{how}: {wanted!r} is not a supported target", [f"known: {', '.join(known)}"])
    return info


def resolve_gpu(m: Matrix, name: Optional[str], facts: Mapping[str, Any]) -> Optional[GpuTarget]:
    """``--gpu``: a product name ("RTX 4090"), a compute capability ("8.9") or target ("sm_89"),
    "auto" (the first GPU NVML reports; None when there is none) or None (no GPU constraint)."""
    if name is None:
        return None
    text = name.strip()
    if text.lower() == "auto":
        gpus = ((facts.get("driver") or {}).get("nvml") or {}).get("gpus") or []
        if not gpus:
            return None
        g = gpus[0]
        cc = g.get("compute_capability")
        info = m.gpu_by_name(g.get("name") or "")
        cc = cc or (info.cc if info else None)
        return GpuTarget(g.get("name") or "GPU 0", cc) if cc else None
    cc_match = re.fullmatch(r"(?:sm_|compute_)?(\d{1,2})\.?(\d)[af]?", text.lower())
    if cc_match and (text.lower().startswith(("sm_", "compute_")) or "." in text):
        cc = f"{int(cc_match.group(1))}.{cc_match.group(2)}"
        return GpuTarget(f"compute capability {cc}", cc)
    info = m.gpu_by_name(text)
    if info is None:
        examples = [g.example for g in m.gpus()]
        close = difflib.get_close_matches(text, examples, n=3, cutoff=0.4)
        raise PlanError(f"--gpu {text!r}: no GPU in the matrix matches",
                        [f"did you mean: {', '.join(close)}"] if close else
                        ["give a product name as nvidia-smi shows it, or a compute capability such as 8.9"])
    return GpuTarget(text, info.cc)


def _driver_from_facts(facts: Mapping[str, Any]) -> Optional[str]:
    drv = facts.get("driver") or {}
    nvml = drv.get("nvml") or {}
    return nvml.get("driver_version") or (drv.get("kernel_module") or {}).get("version")


def target_from(m: Matrix, facts: Mapping[str, Any], os_id: Optional[str], gpu: Optional[str],
                driver: str = "keep", driver_version: Optional[str] = None) -> Target:
    """Build the Target. A driver is only taken from the facts when the OS was not overridden
    to another machine's (``--os`` given and different from this one)."""
    info = resolve_os(m, os_id, facts)
    here = os_id_from_facts(facts.get("platform") or {})
    local = os_id is None or os_id == here
    version = driver_version or (_driver_from_facts(facts) if local else None)
    gpu_t = resolve_gpu(m, gpu if gpu is not None else ("auto" if local else None), facts if local else {})
    if driver not in ("keep", "install"):
        raise PlanError(f"--driver {driver!r}: use keep or install")
    py = ((facts.get("platform") or {}).get("python") or {}).get("version") if local else None
    python = ".".join(py.split(".")[:2]) if isinstance(py, str) and py.count(".") >= 1 else None
    container = bool(local and ((facts.get("platform") or {}).get("container") or {}).get("is_container"))
    return Target(info, gpu_t, version, driver, python if info.family != "windows" or local else None, container)


def findings_to_fix(report: Mapping[str, Any]) -> List[str]:
    """Failing/warning finding ids of a saved report, in report order."""
    return [f.get("id", "?") for f in report.get("findings") or [] if f.get("severity") in ("fail", "warn")]
