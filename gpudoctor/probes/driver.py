"""Driver facts: NVML (via nvidia-ml-py), the kernel module version, the user-space libraries.

NVML failures are facts with their meaning: ``driver_not_loaded`` (user space present,
kernel module absent), ``version_mismatch`` (kernel module and libnvidia-ml differ),
``library_not_found`` (no libnvidia-ml at all), ``no_permission``, ...
"""
from __future__ import annotations

import os

from gpudoctor import parsers
from gpudoctor.libfind import index_for
from gpudoctor.probes._worker import run_worker
from gpudoctor.problems import read_text
from gpudoctor.subproc import run

# NVML return codes (nvml.h, NVML API Reference "nvmlReturn_t") mapped to what they mean for a user.
NVML_REASONS = {
    1: "uninitialized", 2: "invalid_argument", 3: "not_supported", 4: "no_permission",
    6: "not_found", 9: "driver_not_loaded", 12: "library_not_found", 13: "function_not_found",
    15: "gpu_is_lost", 17: "operating_system", 18: "version_mismatch", 999: "unknown",
}


#: Sonames a program asks for (DT_NEEDED / dlopen) whose file must be the driver's, never a toolkit stub.
#: Unversioned names matter too: Numba and other loaders dlopen("libcuda.so").
STUB_CHECKED = ("libcuda.so.1", "libcuda.so", "libnvidia-ml.so.1", "libnvidia-ml.so")
#: The link-time stubs CUDA toolkits ship are tens of KB; the driver's libcuda is tens of MB, its NVML a few MB.
STUB_MAX_BYTES = 512 * 1024


def looks_like_stub(path: str) -> bool:
    """A toolkit link stub (``<cuda>/lib64/stubs/``, Debian's ``/usr/lib/x86_64-linux-gnu/stubs/``, conda's
    ``lib/stubs``): it lies in a ``stubs`` directory, or is far smaller than any driver library."""
    real = os.path.realpath(path)
    if "stubs" in path.split(os.sep)[:-1] or "stubs" in real.split(os.sep)[:-1]:
        return True
    try:
        return os.path.getsize(real) < STUB_MAX_BYTES
    except OSError:
        return False


def stub_libraries(ctx, idx) -> list:
    """Every checked soname whose loader pick is a stub, with why it is picked and the stub's own answer
    (a child calls cuInit / nvmlInit_v2 on it: a stub libcuda says CUDA_ERROR_STUB_LIBRARY)."""
    out = []
    for soname in STUB_CHECKED:
        trace = idx.loader_trace(soname)
        if not trace or not looks_like_stub(trace["path"]):
            continue
        out.append(dict(trace, library=soname.split(".so")[0], soname=soname,
                        realpath=os.path.realpath(trace["path"]), ld_so_conf=_ld_so_conf_naming(trace["entry"])
                        if trace["via"] == "ldconfig" else None))
    if out:
        answers = run_worker(ctx, "stubcheck", *sorted({s["realpath"] for s in out}))
        for s in out:
            s["answer"] = answers.get(s["realpath"]) or {"error": answers.get("worker_error", "no answer")}
    return out


def _ld_so_conf_naming(directory: str):
    """The /etc/ld.so.conf(.d) file that lists ``directory``, or None."""
    import glob

    for conf in ["/etc/ld.so.conf"] + sorted(glob.glob("/etc/ld.so.conf.d/*.conf")):
        text = read_text(conf) or ""
        if any(line.strip().rstrip("/") == directory.rstrip("/") for line in text.splitlines()):
            return conf
    return None


def nvidia_smi(ctx) -> dict:
    """What ``nvidia-smi`` (first on PATH) answers: ``{"path", "driver_versions", "gpus", "problems"}``,
    or ``{"path": None}`` when there is none."""
    import shutil

    path = shutil.which("nvidia-smi", path=ctx.env.get("PATH", ""))
    if not path:
        return {"path": None}
    res = run([path, "--query-gpu=driver_version,name", "--format=csv,noheader"], timeout=ctx.timeout, env=ctx.env)
    rows = parsers.parse_smi_query_csv(res.stdout) if res.ok else []
    rec = res.problem(unparsable="GPU rows (driver_version, name)") if not rows else None
    return {"path": path, "driver_versions": sorted({r[0] for r in rows}), "gpus": [r[1] for r in rows],
            "returncode": res.returncode, "last_line": res.last_line() if not res.ok else None,
            # nvidia-smi's own words for a driver failure ("couldn't communicate with the NVIDIA driver", ...)
            "failure_reason": parsers.parse_nvidia_smi_error(res.output) if not res.ok else None,
            "problems": [rec] if rec else []}


def _q(fn, *args):
    """Call an NVML query; NotSupported and friends become None (the GPU lacks the feature)."""
    import pynvml

    try:
        value = fn(*args)
    except pynvml.NVMLError:
        return None
    return value.decode() if isinstance(value, bytes) else value


