"""A root's GPU frameworks' kernels, its TensorRT and its NCCL, read from its files in the shapes of the live
frameworks, tensorrt and nccl probes (:mod:`gpudoctor.probes.frameworks`, :mod:`~gpudoctor.probes.tensorrt`,
:mod:`~gpudoctor.probes.nccl`), so the live rules judge them. Nothing in the root is imported or run: what only
an import can say (whether a TensorRT module imports, what ncclGetVersion answers) or only the live node (its
InfiniBand devices, network interfaces, /dev/shm) is left out of the facts, never guessed.
"""
from __future__ import annotations

import ast
import csv
import io
import os
import re
import stat
from typing import Dict, List, Optional, Tuple

from gpudoctor.probes import facts_frameworks as typed
from gpudoctor.probes.dists import _BINARY_SUFFIXES, normalize
from gpudoctor.probes.frameworks import JAX_DISTRIBUTIONS, _declared_archs, read_assignments, union_archs
from gpudoctor.probes.libfind import index_for

#: Whose values these are, in a rejected value's problem record.
VIA = "the root's files"
_RECORD_LIMIT = 8 << 20  # a RECORD lists every file of a wheel: jaxlib's is ~1 MB
#: A library directory and the prefix above it: /usr/lib/x86_64-linux-gnu, /usr/local/cuda/lib64, nvidia/nccl/lib.
_LIB_DIR = re.compile(r"(.*)/lib(?:32|64)?(?:/[^/]+-linux-gnu[^/]*)?")


def dist_infos(view, site_dirs) -> Dict[str, Tuple[str, str, str]]:
    """``{normalized name: (site dir, dist-info path, version)}`` of the root's distributions; the first site dir
    that has a name wins, as the first entry of sys.path does."""
    out: Dict[str, Tuple[str, str, str]] = {}
    for sp in site_dirs:
        for n in view.listdir(sp):
            if n.endswith(".dist-info"):
                name, _, version = n[: -len(".dist-info")].partition("-")
                out.setdefault(normalize(name), (sp, os.path.join(sp, n), version))
    return out


def package_archs(view, dist: Tuple[str, str, str], name: str, cache=None) -> dict:
    """The live :func:`gpudoctor.probes.frameworks._package_archs` for a root's distribution: its RECORD's
    shared libraries and cubins (read through ``view``), the largest scanned for SASS/PTX; ``path`` and
    ``libraries`` are the root's paths. ``{"error": ...}`` when it owns no CUDA code."""
    sp, info, _ = dist
    text = view.read_text(os.path.join(info, "RECORD"), _RECORD_LIMIT)
    if text is None:
        return {"error": f"{info}/RECORD cannot be read"}
    files = []
    try:
        rows = list(csv.reader(io.StringIO(text)))
    except csv.Error as exc:  # a RECORD that is no CSV (NUL bytes, a quote left open)
        return {"error": f"{info}/RECORD: {exc}"}
    for row in rows:
        base = os.path.basename(row[0]) if row else ""
        if not (base.endswith(_BINARY_SUFFIXES) or ".so." in base):
            continue
        path = os.path.normpath(os.path.join(sp, row[0]))
        st, host = view.stat(path), view.host(path)
        if st is not None and host and stat.S_ISREG(st.st_mode):
            files.append((path, host, st.st_size))
    return union_archs(name, files, cache=cache)


def _origin(problems: list) -> typed.Origin:
    return typed.Origin(None, VIA, problems)


