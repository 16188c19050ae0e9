"""Will a TensorRT engine plan load here? The verdict over a plan's header facts
(:func:`gpudoctor.formats.engine_plan.header_facts`), the ``tensorrt`` probe's facts and the GPUs: used by the
``tensorrt.engine_*`` rules and by ``gpudoctor inspect engine``.

A plan loads only in the TensorRT version that built it ("The engine plan file is not compatible with this
version of TensorRT, expecting library version X got Y, please rebuild"), unless it was built
version-compatible (TensorRT 8.6+, then any later release with the lean runtime), and only on a GPU of the
compute capability it was built for, unless it was built with a hardware-compatibility level
(``ampere_plus``: any CC >= 8.0). Plans older than 8.6 (``ptrt`` or untagged) load in no runtime of 8.6+.
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Tuple

__all__ = ["engine_verdict", "installed_tensorrt", "OLD_LAYOUTS", "JETPACK"]


def _vtuple(text: Optional[str]) -> Optional[Tuple[int, ...]]:
    if not text:
        return None
    parts = []
    for p in str(text).split("+")[0].split("."):
        if not p.isdigit():
            break
        parts.append(int(p))
    return tuple(parts) or None


def installed_tensorrt(trt_facts: Mapping[str, Any]) -> Tuple[Optional[str], Optional[str]]:
    """(version, where) of the TensorRT that would load the plan: an importable module first, then libnvinfer."""
    for mod in trt_facts.get("modules") or []:
        if mod.get("import_ok") and mod.get("version"):
            return mod["version"], f"python module {mod['name']} ({mod.get('path')})"
    for copy in trt_facts.get("libnvinfer") or []:
        if copy.get("version") and (copy.get("version") or "").count(".") >= 2:
            return copy["version"], f"libnvinfer {copy.get('path')}"
    return None, None


def _same_build(engine: Tuple[int, ...], here: Tuple[int, ...]) -> bool:
    n = min(len(engine), len(here), 4)
    return engine[:n] == here[:n]


def _rebuild_fix(built: Tuple[int, ...]) -> Dict[str, Any]:
    vc = " --versionCompatible" if built[:2] >= (8, 6) else ""
    return {"summary": "Rebuild the engine with the TensorRT here (engines are not portable across TensorRT "
                       "versions; build with --versionCompatible / --hardwareCompatibilityLevel=ampere+ to make the "
                       "next one portable).",
            "commands": [f"trtexec --onnx=model.onnx --saveEngine=model.engine{vc}",
                         "python -c \"import tensorrt as trt; print(trt.__version__)\"   # the version that must match"]}


def _install_fix(v: Optional[Tuple[int, ...]]) -> Optional[Dict[str, Any]]:
    if not v or len(v) < 3:
        return None
    text = ".".join(map(str, v))
    cu = "cu13" if v[0] >= 11 else "cu12"
    return {"summary": f"Install the TensorRT that built it ({text}).",
            "commands": [f"python -m pip install 'tensorrt-{cu}=={text}'" if v[0] >= 10 else
                         f"python -m pip install 'tensorrt=={text}'"]}


#: Layouts of plans older than TensorRT 8.6 (engine_plan): no runtime of 8.6 or newer loads them.
OLD_LAYOUTS = ("trt8.0-8.5", "trt7", "trt-ptrt", "trt-pre7")
#: The TensorRT each JetPack ships (https://developer.nvidia.com/embedded/jetpack-archive).
JETPACK = {(5, 0): "4.2", (7, 1): "4.4 / 4.5", (8, 0): "4.6", (8, 2): "4.6.1 to 4.6.4", (8, 4): "5.0.2",
           (8, 5): "5.1.x"}


def _old_plan_verdict(header: Mapping[str, Any], here: Optional[str], where: Optional[str]):
    """(verdict, reasons, fixes) for a plan older than 8.6 ('ptrt' or untagged)."""
    line = header.get("trt_version_text") or "older than 8.6"
    built = tuple(header.get("trt_version") or ())
    pre7 = header.get("layout") == "trt-pre7"
    what = f"a TensorRT {line} plan" + (" (TensorRT 5/6: no magic tag, it starts with its own size)" if pre7 else
                                         " (tag 'ptrt', TensorRT 7.x-8.5)")
    rebuild = {"summary": "Rebuild the engine from the model with the TensorRT that will run it (on the target: "
                          "a Jetson builds its own engines)",
               "commands": ["trtexec --onnx=model.onnx --saveEngine=model.engine --versionCompatible   # TensorRT 8.6+"]}
    pins = []
    if len(built) >= 2:
        pins.append(f"python -m pip install 'tensorrt=={built[0]}.{built[1]}.*'   # x86-64, to run the plan unchanged")
        if built[:2] in JETPACK:
            pins.append(f"# Jetson: JetPack {JETPACK[built[:2]]} ships TensorRT {built[0]}.{built[1]}")
    install = {"summary": f"Or run it with the TensorRT line that built it ({line})", "commands": pins} if pins else None
    fixes = [f for f in (rebuild, install) if f]
    if here is None:
        return "no_tensorrt", [f"{what}; no importable TensorRT or libnvinfer here"], fixes
    h = _vtuple(here) or ()
    if h >= (8, 6):
        tag = "the file's size" if pre7 else "1953657968 ('ptrt')"
        return "version_mismatch", [f"{what}; TensorRT {here} here ({where}) loads no plan older than 8.6: it "
                                    f"fails the magic-tag check, 'header.magicTag == kEXPECTED_MAGIC_TAG failed' "
                                    f"({tag} != 1953657958 'ftrt') (TensorRT 11.4's own words for these plans)"], fixes
    if len(built) >= 2 and h[:2] == built[:2]:
        return "loads", [f"{what}; TensorRT {here} here is the same release line (the exact build must match: "
                         "'expecting library version X got Y')"], []
    if built and h[:len(built)] == built:
        return "unknown", [f"{what}; TensorRT {here} here: the plan records only the major version"], fixes
    return "version_mismatch", [f"{what}; TensorRT {here} here cannot load it ('Version tag does not match')"], fixes


def engine_verdict(header: Mapping[str, Any], trt_facts: Mapping[str, Any],
                   gpus: List[Mapping[str, Any]]) -> Dict[str, Any]:
    """Verdict for a plan's :func:`header_facts`: ``{"verdict": "loads"|"only_if_version_compatible"|
    "version_mismatch"|"no_tensorrt"|"wrong_gpu"|"not_standard"|"unknown", "reasons": [...], "fixes": [...],
    "installed": version, "header": header}``. Defaults are an exact match of all recorded version parts
    (TensorRT compares the build number too: "expecting library version 8.6.1.6 got 8.6.1.2")."""
    here, where = installed_tensorrt(trt_facts)
    built = tuple(header["trt_version"]) if header.get("trt_version") else None
    built_text = header.get("trt_version_text")
    reasons: List[str] = []
    fixes: List[Dict[str, Any]] = []
    verdict = "loads"
    layout = header.get("layout") or ""
    if layout.startswith("ultralytics+"):
        reasons.append(f"the plan is wrapped by Ultralytics (JSON metadata first, the plan at byte "
                       f"{header.get('plan_offset')}): load it with Ultralytics; TensorRT alone fails on it with "
                       "'(n != 1953657958)', which is not a version mismatch")
    if layout in OLD_LAYOUTS:
        verdict, more, old_fixes = _old_plan_verdict(header, here, where)
        return {"verdict": verdict, "installed": here, "installed_from": where, "reasons": reasons + more,
                "fixes": old_fixes, "header": dict(header)}
    if layout == "trt-safety":
        verdict = "not_standard"
        reasons.append("a TensorRT safety-runtime engine (tag NLYM): the standard runtime cannot load it")
        built = None
    elif built is None:
        verdict = "unknown"
        reasons.append("the header records no TensorRT version this reader knows")
    elif here is None:
        verdict = "no_tensorrt"
        reasons.append(f"built by TensorRT {built_text}; no importable TensorRT or libnvinfer here")
        fixes += [f for f in (_install_fix(built),) if f]
    else:
        h = _vtuple(here) or ()
        if _same_build(built, h):
            reasons.append(f"built by TensorRT {built_text}; TensorRT {here} here ({where})"
                           + (" (the header records only major.minor)" if header.get("version_is_partial") else ""))
        elif built[:2] >= (8, 6) and h > built and header.get("version_compatible") is not False:
            # Not recorded in the header: TensorRT 11.4 refused the 8.6 and 10.x plans of ../shared/engines,
            # which were not built version-compatible ("old deserialization call on a newer plan file").
            # The header does not say whether the plan was built version-compatible (kVERSION_COMPATIBLE).
            verdict = "loads" if header.get("version_compatible") else "only_if_version_compatible"
            reasons.append(f"built by TensorRT {built_text}, older than TensorRT {here} here: it loads only if it was "
                           "built version-compatible (--versionCompatible) and the application allows engine host "
                           "code (runtime.engine_host_code_allowed = True); otherwise 'expecting library version "
                           f"{here} got {built_text}'")
            if verdict != "loads":
                fixes.append(_rebuild_fix(built))
        else:
            verdict = "version_mismatch"
            reasons.append(f"The engine plan file is not compatible with this version of TensorRT, expecting library "
                           f"version {here} got {built_text}, please rebuild")
            fixes.append(_rebuild_fix(built))
            fixes += [f for f in (_install_fix(built),) if f]
    want = header.get("compute_capability")
    hw = header.get("hardware_compatibility")
    if want and gpus:
        ok_gpus = []
        for g in gpus:
            gcc = g.get("compute_capability") or ""
            gm = _vtuple(gcc) or (0, 0)
            fits = (gcc == want) or (hw == "ampere_plus" and gm >= (8, 0))
            ok_gpus.append(fits)
        if not any(ok_gpus):
            if verdict == "loads":
                verdict = "wrong_gpu"
            reasons.append(f"built for compute capability {want}"
                           + (" (hardware compatibility: Ampere+)" if hw == "ampere_plus" else "")
                           + f"; GPUs here: {', '.join(str(g.get('compute_capability')) for g in gpus)}")
            fixes.append({"summary": "Rebuild the engine on this GPU (or with --hardwareCompatibilityLevel=ampere+ on "
                                     "an Ampere-or-newer GPU for Ampere+ targets).",
                          "commands": ["trtexec --onnx=model.onnx --saveEngine=model.engine"]})
    return {"verdict": verdict, "installed": here, "installed_from": where, "reasons": reasons, "fixes": fixes,
            "header": dict(header)}
