"""Smoke test: TensorRT builds a two-layer engine, serializes, deserializes and runs it on GPU 0,
and the result is checked element by element (child process: ``gpudoctor.process.worker trt-smoke``).

TensorRT is never imported here: whether a module exists is a path lookup (no import, no child),
so a machine without TensorRT pays nothing."""
from __future__ import annotations

import os
import sys
from importlib.machinery import PathFinder

from gpudoctor.probes._worker import run_worker
from gpudoctor.probes.facts import Origin
from gpudoctor.probes.facts_smoke import TensorRTSmokeFacts

MODULES = ("tensorrt", "tensorrt_bindings")  # tensorrt_lean / tensorrt_dispatch cannot build engines


def find_module(ctx, names=MODULES):
    """``(name, path)`` of the first of ``names`` on PYTHONPATH (of ``ctx.env``) + sys.path, or None."""
    extra = [p for p in (ctx.env.get("PYTHONPATH") or "").split(os.pathsep) if p]
    search = extra + [p for p in sys.path if p not in extra]
    for name in names:
        try:
            spec = PathFinder.find_spec(name, search)
        except (ImportError, ValueError):
            spec = None
        if spec is not None:
            origin = spec.origin or next(iter(spec.submodule_search_locations or []), None)
            return name, (os.path.dirname(origin) if spec.origin else origin)
    return None


def probe(ctx) -> dict:
    """The worker's result (see :func:`gpudoctor.process.trt_smoke.task_trt_smoke`) through
    :class:`gpudoctor.probes.facts_smoke.TensorRTSmokeFacts` (its TensorRT versions validated), or ``{"skipped": reason}``
    (``"absent": True`` when no TensorRT module exists)."""
    if not ctx.smoke:
        return {"skipped": "--no-smoke"}
    found = find_module(ctx)
    if found is None:
        runtime_only = find_module(ctx, ("tensorrt_lean_bindings", "tensorrt_lean", "tensorrt_dispatch_bindings",
                                         "tensorrt_dispatch"))
        if runtime_only is not None:
            kind = "lean" if "lean" in runtime_only[0] else "dispatch"
            return {"skipped": f"only the TensorRT {kind} runtime is installed ({runtime_only[0]} in {runtime_only[1]}): "
                               "it runs plans but cannot build one", "runtime_only": runtime_only[0],
                    "searched": list(MODULES), "python": ctx.python}
        return {"skipped": "TensorRT is not installed", "absent": True, "searched": list(MODULES), "python": ctx.python}
    raw = run_worker(ctx, "trt-smoke", found[0], timeout=max(ctx.timeout, 90.0))
    return TensorRTSmokeFacts.parse(raw, Origin(found[1], "the TensorRT smoke worker")).to_dict()
