"""Multi-GPU smoke test: peer copies between every pair of GPUs and an NCCL all-reduce, in a child
(:mod:`gpudoctor.process.multigpu_smoke`). Skipped, with the reason, on fewer than two GPUs."""
from __future__ import annotations

from gpudoctor.probes._worker import run_worker
from gpudoctor.probes.driver import nvml_snapshot
from gpudoctor.probes.facts import Origin
from gpudoctor.probes.facts_smoke import MultiGpuSmokeFacts
from gpudoctor.probes.libfind import index_for

#: NCCL's first connection set-up takes seconds on 8 GPUs; a hang beyond this is reported as one.
TIMEOUT_S = 90.0


def nccl_library(idx):
    """The NCCL a program would get: the loader's pick of libnccl.so.2, else the first pip wheel's copy
    (frameworks load nvidia-nccl-cu* from site-packages through their own RPATH)."""
    pick = idx.loader_pick("libnccl.so.2")
    if pick:
        return pick
    pip = [c for c in idx.copies("libnccl") if c.origin == "pip"]
    return pip[0].path if pip else None


def probe(ctx) -> dict:
    """The child's answer (:func:`gpudoctor.process.multigpu_smoke.multigpu_smoke_main`) plus
    ``{"nccl_library": path|None}``, through :class:`gpudoctor.probes.facts_smoke.MultiGpuSmokeFacts` (the device
    count and NCCL's version code validated); ``{"skipped": reason}`` without smoke tests or with fewer than two
    GPUs that NVML sees (no child is started then)."""
    if not ctx.smoke:
        return {"skipped": "--no-smoke"}
    nvml = nvml_snapshot(ctx)
    gpus = [g for g in nvml.get("gpus") or [] if "error" not in g]
    if nvml.get("status") == "ok" and len(gpus) < 2:
        return {"skipped": f"{len(gpus)} GPU on this node: peer copies and an NCCL all-reduce need two or more",
                "device_count": len(gpus)}
    if nvml.get("status") != "ok":
        return {"skipped": f"NVML cannot see the GPUs: {nvml.get('reason') or nvml.get('error')}"}
    lib = nccl_library(index_for(ctx))
    res = run_worker(ctx, "multigpu-smoke", *(["--nccl", lib] if lib else []), timeout=max(ctx.timeout, TIMEOUT_S))
    res["nccl_library"] = lib
    return MultiGpuSmokeFacts.parse(res, Origin(lambda: index_for(ctx).loader_pick("libcuda.so.1") or "libcuda.so.1",
                                                "the multi-GPU smoke worker")).to_dict()