def _gpu_facts(index: int) -> dict:
    import pynvml

    h = pynvml.nvmlDeviceGetHandleByIndex(index)
    cc = _q(pynvml.nvmlDeviceGetCudaComputeCapability, h)
    mem = _q(pynvml.nvmlDeviceGetMemoryInfo, h)
    mig = _q(pynvml.nvmlDeviceGetMigMode, h)
    ecc = _q(pynvml.nvmlDeviceGetEccMode, h)
    facts = {
        "index": index,
        "name": _q(pynvml.nvmlDeviceGetName, h),
        "uuid": _q(pynvml.nvmlDeviceGetUUID, h),
        "pci_bus_id": getattr(_q(pynvml.nvmlDeviceGetPciInfo, h), "busId", None),
        "compute_capability": f"{cc[0]}.{cc[1]}" if cc else None,
        "memory_total_mib": mem.total // (1024 * 1024) if mem else None,
        "memory_used_mib": mem.used // (1024 * 1024) if mem else None,
        "pcie_gen_current": _q(pynvml.nvmlDeviceGetCurrPcieLinkGeneration, h),
        "pcie_gen_max": _q(pynvml.nvmlDeviceGetMaxPcieLinkGeneration, h),
        "pcie_width_current": _q(pynvml.nvmlDeviceGetCurrPcieLinkWidth, h),
        "pcie_width_max": _q(pynvml.nvmlDeviceGetMaxPcieLinkWidth, h),
        "ecc_mode_current": bool(ecc[0]) if ecc else None,
        "ecc_mode_pending": bool(ecc[1]) if ecc else None,
        "mig_mode_current": bool(mig[0]) if mig else None,
        "mig_mode_pending": bool(mig[1]) if mig else None,
        "persistence_mode": _q(pynvml.nvmlDeviceGetPersistenceMode, h),
        "compute_mode": _q(pynvml.nvmlDeviceGetComputeMode, h),
        "vbios": _q(pynvml.nvmlDeviceGetVbiosVersion, h),
        "temperature_c": _q(pynvml.nvmlDeviceGetTemperature, h, 0),
        "retired_pages_pending": None,
        "remapped_rows": None,
        "ecc_uncorrected_volatile": None,
    }
    pending = _q(pynvml.nvmlDeviceGetRetiredPagesPendingStatus, h)
    if pending is not None:
        facts["retired_pages_pending"] = bool(pending)
    remap = _q(pynvml.nvmlDeviceGetRemappedRows, h)  # (corr, unc, pending, failure); Ampere and newer
    if remap is not None:
        facts["remapped_rows"] = {"correctable": remap[0], "uncorrectable": remap[1],
                                  "pending": bool(remap[2]), "failure": bool(remap[3])}
    if facts["ecc_mode_current"]:
        facts["ecc_uncorrected_volatile"] = _q(pynvml.nvmlDeviceGetTotalEccErrors, h, 1, 0)  # UNCORRECTED, VOLATILE
    return facts


def nvml_snapshot(ctx) -> dict:
    """NVML's view, computed once per run: ``{"status": "ok"|"error"|"unavailable",
    "error", "error_code", "reason", "driver_version", "cuda_driver_version", "nvml_version", "gpus"}``."""
    return ctx.memo("nvml", _nvml_snapshot)


def _nvml_snapshot() -> dict:
    try:
        import pynvml
    except ImportError as exc:
        return {"status": "unavailable", "error": f"nvidia-ml-py is not installed ({exc})", "reason": "binding_missing", "gpus": []}
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        code = getattr(exc, "value", None)
        return {"status": "error", "error": str(exc), "error_code": code,
                "reason": NVML_REASONS.get(code, "unknown"), "gpus": []}
    try:
        cuda_int = _q(pynvml.nvmlSystemGetCudaDriverVersion)
        count = pynvml.nvmlDeviceGetCount()
        gpus = []
        for i in range(count):
            try:
                gpus.append(_gpu_facts(i))
            except pynvml.NVMLError as exc:  # e.g. GPU is lost: keep the others
                gpus.append({"index": i, "error": str(exc), "reason": NVML_REASONS.get(getattr(exc, "value", None), "unknown")})
        return {
            "status": "ok",
            "driver_version": _q(pynvml.nvmlSystemGetDriverVersion),
            "cuda_driver_version": parsers.cuda_version_from_int(cuda_int) if cuda_int else None,
            "nvml_version": _q(pynvml.nvmlSystemGetNVMLVersion),
            "gpus": gpus,
        }
    finally:
        try:
            pynvml.nvmlShutdown()
        except pynvml.NVMLError:
            pass


def probe(ctx) -> dict:
    """``{"nvml": nvml_snapshot, "kernel_module": {version, flavor}|None, "libnvidia_ml": [...copies],
    "libnvidia_ml_loaded": path, "libcuda": [...copies], "libcuda_loaded": path, "user_space_version",
    "stub_libraries": [{soname, path, via, entry, answer, ...}], "nvidia_smi": {...}, "problems": [...]}``."""
    from concurrent.futures import ThreadPoolExecutor

    problems: list = []
    with ThreadPoolExecutor(max_workers=1) as pool:
        smi = pool.submit(nvidia_smi, ctx)  # a process start: overlap it with NVML and the library scan
        idx = index_for(ctx)
        facts = _facts(ctx, idx, problems)
        facts["nvidia_smi"] = smi.result()
    facts["problems"] = problems + idx.problems
    return facts


def _facts(ctx, idx, problems) -> dict:
    proc = read_text("/proc/driver/nvidia/version", problems)
    nvml_pick = idx.loader_pick("libnvidia-ml.so.1")
    cuda_pick = idx.loader_pick("libcuda.so.1")
    user_space = parsers.version_from_soname(os.path.basename(os.path.realpath(nvml_pick))) if nvml_pick else None
    return {
        "nvml": nvml_snapshot(ctx),
        "kernel_module": parsers.parse_proc_driver_version(proc) if proc else None,
        "libnvidia_ml": [c.to_dict() for c in idx.copies("libnvidia-ml")],
        "libnvidia_ml_loaded": nvml_pick,
        "libcuda": [c.to_dict() for c in idx.copies("libcuda")],
        "libcuda_loaded": cuda_pick,
        "user_space_version": user_space,
        "stub_libraries": stub_libraries(ctx, idx),
    }
