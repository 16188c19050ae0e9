"""Which file Windows loads for a DLL name: the directories it searches, in order, and the copy it finds.

Two orders matter for the CUDA stack (each rule with its source):

* A desktop program's imports (and a ``LoadLibrary("name.dll")`` without flags): the *standard search order
  for unpackaged apps* with SafeDllSearchMode on (Windows' default), after DLL redirection, API sets, SxS
  manifests, the loaded-module list and KnownDLLs: the folder the application loaded from, the system folder
  (``%SystemRoot%\\System32``), the 16-bit system folder (``System``), the Windows folder, the current
  folder, then the ``PATH`` entries in order. With SafeDllSearchMode off the current folder comes second.
  A DLL's own dependencies are searched "as if they were loaded with just their module names", so the
  application's folder, not the DLL's, comes first.
  https://learn.microsoft.com/en-us/windows/win32/dlls/dynamic-link-library-search-order
* A Python >= 3.8 extension module's (``.pyd``) dependencies: CPython loads the module with
  ``LoadLibraryExW(path, NULL, LOAD_LIBRARY_SEARCH_DEFAULT_DIRS | LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR)``
  (https://github.com/python/cpython/blob/main/Python/dynload_win.c), so Windows searches the directory that
  holds the module, the application's directory (python.exe's), the directories added with
  ``os.add_dll_directory()`` (AddDllDirectory: "If more than one directory has been added, the order in which
  those directories are searched is unspecified"), then System32
  (https://learn.microsoft.com/en-us/windows/win32/api/libloaderapi/nf-libloaderapi-setdefaultdlldirectories).
  "Specifically, PATH and the current working directory are no longer used"
  (https://docs.python.org/3/whatsnew/3.8.html#bpo-36085-whatsnew,
  https://docs.python.org/3/library/os.html#os.add_dll_directory).

What a static reading cannot know, and says so instead of guessing:

* KnownDLLs are the registry value ``HKLM\\SYSTEM\\CurrentControlSet\\Control\\Session Manager\\KnownDLLs``, read
  from a registry hive, not from a file a root holds: :func:`find_dll` applies them only when a caller that
  read the registry (a live Windows check) passes ``known_dlls``; otherwise the result says they were not read
  (``"known_dlls": "unread"``). No CUDA library is a KnownDLL; for a system name such as ``kernel32.dll``
  a caller passes it.
* API set names (``api-ms-win-*``, ``ext-ms-win-*``) are not files: the loader maps them to a host DLL
  (https://learn.microsoft.com/en-us/windows/win32/apiindex/windows-apisets); they are reported as such.
* The current folder of the process that will load the DLL is unknown to a static check: it is in the order
  only when the caller gives ``cwd``.
* The loaded-module list, DLL redirection (``.local``) and SxS manifests are not modelled.
"""
from __future__ import annotations

import ntpath
from typing import Iterable, List, Optional, Sequence, Tuple

__all__ = ["search_order", "find_dll", "system_root", "APP_DIR", "EXTENSION_DIR", "SYSTEM32", "SYSTEM16",
           "WINDOWS_DIR", "CURRENT_DIR", "PATH_ENTRY", "ADDED_DIR", "API_SET", "KNOWN_DLL"]

# The "why" of each directory in an order (stable strings: rules and renderers match them).
APP_DIR = "the application's directory"
EXTENSION_DIR = "the extension module's directory"
SYSTEM32 = "System32"
SYSTEM16 = "the 16-bit system directory"
WINDOWS_DIR = "the Windows directory"
CURRENT_DIR = "the current directory"
PATH_ENTRY = "PATH entry"
ADDED_DIR = "os.add_dll_directory"
# The "via" of a name that is not searched for in directories.
API_SET = "API set"
KNOWN_DLL = "KnownDLLs"

_API_SET_PREFIXES = ("api-", "ext-")


def system_root(view) -> str:
    """The Windows directory of the judged system: ``SystemRoot`` (or ``windir``) from its environment, else
    ``C:\\Windows`` (Windows' own default)."""
    return view.env.get("SystemRoot") or view.env.get("SYSTEMROOT") or view.env.get("windir") or "C:\\Windows"


def _key(path: str) -> str:
    return ntpath.normcase(ntpath.normpath(path))


