"""The tools' own words: diagnostic templates compiled into NVIDIA's binaries (``kb/tools/generated.json``,
written by ``scripts/gen_tool_messages.py``), recognised in a log and attributed to their tool.

A template is a printf (or, for cudafe++, EDG) format string as the binary holds it, e.g. ptxas's
``Value '%s' is not defined for option '%s'``. Each becomes:

- a regex: the constant text escaped, each conversion a *bounded* class (``%d`` -> ``-?\\d{1,20}``,
  a quoted ``'%s'`` -> ``'[^'\\n]{0,256}'``, any other ``%s`` a lazy ``.{0,256}?`` that commits to the
  first place the next constant text follows, as an atomic step: ``(?=(.{0,256}?TEXT))\\1``), so a
  match costs at most linear time in the line whatever the line holds; leading and trailing
  conversions are dropped (a search needs no anchor there);
- a literal: the template's longest constant run made of bytes the KB's literals already use (one more
  byte class doubles the scanner's automaton, see :mod:`gpudoctor.explain.scan`).

Templates a hand-kept family in ``kb/tools/classes.json`` classifies become variants of that finding
class (:func:`classified_variants`, loaded by :func:`gpudoctor.explain.kb.load_kb`: scanned in the whole
log). The rest are read only in the log's last 64 KiB (where a failing tool's message is, like the
weak hints) by :func:`tool_said`: a low-confidence ``tool.message`` diagnosis that names the tool and
its message, never a cause.
"""
from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Dict, List, Optional, Pattern, Tuple

__all__ = ["TOOL_MESSAGE", "TOOL_SCORE", "MIN_CONSTANT", "MIN_PREFIXED", "constant_length", "message_literal", "template_regex", "classified_variants", "tool_said",
           "load_generated", "which_tool"]

TOOLS_DIR = Path(__file__).resolve().parent / "kb" / "tools"
#: Finding id of a recognised tool message that no family classifies.
TOOL_MESSAGE = "tool.message"
#: Its score: below every hint (0.4) and signature, so it never outranks a cause; only names the tool.
TOOL_SCORE = 0.35
_MAX_LINE = 4096
_GAP = 256  # characters a %s may stand for

# Bytes the scanner's literals already use (scan.literal_byte_classes): a literal holding another would
# split a byte class and double the automaton. tests/test_explain.py counts the classes.
_LITERAL_BYTES = frozenset(b" \"#'()+,-./0123456:;<=>?@[\\]_`abcdefghijklmnopqrstuvwxyz")
# How much constant text tells one tool's template from other programs' words: the literal only
# prefilters, the regex then needs all of the template's constant text on the line.
_MIN_LITERAL = 10  # characters, two words
MIN_CONSTANT = 18  # characters of constant text in the whole template, to be recognised anywhere
#: Shorter templates ("Unknown option '%s'") count only on a line where the tool names itself
#: ("nvcc fatal   : Unknown option '--foo'"): ``prefixed`` in generated.json.
MIN_PREFIXED = 10

_PRINTF = r"%(?:%|[-+ #0]{0,4}(?:\d{1,3}|\*)?(?:\.(?:\d{1,3}|\*))?(?:hh|h|ll|l|z|j|t|L|q|I64)?[diouxXeEfgGcspaA])"
# EDG (cudafe++) also writes %sq (a quoted string), %nd / %no / %nfd (an entity), %t (a type), %p (a
# position), each optionally numbered (%sq1).
_EDG = r"%(?:sq|nq|tq|nod|nfd|nd|no|nf|np|n|t|p|s|d|u|lu|ld)\d?(?![a-z])"
_SPECS = {"printf": re.compile(_PRINTF), "edg": re.compile(f"{_EDG}|{_PRINTF}")}


