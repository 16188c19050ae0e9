"""CUDA toolkits of a Windows system as the CUDA installer leaves them, ``CUDA_PATH`` / ``CUDA_PATH_Vx_y``, and
which toolkit ``PATH`` puts first.

The installer's default location is ``C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v<major>.<minor>``
with ``bin\\nvcc.exe``, ``bin\\*.dll`` and ``include\\`` (CUDA Installation Guide for Microsoft Windows,
https://docs.nvidia.com/cuda/cuda-installation-guide-microsoft-windows/index.html); it sets ``CUDA_PATH`` and a
``CUDA_PATH_V<major>_<minor>`` per toolkit to the toolkit's root. A toolkit's own release is read from its
files: ``version.json``'s ``{"cuda": {"name": "CUDA SDK", "version": "12.6.20241114"}}`` (the version as
written; CUDA 11.x and 12.x releases write a date as the third part), else ``include\\cuda.h``'s
``CUDA_VERSION``, else the release ``nvcc.exe``'s version resource states ("NVIDIA CUDA 13.0.88 Cuda compiler
driver").
"""
from __future__ import annotations

import json
import ntpath
import re
from typing import Dict, List, Optional

from gpudoctor.process.problems import record
from gpudoctor.windows.pe_read import optional_text

__all__ = ["program_files", "toolkits_dir", "find_toolkits", "describe_toolkit", "cuda_path_vars",
           "path_toolkits", "nvcc_on_path", "toolkit_of"]

_FOLDER_RE = re.compile(r"v(\d{1,2})\.(\d{1,2})", re.I)
_CUDA_PATH_VAR_RE = re.compile(r"CUDA_PATH(?:_V(\d{1,2})_(\d{1,2}))?", re.I)
_MAJOR_MINOR_RE = re.compile(r"(\d{1,2})\.(\d{1,2})(?:\.|$)")


def program_files(view) -> str:
    """The 64-bit Program Files directory: ``ProgramW6432`` or ``ProgramFiles`` of the judged environment,
    else ``C:\\Program Files``."""
    return view.env.get("ProgramW6432") or view.env.get("ProgramFiles") or "C:\\Program Files"


def toolkits_dir(view) -> str:
    return ntpath.join(program_files(view), "NVIDIA GPU Computing Toolkit", "CUDA")


def _key(path: str) -> str:
    return ntpath.normcase(ntpath.normpath(path))


def _major_minor(version: Optional[str]) -> Optional[str]:
    m = _MAJOR_MINOR_RE.match(version or "")
    return f"{int(m.group(1))}.{int(m.group(2))}" if m else None


def describe_toolkit(view, root: str, problems: List[dict], pe) -> dict:
    """One toolkit directory: ``{"root", "folder_version", "version_json", "cuda_h_version",
    "nvcc_version", "version", "version_from", "has_nvcc", "nvcc", "dlls", "found_by"}``.

    * ``folder_version``: "12.1" from a ``v12.1`` folder name, else None;
    * ``version_json``: ``version.json``'s ``cuda.version`` as written ("12.1.1", "11.8.20220929"), or None;
      ``cuda_h_version``: ``include\\cuda.h``'s CUDA_VERSION as "12.1", or None; ``nvcc_version``: the release
      ``bin\\nvcc.exe`` states ("13.0.88"), or None;
    * ``version`` / ``version_from``: major.minor from the first of version.json, cuda.h, nvcc.exe that gave
      one ("version.json" | "cuda.h" | "nvcc.exe"), else None / None (the folder name is not used here:
      rules compare it with ``version``);
    * ``has_nvcc`` / ``nvcc``: whether ``bin\\nvcc.exe`` is a file, and its path (None when not);
    * ``dlls``: :meth:`gpudoctor.windows.pe_read.PeReader.facts` of every ``bin\\*.dll``, by name;
    * ``found_by``: filled by :func:`find_toolkits` ("Program Files", "CUDA_PATH", "CUDA_PATH_V12_1").
    A version.json that is not JSON of that shape, and unreadable files, are problem records."""
    folder = _FOLDER_RE.fullmatch(ntpath.basename(ntpath.normpath(root)))
    out = {"root": root, "folder_version": f"{int(folder.group(1))}.{int(folder.group(2))}" if folder else None,
           "version_json": None, "cuda_h_version": None, "nvcc_version": None, "version": None,
           "version_from": None, "has_nvcc": False, "nvcc": None, "dlls": [], "found_by": []}
    vj_path = ntpath.join(root, "version.json")
    text = optional_text(view, vj_path, problems)
    if text is not None:
        try:
            value = json.loads(text)["cuda"]["version"]
            if not isinstance(value, str):
                raise TypeError("cuda.version is not a string")
            out["version_json"] = value
        except (ValueError, KeyError, TypeError) as exc:
            problems.append(record(vj_path, "unparsable", f"{vj_path} has no cuda.version ({exc})"))
    from gpudoctor.formats.tensorrt_header import parse_cuda_h_version

    cuda_h = ntpath.join(root, "include", "cuda.h")
    text = optional_text(view, cuda_h, problems)
    if text is not None:
        out["cuda_h_version"] = parse_cuda_h_version(text)
        if out["cuda_h_version"] is None:
            problems.append(record(cuda_h, "unparsable", f"{cuda_h} defines no numeric CUDA_VERSION"))
    bin_dir = ntpath.join(root, "bin")
    nvcc = ntpath.join(bin_dir, "nvcc.exe")
    if view.isfile(nvcc):
        out.update(has_nvcc=True, nvcc=nvcc, nvcc_version=pe.facts(nvcc)["product_version"])
    out["dlls"] = [pe.facts(ntpath.join(bin_dir, n)) for n in view.listdir(bin_dir) if n.lower().endswith(".dll")]
    for source, value in (("version.json", out["version_json"]), ("cuda.h", out["cuda_h_version"]),
                          ("nvcc.exe", out["nvcc_version"])):
        if _major_minor(value):
            out["version"], out["version_from"] = _major_minor(value), source
            break
    return out