def with_kernels(view, site_dirs, found: Dict[str, dict], cache=None) -> Dict[str, dict]:
    """``found`` (the root probe's frameworks by dist-info) with what the live frameworks probe adds: JAX's
    plugins, CUDA majors and the kernels of its first CUDA plugin with any; CuPy's distributions and CUDA
    majors; ONNX Runtime's and TensorFlow's build info (CUDA, cuDNN) and kernels (onnxruntime-gpu's libraries'
    fatbinaries, TensorFlow's declared arch list). Kernels are read only with a scan ``cache`` (as torch's).
    A rejected value is None and a problem record under the framework's ``problems``."""
    dists = dist_infos(view, site_dirs)
    where = lambda n: dists[n][1] if n in dists else None  # noqa: E731 (the dist-info that said it)
    out = dict(found)
    if any(view.isdir(os.path.join(sp, pkg)) for sp in site_dirs for pkg in ("jax", "jaxlib")):
        problems: list = []
        plugins = [n for n in JAX_DISTRIBUTIONS if n in dists]
        archs = None
        for p in plugins if cache is not None else ():
            if "plugin" in p or "pjrt" in p:
                a = package_archs(view, dists[p], p, cache)
                if "error" not in a:
                    archs = a
                    break
        raw = {"version": dists.get("jax", (None, None, None))[2], "jaxlib": dists.get("jaxlib", (None, None, None))[2],
               "plugins": {p: dists[p][2] for p in plugins}, "cuda_majors": None, "archs": archs}
        jax = typed.JaxFacts.parse(raw, _origin(problems), where).to_dict()
        out["jax"] = dict(out.get("jax") or {}, **jax, **({"problems": problems} if problems else {}))
    cupy = sorted(n for n in dists if n.startswith("cupy"))
    if cupy:
        problems = []
        c = typed.CupyFacts.parse({"distributions": {n: dists[n][2] for n in cupy}, "cuda_majors": None},
                                  _origin(problems), where).to_dict()
        out["cupy"] = dict(out.get("cupy") or {}, **c, **({"problems": problems} if problems else {}))
    for name, info_file in (("onnxruntime", ("onnxruntime", "capi", "build_and_package_info.py")),
                            ("tensorflow", ("tensorflow", "python", "platform", "build_info.py"))):
        if name in out:
            out[name] = _built(view, out[name], name, info_file, dists, cache)
    return out


def _built(view, entry: dict, name: str, info_file: Tuple[str, ...], dists, cache) -> dict:
    """ONNX Runtime or TensorFlow: the build info file's CUDA and cuDNN (read as text, never run), TensorFlow's
    is_cuda_build and declared archs, onnxruntime-gpu's kernels."""
    sp = os.path.dirname(entry.get("dist") or "")
    path = os.path.join(sp, *info_file)
    host = view.host(path) if view.isfile(path) else None
    info = read_assignments(host) if host else {}
    problems: list = []
    entry = dict(entry, path=os.path.join(sp, info_file[0]))
    cuda = info.get("cuda_version")
    entry["cuda"] = cuda if cuda in ("", None) else _origin(problems).take(typed.built_for_cuda, cuda,
                                                                          f"{info_file[-1]} cuda_version", path=path)
    entry["cudnn"] = info.get("cudnn_version")
    if name == "tensorflow":
        entry["is_cuda_build"] = info.get("is_cuda_build")
        caps = info.get("cuda_compute_capabilities")
        entry["archs"] = _declared_archs(caps) if caps else None
    elif entry.get("distribution") == "onnxruntime-gpu" and cache is not None and "onnxruntime-gpu" in dists:
        entry["archs"] = package_archs(view, dists["onnxruntime-gpu"], "onnxruntime-gpu", cache)
    if problems:
        entry["problems"] = problems
    return entry


def _install_prefix(path: str) -> Optional[str]:
    """``/usr/lib/x86_64-linux-gnu/libnccl.so.2`` -> ``/usr``; ``.../nvidia/nccl/lib/libnccl.so.2`` ->
    ``.../nvidia/nccl``: the prefix whose ``include`` holds the library's headers."""
    m = _LIB_DIR.fullmatch(os.path.dirname(path))
    return m.group(1) if m and m.group(1) else None


def _headers_beside(view, path: str, name: str) -> List[str]:
    """The ``name`` headers of the install ``path`` belongs to (``include/`` and ``include/<multiarch>/``)."""
    prefix = _install_prefix(path or "")
    if not prefix:
        return []
    inc = os.path.join(prefix, "include")
    cands = [os.path.join(inc, name)] + [os.path.join(inc, d, name) for d in view.listdir(inc) if "-linux-" in d]
    return [c for c in cands if view.isfile(c)]


def _version_from_header(view, copy: dict, name: str, parse) -> dict:
    """A copy named by its soname alone (``libnccl.so.2``, no wheel owning it) takes the full version of the
    header of its install, when that header's major is the soname's: ``version_from`` says which header."""
    version = copy.get("version") or ""
    if version.count(".") >= 2:
        return copy
    for h in _headers_beside(view, copy.get("realpath") or copy.get("path") or "", name):
        said = parse(view.read_text(h, 1 << 20) or "")
        if said and (not version or said.split(".")[0] == version.split(".")[0]):
            return dict(copy, version=said, version_from=h)
    return copy


def _nvinfer_h_version(text: str) -> Optional[str]:
    from gpudoctor.formats.tensorrt_header import parse_nvinfer_version_header

    v = parse_nvinfer_version_header(text)
    return ".".join(str(p) for p in v if p is not None) if v else None