def _pieces(template: str, dialect: str) -> List[Tuple[str, str]]:
    """[("text", s) | ("spec", conversion)] with adjacent conversions kept apart."""
    out: List[Tuple[str, str]] = []
    pos = 0
    for m in _SPECS[dialect].finditer(template):
        if m.start() > pos:
            out.append(("text", template[pos:m.start()]))
        out.append(("text", "%") if m.group() == "%%" else ("spec", m.group()))
        pos = m.end()
    if pos < len(template):
        out.append(("text", template[pos:]))
    merged: List[Tuple[str, str]] = []
    for kind, s in out:  # "%%" became text: join it with its neighbours
        if merged and kind == "text" and merged[-1][0] == "text":
            merged[-1] = ("text", merged[-1][1] + s)
        else:
            merged.append((kind, s))
    return merged


def _gap(spec: str) -> str:
    """A bounded class for one conversion (None-free: unknown ones are any text)."""
    conv = spec[-1] if not spec[-1].isdigit() else spec[-2]
    if spec.rstrip("0123456789").endswith("q"):
        return '"[^"\\n]{0,%d}"' % _GAP
    if spec in ("%d", "%u", "%lu", "%ld") or conv in "diu" and not spec.startswith(("%s", "%n", "%t")):
        return r"-?\d{1,20}"
    if conv in "xX":
        return r"[0-9a-f]{1,16}"
    if conv in "eEfgGaA":
        return r"[-+0-9.einfa]{1,32}"
    if conv == "c":
        return "."
    return ""  # any text: the caller commits it to the next constant


def _strip(pieces: List[Tuple[str, str]]) -> List[Tuple[str, str]]:
    while pieces and (pieces[0][0] == "spec" or not pieces[0][1].strip()):
        pieces = pieces[1:]
    while pieces and (pieces[-1][0] == "spec" or not pieces[-1][1].strip(" .\n\t:")):
        pieces = pieces[:-1]
    if pieces:
        pieces = [("text", pieces[0][1].lstrip())] + pieces[1:]
        pieces = pieces[:-1] + [("text", pieces[-1][1].rstrip(" .\n\t"))] if len(pieces) > 1 else \
            [("text", pieces[0][1].rstrip(" .\n\t"))]
    return pieces


def constant_length(template: str, dialect: str = "printf") -> int:
    """Characters of constant text the template's regex requires."""
    return sum(len(s.strip()) for k, s in _strip(_pieces(template, dialect)) if k == "text")


def template_regex(template: str, dialect: str = "printf") -> Optional[str]:
    """A linear regex for the template (see the module doc), or None when its constant text is too short
    (:data:`MIN_PREFIXED`) to tell it from other programs' words even behind the tool's name."""
    pieces = _strip(_pieces(template, dialect))
    if constant_length(template, dialect) < MIN_PREFIXED:
        return None
    out: List[str] = []
    group = 0
    i = 0
    while i < len(pieces):
        kind, s = pieces[i]
        if kind == "text":
            out.append(re.escape(s))
            i += 1
            continue
        specs = []
        while i < len(pieces) and pieces[i][0] == "spec":
            specs.append(pieces[i][1])
            i += 1
        nxt = pieces[i][1] if i < len(pieces) else ""
        gaps = [_gap(sp) for sp in specs]
        if len(gaps) == 1 and gaps[0]:
            out.append(gaps[0])
            continue
        prev = out[-1] if out else ""
        quote = prev[-1:] if prev[-1:] in ("'", '"') else ""
        if quote and nxt.startswith(quote) and len(specs) == 1:
            out.append("[^%s\\n]{0,%d}" % (quote, _GAP))
            continue
        group += 1  # atomic: the first place the next text follows, never a retry (linear)
        out.append("(?=(.{0,%d}?%s))\\%d" % (min(_GAP * len(specs), 2 * _GAP), re.escape(nxt), group))
        i += 1
    return "".join(out)


