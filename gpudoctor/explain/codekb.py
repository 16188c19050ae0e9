"""Signature variants generated from NVIDIA's error enumerations (``kb/codes/generated.json``).

Each classified code becomes variants of its finding class (``"program"`` codes go to
``program.error``, "not an environment problem"):

- its **name** as the APIs and bindings print it (``CUDA_ERROR_NO_DEVICE``, ``cudaErrorNoDevice``,
  nvidia-ml-py's ``NVMLError_DriverNotLoaded``, Rust's ``NoBinaryForGpu``, CUDA.jl's
  ``ERROR_NO_BINARY_FOR_GPU``), matched as a whole word;
- its **message**, as the library's error-string function returns it: bare when it is distinctive
  (>= 20 characters, >= 3 words, and no code of another class prints it), and always behind the
  prefixes tools put in front of it (PyTorch's ``CUDA error: ``, nvidia-smi's
  ``Failed to initialize NVML: ``), so that short messages ("Driver Not Loaded") count only there;
- its **number** after "CUDA error" / "CUresult" / "cudaError" (driver and runtime numbering agree
  since CUDA 10.1; a number whose codes disagree on the class is left out), at a low weight.

Weights: the class weight from ``classes.json`` for names and prefixed messages, 0.05 less for
bare messages, 0.6 for numbers; ``program.error`` variants are 0.5 (and the diagnosis is capped at
low confidence, see :mod:`gpudoctor.explain.diagnose`).
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Dict, List, Optional, Tuple

__all__ = ["NOT_ENV", "generated_variants", "load_generated"]

NOT_ENV = "program.error"
_PROGRAM_WEIGHT = 0.5
_NUMBER_WEIGHT = 0.6
_NUMBERED = ("CUresult", "cudaError_t")
# How tools print a library's message after their own prefix (lower case; the message follows).
_PREFIXES = {
    "CUresult": ("cuda error: ",),
    "cudaError_t": ("cuda error: ", "cuda runtime error: "),
    "nvmlReturn_t": ("failed to initialize nvml: ", "nvml error: "),
}


def load_generated(path: Path) -> Optional[dict]:
    if not path.is_file():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


def _distinctive(msg: str) -> bool:
    return len(msg) >= 20 and len(msg.split()) >= 3 and not re.fullmatch(r"[A-Z0-9_ ]+", msg)


def _word(name: str) -> str:
    return rf"(?<![a-z0-9_])(?P<code_name>{re.escape(name.lower())})(?![a-z0-9_])"


def generated_variants(data: dict) -> Dict[str, List[dict]]:
    """Class id -> variant dicts (the KB's variant schema plus ``vars``), from generated.json data."""
    out: Dict[str, List[dict]] = {}
    # A bare message is ambiguous when any library prints it for another class; one behind a tool's
    # prefix only when a library that prefix is printed for does ("insufficient resources" is NVML's
    # program error and cuSPARSE's out of memory, but only NVML's follows "Failed to initialize NVML: ").
    msg_classes: Dict[str, set] = {}
    prefixed_classes: Dict[Tuple[str, str], set] = {}
    for enum in data["enums"]:
        for c in enum["codes"]:
            if c["class"] != "success" and c.get("message"):
                msg_classes.setdefault(c["message"].lower(), set()).add(_class(c))
                for prefix in _PREFIXES.get(enum["enum"], ()):
                    prefixed_classes.setdefault((prefix, c["message"].lower()), set()).add(_class(c))
    numbers: Dict[int, set] = {}
    for enum in data["enums"]:
        if enum["enum"] in _NUMBERED:
            for c in enum["codes"]:
                if c["class"] != "success":
                    numbers.setdefault(c["value"], set()).add(_class(c))

    seen: set = set()  # (class, literal, regex): the first variant of each kept

    def add(cls: str, variant: dict) -> None:
        key = (cls, variant["literal"], variant.get("regex"))
        if key not in seen:
            seen.add(key)
            out.setdefault(cls, []).append(variant)

    for enum in data["enums"]:
        src = f"{enum['doc_url']} ({enum['enum']}, generated from {', '.join(_short_sources(enum))})"
        for c in enum["codes"]:
            if c["class"] == "success":
                continue
            cls, weight = _class(c), _weight(c)
            fixed = {"code": f"{c['name']} ({c['value']})", **(c.get("vars") or {})}
            if c.get("message"):
                fixed["message"] = c["message"]
            names = [c["name"]]
            if enum["enum"] == "nvmlReturn_t" and c["name"].startswith("NVML_ERROR_"):
                from gpudoctor.explain.enumerations import pynvml_class_name

                names.append(pynvml_class_name(c["name"]))
            names += _other_language_names(enum["enum"], c["name"])
            for name in names:
                low = name.lower()
                add(cls, {"name": f"{enum['enum']} {name}", "anchor": low, "literal": low, "regex": _word(name),
                          "weight": weight, "source": src, "vars": fixed})
            msg = (c.get("message") or "").strip()
            low = msg.lower().rstrip(".")
            if not msg or low == c["name"].lower():
                continue
            if _distinctive(msg) and len(msg_classes.get(msg.lower(), ())) == 1:
                add(cls, {"name": f"{enum['enum']} {c['name']} message", "anchor": low, "literal": low,
                          "weight": round(max(weight - 0.05, 0.05), 3), "source": src, "vars": fixed})
            for prefix in _PREFIXES.get(enum["enum"], ()):
                if len(prefixed_classes.get((prefix, msg.lower()), ())) > 1:
                    continue
                lit = prefix + low
                add(cls, {"name": f"{enum['enum']} {c['name']} message after '{prefix.strip()}'", "anchor": lit,
                          "literal": lit, "weight": weight, "source": src, "vars": fixed})
    by_class: Dict[str, List[int]] = {}
    for value, classes in numbers.items():
        if len(classes) == 1:
            by_class.setdefault(next(iter(classes)), []).append(value)
    nvml_numbers: Dict[str, List[int]] = {}
    for enum in data["enums"]:
        if enum["enum"] == "nvmlReturn_t":
            for c in enum["codes"]:
                if c["class"] != "success":
                    nvml_numbers.setdefault(_class(c), []).append(c["value"])
    nvml_doc = next((e["doc_url"] for e in data["enums"] if e["enum"] == "nvmlReturn_t"), "https://docs.nvidia.com/deploy/nvml-api/")
    for cls, values in sorted(nvml_numbers.items()):
        alternation = "|".join(str(v) for v in sorted(values, key=lambda v: -len(str(v))))
        # "nvml vram init failure: 9", "NVML error 18", "nvmlInit returned 9"
        add(cls, {"name": "NVML return number", "anchor": "nvml", "literal": "nvml",
                  "regex": rf"nvml\w*[^\n]{{0,30}}(?:error|failure|failed|return(?:ed)?|code)\W{{0,3}}(?P<number>{alternation})(?![\w.])",
                  "weight": _PROGRAM_WEIGHT - 0.05 if cls == NOT_ENV else _NUMBER_WEIGHT, "source": nvml_doc, "vars": {}})
    src = (f"{data['enums'][0]['doc_url']} (CUresult and cudaError_t numbers, generated)"
           if data["enums"] else "https://docs.nvidia.com/cuda/")
    for cls, values in sorted(by_class.items()):
        alternation = "|".join(str(v) for v in sorted(values, key=lambda v: -len(str(v))))
        regex = (r"(?:cuda[ _]?(?:driver |runtime )?error|curesult|cudaerror(?:_t)?)(?:\s{0,2}code)?"
                 rf"\W{{0,4}}(?P<number>{alternation})(?![\w.])")
        weight = _PROGRAM_WEIGHT - 0.05 if cls == NOT_ENV else _NUMBER_WEIGHT
        for lit in ("cuda error", "cuda_error", "curesult", "cudaerror"):
            add(cls, {"name": f"CUDA error number ({lit})", "anchor": lit, "literal": lit, "regex": regex,
                      "weight": weight, "source": src, "vars": {}})
        # glog CHECKs (Caffe, TensorFlow 1.x, MXNet): "Check failed: error == cudaSuccess (35 vs. 0)".
        add(cls, {"name": "CUDA error number (glog CHECK against cudaSuccess)", "anchor": "success (", "literal": "success (",
                  "regex": rf"(?:cudasuccess|cuda_success) \((?P<number>{alternation}) vs\. 0\)", "weight": weight,
                  "source": src, "vars": {}})
        # TensorFlow/XLA print a driver code they have no name for as "failed call to cuInit: UNKNOWN ERROR (34)".
        add(cls, {"name": "CUresult number (TensorFlow 'UNKNOWN ERROR (N)')", "anchor": "unknown error (", "literal": "unknown error (",
                  "regex": rf"(?:cuinit|cuda_driver\.cc)[^\n]{{0,80}}unknown error \((?P<number>{alternation})\)", "weight": weight,
                  "source": src, "vars": {}})
        # PyTorch: "Unexpected error from cudaGetDeviceCount(). Did you run ...? Error 802: system not yet initialized".
        add(cls, {"name": "CUDA error number (PyTorch 'Unexpected error from cudaGetDeviceCount(). ... Error N')",
                  "anchor": "numcudadevices()", "literal": "numcudadevices()",
                  "regex": rf"numcudadevices\(\)[^\n]{{0,120}}error (?P<number>{alternation}):", "weight": max(weight, 0.8) if cls != NOT_ENV else weight,
                  "source": "https://github.com/pytorch/pytorch/blob/main/c10/cuda/CUDAFunctions.cpp", "vars": {}})
        # Ollama's GPU discovery: "cuda driver library init failure: 999", "cudart init failure: 35".
        add(cls, {"name": "CUDA error number (Ollama 'init failure: N')", "anchor": "init failure", "literal": "init failure",
                  "regex": rf"(?:cuda driver library|cudart|nvcuda) init failure:? (?P<number>{alternation})(?![\w.])", "weight": weight,
                  "source": "https://github.com/ollama/ollama/blob/main/discover/gpu_info_nvcuda.c", "vars": {}})
        # The CUDA samples and many tools: "cudaGetDeviceCount returned 35", "cuInit() returned 999".
        add(cls, {"name": "CUDA error number (an API call 'returned N')", "anchor": "returned ", "literal": "returned ",
                  "regex": rf"\bcu(?:da)?[a-z]\w*(?:\(\))? returned (?:error )?(?P<number>{alternation})(?![\w.])",
                  "weight": weight, "source": src, "vars": {}})
        # Numba's driver errors: "[222] Call to cuLinkAddData results in UNKNOWN_CUDA_ERROR" (a CUresult).
        add(cls, {"name": "CUresult number (Numba)", "anchor": "] call to cu", "literal": "] call to cu",
                  "regex": rf"\[(?P<number>{alternation})\] call to cu\w+", "weight": weight, "source": src, "vars": {}})
    return out


def _other_language_names(enum: str, name: str) -> List[str]:
    """How bindings in other languages print a driver code: Rust's cust/rustacuda enums in CamelCase
    (``CUDA_ERROR_NO_BINARY_FOR_GPU`` -> ``NoBinaryForGpu``), CUDA.jl without the ``CUDA_`` prefix
    (``ERROR_NO_BINARY_FOR_GPU``). Only names of three words or more: shorter ones ("NoDevice",
    "Unknown") are ordinary words in other contexts."""
    if enum != "CUresult" or not name.startswith("CUDA_ERROR_"):
        return []
    words = name[len("CUDA_ERROR_"):].split("_")
    if len(words) < 3:
        return []
    return ["".join(w.capitalize() for w in words), name[len("CUDA_"):]]


def _class(code: dict) -> str:
    return NOT_ENV if code["class"] == "program" else code["class"]


def _weight(code: dict) -> float:
    return _PROGRAM_WEIGHT if code["class"] == "program" else float(code.get("weight", 0.8))


def _short_sources(enum: dict) -> Tuple[str, ...]:
    names = []
    for c in enum["codes"][:1]:
        for s in c.get("sources", []):
            names.append(s.split(" (")[0].rsplit("/", 1)[-1] if "/" in s else s)
    return tuple(dict.fromkeys(names)) or (enum["enum"],)
