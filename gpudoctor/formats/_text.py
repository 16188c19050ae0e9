"""Shared helpers of the text parsers, and their robustness contract (from the former gpudoctor.parsers).

Every function here is pure: it takes text (or a small value such as an
environment variable or an int) and returns plain Python data.  Nothing here
runs a process, reads a file or touches the network.

Robustness contract
-------------------
* Text inputs may be ``str``, ``bytes`` (decoded as UTF-8 with
  ``errors="replace"``) or ``None`` (treated as empty).  Any other type is
  treated as empty input.
* Only the first :data:`MAX_TEXT` characters (1 MiB) of a text input are
  looked at (:data:`MAX_XML` for ``nvidia-smi -q -x``).
* Absent fields are ``None`` (or an empty list / dict); garbage input gives
  ``None`` / empty results.  The only exception ever raised is
  :class:`ParseError` (a ``ValueError``), and only where a docstring says so.
* Regular expressions are anchored, linear (no nested quantifiers) and are
  applied per line, so pathological input cannot cause catastrophic
  backtracking.
"""
from __future__ import annotations

import re
from typing import List, Optional

#: Characters of text input that parsers look at.
MAX_TEXT = 1 << 20

#: Lines longer than this are skipped by line-oriented parsers.
_MAX_LINE = 8192

_VERSION_RE = re.compile(r"\d+(?:\.\d+)*")          # "12.2.0", "580.159.04"

_DOTTED_RE = re.compile(r"\d+(?:\.\d+)+")           # needs at least one dot

_GNUC_GUARD_RE = re.compile(r"(?<!!)defined\s*\(\s*__GNUC__\s*\)")

_WIN_GUARD_RE = re.compile(r"(?<!!)defined\s*\(\s*(?:_WIN32|_MSC_VER)\s*\)")

class ParseError(ValueError):
    """Input is not in the expected format (only raised where documented)."""

def _text(value, limit: int = MAX_TEXT) -> str:
    """Coerce *value* to ``str`` and cap it at *limit* characters."""
    if value is None:
        return ""
    if isinstance(value, (bytes, bytearray)):
        value = bytes(value[: limit * 4]).decode("utf-8", errors="replace")
    elif not isinstance(value, str):
        return ""
    return value[:limit]

def _lines(text) -> List[str]:
    """Lines of the capped text, with over-long lines dropped."""
    return [ln for ln in _text(text).splitlines() if len(ln) <= _MAX_LINE]

def _lead_version(token: str, need_dot: bool = False) -> Optional[str]:
    """Leading dotted-number part of *token* ("14.0.0-1ubuntu1" -> "14.0.0")."""
    m = (_DOTTED_RE if need_dot else _VERSION_RE).match(token)
    return m.group(0) if m else None

def _to_int(s) -> Optional[int]:
    """``int`` of the leading digits of *s* ("16x" -> 16, "81559 MiB" -> 81559)."""
    if s is None:
        return None
    m = re.match(r"\s*(\d{1,18})", s)
    return int(m.group(1)) if m else None

def _first_nonblank(text, max_lines: int = 50) -> str:
    for line in _lines(text)[:max_lines]:
        if line.strip():
            return line.strip()
    return ""

def _nonneg_int(n) -> int:
    if isinstance(n, bool) or not isinstance(n, int):
        raise ParseError("expected a non-negative int, got %r" % (type(n).__name__,))
    if n < 0:
        raise ParseError("expected a non-negative int, got %d" % n)
    return n
