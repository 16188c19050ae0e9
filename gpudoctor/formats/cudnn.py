"""cuDNN: cudnn_version.h and the version integers of cudnnGetVersion.

Pure: text in, plain data out; see gpudoctor.formats._text for the robustness contract."""
from __future__ import annotations

import re
from typing import Dict, Optional, Tuple

from gpudoctor.formats._text import ParseError, _lines, _nonneg_int  # noqa: F401


_CUDNN_DEFINE_RE = re.compile(r"\s*#\s*define\s+CUDNN_(MAJOR|MINOR|PATCHLEVEL)\s+\(?(\d{1,6})\)?\s*(?:/[/*].*)?")

def parse_cudnn_version_header(text) -> Optional[Tuple[int, int, int]]:
    """Parse ``cudnn_version.h`` (cuDNN 8/9) or ``cudnn.h`` (cuDNN <= 7).

    Input: header text containing ``#define CUDNN_MAJOR 9``,
    ``#define CUDNN_MINOR 28``, ``#define CUDNN_PATCHLEVEL 0`` (first
    definition of each wins).  Returns ``(major, minor, patch)`` or ``None``
    if any of the three is missing.  Never raises.
    """
    found: Dict[str, int] = {}
    for line in _lines(text):
        if "CUDNN_" not in line:
            continue
        m = _CUDNN_DEFINE_RE.fullmatch(line)
        if m and m.group(1) not in found:
            found[m.group(1)] = int(m.group(2))
            if len(found) == 3:
                break
    if len(found) != 3:
        return None
    return (found["MAJOR"], found["MINOR"], found["PATCHLEVEL"])

def cudnn_version_from_int(n: int) -> str:
    """Format a ``cudnnGetVersion()`` / ``CUDNN_VERSION`` int as "M.m.p".

    Rule: cuDNN >= 9 encodes ``major*10000 + minor*100 + patch``
    (91900 -> "9.19.0"); cuDNN <= 8 encoded ``major*1000 + minor*100 + patch``
    (8907 -> "8.9.7", 7605 -> "7.6.5").  So values >= 90000 use the new rule,
    values < 10000 the old one.  Values 10000..89999 were never produced by
    any cuDNN and raise :class:`ParseError`, as do negative numbers and
    non-ints (``bool`` included).
    """
    n = _nonneg_int(n)
    if n >= 90000:
        return "%d.%d.%d" % (n // 10000, (n % 10000) // 100, n % 100)
    if n < 10000:
        return "%d.%d.%d" % (n // 1000, (n % 1000) // 100, n % 100)
    raise ParseError("%d is not a cuDNN version number" % n)
