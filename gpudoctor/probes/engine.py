"""TensorRT engine plans named with ``check --engine FILE``: their headers, read without TensorRT.

Facts only: whether each plan loads here is the ``tensorrt.engine_*`` rules' call.
"""
from __future__ import annotations

import os

from gpudoctor.formats.engine_plan import PlanFormatError, read_plan_header


#: Runtimes asked, in this order: the full TensorRT, then the lean and dispatch runtimes.
RUNTIMES = ("tensorrt", "tensorrt_bindings", "tensorrt_lean", "tensorrt_lean_bindings", "tensorrt_dispatch",
            "tensorrt_dispatch_bindings")


def probe(ctx) -> dict:
    """``{"engines": [{"path", "header": {...}, "runtime_answer": {...}?} | {"path", "error", "reason"}]}``
    (empty without --engine). When a real TensorRT runtime is importable, it is asked to deserialize each
    plan in a child process (:func:`gpudoctor.process.worker.task_trt_deserialize`): ``runtime_answer`` holds
    whether it loaded and TensorRT's own messages, beside the header's facts."""
    from gpudoctor.formats.engine_plan import header_facts

    out = []
    runtime = None
    if ctx.engines:
        from gpudoctor.probes.smoke_tensorrt import find_module

        runtime = find_module(ctx, RUNTIMES)
    for path in ctx.engines:
        try:
            entry = {"path": path, "header": header_facts(read_plan_header(path))}
        except PlanFormatError as exc:
            out.append({"path": path, "error": str(exc), "reason": exc.reason})
            continue
        if runtime is not None:
            from gpudoctor.probes._worker import run_worker

            entry["runtime_answer"] = run_worker(ctx, "trt-deserialize", runtime[0], os.path.abspath(path),
                                                 timeout=max(ctx.timeout, 60.0))
        out.append(entry)
    return {"engines": out}
