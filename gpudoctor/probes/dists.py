"""Installed Python distributions, from their ``*.dist-info`` / ``*.egg-info`` directory names.

importlib.metadata answers the same question by parsing every METADATA file (an e-mail parser per
distribution: a fifth of a second on a machine with PyTorch, JAX and CuPy), and searches sys.path
again for each name asked. Probes only need names and versions, which the directory names carry
(``torch-2.11.0+cu130.dist-info``, PEP 376/PEP 427), so they are read once per check.
"""
from __future__ import annotations

import os
import re
import sys
from typing import Dict, List, Optional

_DIR = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._]*?)-(?P<version>[^-]+?)(?:-py\d[\d.]*)?(?:-[^-]+)?\.(?:dist|egg)-info$")


def normalize(name: str) -> str:
    """PEP 503: lower case, runs of ``-_.`` become ``-``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def scan(paths=None) -> Dict[str, dict]:
    """``{normalized name: {"name", "version", "path"}}`` over ``paths`` (default sys.path); the first
    copy on the path wins, as for imports."""
    out: Dict[str, dict] = {}
    for d in paths if paths is not None else sys.path:
        if not d or not os.path.isdir(d):
            continue
        try:
            entries = sorted(os.listdir(d))
        except OSError:
            continue
        for e in entries:
            m = _DIR.match(e)
            if m:
                out.setdefault(normalize(m.group("name")),
                               {"name": m.group("name"), "version": m.group("version"), "path": os.path.join(d, e)})
    return out


def installed(ctx) -> Dict[str, dict]:
    """:func:`scan`, once per check (``ctx.memo``)."""
    return ctx.memo("distributions", scan) if ctx is not None else scan()


def version(ctx, *names: str):
    """``(name, version)`` of the first of ``names`` that is installed, else ``(None, None)``."""
    dists = installed(ctx)
    for n in names:
        d = dists.get(normalize(n))
        if d:
            return n, d["version"]
    return None, None


def path(ctx, name: str) -> Optional[str]:
    d = installed(ctx).get(normalize(name))
    return d["path"] if d else None


_BINARY_SUFFIXES = (".so", ".dll", ".pyd", ".cubin", ".fatbin", ".fatbin.c")


def package_files(name: str) -> Optional[List[str]]:
    """The CUDA-capable files (shared libraries, cubins, fatbins) an installed distribution owns,
    sorted; None when no distribution of that name is installed.

    Read from the distribution's RECORD (``importlib.metadata``): the package is never imported.
    """
    from importlib import metadata

    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return None
    out = []
    for f in dist.files or ():
        base = os.path.basename(str(f))
        if base.endswith(_BINARY_SUFFIXES) or ".so." in base:
            path = str(dist.locate_file(f))
            if os.path.isfile(path):
                out.append(path)
    return sorted(out)
