"""From scanner matches to ranked findings (same ids, titles and fixes style as `gpudoctor check`).

Score of a failure class: the best weight among its matched variants, +0.03 per further distinct
variant (at most +0.06), +0.1 when live facts of this machine confirm it (``--here``), capped at 1
(``program.error``, "not an environment problem", at :data:`NOT_ENV_MAX`: always low confidence).
Confidence: >= 0.9 high, >= 0.75 medium, else low. Variables captured by a variant's regex fill the
title and fix templates; a missing one uses the signature's ``defaults``.
"""
from __future__ import annotations

import re
import string
from dataclasses import dataclass, replace
from typing import Any, Dict, List, Mapping, Optional, Tuple

from gpudoctor.explain.archcheck import no_such_architecture
from gpudoctor.explain.codekb import NOT_ENV
from gpudoctor.explain.context import CONTEXT_PREFIX, apply as apply_context
from gpudoctor.explain.facts import judge as judge_facts
from gpudoctor.explain.hints import add_hints
from gpudoctor.explain.libraries import describe as describe_library
from gpudoctor.explain.scan import Match, Scanner
from gpudoctor.explain.toolmatch import tool_matches
from gpudoctor.explain.toolwords import TOOL_SCORE, which_tool
from gpudoctor.explain.xid import APPLICATION_XIDS, application_only
from gpudoctor.findings import Finding, Fix, Severity

__all__ = ["Diagnosis", "diagnose", "diagnose_text", "confidence_label", "NOT_ENV_MAX"]

#: "Not an environment problem" is never more than a low-confidence diagnosis.
NOT_ENV_MAX = 0.6


class _Vars(dict):
    def __missing__(self, key: str) -> str:
        return "?"


_SHELL_EXPANSION = re.compile(r"\$\{[^{}]*\}")


def _fill(template: str, values: Mapping[str, str]) -> str:
    """``template`` with ``{var}`` fields filled; shell expansions (``${CUDA_VISIBLE_DEVICES-<unset>}``) in
    fix commands are left as written, never taken for fields."""
    shell: List[str] = []

    def keep(m: "re.Match[str]") -> str:
        shell.append(m.group(0))
        return f"\x00{len(shell) - 1}\x00"

    protected = _SHELL_EXPANSION.sub(keep, template)
    try:
        filled = string.Formatter().vformat(protected, (), _Vars(values))
    except (ValueError, IndexError):  # a brace the template did not mean as a field
        return template
    return re.sub("\x00(\\d+)\x00", lambda m: shell[int(m.group(1))], filled)


def confidence_label(score: float) -> str:
    return "high" if score >= 0.9 else "medium" if score >= 0.75 else "low"


@dataclass
class Diagnosis:
    finding: Finding
    score: float
    matches: List[Match]
    confirmed_by: List[str]

    def to_dict(self) -> Dict[str, Any]:
        d = self.finding.to_dict()
        d.update(confidence=confidence_label(self.score), score=round(self.score, 3),
                 matched=[{"line": m.line_no, "text": m.line, "variant": m.variant.name, "source": m.variant.source,
                           "vars": m.vars} for m in self.matches],
                 confirmed_by=self.confirmed_by)
        return d


_SUFFIXES = {"sm": ("sm_suffix", " ({})"), "arch": ("arch_suffix", " ({})"),
             "alloc": ("alloc_suffix", " (tried to allocate {})"), "cuda": ("cuda_suffix", ": it requires CUDA {}"),
             "got": ("cc_suffix", " ({})")}


def _vars_for(sig, matches: List[Match]) -> Dict[str, str]:
    """Captured variables (the highest-weight variant's value wins), over the signature's defaults."""
    values: Dict[str, str] = dict(sig.defaults)
    captured = set()
    for m in sorted(matches, key=lambda m: -m.variant.weight):
        for k, v in m.vars.items():
            k = k[:-1] if k[-1:].isdigit() else k  # a regex's second alternative names its groups lib2, cc2...
            if k not in captured:
                values[k] = v
                captured.add(k)
    for var, (name, fmt) in _SUFFIXES.items():
        if var in captured:
            values[name] = fmt.format(values[var])
    if "lib" in captured:
        values["lib_stem"] = values["lib"].split(".so")[0]
        values.update(describe_library(values["lib"]))
    return values


