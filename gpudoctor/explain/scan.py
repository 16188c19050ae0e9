"""Streaming log scanner: bounded memory and linear time, whatever the log (GBs, binary, no newlines).

The log is fed in chunks. Each chunk is lower-cased once and searched for the KB's anchor tokens
with ``bytes.find`` (a fast C loop); only lines holding an anchor are decoded and checked against
that anchor's variants (literal, then the optional regex on a line cut to ``MAX_LINE`` bytes).
Memory: the current chunk plus one unfinished line (itself capped at ``MAX_CARRY``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import BinaryIO, Dict, List, Optional, Tuple

from gpudoctor.explain.kb import MAX_LINE, Signature, Variant

__all__ = ["Match", "Scanner", "scan_stream", "CHUNK", "MAX_CARRY"]

CHUNK = 8 << 20
#: An unfinished line longer than this is scanned as it is and dropped (a log without newlines).
MAX_CARRY = 1 << 20
_KEEP = 3  # matches kept per variant (the rest are only counted)


@dataclass
class Match:
    signature: Signature
    variant: Variant
    line_no: int  # 1-based
    line: str  # the matched line, cut to 300 characters
    vars: Dict[str, str]


class Scanner:
    """Feed bytes with :meth:`feed`, then :meth:`close`; read :attr:`matches` and :attr:`counts`."""

    def __init__(self, kb: List[Signature]) -> None:
        self._by_anchor: Dict[bytes, List[Tuple[Signature, Variant]]] = {}
        for sig in kb:
            for var in sig.variants:
                self._by_anchor.setdefault(var.anchor, []).append((sig, var))
        self._carry = b""
        self.lines = 0  # newlines consumed so far
        self.bytes = 0
        self.matches: List[Match] = []
        self.counts: Dict[Tuple[str, str], int] = {}

    def feed(self, chunk: bytes) -> None:
        self.bytes += len(chunk)
        data = self._carry + chunk if self._carry else chunk
        cut = data.rfind(b"\n")
        if cut < 0:
            if len(data) > MAX_CARRY:
                self._scan(data + b"\n")
                self.lines -= 1  # that newline was ours, not the log's
                self._carry = b""
            else:
                self._carry = data
            return
        self._carry = data[cut + 1:]
        if len(self._carry) > MAX_CARRY:
            self._carry = self._carry[:MAX_CARRY]
        self._scan(data[:cut + 1])

    def close(self) -> None:
        if self._carry:
            self._scan(self._carry + b"\n")
            self.lines -= 1
            self._carry = b""

    def _scan(self, body: bytes) -> None:
        low = body.lower()
        spans: Dict[int, Tuple[int, List[bytes]]] = {}
        for anchor in self._by_anchor:
            pos = low.find(anchor)
            while pos >= 0:
                start = low.rfind(b"\n", 0, pos) + 1
                end = low.find(b"\n", pos)
                end = len(low) if end < 0 else end
                spans.setdefault(start, (end, []))[1].append(anchor)
                pos = low.find(anchor, end)
        counted, line_no = 0, self.lines
        for start in sorted(spans):
            end, anchors = spans[start]
            line_no += body.count(b"\n", counted, start)
            counted = start
            self._check_line(body[start:min(end, start + MAX_LINE)], low[start:min(end, start + MAX_LINE)],
                             anchors, line_no + 1)
        self.lines += body.count(b"\n")

    def _check_line(self, raw: bytes, low: bytes, anchors: List[bytes], line_no: int) -> None:
        text: Optional[str] = None
        for anchor in anchors:
            for sig, var in self._by_anchor[anchor]:
                if var.literal not in low:
                    continue
                if text is None:
                    text = raw.decode("utf-8", errors="replace")
                found: Dict[str, str] = {}
                if var.regex is not None:
                    m = var.regex.search(text)
                    if m is None:
                        continue
                    found = {k: v for k, v in m.groupdict().items() if v}
                key = (sig.id, var.name)
                self.counts[key] = self.counts.get(key, 0) + 1
                if self.counts[key] <= _KEEP:
                    self.matches.append(Match(sig, var, line_no, text.strip()[:300], found))


def scan_stream(kb: List[Signature], stream: BinaryIO, limit: Optional[int] = None) -> Scanner:
    """Scan a binary stream to its end (or ``limit`` bytes) in :data:`CHUNK`-sized reads."""
    sc = Scanner(kb)
    left = limit
    while left is None or left > 0:
        chunk = stream.read(CHUNK if left is None else min(CHUNK, left))
        if not chunk:
            break
        sc.feed(chunk)
        if left is not None:
            left -= len(chunk)
    sc.close()
    return sc
