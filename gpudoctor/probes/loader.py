"""Loader integrity: for every NVIDIA library gpudoctor's own children and tools load, the file the dynamic
loader picks and why (:meth:`~gpudoctor.probes.libfind.LibraryIndex.loader_trace`), every other copy the
probes load by path, and what each file really is (:func:`gpudoctor.formats.elf_check.check_file`: one
header read per file, no process started).
"""
from __future__ import annotations

import os
import re
import sys
from typing import Dict, List, Optional

from gpudoctor.probes.facts import Origin
from gpudoctor.probes.facts_system import LoaderFacts
from gpudoctor.probes.libfind import index_for

#: What the probes load, read from their code: (file-name stem, glob suffix, who loads it, the stem of the
#: library that dlopens it, whose DT_RPATH/DT_RUNPATH then apply). "worker X" is
#: ``python -m gpudoctor.process.worker X``; tests/test_loader_integrity.py fails when the code loads a
#: library this table lacks.
LOADED = (
    # cuda.bindings (driver, and the static cudart in its runtime) dlopens libcuda.so.1; stubcheck by path
    ("libcuda", "", ("worker cuda", "worker nvrtc-smoke", "worker trt-smoke", "worker multigpu-smoke",
                     "worker stubcheck"), None),
    # pynvml: CDLL("libnvidia-ml.so.1"); nvidia-smi dlopens it too
    ("libnvidia-ml", "", ("worker nvml", "nvidia-smi", "worker stubcheck"), None),
    ("libnvrtc", "", ("worker nvrtc-smoke",), None),  # cuda.pathfinder: a wheel's copy first, then dlopen
    ("libnvrtc-builtins", "", ("worker nvrtc-smoke",), "libnvrtc"),  # libnvrtc dlopens it at compile time
    # cuda.bindings' runtime links cudart statically (it dlopens only libcuda.so.1): libcudart copies are
    # loaded by path, to ask their version
    ("libcudart", "", ("worker libversions",), None),
    ("libcudnn", "*", ("worker libversions",), "libcudnn"),  # libcudnn.so.N dlopens its sub-libraries
    ("libnccl", "", ("worker libversions", "worker multigpu-smoke"), None),
    ("libnvinfer", "*", ("worker libversions", "worker trt-smoke", "worker trt-deserialize"), "libnvinfer"),
)
#: Sonames loaded whether or not a copy is found (a missing one is a fact other probes report).
ALWAYS = ("libcuda.so.1", "libnvidia-ml.so.1")
#: Stems the workers load through cuda.pathfinder, which opens an NVIDIA wheel's copy by path before any
#: dlopen by name (its documented search order): LD_LIBRARY_PATH decides only for other programs.
PATHFINDER = ("libnvrtc",)
#: ``loaded_by`` of the copy a plain dlopen by name gets where the workers load another one.
BY_NAME = "programs that dlopen it by name"
_NOT_KEPT = ("needed", "byte_order", "machine_code")  # read for the loader model; not needed in the report
_SONAME = re.compile(r"^(lib[\w.+-]*?\.so(?:\.\d+)*)$")