def _env_items(view):
    """The judged environment's CUDA_PATH and CUDA_PATH_Vx_y variables (names without case, as Windows)."""
    for name, value in sorted(view.env.items()):
        m = _CUDA_PATH_VAR_RE.fullmatch(name)
        if m and value:
            yield name.upper(), value, (f"{int(m.group(1))}.{int(m.group(2))}" if m.group(1) else None)


def find_toolkits(view, problems: List[dict], pe) -> List[dict]:
    """Every toolkit: the ``v*`` folders under :func:`toolkits_dir`, then every existing directory a
    CUDA_PATH variable names that is not one of them; each :func:`describe_toolkit`, with ``found_by``."""
    found: Dict[str, dict] = {}
    for root in view.glob(ntpath.join(toolkits_dir(view), "v*")):
        if view.isdir(root):
            found[_key(root)] = describe_toolkit(view, root, problems, pe)
            found[_key(root)]["found_by"].append("Program Files")
    for name, value, _named in _env_items(view):
        root = value.rstrip("\\/")
        if _key(root) not in found and view.isdir(root):
            found[_key(root)] = describe_toolkit(view, root, problems, pe)
        if _key(root) in found:
            found[_key(root)]["found_by"].append(name)
    return list(found.values())


def toolkit_of(toolkits: List[dict], path: Optional[str]) -> Optional[dict]:
    """The toolkit whose root is ``path`` or holds it (case-insensitive), or None."""
    if not path:
        return None
    key = _key(path)
    for tk in toolkits:
        root = _key(tk["root"])
        if key == root or key.startswith(root + "\\"):
            return tk
    return None


def cuda_path_vars(view, toolkits: List[dict]) -> Dict[str, dict]:
    """``{VAR: {"value", "named_version", "exists", "toolkit", "toolkit_version"}}`` for CUDA_PATH and every
    CUDA_PATH_Vx_y set in the judged environment (names upper-cased): ``named_version`` "12.1" from the
    variable's name (None for CUDA_PATH), ``exists`` whether the value is a directory, ``toolkit`` the root
    of the toolkit it names (None: it points at no toolkit found), ``toolkit_version`` that toolkit's
    ``version`` (its own files') or None."""
    out = {}
    for name, value, named in _env_items(view):
        tk = toolkit_of(toolkits, value.rstrip("\\/"))
        if tk is not None and _key(tk["root"]) != _key(value.rstrip("\\/")):
            tk = None  # a directory inside a toolkit is not a toolkit root
        out[name] = {"value": value, "named_version": named, "exists": view.isdir(value),
                     "toolkit": tk["root"] if tk else None, "toolkit_version": tk["version"] if tk else None}
    return out


def path_toolkits(view, toolkits: List[dict]) -> List[dict]:
    """The PATH entries inside a toolkit (its ``bin``, ``libnvvp``, ...), in PATH order:
    ``[{"index", "entry", "toolkit", "folder_version", "version"}]`` (``index`` 0-based in PATH)."""
    out = []
    for index, entry in enumerate(view.path_list("PATH")):
        tk = toolkit_of(toolkits, entry.rstrip("\\/"))
        if tk is not None:
            out.append({"index": index, "entry": entry, "toolkit": tk["root"],
                        "folder_version": tk["folder_version"], "version": tk["version"]})
    return out


def nvcc_on_path(view, toolkits: List[dict]) -> Optional[dict]:
    """What a shell runs for ``nvcc`` (:meth:`SystemView.which`: PATH with PATHEXT; cmd.exe's search of the
    current directory first is not modelled): ``{"path", "toolkit", "version"}`` (the toolkit holding it and
    its ``version``, None when it is in none found), or None when no nvcc is on PATH."""
    path = view.which("nvcc")
    if path is None:
        return None
    real = view.realpath(path)  # the file name as on disk, not as PATHEXT spells the extension
    path = ntpath.join(ntpath.dirname(path), ntpath.basename(real)) if real else path
    tk = toolkit_of(toolkits, path)
    return {"path": path, "toolkit": tk["root"] if tk else None, "version": tk["version"] if tk else None}
