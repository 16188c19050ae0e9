"""TensorRT engine plans named with ``check --engine FILE``: their headers, read without TensorRT.

Facts only: whether each plan loads here is the ``tensorrt.engine_*`` rules' call.
"""
from __future__ import annotations

from gpudoctor.engine_plan import PlanFormatError, read_plan_header


def probe(ctx) -> dict:
    """``{"engines": [{"path", "header": {...}} | {"path", "error", "reason"}]}`` (empty without --engine)."""
    from gpudoctor.inspect.engine import header_facts

    out = []
    for path in ctx.engines:
        try:
            out.append({"path": path, "header": header_facts(read_plan_header(path))})
        except PlanFormatError as exc:
            out.append({"path": path, "error": str(exc), "reason": exc.reason})
    return {"engines": out}