def message_literal(template: str, dialect: str = "printf") -> Optional[str]:
    """The template's longest lower-case constant run within the scanner's byte classes, or None when
    none is long enough (:data:`_MIN_LITERAL` characters, two words)."""
    best = ""
    for kind, s in _strip(_pieces(template, dialect)):
        if kind != "text":
            continue
        for run in re.split(rb"[^%s]" % re.escape(bytes(sorted(_LITERAL_BYTES))), s.lower().encode("ascii", "replace")):
            run = run.strip()
            if len(run) > len(best):
                best = run.decode()
    words = re.findall(r"[a-z]{2,}", best)
    return best if len(best) >= _MIN_LITERAL and len(words) >= 2 else None


@lru_cache(maxsize=4)
def load_generated(name: str = "generated.json", root: Optional[str] = None) -> Dict[str, object]:
    """``name`` (generated.json: every template, ``{"binaries", "messages"}``; classified.json: the
    classified ones, read on every run) plus classes.json's ``sources`` and ``more``; no messages when
    the files are absent. Raises OSError/ValueError for an unreadable file."""
    base = Path(root) if root else TOOLS_DIR
    try:
        data = json.loads((base / name).read_text(encoding="utf-8"))
    except FileNotFoundError:
        data = {"messages": []}
    try:
        classes = json.loads((base / "classes.json").read_text(encoding="utf-8"))
    except FileNotFoundError:  # an install without the data files: no tool's words are known
        classes = {}
    data["sources"], data["more"] = classes.get("sources", {}), classes.get("more", {})
    return data


def _source(data: dict, tools: List[str]) -> str:
    return data["sources"].get(tools[0], "https://docs.nvidia.com/cuda/")


def classified_variants(root: Optional[str] = None) -> Dict[str, List[dict]]:
    """Class id -> variant dicts (the KB's schema plus ``vars``) for the classified templates."""
    data = load_generated("classified.json", root)
    out: Dict[str, List[dict]] = {}
    for m in data["messages"]:
        if not m.get("class"):
            continue
        fixed = {"tool": " or ".join(m["tools"]), "tool_template": m["template"]}
        out.setdefault(m["class"], []).append({
            "name": f"{'/'.join(m['tools'])} message: {m['template'][:80]}", "anchor": m["literal"],
            "literal": m["literal"], "regex": m["regex"], "weight": m["weight"],
            "source": f"{_source(data, m['tools'])} (generated from the {m['from'][0]} binary; family "
                      f"'{m['family']}' in kb/tools/classes.json)", "vars": fixed})
    return out


# A tool names itself in front of its message: "ptxas fatal   : ", "nvcc warning : ", NCCL's "NCCL WARN ".
_PREFIX = re.compile(r"\b(?P<tool>nvcc|ptxas|nvlink|fatbinary|cicc|cudafe\+\+)\s{0,3}(?P<level>fatal|error|warning|info)\s{0,4}:"
                     r"|\bnccl (?P<nccl>warn|info)\b|(?P<trt>\[trt\]|\[tensorrt\])", re.I)


_LEVEL_WORD = re.compile(r"(?<![a-z])(?:warn|warning|info|error|fatal|note|remark)\s*$", re.I)


def _starts_a_message(line: str, start: int, m: dict) -> bool:
    """A template that begins with its own words begins the tool's message: at the line's start or after a
    tool's punctuation or level word ("error: ", "] ", "NCCL WARN "), never inside another sentence ("The
    specified module could not be found" is Windows', not cudafe++'s "could not be found")."""
    if m["template"].startswith("%"):
        return True  # a value came first: any word may precede
    before = line[:start].rstrip()
    return not before or not (before[-1].isalnum() or before[-1] == ",") or bool(_LEVEL_WORD.search(before[-8:]))


def which_tool(line: str, tools: List[str]) -> str:
    """The tool a line names that holds this template ("ptxas fatal   : ...", "ptxas x.ptx, line 5; error   :",
    "NCCL WARN"), else every tool that holds it ("cudafe++ or cicc")."""
    pre = _PREFIX.search(line)
    if pre is not None:  # the line says who printed it (a message built at run time is not in .rodata as a whole)
        return pre.group("tool") or ("libnccl" if pre.group("nccl") else "TensorRT")
    low = line.lower()
    named_here = [t for t in tools if re.search(rf"(?<![\w+-]){re.escape(t.lower())}(?![\w+-])", low)]
    return named_here[0] if len(named_here) == 1 else " or ".join(tools)


