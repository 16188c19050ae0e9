"""What a Linux root on disk holds for CUDA, read from its files alone (nothing in it is executed): every copy
of each CUDA library in the places its dynamic loader and its Pythons search (the same
:class:`~gpudoctor.probes.libfind.LibraryIndex` as the live check, reading through the root's view), the file
the loader picks for each soname, the CUDA toolkits under ``/usr/local/cuda*`` with their own version files,
and the GPU frameworks' distributions with the CUDA they were built for. Facts only: rules judge them.
"""
from __future__ import annotations

import os
import re
from typing import Dict, List, Optional

from gpudoctor.probes.libfind import index_for
from gpudoctor.probes.root_frameworks import python_preloads, with_kernels
from gpudoctor.probes.root_toolkit import _toolkits, compilers_facts, toolkit_facts

#: Library stems whose copies are listed (the CUDA runtime and the libraries built on it, the driver's).
STEMS = ("libcudart", "libcublas", "libcublasLt", "libcufft", "libcurand", "libcusolver", "libcusparse", "libnvrtc",
         "libnvJitLink", "libcudnn", "libnccl", "libnvinfer", "libcuda", "libnvidia-ml")
#: Sonames whose loader pick is traced (what a program asking by name gets).
SONAMES = ("libcuda.so.1", "libnvidia-ml.so.1")
_CUDA_LOCAL = re.compile(r"\+cu(\d{2,3})$")  # PyTorch's wheel local version: 2.3.0+cu121
#: Libraries whose soname major is the CUDA major they belong to (libcudart.so.13, libcublas.so.13): the math
#: libraries version on their own (CUDA 13 ships libcufft.so.12, libcurand.so.10, libcusparse.so.12).
SONAME_IS_CUDA_MAJOR = ("libcudart", "libcublas", "libcublasLt", "libnvrtc", "libnvJitLink")
_CU_DIR = re.compile(r"/cu(\d{2})/")  # nvidia/cu13/lib: the CUDA 13 wheels' shared directory


def probe(ctx) -> dict:
    """``{"os_release": {ID, ID_LIKE, VERSION_ID, PRETTY_NAME}, "libraries": {stem: [LibCopy dict + "soname_major"]},
    "picked": {soname: loader trace | None}, "toolkits": [{"home", "version" (version.json's "cuda"), "nvcc":
    bool}], "site_dirs": [...], "frameworks": {name: {"version", "cuda" (torch: from its +cuXYZ build), "dist"}},
    "problems": [...]}`` of the root ``ctx.view`` names."""
    view = ctx.view
    idx = index_for(ctx)
    toolkits = _toolkits(view)
    libraries = {}
    for stem in STEMS:
        found = [_with_cuda_major(stem, _with_toolkit_version(dict(c.to_dict(), soname_major=_soname_major(c.path)),
                                                              toolkits), toolkits)
                 for c in idx.copies(stem)]
        if found:
            libraries[stem] = found
    return {
        "os_release": _os_release(view),
        "libraries": libraries,
        "picked": {s: idx.loader_trace(s) for s in SONAMES},
        "toolkits": toolkits,
        "site_dirs": list(idx.site_dirs),
        "frameworks": _frameworks(view, idx.site_dirs, _scan_cache(ctx)),
        "dependencies": _closure(view, idx, libraries),
        "tensorrt_distributions": _dists(view, idx.site_dirs, "tensorrt"),
        "toolkit": toolkit_facts(view, toolkits),
        "compilers": compilers_facts(view),
        "problems": list(idx.problems),
    }


def cuda_facts(root_facts: dict) -> dict:
    """The live cuda probe's shape (``{"libcudart": [copies], "runtime_version", "api": {"bindings_version"}}``)
    from a root's facts, so the live rules that judge CUDA runtimes against a driver judge the root's too.
    cuda-bindings X.Y.Z's runtime module links the CUDA X.Y runtime statically (its release notes: "cuda-bindings
    13.0.3 ... statically link against the CUDA Runtime library from CUDA Toolkit 13.0.2",
    https://nvidia.github.io/cuda-python/cuda-bindings/latest/release/13.0.3-notes.html)."""
    out = {"libcudart": list((root_facts.get("libraries") or {}).get("libcudart") or [])}
    bindings = ((root_facts.get("frameworks") or {}).get("cuda-bindings") or {}).get("version") or ""
    parts = bindings.split(".")
    if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit():
        out["runtime_version"] = f"{parts[0]}.{parts[1]}"
        out["api"] = {"bindings_version": bindings, "runtime_version_from": "the cuda-bindings version"}
    return out


