"""CUDA driver and runtime API facts (cuda-python, in a child process) and every libcudart copy."""
from __future__ import annotations

from gpudoctor.formats import nvidia_driver as nvidia_driver_fmt
from gpudoctor.probes import facts as typed
from gpudoctor.probes.libfind import index_for
from gpudoctor.probes._worker import ask_libraries, run_worker


def probe(ctx) -> dict:
    """``{"api": worker facts (cuDriverGetVersion, cuInit, devices, cudaRuntimeGetVersion, ...),
    "driver_cuda_version": "12.2"|None, "runtime_version": "13.4"|None (the cudart cuda-python
    itself links), "libcudart": [copies], "libcudart_loaded": {soname: path}}``."""
    idx = index_for(ctx)
    raw = run_worker(ctx, "cuda")
    origin = typed.Origin(lambda: idx.loader_pick("libcuda.so.1") or "libcuda.so.1", "the CUDA worker, cuda-python")
    api = typed.CudaApi.parse(raw, origin, runtime_path=_bindings_cudart(raw))
    copies = idx.copies("libcudart")
    # A file named only libcudart.so.13 does not say its minor version: ask the library itself.
    vague = [c.realpath for c in copies if not c.version or "." not in c.version]
    asked = ask_libraries(ctx, vague)
    sonames = sorted({f"libcudart.so.{c.version.split('.')[0]}" for c in copies if c.version})
    return typed.CudaFacts(
        api, [_with_api_version(c.to_dict(), asked.get(c.realpath) or {}, origin) for c in copies],
        {s: idx.loader_pick(s) for s in sonames}, origin.problems).to_dict()


def _bindings_cudart(raw: dict) -> str:
    """What answered cudaRuntimeGetVersion: the cudart cuda-python's runtime module links (no file is named)."""
    return f"cuda-python {raw.get('bindings_version') or ''} runtime (its cudart)".replace("  ", " ")


def _with_api_version(copy: dict, asked: dict, origin) -> dict:
    v = asked.get("cudaRuntimeGetVersion")
    if v is not None and not asked.get("load_error"):
        copy["version"] = origin.take(typed.cuda_version, v, "cudaRuntimeGetVersion", path=copy["realpath"])
        copy["version_from"] = "cudaRuntimeGetVersion"
    elif asked.get("load_error"):
        copy["load_error"] = asked["load_error"]
        copy["problems"] = asked.get("problems") or []
    return copy