def _build(sig, matches: List[Match], score: float, scanner: Scanner, confirmed: List[str],
           extra: Optional[Dict[str, object]] = None) -> Diagnosis:
    values = _vars_for(sig, matches)
    variants = {m.variant.name for m in matches}
    evidence: Dict[str, object] = {"log_lines": list(dict.fromkeys(f"line {m.line_no}: {m.line}" for m in matches))[:3],
                                   "occurrences": sum(scanner.counts.get((sig.id, v), 0) for v in variants)}
    evidence.update({k: v for k, v in values.items() if not k.endswith("_suffix") and k not in ("lib_stem", "install")})
    evidence.update(extra or {})
    if confirmed:
        evidence["this_machine"] = confirmed
    fixes = tuple(Fix(_fill(str(f["summary"]), values), tuple(_fill(str(c), values) for c in f.get("commands") or ()))
                  for f in sig.fixes)
    finding = Finding(sig.id, Severity(sig.severity), sig.area, _fill(sig.title, values), evidence=evidence,
                      fixes=fixes, doc=sig.doc, detail=sig.detail)
    return Diagnosis(finding, score, matches, confirmed)


def diagnose(scanner: Scanner, live: Optional[Mapping[str, List[str]]] = None) -> List[Diagnosis]:
    """Ranked diagnoses, best first. ``live``: finding id -> evidence lines from this machine's probes.

    Context lines (a ``docker run`` command, an ``nvcc`` command line, ``CUDA_VISIBLE_DEVICES=``, WSL
    markers) are not diagnoses: :func:`gpudoctor.explain.context.apply` uses them as evidence and to
    choose between causes the error text alone cannot separate.
    """
    by_sig: Dict[str, List[Match]] = {}
    ctx: Dict[str, List[Tuple[int, str]]] = {}
    for m in scanner.matches:
        if m.signature.id.startswith(CONTEXT_PREFIX):
            ctx.setdefault(m.signature.id[len(CONTEXT_PREFIX):], []).append((m.line_no, m.line))
        else:
            by_sig.setdefault(m.signature.id, []).append(m)
    out: List[Diagnosis] = []
    for sig_id, matches in by_sig.items():
        sig = matches[0].signature
        variants = {m.variant.name for m in matches}
        score = max(m.variant.weight for m in matches) + 0.03 * min(len(variants) - 1, 2)
        confirmed = list((live or {}).get(sig_id) or [])
        if confirmed:
            score += 0.1
        score = min(score, NOT_ENV_MAX if sig_id == NOT_ENV else 1.0)
        out.append(_build(sig, matches, score, scanner, confirmed))

    def make(sig_id: str, score: float, evidence: Dict[str, object]) -> Optional[Diagnosis]:
        sig = scanner.signatures.get(sig_id)
        if sig is None:
            return None
        return _build(sig, [], score, scanner, list((live or {}).get(sig_id) or []), evidence)

    out = [_rewrite(d, scanner) for d in out]
    # Best score first; on ties the class seen earliest in the log (the first error usually causes the rest).
    out.sort(key=lambda d: (-d.score, min(m.line_no for m in d.matches)))
    # hints first: a hinted symptom may still be traced to its cause by the context (at hint confidence)
    out = add_hints(out, scanner.tail, scanner.lines, make)
    out = apply_context(out, ctx, make) if ctx else out
    out = judge_facts(out, ctx, make) if ctx else out
    seen: set = set()  # a class rewritten above (an application Xid) may meet the class it became: keep the first
    out = [d for d in out if not (d.finding.id in seen or seen.add(d.finding.id))]
    return out + _tool_said(scanner)