def frameworks_facts(root_facts: dict) -> dict:
    """The live frameworks probe's shape for what a root's files say (``{"torch": {"version", "cuda", "archs"}}``),
    so the live rules judge them (the arch coverage of ``--target-gpu`` among them)."""
    return {name: {k: f.get(k) for k in FRAMEWORK_KEYS if k in f or k in ALWAYS}
            for name, f in (root_facts.get("frameworks") or {}).items() if name != "cuda-bindings"}


#: The live frameworks probe's keys a root's files give (JAX's and CuPy's CUDA majors from their wheels' names).
FRAMEWORK_KEYS = ("version", "cuda", "hip", "cudnn", "is_cuda_build", "jaxlib", "plugins", "distributions", "cuda_majors",
                  "archs", "path", "distribution")
ALWAYS = ("version", "cuda", "hip", "archs", "path", "distribution")


def _scan_cache(ctx):
    """The fatbinary-scan cache of this machine's user (never the root's): keyed on each file's identity."""
    from gpudoctor.process.cache import Cache

    return Cache("fatbin-scan", enabled=True)


def _with_toolkit_version(copy: dict, toolkits: List[dict]) -> dict:
    """A copy named by its soname alone (libcudart.so.13) inside a toolkit takes that toolkit's version (its
    own version.json or CUDART_VERSION), as the live check asks the library itself (which a root cannot)."""
    if "." in (copy.get("version") or "") or not copy.get("realpath"):
        return copy
    for tk in toolkits:
        home = (tk.get("realpath") or tk.get("home") or "").rstrip("/") + "/"
        if tk.get("version") and copy["realpath"].startswith(home):
            return dict(copy, version=tk["version"], version_from=f"the toolkit in {tk['home']}")
    return copy


def _with_cuda_major(stem: str, copy: dict, toolkits: List[dict]) -> dict:
    """``cuda_major`` / ``cuda_major_from``: the CUDA major a copy belongs to, from the wheel that owns it
    (nvidia-cublas-cu12), the CUDA wheels' ``cuNN`` directory, the toolkit it sits in, or (for the libraries
    whose soname tracks CUDA) its soname; None when nothing says."""
    pkg = copy.get("package") or ""
    tail = pkg.rsplit("-cu", 1)[1] if "-cu" in pkg else ""
    m = _CU_DIR.search(copy.get("realpath") or "") or _CU_DIR.search(copy.get("path") or "")
    tk = next((t for t in toolkits if t.get("version") and (copy.get("realpath") or "").startswith(
        (t.get("realpath") or t.get("home") or "").rstrip("/") + "/")), None)
    if tail.isdigit():
        major, why = tail, f"its wheel {pkg}"
    elif m:
        major, why = m.group(1), f"its directory cu{m.group(1)}"
    elif tk:
        major, why = tk["version"].split(".")[0], f"the CUDA {tk['version']} toolkit it sits in"
    elif stem in SONAME_IS_CUDA_MAJOR and (copy.get("soname_major") or "").isdigit():
        major, why = copy["soname_major"], "its soname"
    else:
        major, why = None, None
    return dict(copy, cuda_major=major, cuda_major_from=why)


#: Python extension modules of NVIDIA packages whose libraries a program loads through them.
EXTENSION_GLOBS = ("tensorrt*/*.so", "tensorrt*/*.so.*", "tensorrt*/*/*.so", "cuda/bindings/*.so")
#: Most objects whose DT_NEEDED are followed (each costs one header read).
MAX_OBJECTS = 400


def _closure(view, idx, libraries: Dict[str, List[dict]]) -> dict:
    """``{"objects": N, "unresolved": [{"object", "needed", "skipped"}]}``: each DT_NEEDED of every CUDA library
    found and of the NVIDIA packages' Python extension modules, looked up as the root's ld.so would (the
    object's RPATH/RUNPATH with $ORIGIN, LD_LIBRARY_PATH, the root's ld.so.cache, the default dirs, and for an
    extension module the libraries its package's import loads first), and the ones it would not find."""
    objects: List[str] = []
    for copies in libraries.values():
        objects += [c["realpath"] for c in copies if c.get("realpath")]
    modules: List[str] = []
    for sp in idx.site_dirs:
        for pattern in EXTENSION_GLOBS:
            modules += view.glob(os.path.join(sp, pattern))
    seen, unresolved = set(), []
    for obj in objects + modules:
        if obj in seen or len(seen) >= MAX_OBJECTS:
            continue
        seen.add(obj)
        info = idx.file_info(obj)
        preloaded = python_preloads(view, obj) if obj in modules else {}  # what importing its package loaded
        for needed in info.get("needed") or []:
            trace, skipped = idx.loader_search(needed, loader=obj)
            if trace is None and needed not in preloaded:
                unresolved.append({"object": obj, "needed": needed, "skipped": skipped})
    return {"objects": len(seen), "unresolved": unresolved}


