"""Smoke test: NVRTC compiles vector-add and fp16 (__hadd2) kernels to CUBINs per device arch;
the driver API loads, launches and checks them element by element (child process)."""
from __future__ import annotations

from gpudoctor.probes._worker import run_worker


def probe(ctx) -> dict:
    """The worker's result (see :func:`gpudoctor.process.worker.task_nvrtc_smoke`), or ``{"skipped": reason}``."""
    if not ctx.smoke:
        return {"skipped": "--no-smoke"}
    return run_worker(ctx, "nvrtc-smoke", *(() if getattr(ctx, "cache", True) else ("--no-cache",)),
                      timeout=max(ctx.timeout, 30.0))
