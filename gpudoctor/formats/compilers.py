"""Host compilers: gcc/g++ and clang --version.

Pure: text in, plain data out; see gpudoctor.formats._text for the robustness contract."""
from __future__ import annotations

import re
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


_GCC_STRINGS = re.compile(rb"\x00(\d{1,2}\.\d{1,3}\.\d{1,3})\x00+(\([^()\x00]{1,120}\) )\x00")
_VERSION_STRING = re.compile(rb"(?<=\x00)(\d{1,2}\.\d{1,3}\.\d{1,3})(?=\x00)")
_PKG_STRING = re.compile(rb"(?<=\x00)\(([^()\x00]{1,120})\) (?=\x00)")


def gcc_version_in_binary(data: bytes) -> Optional[dict]:
    """What ``gcc --version`` would print, read from the gcc (or g++) driver binary itself: GCC's
    ``version_string`` ("12.2.0") and ``pkgversion_string`` ("(Debian 12.2.0-14+deb12u1) "), constants of
    gcc/version.c printed as ``gcc (Debian 12.2.0-14+deb12u1) 12.2.0``. Found as the two strings side by side,
    else as the one NUL-terminated version string that the one package-version string contains (the linker
    may place them apart).

    Returns ``{"version": "12.2.0", "pkgversion": "Debian 12.2.0-14+deb12u1"}``, or None when no single pair
    is there (a binary that is not a gcc driver, or one built another way). Never raises."""
    data = data or b""
    found = {(m.group(1).decode(), m.group(2).decode("utf-8", "replace")[1:-2]) for m in _GCC_STRINGS.finditer(data)}
    if len(found) == 1:
        version, pkg = found.pop()
        return {"version": version, "pkgversion": pkg}
    if found:
        return None
    pkgs = {m.group(1).decode("utf-8", "replace") for m in _PKG_STRING.finditer(data)}
    versions = {m.group(1).decode() for m in _VERSION_STRING.finditer(data)}
    pairs = {(v, p) for v in versions for p in pkgs if re.search(rf"(?<![\d.]){re.escape(v)}(?![\d])", p)}
    if len(pairs) != 1:
        return None
    version, pkg = pairs.pop()
    return {"version": version, "pkgversion": pkg}
