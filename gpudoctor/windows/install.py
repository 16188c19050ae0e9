"""Facts about the CUDA stack of a Windows system, exactly as Windows would find it, from its files.

:func:`windows_facts` composes the toolkits (:mod:`.toolkits`), the driver's DLLs (below), cuDNN and TensorRT
copies (:mod:`.libraries`) and Python installs (:mod:`.python_installs`). Nothing is judged here: the rules
compare these facts with one another and with the matrix. Nothing of the judged system is executed.

The driver: ``nvcuda.dll`` is the CUDA driver, in ``%SystemRoot%\\System32``; ``nvml.dll`` is in
``%ProgramW6432%\\NVIDIA Corporation\\NVSMI\\`` for a standard driver install and in ``\\Windows\\System32`` for a
DCH driver install (NVML API Reference, https://docs.nvidia.com/deploy/nvml-api/nvml-api-reference.html),
with ``nvidia-smi.exe`` beside it. A DCH driver's files are also kept in the driver store
(``System32\\DriverStore\\FileRepository\\nv*``); those copies are reported, not judged as loaded. The driver
number ("581.15") is read from a file's version resource by
:func:`gpudoctor.formats.pe.nvidia_driver_version` (its docstring gives the rule and its sources).
"""
from __future__ import annotations

import ntpath
from typing import List

from gpudoctor.windows.dll_search import system_root
from gpudoctor.windows.libraries import cudnn_copies, tensorrt_copies
from gpudoctor.windows.msvc import msvc_installs, nvcc_msvc_bounds
from gpudoctor.windows.pe_read import PeReader
from gpudoctor.windows.python_installs import python_installs
from gpudoctor.windows.toolkits import (cuda_path_vars, find_toolkits, nvcc_on_path, path_toolkits,
                                        program_files)

__all__ = ["windows_facts", "driver_facts"]


def _driver_file(view, path: str, pe) -> dict:
    """``{"present": False, "path"}`` or ``{"present": True, "path", "file_version", "driver_version",
    "product_version", "read"}`` (``driver_version`` None when the file version does not encode one)."""
    from gpudoctor.formats.pe import nvidia_driver_version

    if not view.isfile(path):
        return {"present": False, "path": path}
    f = pe.facts(path)
    fv = f["file_version_tuple"]
    return {"present": True, "path": f["path"], "file_version": f["file_version"],
            "driver_version": nvidia_driver_version(fv) if fv else None,
            "product_version": f["product_version"], "read": f["read"]}


def driver_facts(view, pe) -> dict:
    """``{"nvcuda", "nvml", "nvidia_smi", "driver_store"}``:

    * ``nvcuda``: :func:`_driver_file` of ``System32\\nvcuda.dll`` (``{"present": False, "path"}`` when absent);
    * ``nvml``: ``[_driver_file]`` of ``System32\\nvml.dll`` (DCH) and ``<Program Files>\\NVIDIA
      Corporation\\NVSMI\\nvml.dll`` (standard), in that order, both always listed;
    * ``nvidia_smi``: the ``nvidia-smi.exe`` paths present in those two directories;
    * ``driver_store``: ``[_driver_file]`` of every ``nvcuda*.dll``, ``nvml*.dll`` and ``nvidia-smi.exe`` in
      ``System32\\DriverStore\\FileRepository\\nv*\\``."""
    system32 = ntpath.join(system_root(view), "System32")
    nvsmi = ntpath.join(program_files(view), "NVIDIA Corporation", "NVSMI")
    store = ntpath.join(system32, "DriverStore", "FileRepository", "nv*")
    store_files = [p for pattern in ("nvcuda*.dll", "nvml*.dll", "nvidia-smi.exe")
                   for p in view.glob(ntpath.join(store, pattern))]
    return {"nvcuda": _driver_file(view, ntpath.join(system32, "nvcuda.dll"), pe),
            "nvml": [_driver_file(view, ntpath.join(d, "nvml.dll"), pe) for d in (system32, nvsmi)],
            "nvidia_smi": [p for p in (ntpath.join(d, "nvidia-smi.exe") for d in (system32, nvsmi))
                           if view.isfile(p)],
            "driver_store": [_driver_file(view, p, pe) for p in sorted(store_files) if view.isfile(p)]}


def windows_facts(view) -> dict:
    """Every fact of item 4 of issue 25 about the Windows system ``view`` (a
    :class:`gpudoctor.sysroot.view.SystemView` with ``os == "windows"``; ValueError otherwise). Returns::

        {"toolkits": [toolkits.describe_toolkit ...],            every toolkit, with found_by and
                                                                "msvc_bounds": msvc.nvcc_msvc_bounds
         "cuda_path": {VAR: {...}},                             toolkits.cuda_path_vars
         "path_toolkits": [{"index", "entry", "toolkit", ...}],  toolkits.path_toolkits, PATH order
         "nvcc_on_path": {"path", "toolkit", "version"} | None,  toolkits.nvcc_on_path
         "driver": {"nvcuda", "nvml", "nvidia_smi", "driver_store"},  driver_facts
         "cudnn": [libraries.cudnn_copies ...],
         "tensorrt": [libraries.tensorrt_copies ...],
         "python": [python_installs.python_installs ...],
         "msvc": [msvc.msvc_installs ...],                      Visual Studio's MSVC toolsets
         "problems": [process.problems.record ...]}             every file that could not be read or parsed

    Each file is read once; nothing raises for a missing, unreadable or damaged file."""
    if view.os != "windows":
        raise ValueError(f"windows_facts needs a Windows system, not {view.os!r}")
    problems: List[dict] = []
    pe = PeReader(view, problems)
    toolkits = find_toolkits(view, problems, pe)
    for tk in toolkits:
        tk["msvc_bounds"] = nvcc_msvc_bounds(view, tk["root"], problems)
    pythons = python_installs(view, problems)
    return {"toolkits": toolkits,
            "cuda_path": cuda_path_vars(view, toolkits),
            "path_toolkits": path_toolkits(view, toolkits),
            "nvcc_on_path": nvcc_on_path(view, toolkits),
            "driver": driver_facts(view, pe),
            "cudnn": cudnn_copies(view, toolkits, pythons, problems, pe),
            "tensorrt": tensorrt_copies(view, toolkits, pythons, problems, pe),
            "python": pythons,
            "msvc": msvc_installs(view),
            "problems": problems}
