"""cuDNN and TensorRT DLLs on a Windows system: where each copy is, which version it is, and which CUDA it was
built for, as their Windows packages leave them.

* cuDNN 9's graphical installer puts the DLLs per CUDA release under
  ``C:\\Program Files\\NVIDIA\\CUDNN\\v9.x\\bin\\<cuda major.minor>\\[x64\\]``, headers under
  ``include\\<cuda major.minor>``; the zip archives are per CUDA major
  (``cudnn-windows-x86_64-9.x.y.z_cuda12-archive.zip``: ``bin\\``, ``include\\``, ``lib\\``), commonly copied into
  a CUDA toolkit's folders (https://docs.nvidia.com/deeplearning/cudnn/installation/windows.html). cuDNN 9
  loads ``cublasLt*.dll`` and ``nvrtc*.dll`` with ``LoadLibraryA()`` at run time
  (https://docs.nvidia.com/deeplearning/cudnn/latest/installation/build-run-cudnn.html), so those are in no
  import table: ``from_imports`` below can be empty for a real cuDNN 9.
* cuDNN 8's zips were per CUDA major too, and from cuDNN 8.3 on Windows needs zlib's ``zlibwapi.dll`` on the
  DLL search path ("Installing Zlib", cuDNN 8.x installation guide,
  https://docs.nvidia.com/deeplearning/cudnn/archives/cudnn-893/pdf/cuDNN-Installation-Guide.pdf); where the
  standard search order finds it is reported (import tables are not relied on for it).
* TensorRT's Windows zip unpacks to a ``TensorRT-10.x.x.x`` folder wherever the user chooses, whose ``bin``
  goes on PATH (https://docs.nvidia.com/deeplearning/tensorrt/10.16.1/installing-tensorrt/install-zip.html;
  older zips had the DLLs in ``lib``, which is looked at too), with ``include\\NvInferVersion.h``; pip's
  ``tensorrt-cuNN-libs`` wheels put the DLLs in ``site-packages\\tensorrt_libs`` (``tensorrt_lean_libs``,
  ``tensorrt_dispatch_libs`` for the lean and dispatch runtimes).

Which CUDA a copy was built for is read three ways, all kept: the ``bin\\<major.minor>`` folder it sits in
(cuDNN 9's installer layout), the CUDA majors of the CUDA libraries its DLLs import (``cublasLt64_12.dll`` ->
"12"), and, for a cuDNN copy no installer folder names, what its DLLs themselves say
(:mod:`gpudoctor.windows.pe_kernels`): the CUDA libraries they name for LoadLibrary and the PTX ISA of their
kernels. Real cuDNN 8 and 9 DLLs import no CUDA library and not zlibwapi.dll (read from the win_amd64 wheels'
import tables): they hand those names to LoadLibrary at run time (cudnn_adv64_9.dll: ``cublasLt64_12.dll``).
"""
from __future__ import annotations

import ntpath
import re
from typing import Dict, List, Optional, Tuple

from gpudoctor.windows import dll_search
from gpudoctor.windows.pe_read import optional_text
from gpudoctor.windows.toolkits import program_files, toolkit_of

__all__ = ["cudnn_copies", "tensorrt_copies"]

_CUDA_DIR_RE = re.compile(r"(\d{1,2})\.(\d{1,2})")


def _key(path: str) -> str:
    return ntpath.normcase(ntpath.normpath(path))


def _candidate_dirs(view, toolkits, pythons, fixed: List[Tuple[str, str]],
                    wheel_globs: Tuple[str, ...]) -> List[Tuple[str, str]]:
    """``[(directory, how it was found)]``: each toolkit's ``bin``, the given fixed places, every PATH entry
    (``"PATH entry <0-based index>"``) and each Python install's ``site-packages\\<wheel glob>``."""
    out = [(ntpath.join(tk["root"], "bin"), f"toolkit {tk['root']}") for tk in toolkits]
    out += fixed
    out += [(d, f"PATH entry {i}") for i, d in enumerate(view.path_list("PATH"))]
    for py in pythons:
        for sp in py["site_packages"]:
            out += [(d, f"python {py['root']}") for pattern in wheel_globs
                    for d in view.glob(ntpath.join(sp, pattern)) if view.isdir(d)]
    return out


