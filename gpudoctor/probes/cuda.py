"""CUDA driver and runtime API facts (cuda-python, in a child process) and every libcudart copy."""
from __future__ import annotations

from gpudoctor.formats import nvidia_driver as nvidia_driver_fmt
from gpudoctor.probes.libfind import index_for
from gpudoctor.probes._worker import ask_libraries, run_worker


def probe(ctx) -> dict:
    """``{"api": worker facts (cuDriverGetVersion, cuInit, devices, cudaRuntimeGetVersion, ...),
    "driver_cuda_version": "12.2"|None, "runtime_version": "13.4"|None (the cudart cuda-python
    itself links), "libcudart": [copies], "libcudart_loaded": {soname: path}}``."""
    idx = index_for(ctx)
    api = run_worker(ctx, "cuda")
    drv = (api.get("cuDriverGetVersion") or {}).get("value")
    rt = (api.get("cudaRuntimeGetVersion") or {}).get("value")
    copies = idx.copies("libcudart")
    # A file named only libcudart.so.13 does not say its minor version: ask the library itself.
    vague = [c.realpath for c in copies if not c.version or "." not in c.version]
    asked = ask_libraries(ctx, vague)
    sonames = sorted({f"libcudart.so.{c.version.split('.')[0]}" for c in copies if c.version})
    return {
        "api": api,
        "driver_cuda_version": nvidia_driver_fmt.cuda_version_from_int(drv) if drv else None,
        "runtime_version": nvidia_driver_fmt.cuda_version_from_int(rt) if rt else None,
        "libcudart": [_with_api_version(c.to_dict(), asked.get(c.realpath) or {}) for c in copies],
        "libcudart_loaded": {s: idx.loader_pick(s) for s in sonames},
    }


def _with_api_version(copy: dict, asked: dict) -> dict:
    v = asked.get("cudaRuntimeGetVersion")
    if v:
        copy["version"] = nvidia_driver_fmt.cuda_version_from_int(v)
        copy["version_from"] = "cudaRuntimeGetVersion"
    elif asked.get("load_error"):
        copy["load_error"] = asked["load_error"]
        copy["problems"] = asked.get("problems") or []
    return copy
