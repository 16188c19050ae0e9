"""Smoke test: NVRTC compiles vector-add and fp16 (__hadd2) kernels to CUBINs per device arch;
the driver API loads, launches and checks them element by element (child process)."""
from __future__ import annotations

from gpudoctor.probes._worker import run_worker
from gpudoctor.probes.facts import Origin
from gpudoctor.probes.facts_smoke import NvrtcSmokeFacts
from gpudoctor.probes.libfind import index_for


def probe(ctx) -> dict:
    """The worker's result (see :func:`gpudoctor.process.worker.task_nvrtc_smoke`) through
    :class:`gpudoctor.probes.facts_smoke.NvrtcSmokeFacts` (NVRTC's version, its archs and each device's arch
    validated; a rejected one is a problem record, never an arch or version input), or ``{"skipped": reason}``."""
    if not ctx.smoke:
        return {"skipped": "--no-smoke"}
    raw = run_worker(ctx, "nvrtc-smoke", *(() if getattr(ctx, "cache", True) else ("--no-cache",)),
                     timeout=max(ctx.timeout, 30.0))
    return NvrtcSmokeFacts.parse(raw, Origin(lambda: _libnvrtc(ctx, raw), "the NVRTC smoke worker, cuda-python"),
                                 Origin(lambda: index_for(ctx).loader_pick("libcuda.so.1") or "libcuda.so.1",
                                        "the NVRTC smoke worker, cuda-python")).to_dict()


def _libnvrtc(ctx, raw: dict) -> str:
    """The libnvrtc that answered, as well as it can be named (looked up only when a value was rejected)."""
    idx = index_for(ctx)
    major = str(raw.get("bindings_version") or "").split(".")[0]
    pick = idx.loader_pick(f"libnvrtc.so.{major}") if major.isdigit() else None
    copies = idx.copies("libnvrtc")
    return pick or (copies[0].path if copies else "libnvrtc")
