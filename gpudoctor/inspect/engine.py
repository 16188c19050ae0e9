"""`gpudoctor inspect engine` and `check --engine`: will this TensorRT engine plan load here?

The plan's header is read without TensorRT (:mod:`gpudoctor.formats.engine_plan`) and
compared with the TensorRT installed here (the ``tensorrt`` probe: importable
modules, then libnvinfer copies) and the GPUs here (the ``driver`` probe).
A plan loads only in the TensorRT version that built it ("The engine plan file
is not compatible with this version of TensorRT, expecting library version X
got Y, please rebuild"), unless it was built version-compatible (TensorRT 8.6+,
then any later release of the same major with the lean runtime), and only on a
GPU of the compute capability it was built for, unless it was built with a
hardware-compatibility level (``ampere_plus``: any CC >= 8.0).
"""
from __future__ import annotations

import json
import sys
from typing import Any, Dict

__all__ = ["run_engine", "render_text"]


def run_engine(args) -> int:
    from gpudoctor.check import collect_facts
    from gpudoctor.formats.engine_plan import PlanFormatError, header_facts, read_plan_header
    from gpudoctor.rules.engine_verdict import engine_verdict

    try:
        header = read_plan_header(args.file)
    except PlanFormatError as exc:
        print(f"gpudoctor: error: {args.file}: {exc}", file=sys.stderr)
        return 2
    facts = collect_facts(("tensorrt", "driver"))
    gpus = ((facts.get("driver") or {}).get("nvml") or {}).get("gpus") or []
    data = engine_verdict(header_facts(header), facts.get("tensorrt") or {}, gpus)
    data["path"] = args.file
    if args.json:
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
    else:
        sys.stdout.write(render_text(data))
    return 0 if data["verdict"] in ("loads", "unknown", "only_if_version_compatible") else 1


def render_text(data: Dict[str, Any]) -> str:
    h = data["header"]
    mark = {"loads": "✓", "unknown": "!", "only_if_version_compatible": "!"}.get(data["verdict"], "✗")
    out = [f"{data.get('path', 'engine')}: TensorRT engine plan, {h['size']} bytes, layout {h['layout']}",
           f"  built by TensorRT {h['trt_version_text'] or 'of an unrecorded version'}"
           + (", version-compatible" if h["version_compatible"] else "")
           + (", lean" if h["lean"] else "")
           + (f", hardware compatibility {h['hardware_compatibility']}" if h["hardware_compatibility"] else "")
           + (f", compute capability {h['compute_capability']}" if h["compute_capability"] else ""),
           f"  TensorRT here: {data['installed'] or 'none'}" + (f" ({data['installed_from']})" if data["installed_from"] else ""),
           f"{mark} {data['verdict'].replace('_', ' ')}: " + "; ".join(data["reasons"])]
    for fx in data["fixes"]:
        out.append(f"    fix: {fx['summary']}")
        out += [f"        $ {c}" for c in fx["commands"]]
    return "\n".join(out) + "\n"