def tensorrt_probe(ctx) -> dict:
    """The live tensorrt probe's shape from the root ``ctx.view`` names: ``{"modules": [] (whether a module imports
    needs the root's Python), "distributions": {name: version} (its tensorrt* dist-infos), "libnvinfer": [copies,
    the version from the file name, the wheel, or the install's NvInferVersion.h], "libnvinfer_loaded": {soname:
    the root loader's pick}, "trtexec": path|None}``, validated by
    :class:`gpudoctor.probes.facts_frameworks.TensorRTFacts`."""
    view, idx = ctx.view, index_for(ctx)
    dists = dist_infos(view, idx.site_dirs)
    copies = [_version_from_header(view, c.to_dict(), "NvInferVersion.h", _nvinfer_h_version) for c in idx.copies("libnvinfer")]
    trtexec = view.which("trtexec") or ("/usr/src/tensorrt/bin/trtexec" if view.isfile("/usr/src/tensorrt/bin/trtexec") else None)
    raw = {"modules": None, "distributions": {n: d[2] for n, d in dists.items() if n.startswith("tensorrt")},
           "libnvinfer": copies, "libnvinfer_loaded": None, "trtexec": trtexec}
    facts = typed.TensorRTFacts.parse(raw, [], typed.Origin(None, VIA), lambda n: dists[n][1] if n in dists else None)
    majors = sorted({(c.get("version") or "").split(".")[0] for c in facts.libnvinfer if c.get("version")})
    facts.raw["libnvinfer_loaded"] = {f"libnvinfer.so.{m}": idx.loader_pick(f"libnvinfer.so.{m}") for m in majors if m}
    return facts.to_dict()


def nccl_probe(ctx) -> dict:
    """The live nccl probe's shape from the root ``ctx.view`` names: ``{"libraries": [copies, the version from the
    file name, the wheel, or the install's nccl.h; "api": {} (ncclGetVersion needs a run)], "loader_pick": the
    root loader's libnccl.so.2, "vars": {NCCL_*: value} of the root's environment, "problems": [...]}``, validated
    by :class:`gpudoctor.probes.facts_frameworks.NcclFacts`. The node's InfiniBand devices, network interfaces
    and /dev/shm are the host's: left out."""
    from gpudoctor.formats.nccl_header import parse_nccl_header_version

    view, idx = ctx.view, index_for(ctx)
    libs = [dict(_version_from_header(view, c.to_dict(), "nccl.h", parse_nccl_header_version), api={}, api_version=None)
            for c in idx.copies("libnccl")]
    raw = {"libraries": libs, "loader_pick": idx.loader_pick("libnccl.so.2"),
           "vars": {k: v for k, v in sorted(view.env.items()) if k.startswith("NCCL_")}, "problems": []}
    return typed.NcclFacts.parse(raw, typed.Origin(None, VIA)).to_dict()



def python_preloads(view, module: str) -> Dict[str, str]:
    """``{file name: path}`` of the shared libraries a Python import has loaded before the extension ``module``
    loads: its package's ``__init__.py`` imports packages of the same site dir (``import tensorrt_lean_libs``)
    whose own ``__init__.py`` ctypes-loads every library of its directory (NVIDIA's TensorRT libs wheels:
    ``ctypes.CDLL`` over ``glob.iglob(os.path.join(CURDIR, "*.so*"))``), so the module's DT_NEEDED on them
    resolve by soname although no RPATH reaches them. Read (AST), never run; {} when nothing says so."""
    pkg = os.path.dirname(module)
    sp = os.path.dirname(pkg)
    tree = _ast(view, os.path.join(pkg, "__init__.py"))
    if tree is None:
        return {}
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module and not n.level}
    out: Dict[str, str] = {}
    for name in sorted(imported - {os.path.basename(pkg)}):
        d = os.path.join(sp, name)
        if _loads_its_own_dir(_ast(view, os.path.join(d, "__init__.py"))):
            out.update({f: os.path.join(d, f) for f in view.listdir(d) if ".so" in f and view.isfile(os.path.join(d, f))})
    return out


def _ast(view, path: str):
    text = view.read_text(path, 1 << 20)
    try:
        return ast.parse(text) if text else None
    except (SyntaxError, ValueError):
        return None


def _loads_its_own_dir(tree) -> bool:
    """A module that calls ``CDLL`` on what a glob of ``*.so*`` under its own ``__file__``'s directory lists."""
    if tree is None:
        return False
    calls = {getattr(n.func, "attr", None) or getattr(n.func, "id", None) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    consts = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    return "CDLL" in calls and bool(calls & {"glob", "iglob"}) and "__file__" in names and \
        any(c.startswith("*") and ".so" in c for c in consts)
