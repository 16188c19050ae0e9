"""The NVIDIA driver's own texts: /proc/driver/nvidia/version, library sonames, CUDA version integers.

Pure: text in, plain data out; see gpudoctor.formats._text for the robustness contract."""
from __future__ import annotations

import os
from typing import Optional

from gpudoctor.formats._text import _lead_version, _lines, _nonneg_int  # noqa: F401


def parse_proc_driver_version(text) -> Optional[dict]:
    """Parse ``/proc/driver/nvidia/version``.

    Input, e.g.::

        NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (nixbld@)
        GCC version:  gcc version 15.3.0 (GCC)

    (the proprietary module says ``NVIDIA UNIX x86_64 Kernel Module  535.183.01  <date>``).

    Returns ``{"version": "580.159.04", "flavor": "open" | "proprietary",
    "arch": "x86_64" | None, "build_gcc": "15.3.0" | None}``, or ``None`` when
    there is no ``NVRM version:`` line with a version number.  Never raises.
    """
    version = flavor = arch = build_gcc = None
    for line in _lines(text):
        s = line.strip()
        if version is None and s.startswith("NVRM version:"):
            rest = s[len("NVRM version:"):]
            words = rest.split()
            # The version is the first dotted-number word after "Module"
            # (the arch word "x86_64" is not a dotted number).
            start = 0
            for i, w in enumerate(words):
                if w == "Module":
                    start = i + 1
                    break
            for w in words[start:]:
                v = _lead_version(w, need_dot=True)
                if v is not None and v == w:
                    version = v
                    break
            if version is None:
                continue
            flavor = "open" if "Open Kernel Module" in rest else "proprietary"
            if start and start + 1 < len(words) and words[start] == "for":
                arch = words[start + 1]      # "... Open Kernel Module for x86_64 ..."
            elif len(words) >= 3 and words[0] == "NVIDIA" and words[1] == "UNIX":
                if words[2] not in ("Open", "Kernel"):
                    arch = words[2]          # "NVIDIA UNIX x86_64 Kernel Module"
        elif build_gcc is None and s.startswith("GCC version:"):
            words = s.split()
            for i, w in enumerate(words[:-1]):
                if w == "version" and words[i - 1] in ("gcc", "clang"):
                    build_gcc = _lead_version(words[i + 1], need_dot=True)
                    break
    if version is None:
        return None
    return {"version": version, "flavor": flavor, "arch": arch, "build_gcc": build_gcc}

def cuda_version_from_int(n: int) -> str:
    """Format a CUDA version int (``cudaDriverGetVersion``,
    ``nvmlSystemGetCudaDriverVersion``, ``CUDA_VERSION``) as "major.minor".

    ``major = n // 1000``, ``minor = (n % 1000) // 10``: 13000 -> "13.0",
    12020 -> "12.2", 13030 -> "13.3".  Raises :class:`ParseError` for
    negative numbers and non-ints (``bool`` included).
    """
    n = _nonneg_int(n)
    return "%d.%d" % (n // 1000, (n % 1000) // 10)

def version_from_soname(path_or_name) -> Optional[str]:
    """Version suffix of a shared-library file name or path.

    ``libcudart.so.13.0.96`` -> "13.0.96", ``libnvidia-ml.so.535.247.01`` ->
    "535.247.01", ``libcudart.so.13`` -> "13", ``libcudnn.so`` -> None.
    Only the basename is looked at; the text after the last ``.so.`` must be
    dot-separated decimal numbers.  Accepts ``str``/``bytes``/``os.PathLike``;
    returns ``None`` for anything else.  Never raises.
    """
    try:
        p = os.fspath(path_or_name)
    except TypeError:
        return None
    if isinstance(p, bytes):
        p = p.decode("utf-8", errors="replace")
    p = p[:4096].strip()
    base = p.replace("\\", "/").rsplit("/", 1)[-1]
    pos = base.rfind(".so.")
    if pos < 0:
        return None
    suffix = base[pos + 4:]
    parts = suffix.split(".")
    if suffix and all(x.isdigit() and x.isascii() and len(x) <= 12 for x in parts):
        return suffix
    return None