def probe(ctx) -> dict:
    """``{"process": {executable, elf_class, machine}, "libraries": [{soname, loaded_by, path, realpath, via,
    entry, loader?, skipped?, package?, package_version?, git_root?, file: elf_check facts}], "unresolved":
    [{soname, loaded_by, skipped, by_name}] (only files of another class or machine were found; by_name: a
    program asks for this soname itself, not for a path), "copies": [{path,
    realpath, origin, loaded_by, package?, ..., file}] (other copies the probes load by path), "preload":
    [{path, entry, via, file}], "problems"?: [...]}``; the process's ELF class and machine validated
    (:class:`~gpudoctor.probes.facts_system.LoaderFacts`; "problems" only when one was rejected)."""
    idx = index_for(ctx)
    picks: List[dict] = []
    unresolved: List[dict] = []
    copies: Dict[str, dict] = {}
    picked: Dict[str, str] = {}  # soname -> the picked file (the loader of what it dlopens)
    first: Dict[str, str] = {}  # "libX.so.MAJOR" -> its first copy found
    for stem, more, loaded_by, parent in LOADED:
        found = idx.copies(stem + more)
        for c in found:
            copies.setdefault(c.realpath, dict(c.to_dict(), loaded_by=list(loaded_by)))
            m = re.match(r"(lib[\w+-]*?\.so\.\d+)", os.path.basename(c.path))
            if m:
                first.setdefault(m.group(1), c.path)
        for soname in _sonames(idx, stem, found):
            major = soname.split(".so.")[1].split(".")[0]
            # The parent's pick loads it; a parent no plain dlopen finds is loaded by path (cuda.pathfinder):
            # its first copy of that major stands in, as NVIDIA's libraries carry RPATH $ORIGIN.
            loader = (picked.get(f"{parent}.so.{major}") or first.get(f"{parent}.so.{major}")) \
                if parent and not soname.startswith(parent + ".so") else None
            trace, skipped = idx.loader_search(soname, loader)
            if loader and trace and trace["via"] in ("DT_RPATH", "DT_RUNPATH"):
                trace["loader"] = loader
            wheel = _wheel_copy(idx, found, soname) if stem in PATHFINDER else None
            if wheel and (trace is None or idx.view.realpath(wheel) != idx.view.realpath(trace["path"])):
                # the workers get the wheel's copy (and its RPATH decides what it dlopens); the by-name pick is
                # what every other program gets
                picks.append(_describe(idx, {"path": wheel, "via": "cuda.pathfinder", "entry": os.path.dirname(wheel),
                                             "soname": soname, "loaded_by": list(loaded_by)}))
                picked[soname] = wheel
                if trace:
                    picks.append(_describe(idx, dict(trace, soname=soname, loaded_by=[BY_NAME], skipped=skipped)))
                continue
            if trace is None:
                if skipped:
                    unresolved.append({"soname": soname, "loaded_by": list(loaded_by), "skipped": skipped,
                                       "by_name": soname in ALWAYS})
                continue
            picked[soname] = trace["path"]
            picks.append(_describe(idx, dict(trace, soname=soname, loaded_by=list(loaded_by), skipped=skipped)))
    picked_files = {idx.view.realpath(p["path"]) for p in picks}
    raw = {
        "process": dict(idx.process_elf(), executable=sys.executable if idx.view.live else None),
        "libraries": picks,
        "unresolved": unresolved,
        "copies": [_describe(idx, c) for real, c in copies.items() if real not in picked_files],
        "preload": [_describe(idx, {"path": p, "entry": e, "via": v}) for p, e, v in idx.preload],
        "ld_library_path": list(idx.ld_library_path),
        "ld_preload": ctx.env.get("LD_PRELOAD"),
    }
    return LoaderFacts.parse(raw, Origin(sys.executable, "the ELF header of this interpreter")).to_dict()


def _sonames(idx, stem: str, found) -> List[str]:
    """The names programs ask for: each readable copy's DT_SONAME, else the file's own name (a damaged file
    has no SONAME; it is found under the name it was put there as). A damaged file's name that no intact
    copy of its family and major carries is asked for by nothing (libnvrtc asks for
    libnvrtc-builtins.so.13.0, never .so.13): that file stays a copy, not a pick."""
    out = [s for s in ALWAYS if s.startswith(stem + ".so")]
    named = []
    for c in found:
        soname = idx.file_info(c.realpath).get("soname")
        own = isinstance(soname, str) and soname.startswith(os.path.basename(c.path).split(".so")[0])
        named.append((soname if own else os.path.basename(c.path), own))
    intact = {n for n, own in named if own}
    for name, own in named:
        if not own and name not in out and name not in intact and \
                any(_major(n) == _major(name) for n in intact):
            continue
        if _SONAME.match(name) and ".so." in name and name not in out:
            out.append(name)
    return sorted(out, key=lambda n: (not n.startswith(stem + ".so"), n))  # a family's main library first


def _major(name: str) -> str:
    """"libnvrtc-builtins.so.13" of "libnvrtc-builtins.so.13.0"."""
    m = re.match(r"(lib[\w+-]*?\.so(?:\.\d+)?)", name)
    return m.group(1) if m else name


def _wheel_copy(idx, found, soname: str) -> Optional[str]:
    """The copy of ``soname`` in an NVIDIA wheel (origin "pip"), which cuda.pathfinder opens first, damaged
    or not (it opens the file by path and never looks further)."""
    for c in found:
        if c.origin == "pip" and soname in (os.path.basename(c.path), idx.file_info(c.realpath).get("soname")):
            return c.path
    return None


def _describe(idx, entry: dict) -> dict:
    """``entry`` with the file's realpath, owning pip package, Git work tree (for an LFS pointer) and elf_check facts."""
    path = entry["path"]
    real = idx.view.realpath(path) or path
    info = idx.file_info(real)
    out = dict(entry, realpath=real, file={k: v for k, v in info.items() if k not in _NOT_KEPT})
    owned = idx.pip_owned.get(real)
    if owned:
        out.update(package=owned[0], package_version=owned[1])
    if not entry.get("skipped"):
        out.pop("skipped", None)
    if info.get("kind") == "git_lfs_pointer":
        out["git_root"] = _git_root(real, idx.view)
    return out


def _git_root(path: str, view) -> Optional[str]:
    """The work tree holding ``path`` (the nearest parent with a ``.git``), where ``git lfs pull`` fetches it."""
    d = os.path.dirname(path)
    while True:
        if view.exists(os.path.join(d, ".git")):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent
