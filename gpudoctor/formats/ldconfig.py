"""ldconfig -p.

Pure: text in, plain data out; see gpudoctor.formats._text for the robustness contract."""
from __future__ import annotations

from typing import List

from gpudoctor.formats._text import _lines  # noqa: F401


def parse_ldconfig_p(text) -> List[dict]:
    """Parse ``ldconfig -p``.

    Input lines look like::

        609 libs found in cache `/etc/ld.so.cache'
        \\tlibcuda.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcuda.so.1
        \\tlibfoo.so.2 (libc6,x86-64, OS ABI: Linux 3.2.0) => /lib/libfoo.so.2

    Returns ``[{"soname": "libcuda.so.1", "arch": "libc6,x86-64",
    "extra": None | "OS ABI: Linux 3.2.0", "path": "/usr/lib/..."}]`` in input
    order (``arch`` is the part of the parenthesised flags before the first
    ", "; ``extra`` the rest, e.g. OS ABI or hwcap).  The header and
    malformed lines are skipped.  Never raises.
    """
    out: List[dict] = []
    for line in _lines(text):
        s = line.strip()
        arrow = s.find(" => ")
        if arrow <= 0:
            continue
        left, path = s[:arrow].rstrip(), s[arrow + 4:].strip()
        if not path or not left.endswith(")"):
            continue
        paren = left.find(" (")
        if paren <= 0:
            continue
        soname = left[:paren].strip()
        flags = left[paren + 2:-1]
        if not soname or " " in soname:
            continue
        arch, _, extra = flags.partition(", ")
        out.append({"soname": soname, "arch": arch.strip(),
                    "extra": extra.strip() or None, "path": path})
    return out