@lru_cache(maxsize=1)
def _unclassified() -> Tuple[List[bytes], List[List[dict]]]:
    by_literal: Dict[bytes, List[dict]] = {}
    for m in load_generated()["messages"]:
        if not m.get("class"):
            by_literal.setdefault(m["literal"].encode(), []).append(m)
    return list(by_literal), list(by_literal.values())


@lru_cache(maxsize=4096)
def _compiled(regex: str) -> Pattern[str]:
    return re.compile(regex, re.IGNORECASE)


def _hits(low: bytes, literals: List[bytes]) -> List[Tuple[int, int]]:
    auto = _tail_automaton()
    if auto is not None:
        return [(idx, start) for idx, start, _end in auto.find_matches_as_indexes(low, overlapping=True)]
    hits = []  # without the automaton: every place of every literal, by bytes.find (~0.1 s over 64 KiB)
    for i, lit in enumerate(literals):
        pos = low.find(lit)
        while pos >= 0:
            hits.append((i, pos))
            pos = low.find(lit, pos + 1)
    return hits


@lru_cache(maxsize=1)
def _tail_automaton():
    """An automaton over the unclassified literals, or None without ahocorasick_rs. It searches 64 KiB
    once per log, so it is built as an NFA: ~10x faster to build than the scanner's DFA (60 ms for
    ~9,000 literals, measured), slower only per byte."""
    try:
        import ahocorasick_rs as ac
    except ImportError:
        return None
    literals, _ = _unclassified()
    impl = getattr(getattr(ac, "Implementation", None), "NoncontiguousNFA", None)
    if not literals or not hasattr(ac, "BytesAhoCorasick"):
        return None
    try:
        return ac.BytesAhoCorasick(literals, implementation=impl) if impl is not None else ac.BytesAhoCorasick(literals)
    except TypeError:
        return ac.BytesAhoCorasick(literals)


def tool_said(tail: bytes, first_line: int, limit: int = 3) -> List[Dict[str, object]]:
    """Lines of ``tail`` (the log's last bytes; its first line is number ``first_line``) that a tool's
    unclassified template matches: ``[{"line_no", "line", "tool", "tools", "template", "from", "message"}]``,
    the first ``limit`` lines in log order (``message``: the line from where the template starts). Where
    several templates match one line, the one with the most constant text wins (``Value '%s' is not
    defined for option '%s'`` over ``%s' is not defined``)."""
    literals, entries = _unclassified()
    if not tail or not literals:
        return []
    low = tail.lower()
    by_line: Dict[int, List[int]] = {}
    for idx, start in _hits(low, literals):
        by_line.setdefault(low.rfind(b"\n", 0, start) + 1, []).append(idx)
    found: List[Dict[str, object]] = []
    for line_start in sorted(by_line):
        end = low.find(b"\n", line_start)
        text = tail[line_start:min(end if end >= 0 else len(tail), line_start + _MAX_LINE)].decode("utf-8", errors="replace")
        candidates = sorted({id(m): m for i in by_line[line_start] for m in entries[i]}.values(),
                            key=lambda m: -len(m["template"]))
        for m in candidates:
            hit = _compiled(m["regex"]).search(text)
            if hit is None or (m.get("prefixed") and not _PREFIX.search(text)) or not _starts_a_message(text, hit.start(), m):
                continue
            found.append({"line_no": first_line + tail.count(b"\n", 0, line_start), "line": text.strip()[:300],
                          "tool": which_tool(text, m["tools"]), "tools": m["tools"], "template": m["template"],
                          "from": m["from"], "message": text[hit.start():].strip()[:200]})
            break
        if len(found) >= limit:
            break
    return found
