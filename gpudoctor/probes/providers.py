"""Which distribution provides a Python module or a shared library that failed to import or load, from the
packages' own metadata: the installed distributions' file lists (``importlib.metadata``: RECORD and
top_level.txt) first, then, for one not installed here, the table generated from the real wheels' RECORD
files (:mod:`gpudoctor.probes.providers_table`, written by ``scripts/gen_module_providers.py``).

Facts only: called for a failure (``ModuleNotFoundError: No module named 'cuda.bindings'``, ``libnvrtc.so.13:
cannot open shared object file``), never on a healthy run.
"""
from __future__ import annotations

import importlib.util
import os
import re
from typing import Dict, List, Optional

__all__ = ["provider", "missing_in", "pip_line"]

_NO_MODULE = re.compile(r"No module named '([A-Za-z_][\w.]*)'")
_NO_LIBRARY = re.compile(r"(lib[\w.+-]*\.so[\w.]*): cannot open shared object file")


def missing_in(text: Optional[str]) -> Optional[Dict[str, str]]:
    """``{"module": name}`` or ``{"library": soname}`` that an import error in ``text`` names, else None."""
    m = _NO_MODULE.search(text or "")
    if m:
        return {"module": m.group(1)}
    m = _NO_LIBRARY.search(text or "")
    return {"library": m.group(1)} if m else None


def _installed_owners(module: Optional[str], library: Optional[str]) -> Dict[str, dict]:
    """``{dist: {"version", "file"}}`` of installed distributions whose RECORD holds the module's package or
    module file (``cuda/bindings/__init__.py``) or the library file."""
    from importlib import metadata

    want: List[str] = []
    if module:
        p = module.replace(".", "/")
        want = [p + "/__init__.py", p + ".py", p + "."]
    out: Dict[str, dict] = {}
    tops = metadata.packages_distributions() if module else {}
    candidates = tops.get(module.split(".")[0], []) if module else None
    for dist in (metadata.distributions() if candidates is None else
                 [d for n in dict.fromkeys(candidates) for d in [_dist(n)] if d is not None]):
        for f in dist.files or ():
            s = str(f).replace("\\", "/")
            hit = (library and os.path.basename(s) == library) or \
                  (module and (s in want[:2] or (s.startswith(want[2]) and s.endswith(".so") and s.count("/") == want[2].count("/"))))
            if hit:
                name = dist.metadata["Name"]
                out[name] = {"version": dist.version, "file": str(dist.locate_file(f))}
                break
    return out


def _dist(name: str):
    from importlib import metadata

    try:
        return metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return None


def _newest_cuda_first(dists: List[str]) -> List[str]:
    """nvidia-cudnn-cu13 before nvidia-cudnn-cu12: the pip line names the newest CUDA major's wheel."""
    def major(d: str) -> int:
        m = re.search(r"-cu(\d+)", d)
        return int(m.group(1)) if m else 0
    return sorted(dists, key=lambda d: (-major(d), d))


def _table(module: Optional[str], library: Optional[str]) -> List[str]:
    return _newest_cuda_first(_table_hits(module, library))


def _table_hits(module: Optional[str], library: Optional[str]) -> List[str]:
    from gpudoctor.probes.providers_table import LIBRARIES, MODULES

    if library:
        return list(LIBRARIES.get(library, ()))
    parts = module.split(".")
    for n in range(len(parts), 0, -1):  # cuda.bindings.driver -> cuda.bindings -> cuda
        hit = MODULES.get(".".join(parts[:n]))
        if hit:
            return list(hit)
    if len(parts) == 1:  # a namespace's root ('cuda'): the distributions of its packages
        return sorted({d for k, v in MODULES.items() if k.startswith(module + ".") for d in v})
    return []


def _shadowed(module: str) -> Optional[dict]:
    """Where the module's top-level name is owned by installed distributions but resolves to a path none of
    them installed (a stray ``cuda/`` directory, a PYTHONPATH entry): ``{"distributions", "installed",
    "resolves_to"}``, else None."""
    from importlib import metadata

    top = module.split(".")[0]
    owners = [d for n in dict.fromkeys(metadata.packages_distributions().get(top, [])) for d in [_dist(n)] if d is not None]
    if not owners:
        return None
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    where = (spec.origin if spec and spec.origin not in (None, "namespace") else
             list(spec.submodule_search_locations)[0] if spec and spec.submodule_search_locations else None)
    if where is None:
        return None
    homes = {os.path.realpath(str(d.locate_file(top))) for d in owners}
    real = os.path.realpath(where)
    if any(real == h or real.startswith(h + os.sep) for h in homes):
        return None
    return {"distributions": sorted(d.metadata["Name"] for d in owners), "resolves_to": where,
            "installed": {d.metadata["Name"]: {"version": d.version, "file": str(d.locate_file(top))} for d in owners}}


def pip_line(dists: List[str]) -> str:
    return "python -m pip install " + " ".join(f"'{d}'" if re.search(r"[^\w.-]", d) else d for d in dists[:1])


def provider(module: Optional[str] = None, library: Optional[str] = None) -> Optional[dict]:
    """``{"module"|"library", "distributions": [...], "installed": {dist: {"version", "file"}}, "source"}``, or
    None when no installed distribution nor the table knows it. A module whose top-level name installed
    distributions own but that resolves elsewhere on this interpreter's path (a stray ``cuda/`` directory, a
    PYTHONPATH entry) comes back with ``"shadowed": True, "resolves_to": path``: that, not a missing
    package, is why it fails to import."""
    shadow = _shadowed(module) if module else None
    if shadow:
        return dict(shadow, module=module, source="installed RECORD / top_level", shadowed=True)
    installed = _installed_owners(module, library)
    if installed:
        out = {"distributions": sorted(installed), "installed": installed, "source": "installed RECORD"}
    else:
        dists = _table(module, library)
        if not dists:
            return None
        out = {"distributions": dists, "installed": {}, "source": "wheel RECORD table"}
    out["module" if module else "library"] = module or library
    return out
