"""One step shared by the rules that rank diagnoses from evidence beyond the error text (command-line
context, stated versions): raise a class to a score, or add it when the error text did not name it."""
from __future__ import annotations

from typing import Callable, Dict, List

__all__ = ["raise_or_add"]


def raise_or_add(diags: List, by_id: Dict[str, object], make: Callable, sig_id: str, score: float,
                 evidence: Dict[str, object]) -> None:
    """Raise ``sig_id``'s diagnosis to at least ``score`` and add ``evidence`` to it; without one, build
    it with ``make(sig_id, score, evidence)`` (None when the KB has no such class: nothing is added)."""
    d = by_id.get(sig_id)
    if d is None:
        d = make(sig_id, score, evidence)
        if d is None:
            return
        diags.append(d)
        by_id[sig_id] = d
    else:
        d.score = max(d.score, score)
        d.finding.evidence.update(evidence)
