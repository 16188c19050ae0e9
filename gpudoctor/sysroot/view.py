"""One interface to the file system and environment of the system a check judges.

A :class:`SystemView` is either the live system (root ``/``, this process's environment: every call is the
plain ``os`` call) or a root on disk: an unpacked image, a mounted or copied Windows drive, with the
environment it would have (``--env FILE``). Paths given to and returned by a view are the judged system's
own (``/usr/lib/x86_64-linux-gnu/libcuda.so.1``, ``C:\\Windows\\System32\\nvcuda.dll``); :meth:`host` maps
one to the file on this machine.

Inside a root, nothing leaves it: a symlink's absolute target means the root's own path (as in the image's
mount namespace), ``..`` stops at the root, and more than 40 links in a row is a loop (None), as path
resolution(7) says. A Windows root is matched case-insensitively, as NTFS is, whatever this machine's file
system is (the same logic therefore runs in tests on Linux as on Windows).
"""
from __future__ import annotations

import fnmatch
import ntpath
import os
import posixpath
import stat as stat_mod
from typing import Dict, Iterator, List, Mapping, Optional

__all__ = ["SystemView", "live_view", "MAX_LINKS"]

#: Symlinks followed in one resolution before it is a loop (path_resolution(7): Linux's limit).
MAX_LINKS = 40


