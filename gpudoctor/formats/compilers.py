"""Host compilers: gcc/g++ and clang --version.

Pure: text in, plain data out; see gpudoctor.formats._text for the robustness contract."""
from __future__ import annotations

from typing import Optional

from gpudoctor.formats._text import _VERSION_RE, _first_nonblank, _lead_version, _lines  # noqa: F401


def parse_gcc_version(text) -> Optional[str]:
    """Parse ``gcc --version`` / ``g++ --version`` or ``gcc -dumpfullversion``.

    Input: the first line is ``NAME (PKGVERSION) VERSION [DATE] [(...)]``, e.g.
    ``gcc (Debian 12.2.0-14+deb12u1) 12.2.0`` or
    ``gcc (GCC) 8.5.0 20210514 (Red Hat 8.5.0-18)``; ``-dumpfullversion``
    prints just ``12.2.0`` (``-dumpversion`` may print ``12``).

    Returns the version string (first dotted number outside parentheses),
    or ``None`` (also for clang's ``--version`` output).  Never raises.
    """
    line = _first_nonblank(text)
    if not line or "clang" in line.lower():
        return None
    if _VERSION_RE.fullmatch(line):
        return line
    depth = 0
    for tok in line.split():
        opened = tok.count("(")
        closed = tok.count(")")
        if depth == 0 and opened == 0:
            v = _lead_version(tok, need_dot=True)
            if v is not None and v == tok:
                return v
        depth = max(0, depth + opened - closed)
    return None

def parse_clang_version(text) -> Optional[str]:
    """Parse ``clang --version`` / ``clang++ --version``.

    Input: first lines such as ``clang version 17.0.6``,
    ``Ubuntu clang version 14.0.0-1ubuntu1.1`` or
    ``Apple clang version 15.0.0 (clang-1500.3.9.4)``.
    Returns the dotted version after ``clang version`` ("14.0.0"), or
    ``None``.  Never raises.
    """
    for line in _lines(text)[:20]:
        pos = line.find("clang version ")
        if pos < 0:
            continue
        words = line[pos + len("clang version "):].split()
        if words:
            return _lead_version(words[0], need_dot=True)
        return None
    return None
