"""/etc/os-release.

Pure: text in, plain data out; see gpudoctor.formats._text for the robustness contract."""
from __future__ import annotations

import re
from typing import Dict, Optional

from gpudoctor.formats._text import _lines  # noqa: F401


_OS_RELEASE_KEY_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")

def _os_release_unquote(v: str) -> str:
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'":
        inner = v[1:-1]
        if v[0] == "'":
            return inner
        out = []
        i = 0
        while i < len(inner):
            c = inner[i]
            if c == "\\" and i + 1 < len(inner) and inner[i + 1] in "\\\"$`":
                out.append(inner[i + 1])
                i += 2
                continue
            out.append(c)
            i += 1
        return "".join(out)
    return v

def parse_os_release(text) -> dict:
    """Parse ``/etc/os-release`` (os-release(5): ``KEY=value`` lines, values
    optionally in double or single quotes, ``#`` comments).

    Returns a dict of every key found (unquoted string values); the keys
    ``ID``, ``VERSION_ID``, ``PRETTY_NAME`` and ``ID_LIKE`` are always present
    (``None`` when absent).  ``ID_LIKE`` stays a space-separated string.
    Never raises.
    """
    out: Dict[str, Optional[str]] = {}
    for line in _lines(text):
        s = line.strip()
        if not s or s.startswith("#") or "=" not in s:
            continue
        key, _, val = s.partition("=")
        if not _OS_RELEASE_KEY_RE.fullmatch(key):
            continue
        out[key] = _os_release_unquote(val.strip())
    for key in ("ID", "VERSION_ID", "PRETTY_NAME", "ID_LIKE"):
        out.setdefault(key, None)
    return out
