"""Visual Studio's MSVC toolsets on a Windows system, and the ``_MSC_VER`` range a CUDA toolkit's nvcc accepts.

Where the toolsets are: ``[VSInstallDir]\\VC\\Tools\\MSVC\\14.XY.BBBBB`` (Microsoft C++ Team Blog, "MSVC Toolset
Minor Version Number 14.40 in VS 2022 v17.10",
https://devblogs.microsoft.com/cppblog/msvc-toolset-minor-version-number-14-40-in-vs-2022-v17-10/), the
install dir being ``<Program Files>\\Microsoft Visual Studio\\<2022 | 18>\\<edition>`` (64-bit Visual Studio
2022 and later) or ``<Program Files (x86)>\\Microsoft Visual Studio\\<2017 | 2019>\\<edition>``; the x64
compiler is ``bin\\Hostx64\\x64\\cl.exe`` in the toolset directory. Instances installed elsewhere (only
``vswhere`` or the setup configuration knows them) are not found here.

``_MSC_VER`` "encodes the major and minor number elements of the compiler's version number"
(https://learn.microsoft.com/en-us/cpp/preprocessor/predefined-macros: compiler 19.38.x -> 1938), and the
toolset ``14.XY`` ships compiler ``19.XY`` (the blog's table: MSVC 19.30.30705, _MSC_VER 1930, toolset
14.30 for VS 2022 17.0; 14.40 / 1940 for 17.10), so the toolset 14.XY implies ``_MSC_VER`` 1900 + XY.
"""
from __future__ import annotations

import ntpath
import re
from typing import List, Optional

from gpudoctor.process.problems import record
from gpudoctor.windows.pe_read import optional_text
from gpudoctor.windows.toolkits import program_files

__all__ = ["msvc_installs", "msc_ver_of_toolset", "nvcc_msvc_bounds"]

_TOOLSET_RE = re.compile(r"14\.(\d{1,2})\.(\d{1,6})")


def msc_ver_of_toolset(toolset: str) -> Optional[int]:
    """``_MSC_VER`` implied by an MSVC toolset directory name: "14.38.33130" -> 1938 (the rule in the module
    docstring); None for a name not of the form ``14.XY.BBBBB``."""
    m = _TOOLSET_RE.fullmatch(toolset)
    return 1900 + int(m.group(1)) if m else None


def _vs_roots(view) -> List[str]:
    x86 = view.env.get("ProgramFiles(x86)") or "C:\\Program Files (x86)"
    out = []
    for base in (program_files(view), x86):
        out += view.glob(ntpath.join(base, "Microsoft Visual Studio", "*", "*"))
    return out


def msvc_installs(view) -> List[dict]:
    """Every MSVC toolset of a Visual Studio install found:
    ``[{"vs_dir", "release_folder", "edition", "toolset", "toolset_dir", "msc_ver", "cl_exe"}]``.

    ``vs_dir``: ``<Program Files[ (x86)]>\\Microsoft Visual Studio\\<release_folder>\\<edition>`` (release folder
    "2019", "2022", "18"; edition "Community", "Professional", "Enterprise", "BuildTools", as on disk);
    ``toolset``: the ``VC\\Tools\\MSVC`` directory name ("14.38.33130"); ``msc_ver``: :func:`msc_ver_of_toolset`
    (None when the name is not a 14.XY.BBBBB version); ``cl_exe``: ``bin\\Hostx64\\x64\\cl.exe`` when it is a
    file, else None (a toolset without its x64 compiler). In the order of ``<Program Files>`` then
    ``<Program Files (x86)>``, each by name."""
    out = []
    for vs_dir in _vs_roots(view):
        tools = ntpath.join(vs_dir, "VC", "Tools", "MSVC")
        for toolset in view.listdir(tools):
            toolset_dir = ntpath.join(tools, toolset)
            if not view.isdir(toolset_dir):
                continue
            cl = ntpath.join(toolset_dir, "bin", "Hostx64", "x64", "cl.exe")
            out.append({"vs_dir": vs_dir, "release_folder": ntpath.basename(ntpath.dirname(vs_dir)),
                        "edition": ntpath.basename(vs_dir), "toolset": toolset, "toolset_dir": toolset_dir,
                        "msc_ver": msc_ver_of_toolset(toolset), "cl_exe": cl if view.isfile(cl) else None})
    return out


def nvcc_msvc_bounds(view, toolkit_dir: str, problems: Optional[List[dict]] = None) -> dict:
    """The ``_MSC_VER`` range that nvcc of the toolkit at ``toolkit_dir`` accepts, from its
    ``include\\crt\\host_config.h`` (``#if _MSC_VER < 1920 || _MSC_VER >= 1950`` then ``#error -- unsupported
    Microsoft Visual Studio version!`` in CUDA 13.0; ``< 1910 || >= 1940`` in CUDA 11.8), read by the same
    parser as the Linux toolkit probe (:func:`gpudoctor.formats.nvcc.parse_host_config`).

    Returns ``{"path", "present", "min_msc_ver", "max_msc_ver"}``: inclusive bounds (1920 and 1949 for CUDA
    13.0), each None where the header has no such check or is absent (``present`` False) or unreadable
    (then a problem record is appended to ``problems``)."""
    from gpudoctor.formats.nvcc import parse_host_config

    path = ntpath.join(toolkit_dir, "include", "crt", "host_config.h")
    sink: List[dict] = [] if problems is None else problems
    text = optional_text(view, path, sink)
    out = {"path": path, "present": view.lstat(path) is not None, "min_msc_ver": None, "max_msc_ver": None}
    if text is None:
        return out
    bounds = parse_host_config(text)
    out.update(min_msc_ver=bounds["min_msvc"], max_msc_ver=bounds["max_msvc"])
    if bounds["min_msvc"] is None and bounds["max_msvc"] is None and problems is not None:
        problems.append(record(path, "unparsable", f"{path} has no _MSC_VER check before an #error"))
    return out