def _group(view, candidates, pattern: str) -> Dict[str, dict]:
    """``{dir key: {"dir", "found_via": [...], "files": [names]}}`` for candidate dirs holding ``pattern``."""
    groups: Dict[str, dict] = {}
    for directory, why in candidates:
        files = [ntpath.basename(p) for p in view.glob(ntpath.join(directory, pattern)) if view.isfile(p)]
        if not files:
            continue
        g = groups.setdefault(_key(directory), {"dir": directory, "found_via": [], "files": files})
        if why not in g["found_via"]:
            g["found_via"].append(why)
    return groups


def _cuda_from_path(directory: str) -> Optional[str]:
    """"12.9" when ``directory`` is ``...\\bin\\12.9`` or ``...\\bin\\12.9\\x64`` (cuDNN 9's installer layout)."""
    parts = ntpath.normpath(directory).split("\\")
    for i in range(len(parts) - 1):
        if parts[i].lower() == "bin" and _CUDA_DIR_RE.fullmatch(parts[i + 1]):
            m = _CUDA_DIR_RE.fullmatch(parts[i + 1])
            return f"{int(m.group(1))}.{int(m.group(2))}"
    return None


def _headers_near(directory: str, names: Tuple[str, ...]) -> List[str]:
    """The headers "next to" a DLL directory: ``<root>\\include\\NAME`` for ``<root>\\bin`` or ``<root>\\lib``,
    and ``<root>\\include\\<cuda>\\NAME`` for ``<root>\\bin\\<cuda>[\\x64]``; a pip wheel's ``..\\include``."""
    parts = ntpath.normpath(directory).split("\\")
    low = [p.lower() for p in parts]
    out = []
    if "bin" in low or "lib" in low:
        i = max(j for j, p in enumerate(low) if p in ("bin", "lib"))
        root = "\\".join(parts[:i])
        cuda = _cuda_from_path(directory)
        for name in names:
            if cuda:
                out.append(ntpath.join(root, "include", cuda, name))
            out.append(ntpath.join(root, "include", name))
    else:
        out += [ntpath.join(ntpath.dirname(ntpath.normpath(directory)), "include", n) for n in names]
    return out


def _common(group, toolkits, pe) -> dict:
    dlls = [pe.facts(ntpath.join(group["dir"], n)) for n in group["files"]]
    majors = sorted({d["major_from_name"] for d in dlls if d["major_from_name"]}, key=int)
    imported = sorted({m for d in dlls for m in pe.cuda_majors_imported(d)}, key=int)
    tk = toolkit_of(toolkits, group["dir"])
    return {"dir": group["dir"], "found_via": group["found_via"], "dlls": dlls,
            "majors_from_names": majors, "in_toolkit": tk["root"] if tk else None,
            "in_toolkit_version": tk["version"] if tk else None,
            "built_for_cuda": {"from_path": _cuda_from_path(group["dir"]), "from_imports": imported}}


def _kernel_isas(view, dlls: List[dict], problems: List[dict]) -> List[dict]:
    """``[{"dll": system path, "ptx_isa": ["8.8"]}]`` for the read DLLs whose fat binaries hold PTX."""
    from gpudoctor.formats.fatbin import CudaBinaryError
    from gpudoctor.formats.pe import PeError
    from gpudoctor.process.problems import record
    from gpudoctor.windows.pe_kernels import ptx_isas

    out = []
    for d in dlls:
        host = view.host(d["path"]) if d.get("read") else None
        if host is None:
            continue
        try:
            isas = ptx_isas(host)
        except (PeError, CudaBinaryError) as exc:
            problems.append(record(d["path"], "unparsable", str(exc).replace(host, d["path"])))
            continue
        if isas:
            out.append({"dll": d["path"], "ptx_isa": isas})
    return out


