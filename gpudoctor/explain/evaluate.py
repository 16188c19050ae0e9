"""Accuracy of `gpudoctor explain` on a corpus of real failure reports (used by benchmarks and tests).

A corpus entry (``tests/corpus*/NAME.json``) has the report's ``log``, its confirmed ``cause`` (a
finding id, or ``"none"`` for a failure that is not an environment problem) and optional
``also_ok`` ids. Scoring:

- an entry with a cause is a top-1 hit when the first diagnosis is its cause (or an ``also_ok``),
  a top-3 hit when one of the first three is;
- a ``"none"`` entry is a hit when no environment diagnosis is *confident* (score >= 0.75, the
  "medium" confidence floor) unless it is one of the entry's ``also_ok`` classes; a ``program.error``
  diagnosis ("not an environment problem") is allowed;
- a false positive of class C is a confident top-1 diagnosis C on an entry whose cause is not C.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Tuple

from gpudoctor.explain.diagnose import diagnose_text
from gpudoctor.explain.kb import load_kb

__all__ = ["Result", "Summary", "load_corpus", "evaluate", "report", "NEGATIVE", "CONFIDENT", "NOT_ENV"]

NEGATIVE = "none"
NOT_ENV = "program.error"
CONFIDENT = 0.75


@dataclass
class Result:
    file: str
    cause: str
    ok: Tuple[str, ...]
    ranked: List[Tuple[str, float]]  # (finding id, score), best first

    @property
    def top1(self) -> bool:
        if self.cause == NEGATIVE:
            return not self.confident_env()
        return bool(self.ranked) and self.ranked[0][0] in self.ok

    @property
    def top3(self) -> bool:
        if self.cause == NEGATIVE:
            return self.top1
        return any(i in self.ok for i, _ in self.ranked[:3])

    def confident_env(self) -> List[str]:
        """Confident environment diagnoses that the report does not accept (``also_ok`` ones are accepted)."""
        return [i for i, s in self.ranked if s >= CONFIDENT and i != NOT_ENV and i not in self.ok]

    @property
    def false_positive(self) -> Optional[str]:
        """The class wrongly and confidently put first, if any."""
        if not self.ranked:
            return None
        first, score = self.ranked[0]
        if score >= CONFIDENT and first != NOT_ENV and first not in self.ok:
            return first
        return None


@dataclass
class Summary:
    results: List[Result] = field(default_factory=list)

    def rate(self, attr: str, cause: Optional[str] = None) -> Tuple[int, int]:
        rs = [r for r in self.results if cause is None or r.cause == cause]
        return sum(bool(getattr(r, attr)) for r in rs), len(rs)

    def per_class(self) -> Dict[str, Dict[str, object]]:
        out: Dict[str, Dict[str, object]] = {}
        for cause in sorted({r.cause for r in self.results} | {r.false_positive for r in self.results if r.false_positive}):
            t1, n = self.rate("top1", cause)
            t3, _ = self.rate("top3", cause)
            others = [r for r in self.results if r.cause != cause and cause not in r.ok]
            fp = sum(r.false_positive == cause for r in others)
            out[cause] = {"n": n, "top1": t1, "top3": t3, "fp": fp, "others": len(others)}
        return out

    def negatives_confident(self) -> List[Result]:
        return [r for r in self.results if r.cause == NEGATIVE and r.confident_env()]

    def misses(self) -> List[Result]:
        return [r for r in self.results if not r.top1]


def load_corpus(directory: Path) -> List[dict]:
    return [json.loads(p.read_text(encoding="utf-8")) | {"_file": p.name} for p in sorted(Path(directory).glob("*.json"))]


def evaluate(entries: Iterable[dict], kb=None) -> Summary:
    kb = kb if kb is not None else load_kb()
    summary = Summary()
    for e in entries:
        ranked = [(d.finding.id, d.score) for d in diagnose_text(e["log"], kb)]
        ok = tuple([e["cause"], *e.get("also_ok", [])])
        summary.results.append(Result(e.get("_file", "?"), e["cause"], ok, ranked))
    return summary


def report(summary: Summary, title: str) -> str:
    """A plain-text table: overall top-1/top-3, negatives, per class, and the misses."""
    lines = [title]
    t1, n = summary.rate("top1")
    t3, _ = summary.rate("top3")
    pos = [r for r in summary.results if r.cause != NEGATIVE]
    p1 = sum(r.top1 for r in pos)
    neg = [r for r in summary.results if r.cause == NEGATIVE]
    lines.append(f"  reports: {n} ({len(pos)} with an environment cause, {len(neg)} negatives)")
    if n:
        lines.append(f"  top-1: {t1}/{n} = {t1 / n:.1%}   top-3: {t3}/{n} = {t3 / n:.1%}")
    if pos:
        lines.append(f"  top-1 on environment causes: {p1}/{len(pos)} = {p1 / len(pos):.1%}")
    if neg:
        bad = summary.negatives_confident()
        lines.append(f"  negatives with a confident environment diagnosis: {len(bad)}/{len(neg)}")
    lines.append(f"  {'class':28} {'n':>3} {'top-1':>6} {'top-3':>6} {'FP':>9}")
    for cause, s in summary.per_class().items():
        fp = f"{s['fp']}/{s['others']}"
        lines.append(f"  {cause:28} {s['n']:>3} {s['top1']:>6} {s['top3']:>6} {fp:>9}")
    misses = summary.misses()
    if misses:
        lines.append("  misses (file: expected -> ranked):")
        for r in misses:
            got = ", ".join(f"{i} {s:.2f}" for i, s in r.ranked[:3]) or "(no known signature)"
            lines.append(f"    {r.file}: {r.cause} -> {got}")
    return "\n".join(lines)
