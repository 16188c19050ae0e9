"""GPU frameworks, read statically (never imported: torch alone takes seconds and loads CUDA).

torch: ``torch/version.py`` (``__version__``, ``cuda``), its wheel's nvidia-* requirements, and the
SASS/PTX targets of ``libtorch_cuda.so`` read from its fatbinaries. TensorFlow:
``tensorflow/python/platform/build_info.py``. ONNX Runtime: ``capi/build_and_package_info.py``.
JAX and CuPy: the CUDA major in their distribution names (jax-cuda12-plugin, cupy-cuda13x).
"""
from __future__ import annotations

import ast
import importlib.util
import os
import re
from contextvars import ContextVar
from importlib import metadata
from pathlib import Path

from gpudoctor.probes import dists
from gpudoctor.probes import facts_frameworks as typed
from gpudoctor.process.problems import read_text

_CTX: ContextVar = ContextVar("frameworks_ctx", default=None)  # the check's context, for the distribution scan

# NAME = value, or NAME: annotation = value (torch's version.py: cuda: Optional[str] = '13.0')
_ASSIGN = re.compile(r"^([A-Za-z_]+)\s*(?::[^=\n]*)?=\s*(.+)$", re.MULTILINE)


def _module_dir(name: str):
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return list(spec.submodule_search_locations)[0]


def read_assignments(path: str, problems=None) -> dict:
    """Top-level ``NAME = literal`` assignments of a Python file, without executing it
    (a file that exists but cannot be read is appended to ``problems``)."""
    text = read_text(path, problems)
    if text is None:
        return {}
    out = {}
    for m in _ASSIGN.finditer(text):
        try:
            out[m.group(1)] = ast.literal_eval(m.group(2).strip())
        except (ValueError, SyntaxError):
            continue
    if "build_info" in out and isinstance(out["build_info"], dict):
        out.update(out["build_info"])
    return out


def _dist_version(*names):
    return dists.version(_CTX.get(), *names)


def _requires(dist_name: str) -> list:
    where = dists.path(_CTX.get(), dist_name)
    if not where:
        return []
    try:  # that one distribution's METADATA, not a search of every path
        return metadata.PathDistribution(Path(where)).requires or []
    except (OSError, ValueError):
        return []


def _torch(include_archs: bool, problems=None, cache=None) -> dict:
    d = _module_dir("torch")
    if not d:
        return None
    v = read_assignments(os.path.join(d, "version.py"), problems)
    reqs = _requires("torch")
    cudnn_req = next((r for r in reqs if r.startswith("nvidia-cudnn")), None)
    facts = {"path": d, "version": v.get("__version__"), "cuda": v.get("cuda"), "hip": v.get("hip"),
             "cudnn_requirement": cudnn_req.split(";")[0].strip() if cudnn_req else None,
             "nvidia_requirements": [r.split(";")[0].strip() for r in reqs if r.startswith("nvidia-")],
             "archs": None}
    lib = os.path.join(d, "lib", "libtorch_cuda.so")
    if include_archs and os.path.isfile(lib):
        facts["archs"] = _binary_archs(lib, cache)
    return facts


#: JAX's CUDA distributions, in the order their kernels are read (the first plugin or PJRT with CUDA code).
JAX_DISTRIBUTIONS = ("jax-cuda13-plugin", "jax-cuda12-plugin", "jax-cuda13-pjrt", "jax-cuda12-pjrt", "jaxlib")
#: Bump when what a fatbinary scan returns changes (invalidates cached scans).
SCAN_FORMAT = 1


def scan_targets(path: str, cache=None) -> dict:
    """``{"sass": [...], "ptx": [...]}`` of a CUDA binary, or ``{"error": ...}`` when it is not one.

    A pure function of the file: with a :class:`gpudoctor.process.cache.Cache`, the result is kept under the
    file's identity (real path, size, mtime) and read back verified on the next check, so a 1 GB
    ``libtorch_cuda.so`` is scanned once, not on every check. Raises OSError (unreadable file)."""
    from gpudoctor.formats import fatbin
    from gpudoctor.process.cache import file_identity

    inputs = {"format": SCAN_FORMAT, "file": file_identity(path)}
    hit = cache.get_json(inputs) if cache is not None else None
    if isinstance(hit, dict) and ("sass" in hit or "error" in hit):
        return dict(hit, cached=True)
    try:
        b = fatbin.read_cuda_binary(path)
        out = {"sass": list(b.sass), "ptx": list(b.ptx)}
    except fatbin.CudaBinaryError as exc:
        out = {"error": str(exc)}
    if cache is not None:
        cache.put_json(inputs, out)
    return out


def _binary_archs(path: str, cache=None) -> dict:
    try:
        return dict(scan_targets(path, cache), path=path)
    except OSError as exc:
        return {"path": path, "error": str(exc)}


def _package_archs(dist_name: str, min_bytes: int = 1 << 20, max_files: int = 16, cache=None) -> dict:
    """Union of SASS/PTX targets over a distribution's CUDA libraries (files of at least ``min_bytes``,
    the largest ``max_files``), read from their fatbinaries without importing the package."""
    from gpudoctor.probes.dists import package_files

    owned = package_files(dist_name)
    if owned is None:
        return {"error": f"no installed Python distribution named {dist_name!r}"}
    try:
        sized = [(p, p, os.path.getsize(p)) for p in owned]
    except OSError as exc:
        return {"error": str(exc)}
    return union_archs(dist_name, sized, min_bytes, max_files, cache)