def _load_names(view, dlls: List[dict], problems: List[dict], pe) -> List[dict]:
    """``[{"dll", "names", "cuda_majors"}]`` for the first read DLL, smallest ``.rdata`` first, whose ``.rdata``
    names a CUDA library with a major; [] when none does."""
    from gpudoctor.formats.pe import PeError
    from gpudoctor.process.problems import record
    from gpudoctor.windows.pe_kernels import dll_names_in_rdata, rdata_size

    sized = []
    for d in dlls:
        host = view.host(d["path"]) if d.get("read") else None
        try:
            sized += [(rdata_size(host), d["path"], host)] if host else []
        except PeError as exc:
            problems.append(record(d["path"], "unparsable", str(exc).replace(host, d["path"])))
    for _size, path, host in sorted(sized):
        try:
            names = dll_names_in_rdata(host)
        except PeError as exc:
            problems.append(record(path, "unparsable", str(exc).replace(host, path)))
            continue
        majors = pe.cuda_majors_imported({"imports": names})
        if majors:
            return [{"dll": path, "names": names, "cuda_majors": majors}]
    return []


def cudnn_copies(view, toolkits: List[dict], pythons: List[dict], problems: List[dict], pe) -> List[dict]:
    """Every directory holding ``cudnn*.dll``: the toolkits' ``bin``, cuDNN's installer folders
    (``<Program Files>\\NVIDIA\\CUDNN\\v*\\bin``, ``bin\\*`` and ``bin\\*\\x64``), PATH entries, and pip's
    ``site-packages\\nvidia\\cudnn\\bin`` of each Python install. Each::

        {"dir", "found_via": ["toolkit C:\\...\\v12.1", "PATH entry 3", "cuDNN installer", "python C:\\..."],
         "dlls": [PeReader.facts], "majors_from_names": ["9"],
         "in_toolkit": toolkit root | None, "in_toolkit_version": "12.1" | None,
         "built_for_cuda": {"from_path": "12.9" | None, "from_imports": ["12"],
                            "from_kernels": [{"dll": path, "ptx_isa": ["8.8"]}],
                            "from_load_names": [{"dll": path, "names": ["cublasLt64_12.dll"], "cuda_majors": ["12"]}]},
         "header": {"path", "version": "9.1.0" | None} | None,
         "zlibwapi": None | {"needed": "cuDNN 8 on Windows (installation guide)", "found": dll_search.find_dll}}

    ``from_kernels``: where ``from_path`` is None, each read DLL whose ``.nv_fatb`` fat binaries hold PTX, with
    its PTX ISA versions (:func:`gpudoctor.windows.pe_kernels.ptx_isas`; the rules map them to CUDA releases
    with the matrix), else []; ``from_load_names``: where ``from_path`` is None, the first read DLL (smallest
    ``.rdata`` first: a whole cuDNN 9 holds ~130 MB of it) whose ``.rdata`` names a CUDA library with a major
    (:func:`gpudoctor.windows.pe_kernels.dll_names_in_rdata`), with those names and majors, else []. A DLL
    whose fat binary or sections are damaged is a problem record (``unparsable``).
    ``header``: the first ``cudnn_version.h`` (else ``cudnn.h``) next to it (:func:`_headers_near`), parsed
    with :func:`gpudoctor.formats.cudnn.parse_cudnn_version_header`; ``version`` None when it has no
    CUDNN_MAJOR/MINOR/PATCHLEVEL (a problem record too). ``zlibwapi``: for a copy whose DLL names say major
    8, where ``zlibwapi.dll`` is found by the standard search order of a program in that directory (its
    ``shadowed`` copies included), else None."""
    from gpudoctor.formats.cudnn import parse_cudnn_version_header

    installer = ntpath.join(program_files(view), "NVIDIA", "CUDNN")
    fixed = [(d, "cuDNN installer") for pattern in ("v*\\bin", "v*\\bin\\*", "v*\\bin\\*\\x64")
             for d in view.glob(ntpath.join(installer, pattern)) if view.isdir(d)]
    groups = _group(view, _candidate_dirs(view, toolkits, pythons, fixed, ("nvidia\\cudnn\\bin",)), "cudnn*.dll")
    out = []
    for group in groups.values():
        copy = _common(group, toolkits, pe)
        unnamed = not copy["built_for_cuda"]["from_path"]
        copy["built_for_cuda"]["from_kernels"] = _kernel_isas(view, copy["dlls"], problems) if unnamed else []
        copy["built_for_cuda"]["from_load_names"] = _load_names(view, copy["dlls"], problems, pe) if unnamed else []
        copy["header"] = _version_header(view, group["dir"], ("cudnn_version.h", "cudnn.h"), parse_cudnn_version_header,
                                         "has no CUDNN_MAJOR, CUDNN_MINOR and CUDNN_PATCHLEVEL", problems)
        copy["zlibwapi"] = None
        if "8" in copy["majors_from_names"]:
            order = dll_search.search_order(view, group["dir"], python_extension=False)
            copy["zlibwapi"] = {"needed": "cuDNN 8 on Windows (installation guide)",
                                "found": dll_search.find_dll(view, "zlibwapi.dll", order)}
        out.append(copy)
    return out


