"""The tail of a failed tool's own words: bounded, and with secret-looking values masked.

A failed step keeps what its tool last said (the cause is usually in the last lines of stderr) so
that the report can show it and ``gpudoctor check`` can read it with ``explain``'s knowledge
(:mod:`gpudoctor.explain.annotate`). Reports are pasted into public issues: a value of a
secret-named variable (``HF_TOKEN=...``) or a credential-shaped string is masked here, where the text
is captured, whether or not ``--redact`` is given later (the same shapes
:mod:`gpudoctor.render.redact` removes; that module sits a layer above this one).
"""
from __future__ import annotations

import re
from typing import Optional

__all__ = ["TAIL_LINES", "TAIL_BYTES", "tail", "mask"]

#: Lines and bytes (UTF-8) of a tool's output kept per failed step.
TAIL_LINES = 20
TAIL_BYTES = 2048

_SECRET_ASSIGN = re.compile(r"\b([A-Za-z0-9_]*(?:TOKEN|SECRET|PASSW(?:OR)?D|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIAL|AUTH)"
                            r"[A-Za-z0-9_]*)(\s*[=:]\s*)(\"[^\"]*\"|'[^']*'|\S+)", re.I)
_SECRET_VALUE = re.compile(
    r"\b(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|hf_[A-Za-z0-9]{20,}|(AKIA|ASIA)[A-Z0-9]{16}"
    r"|xox[abprs]-[A-Za-z0-9-]{10,}|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"
    r"|sk-[A-Za-z0-9_-]{20,})")


def mask(line: str) -> str:
    """``line`` with secret-named variables' values and credential-shaped strings replaced by ``<redacted>``."""
    line = _SECRET_ASSIGN.sub(lambda m: f"{m.group(1)}{m.group(2)}<redacted>", line)
    return _SECRET_VALUE.sub("<redacted>", line)


def tail(text: Optional[str], lines: int = TAIL_LINES, max_bytes: int = TAIL_BYTES) -> Optional[str]:
    """The last ``lines`` non-blank lines of ``text`` and at most ``max_bytes`` of them (the last ones: a
    cut line starts with ``…``), secrets masked; None when there is nothing to keep."""
    if not text:
        return None
    kept = [mask(l.rstrip()) for l in str(text).replace("\r\n", "\n").replace("\r", "\n").split("\n") if l.strip()][-lines:]
    if not kept:
        return None
    out = "\n".join(kept)
    raw = out.encode("utf-8", errors="replace")
    if len(raw) > max_bytes:
        out = "…" + raw[-(max_bytes - 3):].decode("utf-8", errors="ignore")
    return out