def _dists(view, site_dirs, prefix: str) -> Dict[str, str]:
    """{distribution name (dashes): version} of the dist-infos whose name starts with ``prefix``."""
    out = {}
    for sp in site_dirs:
        for n in view.listdir(sp):
            if n.startswith(prefix) and n.endswith(".dist-info"):
                name, _, version = n[: -len(".dist-info")].partition("-")
                out[name.replace("_", "-")] = version
    return out


def _soname_major(path: str) -> Optional[str]:
    m = re.search(r"\.so\.(\d+)", os.path.basename(path))
    return m.group(1) if m else None


def _os_release(view) -> Dict[str, str]:
    text = view.read_text("/etc/os-release", 64 << 10) or view.read_text("/usr/lib/os-release", 64 << 10) or ""
    out = {}
    for line in text.splitlines():
        k, sep, v = line.partition("=")
        if sep and k in ("ID", "ID_LIKE", "VERSION_ID", "PRETTY_NAME"):
            out[k] = v.strip().strip('"')
    return out


def _torch_archs(view, torch_dir: str, cache) -> Optional[dict]:
    """SASS/PTX targets of the root's ``torch/lib/libtorch_cuda.so`` (the live probe's fatbinary scan, on the
    root's file), or None when the build has none."""
    from gpudoctor.probes.frameworks import scan_targets

    lib = os.path.join(torch_dir, "lib", "libtorch_cuda.so")
    host = view.host(lib) if view.isfile(lib) else None
    if not host:
        return None
    try:
        return dict(scan_targets(host, cache), path=lib)
    except OSError as exc:
        return {"path": lib, "error": str(exc)}


def _frameworks(view, site_dirs, cache=None) -> Dict[str, dict]:
    """GPU frameworks by their dist-info directory names (name-version.dist-info): no import, nothing run."""
    names = {"torch": "torch", "tensorflow": "tensorflow", "onnxruntime_gpu": "onnxruntime", "onnxruntime": "onnxruntime",
             "jax": "jax", "cupy": "cupy", "cuda_bindings": "cuda-bindings"}
    out: Dict[str, dict] = {}
    for sp in site_dirs:
        for n in view.listdir(sp):
            if not n.endswith(".dist-info"):
                continue
            dist, _, version = n[: -len(".dist-info")].partition("-")
            key = dist.lower()
            if key.startswith("cupy_cuda"):
                key = "cupy"
            if key not in names or (names[key] in out and key != "onnxruntime_gpu"):  # the GPU package wins, as live
                continue
            entry = {"version": version, "dist": os.path.join(sp, n), "distribution": dist.replace("_", "-").lower()}
            m = _CUDA_LOCAL.search(version)
            if names[key] == "torch" and m:
                digits = m.group(1)
                entry["cuda"] = f"{digits[:-1]}.{digits[-1]}"
            if names[key] == "torch":  # torch/version.py says what it was built with (cuda = '13.0')
                text = view.read_text(os.path.join(sp, "torch", "version.py"), 64 << 10) or ""
                said = re.search(r"^cuda\s*(?::[^=]*)?=\s*['\"](\d+\.\d+)['\"]", text, re.M)
                hip = re.search(r"^hip\s*(?::[^=]*)?=\s*['\"]([^'\"]+)['\"]", text, re.M)
                if hip:
                    entry["hip"] = hip.group(1)
                full = re.search(r"^__version__\s*(?::[^=]*)?=\s*['\"]([^'\"]+)['\"]", text, re.M)
                if said and "cuda" not in entry:
                    entry["cuda"], entry["cuda_from"] = said.group(1), "torch/version.py"
                if full:
                    entry["version"] = full.group(1)
                entry["path"] = os.path.join(sp, "torch")
                if cache is not None:
                    entry["archs"] = _torch_archs(view, entry["path"], cache)
            out[names[key]] = entry
    return with_kernels(view, site_dirs, out, cache)