def _version_header(view, directory: str, names, parse, lacks: str, problems: List[dict]) -> Optional[dict]:
    """``{"path", "version"}`` of the first readable header of ``names`` next to ``directory`` (``version``:
    ``parse``'s parts joined with dots, None when it found none, with an "unparsable" problem saying what the
    header ``lacks``), or None when there is none."""
    from gpudoctor.process.problems import record

    for h in _headers_near(directory, names):
        text = optional_text(view, h, problems)
        if text is None:
            continue
        parsed = parse(text)
        if parsed is None:
            problems.append(record(h, "unparsable", f"{h} {lacks}"))
        return {"path": h, "version": ".".join(str(p) for p in parsed if p is not None) if parsed else None}
    return None


def tensorrt_copies(view, toolkits: List[dict], pythons: List[dict], problems: List[dict], pe) -> List[dict]:
    """Every directory holding ``nvinfer*.dll``: the toolkits' ``bin``, TensorRT zips unpacked as
    ``C:\\TensorRT-*`` or ``<Program Files>\\NVIDIA\\TensorRT*`` (their ``bin`` and ``lib``; ``found_via``
    "TensorRT folder"), PATH entries, and pip's ``site-packages\\tensorrt*_libs``. Each has the keys of
    :func:`cudnn_copies` but ``zlibwapi``, with ``header``: the first ``NvInferVersion.h`` next to it,
    ``version`` "10.14.1.48" (or "8.6.1" without a build number) from
    :func:`gpudoctor.formats.tensorrt_header.parse_nvinfer_version_header`."""
    from gpudoctor.formats.tensorrt_header import parse_nvinfer_version_header

    bases = ["C:\\TensorRT-*", ntpath.join(program_files(view), "NVIDIA", "TensorRT*")]
    fixed = [(d, "TensorRT folder") for base in bases for sub in ("bin", "lib")
             for d in view.glob(ntpath.join(base, sub)) if view.isdir(d)]
    groups = _group(view, _candidate_dirs(view, toolkits, pythons, fixed, ("tensorrt*_libs",)), "nvinfer*.dll")
    out = []
    for group in groups.values():
        copy = _common(group, toolkits, pe)
        copy["header"] = _version_header(view, group["dir"], ("NvInferVersion.h",), parse_nvinfer_version_header,
                                         "has no numeric NV_TENSORRT_MAJOR/MINOR/PATCH", problems)
        out.append(copy)
    return out
