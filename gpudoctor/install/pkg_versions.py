"""Version order of OS packages, as the package managers order them.

Debian: ``[epoch:]upstream[-revision]`` compared as dpkg does (deb-version(7): ``~`` sorts before everything,
even the end of the string), by python-debian's :class:`debian.debian_support.Version`.
RPM: ``[epoch:]version-release`` compared as rpm's ``rpmvercmp`` does (rpm's lib/rpmvercmp.c: alphanumeric
segments, numbers beat letters, ``~`` sorts before the end and ``^`` after it); no well-kept pure-Python
library does this, so it is written here after rpm's C code and tested with rpm's own cases.
"""
from __future__ import annotations

import functools
import re
from typing import Iterable, List, Optional, Tuple

__all__ = ["deb_compare", "rpm_compare", "sort_versions", "satisfies"]


def deb_compare(a: str, b: str) -> int:
    """-1, 0 or 1 as dpkg orders Debian versions ``a`` and ``b``. Raises ValueError for a malformed version."""
    from debian.debian_support import Version

    va, vb = Version(a), Version(b)
    return (va > vb) - (va < vb)


def _rpm_segments_cmp(one: str, two: str) -> int:
    """rpm's rpmvercmp() on one version or release field."""
    if one == two:
        return 0
    i = j = 0
    while i < len(one) or j < len(two):
        while i < len(one) and not one[i].isalnum() and one[i] not in "~^":
            i += 1
        while j < len(two) and not two[j].isalnum() and two[j] not in "~^":
            j += 1
        a, b = one[i:i + 1], two[j:j + 1]
        if a == "~" or b == "~":  # a tilde sorts before everything, the end of the string included
            if a != "~":
                return 1
            if b != "~":
                return -1
            i, j = i + 1, j + 1
            continue
        if a == "^" or b == "^":  # a caret sorts after the end of the string, before anything else
            if not a:
                return -1
            if not b:
                return 1
            if a != "^":
                return 1
            if b != "^":
                return -1
            i, j = i + 1, j + 1
            continue
        if not (a and b):
            break
        pattern = r"[0-9]*" if a.isdigit() else r"[A-Za-z]*"
        seg1 = re.match(pattern, one[i:]).group()
        seg2 = re.match(pattern, two[j:]).group()
        i, j = i + len(seg1), j + len(seg2)
        if not seg2:  # different kinds of segment: a number is newer than letters
            return 1 if a.isdigit() else -1
        if a.isdigit():
            seg1, seg2 = seg1.lstrip("0"), seg2.lstrip("0")
            if len(seg1) != len(seg2):
                return 1 if len(seg1) > len(seg2) else -1
        if seg1 != seg2:
            return 1 if seg1 > seg2 else -1
    rest1, rest2 = i < len(one), j < len(two)
    return 0 if rest1 == rest2 else (1 if rest1 else -1)


def _rpm_evr(v: str) -> Tuple[int, str, str]:
    epoch, _, rest = v.rpartition(":") if ":" in v else ("0", "", v)
    version, _, release = rest.partition("-") if "-" in rest else (rest, "", "")
    if not epoch.isdigit() or not version:
        raise ValueError(f"not an RPM version: {v!r}")
    return int(epoch), version, release


def rpm_compare(a: str, b: str) -> int:
    """-1, 0 or 1 as rpm orders ``[epoch:]version[-release]`` strings. Raises ValueError for a malformed one."""
    ea, va, ra = _rpm_evr(a)
    eb, vb, rb = _rpm_evr(b)
    if ea != eb:
        return 1 if ea > eb else -1
    return _rpm_segments_cmp(va, vb) or _rpm_segments_cmp(ra, rb)


_COMPARE = {"apt": deb_compare, "dnf": rpm_compare}


def sort_versions(kind: str, versions: Iterable[str]) -> Tuple[List[str], List[str]]:
    """(valid versions oldest first, without duplicates; malformed ones) for ``kind`` "apt" or "dnf"."""
    cmp = _COMPARE[kind]
    good, bad = [], []
    for v in set(versions):
        try:
            cmp(v, v)
            good.append(v)
        except ValueError:
            bad.append(v)
    return sorted(good, key=functools.cmp_to_key(cmp)), sorted(bad)


def satisfies(kind: str, versions: Iterable[str], spec: Optional[str]) -> List[str]:
    """The served ``versions`` a requirement accepts: ``spec`` None (any), ``=V`` (apt's ``name=V`` pin: that
    version exactly, as the package manager compares), or ``>=V`` / ``<<V`` style dpkg relations."""
    if spec is None:
        return list(versions)
    m = re.fullmatch(r"\s*(<<|<=|>=|>>|=|<|>)\s*(\S+)\s*", spec)
    if m is None:
        raise ValueError(f"not a version requirement: {spec!r}")
    op, want = m.groups()
    cmp = _COMPARE[kind]
    tests = {"=": lambda c: c == 0, ">=": lambda c: c >= 0, "<=": lambda c: c <= 0, ">>": lambda c: c > 0,
             "<<": lambda c: c < 0, ">": lambda c: c > 0, "<": lambda c: c < 0}
    return [v for v in versions if tests[op](cmp(v, want))]
