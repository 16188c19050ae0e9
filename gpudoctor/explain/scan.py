"""Streaming log scanner: bounded memory and linear time, whatever the log (GBs, binary, no newlines).

The log is fed in chunks. Each chunk is lower-cased once and searched for every variant's literal
in one pass with an Aho-Corasick automaton (``ahocorasick_rs``, a maintained Rust library: a
multi-pattern search is not ours to write). Without it, each anchor token is searched with
``bytes.find`` (slower: one pass per anchor). Only a line holding a literal is decoded and checked
against the variant's regex, on the line cut to ``MAX_LINE`` bytes. Memory: the current chunk plus
one unfinished line (itself capped at ``MAX_CARRY``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import BinaryIO, Dict, List, Optional, Tuple

from gpudoctor.explain.kb import MAX_LINE, Signature, Variant

__all__ = ["Match", "Scanner", "scan_stream", "CHUNK", "MAX_CARRY", "LITERAL_BYTE_CLASSES_MAX", "literal_byte_classes"]

CHUNK = 8 << 20
#: An unfinished line longer than this is scanned as it is and dropped (a log without newlines).
MAX_CARRY = 1 << 20
_KEEP = 3  # matches kept per variant (the rest are only counted)
# A context variant whose literal is common ("@", Compose's "_1 ") but whose line shape is rare: after
# this many candidate lines that are not its shape it stops being checked, so a log with the literal
# on every line costs a bounded number of regex checks (evidence that comes later is rare: commands
# and prompts lead a pasted log, and Compose prefixes every line of its output).
_CONTEXT_MISSES = 1000
#: The log's last bytes, kept for the weak hints (:mod:`gpudoctor.explain.hints`): the error a log ends with.
TAIL = 64 << 10


@dataclass
class Match:
    signature: Signature
    variant: Variant
    line_no: int  # 1-based
    line: str  # the matched line, cut to 300 characters
    vars: Dict[str, str]


class Scanner:
    """Feed bytes with :meth:`feed`, then :meth:`close`; read :attr:`matches` and :attr:`counts`."""

    def __init__(self, kb: List[Signature], context: bool = True) -> None:
        from gpudoctor.explain.context import context_signatures

        kb = list(kb) + (context_signatures() if context else [])
        #: finding id -> signature (context signatures included), for diagnoses made from context
        self.signatures: Dict[str, Signature] = {s.id: s for s in kb}
        self._by_anchor: Dict[bytes, List[Tuple[Signature, Variant]]] = {}
        by_literal: Dict[bytes, List[Tuple[Signature, Variant]]] = {}
        for sig in kb:
            for var in sig.variants:
                self._by_anchor.setdefault(var.anchor, []).append((sig, var))
                by_literal.setdefault(var.literal, []).append((sig, var))
        self._by_literal = by_literal
        self._literals = list(by_literal)
        self._by_index = [by_literal[lit] for lit in self._literals]
        self._automaton = _automaton(self._literals)
        self._stale = False  # a literal's variants are all done: rebuild the automaton without it
        self._carry = b""
        self.lines = 0  # newlines consumed so far
        self.bytes = 0
        self.tail = b""  # the last TAIL bytes fed
        self.matches: List[Match] = []
        self.counts: Dict[Tuple[str, str], int] = {}
        # Context variants (command lines, markers) need only their first few lines: once they have
        # them, their hits are dropped before any per-line work (build logs have an nvcc line per file).
        self._done: set = set()
        self._misses: Dict[Tuple[str, str], int] = {}  # context variant -> candidate lines not of its shape

    def feed(self, chunk: bytes) -> None:
        self.bytes += len(chunk)
        self.tail = (self.tail + chunk[-TAIL:])[-TAIL:]
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

    def _drop_done_literals(self) -> None:
        live = {lit: entries for lit, entries in self._by_literal.items()
                if any((sig.id, var.name) not in self._done for sig, var in entries)}
        if live and len(live) < len(self._by_literal) and self._automaton is not None:
            self._by_literal = live
            self._literals = list(live)
            self._by_index = [live[lit] for lit in self._literals]
            self._automaton = _automaton(self._literals)
        self._stale = False

    def _hits(self, low: bytes) -> List[Tuple[int, Signature, Variant]]:
        if self._stale:
            self._drop_done_literals()
        if self._automaton is not None:
            return [(start, sig, var) for idx, start, _end in self._automaton.find_matches_as_indexes(low, overlapping=True)
                    for sig, var in self._by_index[idx]]
        hits: List[Tuple[int, Signature, Variant]] = []
        for anchor, entries in self._by_anchor.items():
            pos = low.find(anchor)
            while pos >= 0:
                # Compare the whole literal in place (one C-level slice) before any per-line work.
                for sig, var in entries:
                    start = pos - var.literal.find(anchor)
                    if start >= 0 and low[start:start + len(var.literal)] == var.literal:
                        hits.append((start, sig, var))
                pos = low.find(anchor, pos + 1)
        return hits

    def _scan(self, body: bytes) -> None:
        if b"\xe2\x80" in body:  # tools print ASCII quotes; forums and editors turn them into typographic ones
            for fancy, plain in _QUOTES:
                body = body.replace(fancy, plain)
        low = body.lower()
        hits = self._hits(low)
        seen = set()
        counted, line_no = 0, self.lines
        if self._done:
            hits = [h for h in hits if (h[1].id, h[2].name) not in self._done]
        for pos, sig, var in sorted(hits, key=lambda h: h[0]):
            if self._stale and (sig.id, var.name) in self._done:  # done earlier in this very chunk
                continue
            line_start = low.rfind(b"\n", 0, pos) + 1
            if (line_start, sig.id, var.name) in seen:
                continue
            seen.add((line_start, sig.id, var.name))
            line_no += body.count(b"\n", counted, line_start)
            counted = line_start
            line_end = low.find(b"\n", pos)
            line_end = len(low) if line_end < 0 else line_end
            self._check(sig, var, body[line_start:min(line_end, line_start + MAX_LINE)], line_no + 1)
        self.lines += body.count(b"\n")

    def _check(self, sig: Signature, var: Variant, raw: bytes, line_no: int) -> None:
        text = raw.decode("utf-8", errors="replace")
        found: Dict[str, str] = dict(var.vars)
        if var.regex is not None:
            m = var.regex.search(text)
            if m is None:
                if sig.id.startswith("context."):
                    key = (sig.id, var.name)
                    self._misses[key] = self._misses.get(key, 0) + 1
                    if self._misses[key] >= _CONTEXT_MISSES:
                        self._done.add(key)
                        self._stale = True
                return
            found.update({k: v for k, v in m.groupdict().items() if v})
        key = (sig.id, var.name)
        self.counts[key] = self.counts.get(key, 0) + 1
        if self.counts[key] <= _KEEP:
            self.matches.append(Match(sig, var, line_no, text.strip()[:300], found))
        if self.counts[key] >= _KEEP and sig.id.startswith("context.") and key not in self._done:
            self._done.add(key)
            self._stale = True


_QUOTES = ((b"\xe2\x80\x98", b"'"), (b"\xe2\x80\x99", b"'"), (b"\xe2\x80\x9c", b'"'), (b"\xe2\x80\x9d", b'"'))


#: Byte classes the literals may split the alphabet into. The DFA's rows are as wide as the next power
#: of two above its byte classes (each byte a literal uses, and each run of bytes between them), so one
#: class past 64 doubles the automaton (measured: 9 MiB -> 16 MiB for one literal holding a '|'; a '7',
#: which splits the unused run 7-9, would do the same). tests/test_explain.py keeps the literals within it.
LITERAL_BYTE_CLASSES_MAX = 64


def literal_byte_classes(literals: List[bytes]) -> int:
    """How many byte classes the literals split the 256 bytes into (used bytes plus the gaps between them)."""
    used = sorted(set(b"".join(literals)))
    gaps = sum(1 for a, b in zip([-1] + used, used + [256]) if b > a + 1)
    return len(used) + gaps


def _automaton(literals: List[bytes]):
    """One-pass multi-pattern matcher over bytes, or None when ahocorasick_rs (or its bytes API) is missing."""
    try:
        import ahocorasick_rs as ac
    except ImportError:
        return None
    if not hasattr(ac, "BytesAhoCorasick"):
        return None
    impl = getattr(getattr(ac, "Implementation", None), "DFA", None)
    try:
        return ac.BytesAhoCorasick(literals, implementation=impl) if impl is not None else ac.BytesAhoCorasick(literals)
    except TypeError:  # older releases without the implementation argument
        return ac.BytesAhoCorasick(literals)


def scan_stream(kb: List[Signature], stream: BinaryIO, limit: Optional[int] = None, on_chunk=None) -> Scanner:
    """Scan a binary stream to its end (or ``limit`` bytes) in :data:`CHUNK`-sized reads;
    ``on_chunk(n)`` is told each chunk's size (a progress bar)."""
    sc = Scanner(kb)
    left = limit
    while left is None or left > 0:
        chunk = stream.read(CHUNK if left is None else min(CHUNK, left))
        if not chunk:
            break
        sc.feed(chunk)
        if on_chunk is not None:
            on_chunk(len(chunk))
        if left is not None:
            left -= len(chunk)
    sc.close()
    return sc
