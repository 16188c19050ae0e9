"""Container variables: NVIDIA_REQUIRE_CUDA.

Pure: text in, plain data out; see gpudoctor.formats._text for the robustness contract."""
from __future__ import annotations

import re
from typing import Dict, List

from gpudoctor.formats._text import _text  # noqa: F401


_REQ_RE = re.compile(r"([A-Za-z_][A-Za-z0-9_]{0,63})(>=|<=|==|!=|>|<|=)(.{1,256})")

def parse_nvidia_require_cuda(value: str) -> dict:
    """Parse the NVIDIA container ``NVIDIA_REQUIRE_CUDA`` variable.

    Input: whitespace-separated requirements; each is a comma-separated AND of
    ``key<op>value`` conditions (op one of ``>= <= == != > < =``), e.g.::

        cuda>=13.0 brand=tesla,driver>=535,driver<536 brand=grid,driver>=535,driver<536

    The container toolkit requires the ``cuda`` condition(s) and treats the
    other requirements as alternatives (any one may match).

    Returns ``{"cuda": ">=13.0" | None, "constraints": [{"brand": "tesla",
    "driver": ">=535,<536"}, ...], "unparsed": [tokens that are not
    key<op>value]}``.  In a constraint, ``brand`` (an ``=`` condition) holds
    the bare value; every other key holds its ``<op><value>`` parts joined by
    ",".  A requirement made only of ``cuda`` conditions sets ``"cuda"``.
    Never raises.
    """
    text = _text(value)
    cuda_parts: List[str] = []
    constraints: List[dict] = []
    unparsed: List[str] = []
    for token in text.split():
        conds: Dict[str, List[str]] = {}
        for part in token.split(","):
            if not part:
                continue
            m = _REQ_RE.fullmatch(part)
            if not m:
                unparsed.append(part)
                continue
            key, op, val = m.group(1).lower(), m.group(2), m.group(3)
            conds.setdefault(key, []).append(val if (op == "=" and key in ("brand", "arch")) else op + val)
        if not conds:
            continue
        if set(conds) == {"cuda"}:
            cuda_parts.extend(conds["cuda"])
        else:
            constraints.append({k: ",".join(v) for k, v in conds.items()})
    return {"cuda": ",".join(cuda_parts) or None, "constraints": constraints, "unparsed": unparsed}
