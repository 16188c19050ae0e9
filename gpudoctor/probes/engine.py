"""TensorRT engine plans named with ``check --engine FILE``: their headers, read without TensorRT.

Facts only: whether each plan loads here is the ``tensorrt.engine_*`` rules' call.
"""
from __future__ import annotations

import os

from gpudoctor.formats.engine_plan import PlanFormatError, read_plan_header
from gpudoctor.probes.facts import Origin
from gpudoctor.probes.facts_smoke import EngineFacts


#: Runtimes asked, in this order: the full TensorRT, then the lean and dispatch runtimes.
RUNTIMES = ("tensorrt", "tensorrt_bindings", "tensorrt_lean", "tensorrt_lean_bindings", "tensorrt_dispatch",
            "tensorrt_dispatch_bindings")


def probe(ctx) -> dict:
    """``{"engines": [{"path", "header": {...}, "runtime_answer": {...}?} | {"path", "error", "reason"}],
    "problems"?: [implausible records]}`` (empty without --engine). When a real TensorRT runtime is importable, it is asked to deserialize each
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
            entry["runtime_answer"] = _ask_runtime(ctx, runtime[0], os.path.abspath(path))
        out.append(entry)
    # Validated where parsed (probes/facts_smoke.EngineRecord): a header's implausible TensorRT version or
    # compute capability is a problem record naming the plan, never a verdict's input.
    return EngineFacts.parse({"engines": out}, Origin(None, "the plan header (check --engine)")).to_dict()


def _ask_runtime(ctx, module: str, plan: str) -> dict:
    """The runtime's answer (:func:`gpudoctor.process.worker.task_trt_deserialize`); when it refused and its
    words ask for a setting ("set CUDA_LAUNCH_BLOCKING=1"), asked once more that way, whose words are kept
    in ``answer["rerun"] = {"setting", "stderr_tail", "loaded"}``. (The child's logger already receives
    every severity, VERBOSE included: TensorRT's own verbosity needs no rerun.)"""
    import time
    from types import SimpleNamespace

    from gpudoctor.probes._worker import run_worker
    from gpudoctor.process.more_detail import detail_env, rerun_timeout
    from gpudoctor.process.tail import tail

    t0 = time.monotonic()
    answer = run_worker(ctx, "trt-deserialize", module, plan, timeout=max(ctx.timeout, 60.0))
    if answer.get("loaded") is not False:
        return answer
    said = "\n".join([m for _, m in answer.get("messages") or []] + [answer.get("error") or ""])
    asked = detail_env(ctx.env, said)
    if asked is None:
        return answer
    env, setting = asked
    again = run_worker(SimpleNamespace(python=ctx.python, env=env, timeout=ctx.timeout), "trt-deserialize", module, plan,
                       timeout=rerun_timeout(time.monotonic() - t0))
    words = [f"{sev}: {m}" for sev, m in again.get("messages") or []] + [again.get("error") or again.get("worker_error") or ""]
    answer["rerun"] = {"setting": setting, "stderr_tail": tail("\n".join(words)), "loaded": again.get("loaded")}
    return answer