def _tool_said(scanner: Scanner) -> List[Diagnosis]:
    """A tool's own message that no class explains (gpudoctor.explain.toolwords): last, at low confidence."""
    if not scanner.tail:
        return []
    explained = [m for m in scanner.matches if not m.signature.id.startswith(CONTEXT_PREFIX)]
    first = max(scanner.lines - scanner.tail.count(b"\n"), 0) + 1
    found = tool_matches(scanner.tail, first, frozenset(m.line_no for m in explained), frozenset(m.line for m in explained))
    return [_build(found[0], found[1], TOOL_SCORE, scanner, [])] if found else []


def diagnose_text(text: str, kb) -> List[Diagnosis]:
    """:func:`diagnose` of one log held in memory (``kb``: the loaded signatures, see ``load_kb``)."""
    scanner = Scanner(kb)
    scanner.feed(text.encode("utf-8", errors="replace"))
    scanner.close()
    return diagnose(scanner)


def _rewrite(d: Diagnosis, scanner: Scanner) -> Diagnosis:
    """What the matched line alone cannot tell: the class (or confidence) the rest of the evidence gives."""
    d = _unless_no_such_architecture(d)
    d = _unless_application_xid(d, scanner)
    d = _driver_library(d, scanner)
    d = _the_tool_that_said_it(d)
    return _outside_the_gpu_stack(d, scanner)


def _the_tool_that_said_it(d: Diagnosis) -> Diagnosis:
    """A template several binaries hold ("nvlink or libcuda") is the one tool the matched line names."""
    ev = d.finding.evidence
    if " or " in str(ev.get("tool", "")) and "tool_template" in ev and d.matches:
        ev["tool"] = which_tool(d.matches[0].line, str(ev["tool"]).split(" or "))
    return d


def _driver_library(d: Diagnosis, scanner: Scanner) -> Diagnosis:
    """A library the loader cannot find that the library catalogue names as the driver's own (libcuda,
    nvcuda.dll, NVML) means the driver is missing or not visible, whatever tool printed the loader error."""
    component = str(d.finding.evidence.get("component", "")) if d.finding.id == "library.not_found" else ""
    lib = str(d.finding.evidence.get("lib", "")).lower()
    sig = scanner.signatures.get("driver.missing")
    # the unversioned libcuda.so is only the development symlink: without it the driver may well be there
    if not component.startswith("the NVIDIA driver") or lib.endswith(".so") or sig is None:
        return d
    return _build(sig, d.matches, d.score, scanner, d.confirmed_by,
                  {"library": d.finding.evidence.get("lib"), "component": component})


# Library names of the GPU stack the catalogue (explain/libraries.py) does not list: NVIDIA's and
# CUDA's (cu*, nv*, nccl, npp), and the frameworks' CUDA parts (libtorch_cuda, libc10_cuda, XLA, ...).
_GPU_STACK_LIB = re.compile(r"^(?:lib)?(?:cu|nv|nccl|npp|magma|torch|c10|caffe2|tensorflow|xla|jax|triton|"
                            r"onnxruntime|mxnet|paddle|cupy|ggml|llama|whisper|ctranslate|gpu|cuda|hip|opencl|vulkan)", re.I)
_LIBRARY_FILE = re.compile(r"\.(?:so|dll|dylib)\b", re.I)
#: Where a loader error names a library outside the GPU stack (libGL.so.1 for OpenCV in a slim
#: image, libsndfile): not this tool's to diagnose, so never more than a hint.
OUTSIDE_MAX = 0.45