class SystemView:
    """The judged system: ``root`` (a directory on this machine; "/" with ``live``), ``os_name`` ("linux" or
    "windows": its path rules, search order and file names), ``env`` (its environment variables). Windows
    paths name the root's drive as ``C:`` (the drive a copied or mounted ``C:\\`` is); another drive letter is
    not in the root."""

    def __init__(self, root: str = "/", os_name: str = "linux", env: Optional[Mapping[str, str]] = None,
                 live: bool = False, drive: str = "C:"):
        if os_name not in ("linux", "windows"):
            raise ValueError(f"unknown OS {os_name!r}: linux or windows")
        self.root = os.path.realpath(root)
        self.os = os_name
        self.env: Dict[str, str] = dict(os.environ if env is None else env)
        self.live = live
        self.drive = drive.upper()
        self.paths = ntpath if os_name == "windows" else posixpath
        self._listings: Dict[str, Optional[Dict[str, str]]] = {}

    def __repr__(self) -> str:
        return f"SystemView(root={self.root!r}, os={self.os!r}, live={self.live})"

    # ----------------------------------------------------------------- paths

    def _parts(self, path: str) -> Optional[List[str]]:
        """The components of an absolute system path, or None (relative, or another Windows drive)."""
        if self.os == "windows":
            drive, rest = ntpath.splitdrive(path.replace("/", "\\"))
            if drive.upper() != self.drive or not rest.startswith("\\"):
                return None
            return [p for p in rest.split("\\") if p not in ("", ".")]
        if not path.startswith("/"):
            return None
        return [p for p in path.split("/") if p not in ("", ".")]

    def join(self, *parts: str) -> str:
        return self.paths.join(*parts)

    def _system_path(self, parts: List[str]) -> str:
        if self.os == "windows":
            return self.drive + "\\" + "\\".join(parts)
        return "/" + "/".join(parts)

    def _child(self, host_dir: str, name: str) -> Optional[str]:
        """``name`` in ``host_dir`` as it is on disk: exact, or for Windows the one entry equal but for case."""
        exact = os.path.join(host_dir, name)
        if self.os != "windows" or os.path.lexists(exact):
            return exact
        names = self._listings.get(host_dir)
        if host_dir not in self._listings:
            try:
                names = {n.lower(): n for n in os.listdir(host_dir)}
            except OSError:
                names = None
            self._listings[host_dir] = names
        real = (names or {}).get(name.lower())
        return os.path.join(host_dir, real) if real else exact

    def _resolve(self, parts: List[str], follow_last: bool = True) -> Optional[List[str]]:
        """The components of ``parts`` with every symlink resolved inside the root; None for a loop."""
        done: List[str] = []
        todo = list(parts)
        links = 0
        while todo:
            name = todo.pop(0)
            if name == "..":
                if done:
                    done.pop()
                continue
            host = self._child(os.path.join(self.root, *done), name)
            if (todo or follow_last) and os.path.islink(host):
                links += 1
                if links > MAX_LINKS:
                    return None
                target = os.readlink(host)
                if self.os == "windows":
                    target = target.replace("\\", "/")
                    if ntpath.splitdrive(target)[0]:
                        target = "/" + target.split(":", 1)[1].lstrip("/")
                tparts = [p for p in target.split("/") if p not in ("", ".")]
                if target.startswith("/"):
                    done = []
                todo = tparts + todo
                continue
            done.append(os.path.basename(host))
        return done

    def host(self, path: str, follow_last: bool = True) -> Optional[str]:
        """The file on this machine that is ``path`` of the judged system, symlinks resolved inside the root
        (the last one too unless ``follow_last`` is False); None for a relative path, another drive, or a loop."""
        if self.live:
            return path if os.path.isabs(path) else None
        parts = self._parts(path)
        if parts is None:
            return None
        resolved = self._resolve(parts, follow_last)
        return None if resolved is None else os.path.join(self.root, *resolved)

    def realpath(self, path: str) -> Optional[str]:
        """``path`` with every symlink resolved, as a path of the judged system (None: see :meth:`host`)."""
        if self.live:
            return os.path.realpath(path)
        parts = self._parts(path)
        resolved = None if parts is None else self._resolve(parts)
        return None if resolved is None else self._system_path(resolved)

    # ----------------------------------------------------------------- files

    def lstat(self, path: str) -> Optional[os.stat_result]:
        host = self.host(path, follow_last=False)
        try:
            return os.lstat(host) if host else None
        except OSError:
            return None

    def stat(self, path: str) -> Optional[os.stat_result]:
        host = self.host(path)
        try:
            return os.stat(host) if host else None
        except OSError:
            return None

    def exists(self, path: str) -> bool:
        return self.stat(path) is not None

    def isfile(self, path: str) -> bool:
        st = self.stat(path)
        return st is not None and stat_mod.S_ISREG(st.st_mode)

    def isdir(self, path: str) -> bool:
        st = self.stat(path)
        return st is not None and stat_mod.S_ISDIR(st.st_mode)

    def islink(self, path: str) -> bool:
        st = self.lstat(path)
        return st is not None and stat_mod.S_ISLNK(st.st_mode)

    def listdir(self, path: str) -> List[str]:
        """The names in directory ``path``, sorted; [] when it is not a readable directory."""
        host = self.host(path)
        try:
            return sorted(os.listdir(host)) if host else []
        except OSError:
            return []

    def read_bytes(self, path: str, limit: int = 1 << 20) -> Optional[bytes]:
        """At most ``limit`` bytes from the start of regular file ``path``; None when it cannot be read or is
        not a regular file (a FIFO or a device in a root would block or never end)."""
        host = self.host(path)
        if not host:
            return None
        try:
            fd = os.open(host, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
        except OSError:
            return None
        try:
            if not stat_mod.S_ISREG(os.fstat(fd).st_mode):
                return None
            with os.fdopen(fd, "rb", closefd=False) as fh:
                return fh.read(limit)
        except OSError:
            return None
        finally:
            os.close(fd)

    def read_text(self, path: str, limit: int = 1 << 20) -> Optional[str]:
        data = self.read_bytes(path, limit)
        return None if data is None else data.decode("utf-8", errors="replace")

    def glob(self, pattern: str) -> List[str]:
        """System paths matching ``pattern`` (``*``, ``?``, ``[..]`` in any component; case-insensitive on
        Windows), sorted."""
        if self.live:  # this machine: the platform's own glob (without case on Windows), hidden names skipped
            import glob as glob_mod

            return sorted(glob_mod.glob(pattern))
        parts = self._parts(pattern)
        if parts is None:
            return []
        found = [[]]
        for comp in parts:
            nxt = []
            for base in found:
                here = self._system_path(base)
                if not any(c in comp for c in "*?["):
                    nxt.append(base + [comp])
                    continue
                names = self.listdir(here)
                match = (lambda n: fnmatch.fnmatchcase(n.lower(), comp.lower())) if self.os == "windows" else \
                    (lambda n: fnmatch.fnmatchcase(n, comp))
                nxt += [base + [n] for n in names if match(n) and not (n.startswith(".") and not comp.startswith("."))]
            found = nxt
        return sorted(p for p in (self._system_path(b) for b in found) if self.lstat(p) is not None)

    # ----------------------------------------------------------------- environment

    def path_list(self, var: str) -> List[str]:
        """The entries of a path-list variable (PATH, LD_LIBRARY_PATH), split as the judged OS splits them."""
        sep = ";" if self.os == "windows" else ":"
        return [p for p in (self.env.get(var) or "").split(sep) if p]

    def which(self, name: str, dirs: Optional[List[str]] = None) -> Optional[str]:
        """The file a shell of the judged system runs for ``name``: PATH in order (``dirs`` instead when given: a
        program's own PATH); on Windows with PATHEXT's extensions (``.COM;.EXE;.BAT;.CMD`` when unset). A
        system path, or None."""
        exts = [""]
        if self.os == "windows" and not ntpath.splitext(name)[1]:
            exts = [e for e in (self.env.get("PATHEXT") or ".COM;.EXE;.BAT;.CMD").split(";") if e]
        for d in self.path_list("PATH") if dirs is None else [d for d in dirs if d]:
            for ext in exts:
                cand = self.join(d, name + ext)
                if self.isfile(cand) and (self.os == "windows" or os.access(self.host(cand) or cand, os.X_OK)):
                    return cand
        return None

    def walk_files(self, top: str, max_entries: int = 200000) -> Iterator[str]:
        """System paths of the regular files under ``top`` (symlinks not followed), at most ``max_entries``."""
        host_top = self.host(top)
        if not host_top:
            return
        seen = 0
        for dirpath, _dirs, files in os.walk(host_top):
            for f in files:
                seen += 1
                if seen > max_entries:
                    return
                host = os.path.join(dirpath, f)
                if os.path.isfile(host) and not os.path.islink(host):
                    rel = os.path.relpath(host, self.root if not self.live else "/")
                    yield self._system_path(rel.split(os.sep)) if not self.live else "/" + rel


def live_view(env: Optional[Mapping[str, str]] = None) -> SystemView:
    """This machine as it runs (root "/", this process's environment unless ``env``)."""
    import sys

    return SystemView("/", "windows" if sys.platform == "win32" else "linux", env, live=True)
