"""Join a log with this machine's facts (`explain --here`, and always for `explain -- CMD`).

For each failure class, the facts of the same probes `gpudoctor check` runs that confirm it, as
sentences: "your driver is 535.261.03, which supports CUDA ≤ 12.2; this runtime is 13.4". A class
with no confirming fact gets no line (and no confidence bonus): facts never invent a diagnosis.
"""
from __future__ import annotations

import os
from typing import Any, Dict, List, Mapping, Optional

from packaging.version import InvalidVersion, Version

__all__ = ["collect", "evidence"]

_PROBES = ("platform", "driver", "cuda", "toolkit")


def collect(timeout: float = 10.0) -> Dict[str, Any]:
    from gpudoctor.check import collect_facts

    return collect_facts(_PROBES, timeout)


def _v(text: Any) -> Optional[Version]:
    try:
        return Version(str(text))
    except (InvalidVersion, TypeError):
        return None


def _too_new(runtime: str, driver: Optional[str], driver_cuda: Optional[str]) -> bool:
    """A runtime the driver cannot run: per the matrix (Table 3, then minor-version compatibility, Table 2);
    without a driver version, a newer CUDA major than the driver's. Newer minors of the same major run
    through minor-version compatibility, so they do not count."""
    rv, dv = _v(runtime), _v(driver_cuda)
    if rv is None or dv is None:
        return False
    if driver:
        from gpudoctor.matrix import MatrixError, load_matrix

        try:
            verdict = load_matrix().driver_supports(driver, f"{rv.major}.{rv.minor}")
        except MatrixError:
            verdict = "unknown"
        if verdict != "unknown":
            return verdict == "unsupported"
    return rv.major > dv.major


def _stub_sentence(stub: Mapping[str, Any]) -> str:
    """One stub the loader would pick (the driver probe's ``stub_libraries`` entry), as a sentence:
    "the loader picks the stub /x/stubs/libcuda.so for libcuda.so.1 (from LD_LIBRARY_PATH entry /x/stubs)"."""
    path = stub.get("path")
    if not path:
        return ""
    soname = stub.get("soname") or (f"{stub['library']}.so.1" if stub.get("library") else "the driver library")
    via, entry = stub.get("via"), stub.get("entry")
    if via == "LD_LIBRARY_PATH":
        where = f" (from LD_LIBRARY_PATH entry {entry})" if entry else " (from LD_LIBRARY_PATH)"
    elif via == "ldconfig":
        conf = stub.get("ld_so_conf")
        where = (f" (from the ldconfig cache, directory {entry}" if entry else " (from the ldconfig cache") + \
            (f", listed in {conf})" if conf else ")")
    elif via == "default dirs":
        where = f" (in the loader's default directory {entry})" if entry else " (in a default loader directory)"
    elif via:
        where = f" (via {via}{' ' + str(entry) if entry else ''})"
    else:
        where = ""
    return f"the loader picks the stub {path} for {soname}{where}"


def evidence(facts: Mapping[str, Any], env: Optional[Mapping[str, str]] = None) -> Dict[str, List[str]]:
    """finding id -> sentences from this machine's facts that confirm that class."""
    env = os.environ if env is None else env
    out: Dict[str, List[str]] = {}
    drv = facts.get("driver") or {}
    nvml = drv.get("nvml") or {}
    cuda = facts.get("cuda") or {}
    version = nvml.get("driver_version") or (drv.get("kernel_module") or {}).get("version")
    dcuda = nvml.get("cuda_driver_version") or cuda.get("driver_cuda_version")
    runtimes = sorted({str(c.get("version")) for c in cuda.get("libcudart") or [] if c.get("version")} |
                      ({str(cuda["runtime_version"])} if cuda.get("runtime_version") else set()), key=lambda s: _v(s) or Version("0"))
    newer = [r for r in runtimes if _too_new(r, version, dcuda)]
    if newer and dcuda:
        who = f"your driver is {version}" if version else "your driver"
        out["driver.too_old"] = [f"{who}, which supports CUDA ≤ {dcuda}; CUDA runtime(s) here: {', '.join(newer)}"]
    if nvml.get("reason") == "driver_not_loaded" or nvml.get("error") == "Driver Not Loaded":
        out["driver.not_loaded"] = [f"NVML here: {nvml.get('error')}"]
    if nvml.get("reason") == "version_mismatch" or "mismatch" in str(nvml.get("error", "")).lower():
        out["driver.version_mismatch"] = [f"NVML here: {nvml.get('error')}"]
    stubs = [_stub_sentence(s) for s in drv.get("stub_libraries") or [] if isinstance(s, Mapping)]
    if any(stubs):
        out["driver.stub_library"] = [s for s in stubs if s]
    gpus = nvml.get("gpus") or []
    if gpus:
        out["arch.binary_missing"] = ["GPUs here: " + ", ".join(f"{g.get('name')} (compute capability "
                                                                  f"{g.get('compute_capability')})" for g in gpus)]
    for t in (facts.get("toolkit") or {}).get("toolkits") or []:
        hc = t.get("host_compiler") or {}
        limit = (t.get("host_config") or {}).get("max_gcc")
        seen = hc.get("version_seen_by_nvcc")
        if hc.get("kind") == "gnu" and limit and _v(seen) and _v(seen).major > int(limit):
            out.setdefault("compiler.unsupported", []).append(
                f"nvcc {t.get('release')} ({t.get('nvcc')}) would run gcc {seen}; it accepts gcc ≤ {limit}")
    cvd = env.get("CUDA_VISIBLE_DEVICES")
    if cvd is not None and (cvd.strip() in ("", "-1", "none", "NoDevFiles") or
                            (gpus and cvd.strip().isdigit() and int(cvd.strip()) >= len(gpus))):
        out["device.not_visible"] = [f"CUDA_VISIBLE_DEVICES={cvd!r} here, with {len(gpus)} GPU(s) present"]
    plat = facts.get("platform") or {}
    if (plat.get("container") or {}).get("is_container") and not gpus and not version:
        out.setdefault("container.no_gpu", []).append("this is a container and no NVIDIA driver is visible in it")
    return out