def union_archs(dist_name: str, files, min_bytes: int = 1 << 20, max_files: int = 16, cache=None) -> dict:
    """:func:`_package_archs` over given files: ``files`` is ``[(path shown, path read, size in bytes)]`` (a
    root's file and where this machine reads it); the result names the shown paths. Raises nothing."""
    from gpudoctor.formats import fatbin

    files = sorted([f for f in files if f[2] >= min_bytes], key=lambda f: f[2], reverse=True)[:max_files]
    sass, ptx, libs = set(), set(), []
    for shown, path, _ in files:
        try:
            b = scan_targets(path, cache)
        except OSError:
            continue
        if b.get("sass") or b.get("ptx"):
            sass.update(b["sass"])
            ptx.update(b["ptx"])
            libs.append(shown)
    if not libs:
        return {"error": f"no CUDA code found in {dist_name}'s libraries"}
    return {"path": libs[0], "libraries": libs, "sass": fatbin._sorted_unique(sass), "ptx": fatbin._sorted_unique(ptx)}


def _declared_archs(items) -> dict:
    """TensorFlow's build_info list ("sm_60", "compute_80") as SASS/PTX sets."""
    items = [str(x) for x in items or ()]
    return {"sass": [x for x in items if x.startswith("sm_")], "ptx": [x for x in items if x.startswith("compute_")],
            "declared": items}


def probe(ctx) -> dict:
    """``{"torch": {...}|None, "tensorflow": {...}|None, "onnxruntime": {...}|None, "jax": {...}|None,
    "cupy": {...}|None, "problems": [...]}``; each holds version, the CUDA (and cuDNN) it was built for, and
    where known, its SASS/PTX targets. Versions go through :class:`gpudoctor.probes.facts_frameworks.FrameworksFacts`:
    an implausible one is None there and a problem record naming the file that said it."""
    from gpudoctor.process.cache import Cache

    _CTX.set(ctx)
    problems: list = []
    cache = Cache("fatbin-scan", enabled=getattr(ctx, "cache", True), env=ctx.env)
    where = lambda name: dists.path(ctx, name)  # noqa: E731 (a distribution's metadata: what answered its version)
    torch = _torch(include_archs=True, problems=problems, cache=cache)
    out = typed.FrameworksFacts(None, None, None, None, None, problems)
    if torch:
        vpy = os.path.join(torch["path"], "version.py")
        out.torch = typed.BuiltFramework.parse("torch", torch, _origin(vpy, "torch/version.py", problems),
                                            "torch/version.py __version__", "torch/version.py cuda")
    tfd = _module_dir("tensorflow")
    if tfd:
        bip = os.path.join(tfd, "python", "platform", "build_info.py")
        bi = read_assignments(bip, problems)
        dist, ver = _dist_version("tensorflow", "tensorflow-cpu", "tf-nightly")
        raw = {"path": tfd, "version": ver, "is_cuda_build": bi.get("is_cuda_build"), "cuda": bi.get("cuda_version"),
               "cudnn": bi.get("cudnn_version"),
               "archs": _declared_archs(bi.get("cuda_compute_capabilities")) if bi.get("cuda_compute_capabilities") else None}
        out.tensorflow = typed.BuiltFramework.parse("tensorflow", raw, _origin(bip, "tensorflow build_info.py", problems),
                                                 f"{dist} distribution version", "build_info.py cuda_version",
                                                 version_path=where(dist) if dist else None)
    ort = _module_dir("onnxruntime")
    if ort:
        infop = os.path.join(ort, "capi", "build_and_package_info.py")
        info = read_assignments(infop, problems)
        dist, ver = _dist_version("onnxruntime-gpu", "onnxruntime")
        raw = {"path": ort, "distribution": dist, "version": ver or info.get("__version__"),
               "cuda": info.get("cuda_version"), "cudnn": info.get("cudnn_version"),
               "archs": _package_archs(dist, cache=cache) if dist == "onnxruntime-gpu" else None}
        out.onnxruntime = typed.BuiltFramework.parse(
            "onnxruntime", raw, _origin(infop, "onnxruntime build_and_package_info.py", problems),
            f"{dist} distribution version" if ver else "build_and_package_info.py __version__",
            "build_and_package_info.py cuda_version", version_path=where(dist) if ver else None)
    if _module_dir("jax") or _module_dir("jaxlib"):
        plugins = [n for n in JAX_DISTRIBUTIONS if _dist_version(n)[1]]
        raw = {"version": _dist_version("jax")[1], "jaxlib": _dist_version("jaxlib")[1],
               "plugins": {p: _dist_version(p)[1] for p in plugins}, "cuda_majors": None,
               "archs": next((a for a in (_package_archs(p, cache=cache) for p in plugins if "plugin" in p or "pjrt" in p)
                              if "error" not in a), None)}
        out.jax = typed.JaxFacts.parse(raw, _origin(None, "the JAX distributions' metadata", problems), where)
    installed = dists.installed(ctx)
    cupy_names = [d["name"] for n, d in installed.items() if n.startswith("cupy")]
    if cupy_names:
        raw = {"distributions": {n: installed[dists.normalize(n)]["version"] for n in cupy_names}, "cuda_majors": None}
        out.cupy = typed.CupyFacts.parse(raw, _origin(None, "the CuPy distributions' metadata", problems), where)
    return out.to_dict()


def _origin(path, via: str, problems: list) -> typed.Origin:
    """Rejections land in the probe's own problem list (beside unreadable files)."""
    return typed.Origin(path, via, problems)