def _outside_the_gpu_stack(d: Diagnosis, scanner: Scanner) -> Diagnosis:
    """A 'library not found' for a library neither the catalogue nor a GPU-stack name knows stays a hint."""
    lib = str(d.finding.evidence.get("lib", "")) if d.finding.id == "library.not_found" else ""
    name = lib.replace("\\", "/").rsplit("/", 1)[-1]
    if not _LIBRARY_FILE.search(name) or describe_library(name) or _GPU_STACK_LIB.match(name) or d.score <= OUTSIDE_MAX:
        return d
    sig = scanner.signatures.get("library.not_found")
    out = _build(sig, d.matches, OUTSIDE_MAX, scanner, d.confirmed_by,
                 {"library": lib, "why_low": "not part of the CUDA/NVIDIA stack"})
    fixes = (Fix("It is not part of the CUDA stack: install the system package that ships it.",
                 (f"apt-file search {name}   # Debian/Ubuntu (sudo apt-get install apt-file && sudo apt-file update)",
                  f"dnf provides '*/{name}'   # Fedora/RHEL")),)
    return replace(out, finding=replace(out.finding, fixes=fixes,
                                        title=f"A library outside the CUDA stack is not found by the loader: {name}"))


def _unless_no_such_architecture(d: Diagnosis) -> Diagnosis:
    """nvcc refusing an architecture no GPU has (compute_71) is a wrong build flag, not an old toolkit."""
    arch = d.finding.evidence.get("arch") if d.finding.id == "arch.toolkit_unsupported" else None
    proof = no_such_architecture(str(arch)) if arch else None
    if proof is None:
        return d
    num = re.sub(r"\D", "", str(arch))
    near = " and ".join(proof["nearest_real"])
    finding = Finding(
        NOT_ENV, Severity.INFO, "program",
        f"{arch} is the architecture of no NVIDIA GPU: the build flags ask for it by mistake, and a newer nvcc would refuse it too",
        evidence=dict(d.finding.evidence, **proof),
        detail=f"Compute capability {num[:-1]}.{num[-1]} does not exist (the nearest real ones are {near}); "
               "look for a typo in -arch/-gencode, TORCH_CUDA_ARCH_LIST or CMAKE_CUDA_ARCHITECTURES.",
        fixes=(Fix("Find where the build names it and correct it; list the architectures this nvcc can build:",
                   (f"grep -rnE '(compute|sm)_{num}' --include=CMakeLists.txt --include='*.cmake' --include=Makefile "
                    "--include='*.py' --include='*.mk' .", "nvcc --list-gpu-arch")),),
        doc="https://docs.nvidia.com/cuda/cuda-compiler-driver-nvcc/index.html#gpu-feature-list")
    return Diagnosis(finding, min(d.score, NOT_ENV_MAX), d.matches, d.confirmed_by)


def _unless_application_xid(d: Diagnosis, scanner: Scanner) -> Diagnosis:
    """A log whose only sign of a GPU fault is Xid 13/31/43/45 points at the application (NVIDIA's Xid
    catalogue: debug the application first), not at the GPU; any other Xid or health sign keeps gpu.health."""
    if d.finding.id != "gpu.health" or not d.matches or any(m.variant.name != "xid" for m in d.matches):
        return d
    xids = application_only(m.vars.get("xid", "") for m in d.matches)
    not_env = scanner.signatures.get(NOT_ENV)
    if not xids or not_env is None:
        return d
    named = ", ".join(f"Xid {x} ({APPLICATION_XIDS[x]})" for x in xids)
    fixes = tuple(Fix(str(f["summary"]), tuple(str(c) for c in f.get("commands") or ())) for f in not_env.fixes)
    finding = Finding(
        NOT_ENV, Severity.INFO, "program",
        f"{named}: per NVIDIA's Xid catalogue, usually the application's own fault, not a failing GPU",
        evidence=dict(d.finding.evidence, xids=xids), fixes=fixes, doc="https://docs.nvidia.com/deploy/xid-errors/index.html",
        detail="The catalogue lists these Xids as caused mostly by the user application (a kernel that touched memory "
               "it does not own, an engine exception, a process stopped mid-work); debug the application first, and "
               "suspect the GPU only if the same code ran cleanly before a driver or hardware change.")
    return Diagnosis(finding, min(d.score, NOT_ENV_MAX), d.matches, d.confirmed_by)
