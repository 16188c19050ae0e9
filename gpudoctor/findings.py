"""Findings: what rules conclude, in a shape that renderers and JSON consumers share."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple


class Severity(str, enum.Enum):
    """How bad a finding is. Ordered: ok < info < warn < fail."""

    OK = "ok"
    INFO = "info"
    WARN = "warn"
    FAIL = "fail"

    @property
    def rank(self) -> int:
        return _RANK[self]


_RANK = {Severity.OK: 0, Severity.INFO: 1, Severity.WARN: 2, Severity.FAIL: 3}


@dataclass(frozen=True)
class Fix:
    """A remedy someone can paste. ``commands`` run in ``shell`` (sh or powershell), in order."""

    summary: str
    commands: Tuple[str, ...] = ()
    shell: str = "sh"

    def to_dict(self) -> dict:
        return {"summary": self.summary, "commands": list(self.commands), "shell": self.shell}


@dataclass(frozen=True)
class Finding:
    """One conclusion of one rule.

    ``id`` is stable across versions (e.g. ``compiler.unsupported``) so reports can be
    compared; ``area`` groups findings in the report (driver, cuda, toolkit, ...);
    ``evidence`` maps fact names to the values the conclusion rests on; ``fixes`` are
    alternatives in order of preference.
    """

    id: str
    severity: Severity
    area: str
    title: str
    evidence: Dict[str, object] = field(default_factory=dict)
    fixes: Tuple[Fix, ...] = ()
    doc: Optional[str] = None
    detail: Optional[str] = None

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "severity": self.severity.value,
            "area": self.area,
            "title": self.title,
            "detail": self.detail,
            "evidence": self.evidence,
            "fixes": [f.to_dict() for f in self.fixes],
            "doc": self.doc,
        }


def worst(findings: List[Finding]) -> Severity:
    return max((f.severity for f in findings), key=lambda s: s.rank, default=Severity.OK)
