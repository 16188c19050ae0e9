"""The signature knowledge base of `gpudoctor explain`: JSON data files in ``gpudoctor/explain/kb/``.

One file per failure class (its finding id, the same ids ``gpudoctor check`` uses). Schema::

    {"id": "driver.too_old", "area": "cuda", "severity": "fail",
     "title": "template with {vars}", "detail": "...", "doc": "https://...",
     "fixes": [{"summary": "template", "commands": ["template", ...]}],
     "variants": [{"name": "cudart", "anchor": "insufficient", "literal": "driver version is insufficient",
                   "regex": "optional, on the (lower-cased) line; named groups become {vars}",
                   "weight": 0.9, "source": "https://... (the thread this variant comes from)"}],
     "defaults": {"var": "text used when a variant did not capture it"}}

``anchor`` is a short lower-case token that the scanner searches for with ``bytes.find`` (fast even on
GB logs); ``literal`` must contain it and is checked on the candidate line; ``regex`` (optional) is
applied only to that line, which is capped at :data:`MAX_LINE` bytes. Regexes must not nest
quantifiers (``(a+)+``): :func:`load_kb` rejects them, so no pattern can backtrack catastrophically.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Dict, List, Optional, Pattern, Tuple

__all__ = ["CONTEXT_PREFIX", "KbError", "Signature", "Variant", "load_kb", "KB_DIR", "MAX_LINE"]

KB_DIR = Path(__file__).resolve().parent / "kb"
#: Id prefix of context signatures (command lines, stated versions): evidence, never diagnoses by themselves.
CONTEXT_PREFIX = "context."
#: Candidate lines longer than this are cut before any regex sees them (bytes).
MAX_LINE = 4096
_SEVERITIES = ("fail", "warn", "info")
# A quantified group that itself contains a quantifier: the shape of catastrophic backtracking.
_NESTED = re.compile(r"\((?:[^()\\]|\\.)*[+*}](?:[^()\\]|\\.)*\)[+*{]")


class KbError(ValueError):
    """A signature file is invalid (names the file and the problem)."""


class LazyPattern:
    """A case-insensitive regex compiled on its first ``search``: the KB holds over a thousand, a log reaches
    a few, and compiling them all cost ~0.3 s of every check that read a tool's words. ``load_kb(strict=True)``
    (the tests, a user's KB directory) compiles every one up front so that none fails late."""

    __slots__ = ("pattern", "_rx")

    def __init__(self, pattern: str):
        self.pattern, self._rx = pattern, None

    def compiled(self) -> Pattern[str]:
        if self._rx is None:
            self._rx = re.compile(self.pattern, re.IGNORECASE)
        return self._rx

    def search(self, text: str):
        return self.compiled().search(text)

    def __repr__(self) -> str:
        return f"LazyPattern({self.pattern!r})"


@dataclass(frozen=True)
class Variant:
    name: str
    anchor: bytes
    literal: bytes
    regex: Optional[object]  # a compiled Pattern or a LazyPattern: both have .pattern and .search(text)
    weight: float
    source: str
    vars: Dict[str, str] = field(default_factory=dict)  # fixed values a match adds (generated variants)


@dataclass(frozen=True)
class Signature:
    id: str
    area: str
    severity: str
    title: str
    detail: str
    doc: Optional[str]
    fixes: Tuple[Dict[str, object], ...]
    variants: Tuple[Variant, ...]
    defaults: Dict[str, str] = field(default_factory=dict)
    file: str = ""


def _variant(file: str, i: int, v: dict, strict: bool = True) -> Variant:
    where = f"{file}: variants[{i}]"
    for key in ("name", "anchor", "literal", "source"):
        if not isinstance(v.get(key), str) or not v[key]:
            raise KbError(f"{where}: '{key}' must be a non-empty string")
    anchor, literal = v["anchor"], v["literal"]
    if anchor != anchor.lower() or literal != literal.lower():
        raise KbError(f"{where}: 'anchor' and 'literal' are matched on the lower-cased line: write them lower-case")
    if anchor not in literal:
        raise KbError(f"{where}: 'literal' must contain the 'anchor' {anchor!r}")
    if not v["source"].startswith("https://"):
        raise KbError(f"{where}: 'source' must be an https:// URL")
    rx = None
    if v.get("regex"):
        if _NESTED.search(v["regex"]):
            raise KbError(f"{where}: 'regex' nests quantifiers (catastrophic backtracking risk): {v['regex']!r}")
        rx = LazyPattern(v["regex"])
        if strict:
            try:
                rx.compiled()
            except re.error as exc:
                raise KbError(f"{where}: 'regex' does not compile: {exc}") from None
    weight = v.get("weight", 0.8)
    if not isinstance(weight, (int, float)) or not 0 < weight <= 1:
        raise KbError(f"{where}: 'weight' must be in (0, 1]")
    extra = set(v) - {"name", "anchor", "literal", "regex", "weight", "source", "vars"}
    if extra:
        raise KbError(f"{where}: unknown field(s) {sorted(extra)}")
    fixed = v.get("vars") or {}
    if not isinstance(fixed, dict) or not all(isinstance(x, str) for x in fixed.values()):
        raise KbError(f"{where}: 'vars' must map names to strings")
    return Variant(v["name"], anchor.encode(), literal.encode(), rx, float(weight), v["source"], dict(fixed))


def _signature(path: Path, strict: bool = True) -> Signature:
    file = path.name
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise KbError(f"{file}: cannot be read: {exc}") from None
    if not isinstance(doc, dict):
        raise KbError(f"{file}: must be a JSON object")
    for key in ("id", "area", "severity", "title", "detail"):
        if not isinstance(doc.get(key), str) or not doc[key]:
            raise KbError(f"{file}: '{key}' must be a non-empty string")
    if doc["severity"] not in _SEVERITIES:
        raise KbError(f"{file}: 'severity' must be one of {_SEVERITIES}")
    if file != f"{doc['id']}.json":
        raise KbError(f"{file}: the file must be named after its id ({doc['id']}.json)")
    variants = doc.get("variants")
    if not isinstance(variants, list):
        raise KbError(f"{file}: 'variants' must be a list")
    fixes = doc.get("fixes") or []
    if not isinstance(fixes, list) or not all(isinstance(f, dict) and isinstance(f.get("summary"), str) for f in fixes):
        raise KbError(f"{file}: 'fixes' must be a list of {{summary, commands}}")
    extra = set(doc) - {"id", "area", "severity", "title", "detail", "doc", "fixes", "variants", "defaults"}
    if extra:
        raise KbError(f"{file}: unknown field(s) {sorted(extra)}")
    return Signature(doc["id"], doc["area"], doc["severity"], doc["title"], doc["detail"], doc.get("doc"),
                     tuple(fixes), tuple(_variant(file, i, v, strict) for i, v in enumerate(variants)),
                     dict(doc.get("defaults") or {}), file)


def _recognised(sig: Signature, template: str) -> bool:
    low = template.lower()
    return any(v.literal.decode() in low and (v.regex is None or v.regex.search(template)) for v in sig.variants)


def _tool_variants(root: Path) -> Dict[str, List[dict]]:
    """The classified templates of NVIDIA's binaries (``tools/classified.json``, see
    :mod:`gpudoctor.explain.toolwords`); none when the KB directory has no ``tools/``."""
    from gpudoctor.explain.toolwords import classified_variants

    if not (root / "tools" / "classes.json").is_file():
        return {}
    try:
        return classified_variants(str(root / "tools"))
    except (OSError, ValueError) as exc:
        raise KbError(f"tools/classified.json: cannot be read: {exc}") from None


def load_kb(directory: Optional[Path] = None, strict: Optional[bool] = None) -> List[Signature]:
    """Every signature file in ``directory`` (default: the shipped KB), sorted by id, with the
    variants generated from NVIDIA's error enumerations (``codes/generated.json``, see
    :mod:`gpudoctor.explain.codekb`) and from the classified messages of NVIDIA's binaries
    (``tools/classified.json``, see :mod:`gpudoctor.explain.toolwords`) added to their classes.
    Raises KbError: an invalid file, a generated class without a signature file, or a signature left
    without any variant. ``strict`` (default: only for a ``directory`` given) also compiles every regex now,
    so that one that does not compile is a KbError here; the shipped KB's are compiled on first use
    (tests load it strictly)."""
    from gpudoctor.explain.codekb import generated_variants, load_generated

    root = Path(directory) if directory else KB_DIR
    strict = directory is not None if strict is None else strict
    files = sorted(root.glob("*.json"))
    if not files:
        raise KbError(f"{root}: no signature files")
    sigs = [_signature(p, strict) for p in files]
    try:
        data = load_generated(root / "codes" / "generated.json")
    except (OSError, ValueError) as exc:
        raise KbError(f"codes/generated.json: cannot be read: {exc}") from None
    extra = generated_variants(data) if data else {}
    tools = _tool_variants(root)
    for cls, variants in tools.items():
        extra.setdefault(cls, []).extend(variants)
    by_id = {s.id: s for s in sigs}
    unknown = sorted(set(extra) - set(by_id))
    if unknown:
        raise KbError(f"codes/generated.json: classes without a signature file: {unknown}")
    out = []
    for sig in sigs:
        gen = tuple(_variant(f"{sig.file} (generated)", i, v, strict) for i, v in enumerate(extra.get(sig.id, ())))
        hand = {(v.literal, v.regex.pattern if v.regex else None) for v in sig.variants}
        # a tool's template that a hand variant of its class already recognises adds nothing but a score bump
        gen = tuple(g for g in gen if "tool_template" not in g.vars or not _recognised(sig, g.vars["tool_template"]))
        merged = sig.variants + tuple(g for g in gen if (g.literal, g.regex.pattern if g.regex else None) not in hand)
        if not merged:
            raise KbError(f"{sig.file}: no variants (none in the file, none generated)")
        out.append(replace(sig, variants=merged))
    return out
