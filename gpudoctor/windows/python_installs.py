"""Python installs of a Windows system and the NVIDIA wheels in their site-packages.

Where they are (https://docs.python.org/3/using/windows.html): the python.org installer puts an all-users
install in ``C:\\Program Files\\Python3XY`` and a per-user one in
``%LOCALAPPDATA%\\Programs\\Python\\Python3XY`` (``C:\\Users\\<user>\\AppData\\Local\\Programs\\Python\\Python3XY``),
each with ``python.exe``, ``python3XY.dll`` and ``Lib\\site-packages``. A virtual environment
(https://docs.python.org/3/library/venv.html) has ``pyvenv.cfg`` (``version = 3.11.9``; ``version_info`` in
newer ones), ``Scripts\\python.exe`` and ``Lib\\site-packages``; the active one is ``VIRTUAL_ENV``. Conda
environments are not looked for here.
"""
from __future__ import annotations

import ntpath
import re
from typing import List, Optional

from gpudoctor.windows.pe_read import optional_text
from gpudoctor.windows.toolkits import program_files

__all__ = ["python_installs"]

_FOLDER_RE = re.compile(r"Python(\d)(\d{1,2})(?:-32|-arm64)?", re.I)
_DLL_RE = re.compile(r"python(\d)(\d{1,2})\.dll", re.I)
_CFG_RE = re.compile(r"\s*version(?:_info)?\s*=\s*(\d+)\.(\d+)")
_DIST_RE = re.compile(r"((?:nvidia|tensorrt)[A-Za-z0-9_.]*)-([^-]+)\.dist-info", re.I)


def _wheels(view, site_packages: str) -> List[dict]:
    """``[{"dist", "version", "dist_info"}]`` of the nvidia-* and tensorrt* distributions installed there
    (from the ``NAME-VERSION.dist-info`` directory names, name normalized to dashes)."""
    out = []
    for name in view.listdir(site_packages):
        m = _DIST_RE.fullmatch(name)
        if m and view.isdir(ntpath.join(site_packages, name)):
            out.append({"dist": m.group(1).replace("_", "-").lower(), "version": m.group(2),
                        "dist_info": ntpath.join(site_packages, name)})
    return out


def _install(view, root: str, kind: str, problems: List[dict]) -> Optional[dict]:
    exe = next((p for p in (ntpath.join(root, "python.exe"), ntpath.join(root, "Scripts", "python.exe"))
                if view.isfile(p)), None)
    version = version_from = None
    cfg = optional_text(view, ntpath.join(root, "pyvenv.cfg"), problems)
    if cfg is not None:
        m = next((m for m in map(_CFG_RE.match, cfg.splitlines()) if m), None)
        if m:
            version, version_from = f"{m.group(1)}.{m.group(2)}", "pyvenv.cfg"
    if version is None:
        dll = next((m for m in map(_DLL_RE.fullmatch, view.listdir(root)) if m), None)
        folder = _FOLDER_RE.fullmatch(ntpath.basename(ntpath.normpath(root)))
        for source, m in (("python3XY.dll", dll), ("folder name", folder)):
            if m:
                version, version_from = f"{m.group(1)}.{int(m.group(2))}", source
                break
    site = ntpath.join(root, "Lib", "site-packages")
    site_packages = [site] if view.isdir(site) else []
    if exe is None and not site_packages:
        return None
    return {"root": root, "kind": kind, "python_exe": exe, "version": version, "version_from": version_from,
            "site_packages": site_packages,
            "nvidia_wheels": [w for sp in site_packages for w in _wheels(view, sp)]}


def python_installs(view, problems: List[dict]) -> List[dict]:
    """Every Python install found: ``[{"root", "kind", "python_exe", "version", "version_from",
    "site_packages", "nvidia_wheels"}]``.

    ``kind``: "all users" (``<Program Files>\\Python3*``), "per user"
    (``C:\\Users\\*\\AppData\\Local\\Programs\\Python\\Python3*``) or "virtual env" (``VIRTUAL_ENV``);
    ``python_exe`` its python.exe or None; ``version`` "3.11" from pyvenv.cfg, else the ``python3XY.dll``
    name, else the folder name (``version_from`` says which; None when none says); ``site_packages``
    ``[<root>\\Lib\\site-packages]`` when it is a directory; ``nvidia_wheels`` from :func:`_wheels`.
    A directory with neither python.exe nor site-packages is left out."""
    places = [(p, "all users") for p in view.glob(ntpath.join(program_files(view), "Python3*"))]
    places += [(p, "per user") for p in view.glob("C:\\Users\\*\\AppData\\Local\\Programs\\Python\\Python3*")]
    venv = view.env.get("VIRTUAL_ENV")
    if venv:
        places.append((venv.rstrip("\\/"), "virtual env"))
    out, seen = [], set()
    for root, kind in places:
        key = ntpath.normcase(ntpath.normpath(root))
        if key in seen or not view.isdir(root):
            continue
        seen.add(key)
        found = _install(view, root, kind, problems)
        if found:
            out.append(found)
    return out