def search_order(view, loader_dir: Optional[str], *, python_extension: bool, added_dirs: Sequence[str] = (),
                 safe_dll_search: bool = True, application_dir: Optional[str] = None,
                 cwd: Optional[str] = None) -> List[Tuple[str, str]]:
    """The directories Windows searches, in order, for a DLL that a module imports: ``[(directory, why)]``.

    ``python_extension`` False (a desktop program): ``loader_dir`` is the directory of the program (.exe)
    that loads it (:data:`APP_DIR`), then :data:`SYSTEM32`, :data:`SYSTEM16`, :data:`WINDOWS_DIR`,
    :data:`CURRENT_DIR` (only when ``cwd`` is given; second when ``safe_dll_search`` is False), then every
    ``PATH`` entry in order (:data:`PATH_ENTRY`). ``added_dirs`` must be empty: AddDllDirectory's directories
    are searched only by loads that ask for them (a ValueError says so).

    ``python_extension`` True (the dependencies of a ``.pyd`` under Python >= 3.8): ``loader_dir`` is the
    extension module's directory (:data:`EXTENSION_DIR`), then ``application_dir`` when given (python.exe's
    directory, :data:`APP_DIR`), then ``added_dirs`` (:data:`ADDED_DIR`, in the given order: Windows leaves
    their order unspecified), then :data:`SYSTEM32`. PATH and the current directory are not searched.

    Directories are the judged system's paths (``C:\\...``); a directory that appears twice is kept at its
    first place only (the second search cannot find anything new). System folders come from
    :func:`system_root`. Sources: the module docstring."""
    windows = system_root(view)
    system32 = ntpath.join(windows, "System32")
    out: List[Tuple[str, str]] = []
    if python_extension:
        if loader_dir:
            out.append((loader_dir, EXTENSION_DIR))
        if application_dir:
            out.append((application_dir, APP_DIR))
        out += [(d, ADDED_DIR) for d in added_dirs]
        out.append((system32, SYSTEM32))
    else:
        if added_dirs:
            raise ValueError("os.add_dll_directory / AddDllDirectory directories are not in the standard "
                             "search order of a desktop program; pass python_extension=True")
        if loader_dir:
            out.append((loader_dir, APP_DIR))
        if cwd and not safe_dll_search:
            out.append((cwd, CURRENT_DIR))
        out += [(system32, SYSTEM32), (ntpath.join(windows, "System"), SYSTEM16), (windows, WINDOWS_DIR)]
        if cwd and safe_dll_search:
            out.append((cwd, CURRENT_DIR))
        out += [(d, PATH_ENTRY) for d in view.path_list("PATH")]
    seen, unique = set(), []
    for directory, why in out:
        if _key(directory) not in seen:
            seen.add(_key(directory))
            unique.append((directory, why))
    return unique


def _copy_in(view, directory: str, name: str) -> Optional[str]:
    """``directory\\name`` as it is on the judged system when it is a file there (case as on disk), else None."""
    candidate = view.join(directory, name)
    if not view.isfile(candidate):
        return None
    real = view.realpath(candidate)
    return view.join(directory, ntpath.basename(real)) if real else candidate


def find_dll(view, name: str, order: Sequence[Tuple[str, str]], *,
             known_dlls: Optional[Iterable[str]] = None) -> dict:
    """The copy of DLL ``name`` that Windows loads with ``order`` (from :func:`search_order`), names matched
    without case as Windows does.

    Returns ``{"name", "path", "via", "dir", "shadowed", "known_dlls"}``:

    * ``path``: the system path of the copy found first (file name as on disk), or None (not found:
      the load fails with "module not found", or an API set name, which is not a file).
    * ``via``: the ``why`` of the directory it was found in (:data:`SYSTEM32`, :data:`PATH_ENTRY`, ...),
      :data:`KNOWN_DLL` when ``known_dlls`` names it (System32's copy), :data:`API_SET` for an
      ``api-``/``ext-`` name, or None when not found.
    * ``dir``: the directory searched that held it (as written in ``order``, e.g. the PATH entry), or None.
    * ``shadowed``: ``[{"path", "via", "dir"}]``, the other copies later in the order, which Windows does not
      load for this name while the first is there.
    * ``known_dlls``: "applied" (a ``known_dlls`` list was given) or "unread" (none: a static reading cannot
      read the registry; see the module docstring).
    """
    low = name.lower()
    out = {"name": name, "path": None, "via": None, "dir": None, "shadowed": [],
           "known_dlls": "unread" if known_dlls is None else "applied"}
    if low.startswith(_API_SET_PREFIXES):
        out["via"] = API_SET
        return out
    hits = []
    if known_dlls is not None and low in {k.lower() for k in known_dlls}:
        system32 = ntpath.join(system_root(view), "System32")
        path = _copy_in(view, system32, name)
        if path:
            hits.append({"path": path, "via": KNOWN_DLL, "dir": system32})
    for directory, why in order:
        path = _copy_in(view, directory, name)
        if path and not any(_key(h["path"]) == _key(path) for h in hits):
            hits.append({"path": path, "via": why, "dir": directory})
    if hits:
        out.update(hits[0])
        out["shadowed"] = hits[1:]
    return out
