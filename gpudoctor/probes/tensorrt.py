"""TensorRT: Python modules (version read statically, import tried in a child process),
libnvinfer copies, wheels, and trtexec."""
from __future__ import annotations

import importlib.util
import os
import re
import shutil

from gpudoctor.probes import facts_frameworks as typed
from gpudoctor.probes.libfind import index_for
from gpudoctor.process.subproc import run

MODULES = ("tensorrt", "tensorrt_bindings", "tensorrt_lean", "tensorrt_lean_bindings", "tensorrt_dispatch",
           "tensorrt_dispatch_bindings")
#: What each kind of TensorRT runtime can do (NVIDIA's lean and dispatch runtimes cannot build engines).
RUNTIME_KINDS = {
    "tensorrt": ("full", "builds and runs engines"),
    "tensorrt_bindings": ("full", "builds and runs engines"),
    "tensorrt_lean": ("lean", "runs version-compatible plans built by the same or an older release; never builds"),
    "tensorrt_lean_bindings": ("lean", "runs version-compatible plans built by the same or an older release; never builds"),
    "tensorrt_dispatch": ("dispatch", "runs only plans that embed their lean runtime; never builds"),
    "tensorrt_dispatch_bindings": ("dispatch", "runs only plans that embed their lean runtime; never builds"),
}
_VERSION = re.compile(r"""^__version__\s*=\s*["']([^"']+)["']""", re.MULTILINE)
_IMPORT = "import importlib, sys; m = importlib.import_module(sys.argv[1]); print(getattr(m, '__version__', '?'))"


def _static_version(init_path: str):
    try:
        with open(init_path, encoding="utf-8", errors="replace") as fh:
            m = _VERSION.search(fh.read(1 << 20))
    except OSError:
        return None
    return m.group(1) if m else None


def _distributions(ctx=None) -> dict:
    """``{normalized name: version}`` of the installed ``tensorrt*`` distributions."""
    from gpudoctor.probes import dists

    return {n: d["version"] for n, d in dists.installed(ctx).items() if n.startswith("tensorrt")}


def probe(ctx) -> dict:
    """``{"modules": [{name, path, version, import_ok, import_error}], "distributions": {name: version},
    "libnvinfer": [copies], "libnvinfer_loaded": {soname: path}, "trtexec": path|None}``, through
    :class:`gpudoctor.probes.facts_frameworks.TensorRTFacts`: an implausible version is None there and a
    problem record (``"problems"``, only then) naming the file or module that said it."""
    from gpudoctor.probes import dists

    origin = typed.Origin(None, "the tensorrt probe")
    modules = []
    for name in MODULES:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        if spec is None or not spec.origin:
            continue
        kind, can = RUNTIME_KINDS.get(name, ("full", ""))
        entry = {"name": name, "path": os.path.dirname(spec.origin), "version": _static_version(spec.origin),
                 "runtime": kind, "can": can}
        call, said_by = f"{name}/__init__.py __version__", spec.origin
        res = run([ctx.python, "-c", _IMPORT, name], timeout=ctx.timeout, env=ctx.env)
        entry["import_ok"] = res.ok
        printed = res.stdout.strip().splitlines()[-1] if res.ok and res.stdout.strip() else ""
        if entry["version"] is None and printed not in ("", "?"):
            entry["version"] = printed  # set at import time (not a literal in __init__.py)
            call, said_by = f"import {name}; {name}.__version__", entry["path"]
        lines = [l for l in res.stderr.strip().splitlines() if l.strip()]
        entry["import_error"] = None if res.ok else (res.error or (lines[-1] if lines else f"exit {res.returncode}"))
        modules.append(typed.TensorRTModule.parse(entry, origin, call, said_by))
    idx = index_for(ctx)
    copies = idx.copies("libnvinfer")
    trtexec = shutil.which("trtexec", path=ctx.env.get("PATH", "")) or (
        "/usr/src/tensorrt/bin/trtexec" if os.path.isfile("/usr/src/tensorrt/bin/trtexec") else None)
    facts = typed.TensorRTFacts.parse(
        {"modules": None, "distributions": _distributions(ctx), "libnvinfer": [c.to_dict() for c in copies],
         "libnvinfer_loaded": None, "trtexec": trtexec}, modules, origin, lambda n: dists.path(ctx, n))
    majors = sorted({(c.get("version") or "").split(".")[0] for c in facts.libnvinfer if c.get("version")})
    facts.raw["libnvinfer_loaded"] = {f"libnvinfer.so.{m}": idx.loader_pick(f"libnvinfer.so.{m}") for m in majors if m}
    return facts.to_dict()
