"""TensorRT engine plans given with ``check --engine``: will each load with the TensorRT and GPUs here?"""
from __future__ import annotations

from gpudoctor.findings import Finding, Fix, Severity
from gpudoctor.process.tail import tail

DOC = "https://docs.nvidia.com/deeplearning/tensorrt/latest/inference-library/advanced.html#version-compatibility"

_IDS = {"version_mismatch": "tensorrt.engine_mismatch", "no_tensorrt": "tensorrt.engine_mismatch",
        "only_if_version_compatible": "tensorrt.engine_mismatch", "not_standard": "tensorrt.engine_mismatch",
        "wrong_gpu": "tensorrt.engine_wrong_gpu", "unknown": "tensorrt.engine_unknown", "loads": "tensorrt.engine_ok"}
_SEVERITY = {"version_mismatch": Severity.FAIL, "no_tensorrt": Severity.FAIL, "wrong_gpu": Severity.FAIL,
             "not_standard": Severity.FAIL, "only_if_version_compatible": Severity.WARN,
             "unknown": Severity.WARN, "loads": Severity.OK}


def _runtime_said(answer) -> str:
    """TensorRT's own verdict in a few words: "loaded it" or its first error line."""
    if not answer:
        return ""
    if "loaded" not in answer:  # could not be asked: say why (the child's crash is also a tool.failed finding)
        why = answer.get("error") or answer.get("worker_error")
        return f"could not be asked ({why[:200]})" if why else ""
    if answer.get("loaded"):
        return "loaded it"
    errors = [m for sev, m in answer.get("messages") or [] if sev in ("ERROR", "INTERNAL_ERROR")]
    text = errors[0] if errors else answer.get("error") or "refused it"
    return "refused it: " + text.split("\n")[0][:240]


def _refused(answer) -> bool:
    """A real TensorRT runtime started, was handed the plan, and did not load it (its own refusal)."""
    return bool(answer) and "loaded" in answer and not answer.get("loaded") \
        and not str(answer.get("error") or "").startswith("import")


def _runtime_evidence(answer) -> dict:
    """What the runtime said, for the evidence: which runtime, its verdict and its last words (bounded)."""
    if not answer:
        return {}
    lines = [f"{sev}: {m}" for sev, m in answer.get("messages") or []] + ([answer["error"]] if answer.get("error") else [])
    out = {"runtime": {k: answer.get(k) for k in ("module", "version", "loaded") if k in answer}}
    if answer.get("module"):
        out["tool"] = f"TensorRT {answer.get('version') or ''} ({answer['module']})".replace("  ", " ")
    said = tail("\n".join(lines))
    if said:
        out["stderr_tail"] = said
    if answer.get("rerun"):
        out["rerun"] = answer["rerun"]
    return out


def engine_plans(facts, ctx):
    """``tensorrt.engine_*`` per plan. The header's verdict is the prediction; where a real TensorRT runtime
    was asked, its answer decides: a refusal in its own words is a failure whatever the header predicted
    (``only_if_version_compatible`` becomes a fail; a plan the header says loads becomes
    ``tensorrt.engine_refused``), and a plan it loaded that the header could only call version-compatible-
    dependent loads. A runtime that could not start (no GPU) did not judge the plan: the header decides."""
    from gpudoctor.rules.engine_verdict import engine_verdict

    gpus = (facts["driver"].get("nvml") or {}).get("gpus") or []
    out = []
    for e in facts["engine"].get("engines") or []:
        path = e.get("path")
        if "error" in e:
            out.append(Finding("tensorrt.engine_invalid", Severity.FAIL, "tensorrt",
                               f"{path} is not a loadable TensorRT engine plan: {e['error']}",
                               evidence={"path": path, "reason": e.get("reason")},
                               fixes=(Fix("Point --engine at the serialized engine (.engine/.plan/.trt written by "
                                          "trtexec --saveEngine or IBuilder.build_serialized_network), or rebuild it.",
                                          ("trtexec --onnx=model.onnx --saveEngine=model.engine",)),),
                               detail="TensorRT fails such files with 'magicTagRead == kMAGIC_TAG' or "
                                      "'Serialization assertion ... failed'."))
            continue
        v = engine_verdict(e["header"], facts["tensorrt"], gpus)
        built = e["header"].get("trt_version_text") or "?"
        title = {
            "loads": f"{path}: built by TensorRT {built}, loads with TensorRT {v['installed']} on the GPUs here",
            "version_mismatch": f"{path} was built by TensorRT {built}; TensorRT {v['installed']} here cannot load it",
            "no_tensorrt": f"{path} was built by TensorRT {built}; no TensorRT here can load it",
            "wrong_gpu": f"{path} was built for compute capability {e['header'].get('compute_capability')}, "
                         "not the GPUs here",
            "unknown": f"{path}: the TensorRT version that built it is not recorded in a layout gpudoctor knows",
            "only_if_version_compatible": f"{path} was built by TensorRT {built}; TensorRT {v['installed']} here loads "
                                          "it only if it was built version-compatible",
            "not_standard": f"{path} is a TensorRT safety-runtime engine; the standard runtime cannot load it",
        }[v["verdict"]]
        answer = e.get("runtime_answer") or {}
        said = _runtime_said(answer)
        if said:
            title += f"; TensorRT {answer.get('version') or ''} ({answer.get('module')}) itself: {said}".replace("  ", " ")
        if answer and "loaded" in answer and not answer.get("error", "").startswith("import") and \
                answer.get("loaded") != (v["verdict"] == "loads") and v["verdict"] != "only_if_version_compatible":
            out.append(Finding("tensorrt.engine_unknown", Severity.WARN, "tensorrt",
                               f"{path}: the header says '{v['verdict'].replace('_', ' ')}' but TensorRT "
                               f"{answer.get('version')} {'loaded' if answer.get('loaded') else 'refused'} it",
                               evidence={"path": path, "runtime_answer": answer, "header_verdict": v["verdict"]},
                               detail="Please report this plan: gpudoctor's reading of its header disagrees with TensorRT."))
        fid, severity, detail = _IDS[v["verdict"]], _SEVERITY[v["verdict"]], None
        if _refused(answer):
            severity, detail = Severity.FAIL, (f"TensorRT {answer.get('version') or ''} ({answer.get('module')}) here "
                                               "refused the plan in its own words: it will not load here.").replace("  ", " ")
            fid = "tensorrt.engine_refused" if v["verdict"] == "loads" else fid
        elif answer.get("loaded") and v["verdict"] in ("only_if_version_compatible", "unknown"):
            fid, severity = "tensorrt.engine_ok", Severity.OK
            detail = "TensorRT itself loaded it here (so it was built version-compatible, or by this release)."
        out.append(Finding(fid, severity, "tensorrt", title,
                           evidence=dict({"path": path, "header": e["header"], "installed": v["installed"],
                                          "installed_from": v["installed_from"], "reasons": v["reasons"]},
                                         **_runtime_evidence(answer)),
                           fixes=tuple(Fix(f["summary"], tuple(f["commands"])) for f in v["fixes"]),
                           detail=detail, doc=DOC if severity != Severity.OK else None))
    return out
