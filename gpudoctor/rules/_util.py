"""Small helpers shared by rules: version comparison and the driver's identity."""
from __future__ import annotations

from typing import Optional, Tuple

from packaging.version import InvalidVersion, Version


def v(text) -> Optional[Version]:
    try:
        return Version(str(text))
    except (InvalidVersion, TypeError):
        return None


def major_minor(text) -> Optional[Tuple[int, int]]:
    ver = v(text)
    if ver is None:
        return None
    rel = ver.release + (0,)
    return rel[0], rel[1]


def driver_version(facts) -> Tuple[Optional[str], str]:
    """(driver version, where it came from): NVML when it answers, else the user-space library's file name."""
    drv = facts["driver"]
    if drv.get("given_version"):  # check --root/--image: --driver, or a Windows root's nvcuda.dll version
        return drv["given_version"], drv.get("given_from") or "--driver"
    nvml = drv.get("nvml") or {}
    if nvml.get("driver_version"):
        return nvml["driver_version"], "NVML"
    if drv.get("user_space_version"):
        return drv["user_space_version"], "libnvidia-ml file name"
    lib = [c for c in drv.get("libcuda") or [] if c.get("version")]
    if lib:
        return lib[0]["version"], "libcuda file name"
    return None, "none"


def driver_cuda(facts) -> Tuple[Optional[str], str]:
    """(highest CUDA version the driver supports, source): NVML, else cuDriverGetVersion; for a system judged
    from its files, what the matrix says of the given driver."""
    if facts["driver"].get("given_cuda"):
        return facts["driver"]["given_cuda"], facts["driver"].get("given_cuda_from") or "the matrix"
    nvml = facts["driver"].get("nvml") or {}
    if nvml.get("cuda_driver_version"):
        return nvml["cuda_driver_version"], "NVML"
    if facts["cuda"].get("driver_cuda_version"):
        return facts["cuda"]["driver_cuda_version"], "cuDriverGetVersion"
    return None, "none"


def gpus(facts) -> list:
    """GPUs NVML sees (with compute capability), else those the CUDA driver API enumerates, plus --target-gpu ones."""
    targets = list(getattr(facts, "targets", []) or [])  # --target-gpu: judged like GPUs that are present
    nvml = facts["driver"].get("nvml") or {}
    if nvml.get("gpus"):
        return [g for g in nvml["gpus"] if g.get("compute_capability")] + targets
    return [dict(d, index=d.get("ordinal")) for d in (facts["cuda"].get("api") or {}).get("devices", [])
            if d.get("compute_capability")] + targets


def sm(cc: str) -> str:
    return "sm_" + cc.replace(".", "")


def in_use_toolkit(facts) -> Optional[dict]:
    """The toolkit whose nvcc is first on PATH (what a build would use), else None."""
    tk = facts["toolkit"]
    on_path = tk.get("on_path")
    for t in tk.get("toolkits") or []:
        if on_path and t.get("nvcc") == on_path:
            return t
    return None


def framework_cuda_builds(facts) -> list:
    """(framework, its version, CUDA version it was built for) for every GPU framework found;
    JAX and CuPy name only the major (jax-cuda13-plugin, cupy-cuda13x): reported as "13.0"."""
    fw = facts["frameworks"]
    out = []
    for name in ("torch", "tensorflow", "onnxruntime"):
        f = fw.get(name) or {}
        if f.get("cuda"):
            out.append((name, f.get("version"), str(f["cuda"])))
    for name in ("jax", "cupy"):
        f = fw.get(name) or {}
        for mj in f.get("cuda_majors") or []:
            out.append((name, f.get("version"), f"{mj}.0"))
    return out


def os_name(ctx) -> str:
    """The matrix's OS key for driver minimums."""
    return "windows" if ctx.os.family == "windows" else "linux"


def driver_verdict(matrix, driver: str, cuda: str, osname: str) -> str:
    """``matrix.driver_supports``, extended to CUDA releases newer than the matrix: their major's
    minor-version-compatibility floor still applies (native | minor_version_compat | unsupported | unknown)."""
    mm = major_minor(cuda)
    if not mm:
        return "unknown"
    verdict = matrix.driver_supports(driver, f"{mm[0]}.{mm[1]}", os=osname)
    if verdict != "unknown":
        return verdict
    mc = matrix.minor_version_compat(mm[0])
    floor = (getattr(mc, "min_driver_" + osname, None) or mc.min_driver_linux) if mc else None
    if not floor or not v(driver) or not v(floor):
        return "unknown"
    return "minor_version_compat" if v(driver) >= v(floor) else "unsupported"
