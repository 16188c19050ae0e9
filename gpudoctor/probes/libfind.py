"""Find every copy of a CUDA library on the machine, and the one the dynamic loader would pick.

Where ``cuda.pathfinder`` answers "load one libcudart for me", this answers the
diagnostic question: which copies exist (system dirs, ``/usr/local/cuda*``, pip
``nvidia-*`` wheels, conda, WSL's ``/usr/lib/wsl/lib``, ``LD_LIBRARY_PATH``), what
version each is, and which one a plain ``dlopen("libcudart.so.13")`` resolves to, in ld.so(8)'s
order: an object already loaded by ``LD_PRELOAD`` or ``/etc/ld.so.preload`` under that SONAME, the
loading object's ``DT_RPATH`` (only when it has no ``DT_RUNPATH``), ``LD_LIBRARY_PATH``, its
``DT_RUNPATH``, the ldconfig cache, the default dirs; a file of another ELF class or machine is skipped
and the search goes on (glibc ``open_verify``). Not modelled: glibc-hwcaps subdirectories and
secure-execution (setuid) mode.

Every file-system read goes through a :class:`gpudoctor.sysroot.view.SystemView`: the live system (plain
``os`` calls, ``ldconfig -p``), or a root on disk (an unpacked image) whose own ``/etc/ld.so.cache`` is parsed
and whose links resolve inside it; paths in and out are the judged system's. Nothing in a root is executed.
"""
from __future__ import annotations

import bisect
import fnmatch
import os
import re
import site
import sys
from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Tuple

from gpudoctor.formats import elf_check
from gpudoctor.formats import ldconfig as ldconfig_fmt

from gpudoctor.formats import nvidia_driver as nvidia_driver_fmt
from gpudoctor.process.subproc import run

DEFAULT_DIRS = ("/lib64", "/usr/lib64", "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib", "/usr/lib")
EXTRA_SYSTEM_DIRS = (
    "/usr/lib/x86_64-linux-gnu/nvidia/current",  # Debian's driver packages
    "/usr/local/nvidia/lib64",  # NVIDIA container toolkit mounts
    "/usr/local/nvidia/lib",
    "/usr/lib/wsl/lib",  # WSL 2: the Windows driver's libcuda
)


@dataclass(frozen=True)
class LibCopy:
    """One file of a library. ``origin``: where it was found (LD_LIBRARY_PATH, ldconfig,
    system, cuda-toolkit, pip, conda, wsl, container); ``package``: the pip distribution
    owning it, when there is one; ``version``: from the file name or that distribution."""

    path: str
    realpath: str
    origin: str
    version: Optional[str]
    package: Optional[str] = None

    def to_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items()}


def site_packages_dirs(env: Optional[Mapping[str, str]] = None) -> List[str]:
    """Where this Python imports distributions from: its site-packages, the user's, every ``*-packages`` entry
    of sys.path, and the PYTHONPATH entries of ``env`` (``pip install --target DIR`` puts wheels there)."""
    dirs = []
    try:
        dirs.extend(site.getsitepackages())
    except AttributeError:  # virtualenv's old site.py
        pass
    try:
        dirs.append(site.getusersitepackages())
    except AttributeError:
        pass
    dirs.extend(p for p in sys.path if p.endswith(("site-packages", "dist-packages")))
    dirs.extend(p for p in ((env or {}).get("PYTHONPATH") or "").split(os.pathsep) if p)
    seen, out = set(), []
    for d in dirs:
        if d not in seen and os.path.isdir(d):
            seen.add(d)
            out.append(d)
    return out


def ldconfig_cache(timeout: float = 5.0, env: Optional[Mapping[str, str]] = None, problems: Optional[list] = None) -> List[dict]:
    """Parsed ``ldconfig -p`` of the ldconfig a shell would run (PATH, then /sbin and /usr/sbin);
    empty when there is none (Windows, musl). A failing ldconfig is appended to ``problems``."""
    import shutil

    search = os.pathsep.join(p for p in ((env or {}).get("PATH", ""), "/sbin", "/usr/sbin") if p)
    exe = shutil.which("ldconfig", path=search)
    if not exe:
        return []
    res = run([exe, "-p"], timeout=timeout)
    entries = ldconfig_fmt.parse_ldconfig_p(res.stdout) if res.ok else []
    if not entries and problems is not None:
        rec = res.problem(unparsable="library cache entries")
        if rec:
            problems.append(rec)
    return entries


#: dist-info directories whose RECORD and METADATA probes rely on (CUDA wheels, TensorRT, frameworks).
_DIST_GLOBS = ("nvidia_*.dist-info", "tensorrt*.dist-info", "cuda_*.dist-info", "torch-*.dist-info",
               "jax*.dist-info", "cupy*.dist-info", "onnxruntime*.dist-info", "tensorflow*.dist-info")


_DIST_INFO = re.compile("|".join(fnmatch.translate(g) for g in _DIST_GLOBS))


def _dist_infos(site_dir: str, view) -> List[str]:
    """The dist-info directories of ``site_dir`` that :data:`_DIST_GLOBS` match, sorted: one listing of a
    site-packages that may hold thousands of entries (the globs listed it once each)."""
    return sorted(os.path.join(site_dir, n) for n in view.listdir(site_dir) if not n.startswith(".") and _DIST_INFO.match(n))


class _RealPaths:
    """``os.path.realpath`` of many files in few directories: each directory resolved once, each file only
    checked for being a link itself (the same answers; a wheel's RECORD lists hundreds of libraries)."""

    def __init__(self, view=None):
        self._dirs: Dict[str, str] = {}
        self._view = view or _live()

    def __call__(self, path: str) -> str:
        d, name = os.path.split(path)
        real_dir = self._dirs.get(d)
        if real_dir is None:
            real_dir = self._dirs[d] = self._view.realpath(d) or d
        full = os.path.join(real_dir, name)
        return (self._view.realpath(full) or full) if self._view.islink(full) else full


def pip_owned_libs(site_dirs: List[str], problems: Optional[list] = None, view=None,
                   absent: Optional[Dict[Tuple[str, str], List[str]]] = None) -> Dict[str, Tuple[str, str]]:
    """Map realpath of each shared library shipped by an ``nvidia-*`` (or ``tensorrt*``)
    wheel to (distribution name, version), read from the wheels' RECORD files. A dist-info
    without RECORD or METADATA (an interrupted or hand-copied install) is appended to ``problems``.
    ``absent`` (when given) gets, per (name, version), the libraries its RECORD lists that are not on disk
    (a wheel installed in part, or files deleted since). ``view``: the system read (default: this one)."""
    from gpudoctor.process import problems as P

    view = view or _live()
    owned: Dict[str, Tuple[str, str]] = {}
    realpath = _RealPaths(view)
    for sp in site_dirs:
        for info in _dist_infos(sp, view):
            name, version = _dist_name_version(info)
            missing = [f for f in ("METADATA", "RECORD") if not view.isfile(os.path.join(info, f))]
            if missing and problems is not None:
                problems.append(P.record(info, "broken_dist",
                                         f"{os.path.basename(info)} has no {' and no '.join(missing)}: pip cannot verify, "
                                         "upgrade or uninstall this package"))
            if not os.path.basename(info).startswith(("nvidia_", "tensorrt")):
                continue
            text = P.read_text(view.host(os.path.join(info, "RECORD")) or "", problems, limit=16 << 20)
            for line in (text or "").splitlines():
                rel = line.split(",", 1)[0]
                if ".so" in rel or rel.endswith(".dll"):
                    path = os.path.join(sp, rel)
                    owned[realpath(path)] = (name, version)
                    if absent is not None and not view.exists(path):
                        absent.setdefault((name, version), []).append(path)
    return owned


def _dist_name_version(info_dir: str) -> Tuple[str, str]:
    base = os.path.basename(info_dir)[: -len(".dist-info")]
    name, _, version = base.partition("-")
    return name.replace("_", "-"), version


class LibraryIndex:
    """Search directories of this machine, scanned once per run (see :func:`index_for`)."""

    def __init__(self, env: Mapping[str, str], timeout: float = 5.0, view=None):
        #: The system read: this one (default), or a root on disk (:mod:`gpudoctor.sysroot.view`).
        self.view = view or _live(env)
        self.env = env
        #: Problem records (see gpudoctor.process.problems): a failing ldconfig, broken dist-infos.
        self.problems: List[dict] = []
        self.ld_library_path = [d for d in env.get("LD_LIBRARY_PATH", "").split(":") if d]
        if self.view.live:
            self.cache = ldconfig_cache(timeout, env, self.problems)
            self.site_dirs = site_packages_dirs(env)
        else:
            self.cache = root_ld_cache(self.view, self.problems)
            self.site_dirs = root_site_dirs(self.view)
        #: (distribution, version) -> the libraries its RECORD lists that are not on disk.
        self.wheel_libs_missing: Dict[Tuple[str, str], List[str]] = {}
        self.pip_owned = pip_owned_libs(self.site_dirs, self.problems, self.view, self.wheel_libs_missing)
        self.dirs = self._search_dirs()
        self._files: Dict[str, dict] = {}  # path -> elf_check.check_file (one header read per file per run)
        self._dirs_listed: Dict[str, List[str]] = {}
        self._realpath = _RealPaths(self.view)
        self._copies: Dict[str, List[LibCopy]] = {}
        self._process: Optional[dict] = None
        #: (file, entry, via) of each object every process loads first: LD_PRELOAD, then /etc/ld.so.preload.
        self.preload = self._preloads()

    def file_info(self, path: str) -> dict:
        """:func:`gpudoctor.formats.elf_check.check_file` of ``path``, read once per run."""
        info = self._files.get(path)
        if info is None:
            host = self.view.host(path)
            info = self._files[path] = elf_check.check_file(host) if host else {"kind": "missing", "path": path}
        return info

    def process_elf(self) -> dict:
        """ELF class and machine of the process that loads (this interpreter: the workers run it too)."""
        if self._process is None:
            # a root's programs run its own /bin/sh's kind of ELF; this machine's run this interpreter's
            exe = os.path.realpath(sys.executable) if self.view.live else (self.view.realpath("/bin/sh") or "/bin/sh")
            info = self.file_info(exe)
            self._process = {"elf_class": info.get("elf_class") or 64, "machine": info.get("machine") or "x86-64"}
        return self._process

    def _preloads(self) -> List[Tuple[str, str, str]]:
        from gpudoctor.process.problems import read_text

        out = []
        lists = [(self.env.get("LD_PRELOAD", ""), "LD_PRELOAD")]
        if self.view.isfile("/etc/ld.so.preload"):
            lists.append((read_text(self.view.host("/etc/ld.so.preload"), self.problems) or "", "/etc/ld.so.preload"))
        for text, via in lists:
            for entry in text.replace(":", " ").split():  # ld.so(8): separated by spaces or colons
                path = entry if "/" in entry else self._search_plain(entry)
                if path:
                    out.append((path, entry, via))
        return out

    def _search_plain(self, soname: str) -> Optional[str]:
        """The file of a slash-free preload entry: LD_LIBRARY_PATH, the cache, the default dirs."""
        trace = self._search(soname, [], [], [])
        return trace["path"] if trace else None

    def _search_dirs(self) -> List[Tuple[str, str]]:
        dirs: List[Tuple[str, str]] = []
        dirs += [(d, "LD_LIBRARY_PATH") for d in self.ld_library_path]
        dirs += [(os.path.dirname(e["path"]), "ldconfig") for e in self.cache]
        dirs += [(d, "system") for d in DEFAULT_DIRS]
        dirs += [(d, "wsl" if "wsl" in d else "container" if "/nvidia/" in d and "local" in d else "system") for d in EXTRA_SYSTEM_DIRS]
        v = self.view
        for root in v.glob("/usr/local/cuda*") + [self.env.get("CUDA_HOME", ""), self.env.get("CUDA_PATH", "")]:
            if root:
                dirs += [(os.path.join(root, "lib64"), "cuda-toolkit")]
                dirs += [(d, "cuda-toolkit") for d in v.glob(os.path.join(root, "targets", "*", "lib"))]
        for sp in self.site_dirs:
            dirs += [(d, "pip") for d in v.glob(os.path.join(sp, "nvidia", "*", "lib"))]
            dirs += [(d, "pip") for d in v.glob(os.path.join(sp, "nvidia", "*", "lib64"))]
            dirs += [(d, "pip") for d in v.glob(os.path.join(sp, "tensorrt_libs"))]
        if self.env.get("CONDA_PREFIX"):
            dirs += [(os.path.join(self.env["CONDA_PREFIX"], "lib"), "conda")]
        seen, asked, out = set(), set(), []
        for d, origin in dirs:
            if not d or d in asked:  # the ldconfig cache names a few directories hundreds of times
                continue
            asked.add(d)
            key = v.realpath(d)
            if key and key not in seen and v.isdir(d):
                seen.add(key)
                out.append((d, origin))
        return out

    def copies(self, stem: str) -> List[LibCopy]:
        """Every distinct file (by realpath) named ``{stem}.so*``, e.g. stem ``libcudart``; looked up once per
        run (the loader probe asks again for what the other probes asked)."""
        known = self._copies.get(stem)
        if known is None:
            known = self._copies[stem] = self._find_copies(stem)
        return list(known)

    def _find_copies(self, stem: str) -> List[LibCopy]:
        found: Dict[str, LibCopy] = {}
        pattern = stem + ".so*"
        prefix = pattern.split("*", 1)[0].split("?", 1)[0].split("[", 1)[0]
        for d, origin in self.dirs:
            listing = self._listing(d)
            names = listing[bisect.bisect_left(listing, prefix):bisect.bisect_left(listing, prefix + "\U0010ffff")]
            for path in [os.path.join(d, n) for n in fnmatch.filter(names, pattern)]:
                real = self._realpath(path)
                if real in found or not self.view.isfile(real):
                    continue
                pkg = self.pip_owned.get(real)
                version = nvidia_driver_fmt.version_from_soname(os.path.basename(real))
                if pkg and (version is None or version.count(".") == 0):
                    version = pkg[1]  # wheel files are named libX.so.13: the wheel knows the full version
                found[real] = LibCopy(path, real, origin, version, pkg[0] if pkg else None)
        return list(found.values())

    def _listing(self, d: str) -> List[str]:
        """The names in directory ``d`` (sorted; no dot files, as glob), listed once per run: every probe
        asks for its own libraries in the same few large system directories."""
        names = self._dirs_listed.get(d)
        if names is None:
            names = self._dirs_listed[d] = [n for n in self.view.listdir(d) if not n.startswith(".")]
        return names

    def loader_pick(self, soname: str) -> Optional[str]:
        """The file ``dlopen(soname)`` would open from a binary without RPATH, or None."""
        trace = self.loader_trace(soname)
        return trace["path"] if trace else None

    def loader_trace(self, soname: str, loader: Optional[str] = None) -> Optional[dict]:
        """Like :meth:`loader_pick`, with why: ``{"path", "via": "LD_PRELOAD"|"/etc/ld.so.preload"|"DT_RPATH"|
        "LD_LIBRARY_PATH"|"DT_RUNPATH"|"ldconfig"|"default dirs", "entry": the LD_LIBRARY_PATH / RPATH / RUNPATH
        entry, preload entry or directory that holds it}``, plus ``"loader"`` (the object whose RPATH or RUNPATH
        applied) and ``"skipped"`` (``[{path, via, entry, elf_class, machine}]``: files of another ELF class or
        machine found first, which ld.so passes over), or None. ``loader``: the object that asks (its
        DT_RPATH / DT_RUNPATH are searched; ``$ORIGIN``, ``$LIB`` and ``$PLATFORM`` expanded)."""
        trace, skipped = self.loader_search(soname, loader)
        if trace is None:
            return None
        if loader and trace["via"] in ("DT_RPATH", "DT_RUNPATH"):
            trace["loader"] = loader
        if skipped:
            trace["skipped"] = skipped
        return trace

    def loader_search(self, soname: str, loader: Optional[str] = None) -> Tuple[Optional[dict], List[dict]]:
        """(:meth:`loader_trace` without ``skipped``, the files of another class or machine passed over):
        a trace of None with skipped files is what makes dlopen fail with "wrong ELF class"."""
        for path, entry, via in self.preload:
            if os.path.basename(path) == soname or self.file_info(path).get("soname") == soname:
                return {"path": path, "via": via, "entry": entry}, []
        rpath, runpath = [], []
        if loader:
            info = self.file_info(loader)
            runpath = _expand(info.get("runpath"), loader, self.view)
            rpath = [] if info.get("runpath") else _expand(info.get("rpath"), loader, self.view)
        skipped: list = []
        return self._search(soname, rpath, runpath, skipped), skipped

    def _search(self, soname: str, rpath: List[str], runpath: List[str], skipped: list) -> Optional[dict]:
        if "/" in soname:
            return {"path": soname, "via": "path", "entry": os.path.dirname(soname)}
        host = self.process_elf()
        order = [(d, "DT_RPATH") for d in rpath] + [(d, "LD_LIBRARY_PATH") for d in self.ld_library_path] + \
            [(d, "DT_RUNPATH") for d in runpath]
        cands = [(os.path.join(d, soname), via, d) for d, via in order]
        cands += [(e["path"], "ldconfig", os.path.dirname(e["path"])) for e in self.cache
                  if e["soname"] == soname and "x86-64" in e.get("arch", "x86-64")]
        cands += [(os.path.join(d, soname), "default dirs", d) for d in DEFAULT_DIRS]
        for cand, via, entry in cands:
            if not self.view.isfile(cand):
                continue
            info = self.file_info(cand)
            if info.get("kind") == "elf" and info.get("elf_class") and \
                    (info["elf_class"], info.get("machine")) != (host["elf_class"], host["machine"]):
                skipped.append({"path": cand, "via": via, "entry": entry, "elf_class": info["elf_class"],
                                "machine": info.get("machine")})
                continue
            return {"path": cand, "via": via, "entry": entry}
        return None


def _expand(value: Optional[str], loader: str, view=None) -> List[str]:
    """The directories of an RPATH/RUNPATH string, with ld.so's dynamic string tokens expanded."""
    view = view or _live()
    origin = os.path.dirname(view.realpath(loader) or loader)
    out = []
    for d in (value or "").split(":"):
        for token, repl in (("ORIGIN", origin), ("LIB", "lib/x86_64-linux-gnu" if view.isdir("/lib/x86_64-linux-gnu")
                                                 else "lib64"), ("PLATFORM", "x86_64")):
            d = d.replace("${%s}" % token, repl).replace("$" + token, repl)
        if d:
            out.append(d)
    return out


def index_for(ctx) -> LibraryIndex:
    """The run's shared :class:`LibraryIndex` (scanned once even when probes ask concurrently), of the system
    ``ctx.view`` names (this one when the context has no view)."""
    return ctx.memo("library-index", lambda: LibraryIndex(ctx.env, timeout=ctx.timeout, view=getattr(ctx, "view", None)))


def _live(env: Optional[Mapping[str, str]] = None):
    from gpudoctor.sysroot.view import live_view

    return live_view(env)


#: Where a root's Pythons keep their packages (Debian/Ubuntu dist-packages, python.org and pip's
#: site-packages, conda, NVIDIA's and PyTorch's images' /opt venvs); plus VIRTUAL_ENV and CONDA_PREFIX.
ROOT_SITE_GLOBS = ("/usr/lib/python3*/dist-packages", "/usr/local/lib/python3*/dist-packages",
                   "/usr/local/lib/python3*/site-packages", "/usr/lib/python3*/site-packages",
                   "/opt/conda/lib/python3*/site-packages", "/opt/*/lib/python3*/site-packages",
                   "/opt/*/.venv/lib/python3*/site-packages", "/root/.local/lib/python3*/site-packages",
                   "/home/*/.local/lib/python3*/site-packages")


def root_site_dirs(view) -> List[str]:
    """The site-packages directories of a root's Pythons (:data:`ROOT_SITE_GLOBS`, VIRTUAL_ENV and CONDA_PREFIX
    of its environment) and its PYTHONPATH entries, as its paths."""
    out: List[str] = list(view.path_list("PYTHONPATH"))
    for prefix in (view.env.get("VIRTUAL_ENV"), view.env.get("CONDA_PREFIX")):
        if prefix:
            out += view.glob(os.path.join(prefix, "lib", "python3*", "site-packages"))
    for pattern in ROOT_SITE_GLOBS:
        out += view.glob(pattern)
    seen: set = set()
    return [d for d in out if view.isdir(d) and not (d in seen or seen.add(d))]


def root_ld_cache(view, problems: Optional[list] = None) -> List[dict]:
    """The entries of a root's own ``/etc/ld.so.cache``, parsed from the file (nothing of the root is run);
    [] when it has none. An unreadable or malformed cache is appended to ``problems``."""
    host = view.host("/etc/ld.so.cache")
    if not host or not view.isfile("/etc/ld.so.cache"):
        return []
    try:
        from gpudoctor.formats.ld_so_cache import LdCacheError, read_ld_so_cache
    except ImportError:  # the parser is part of this package: only a broken install lacks it
        return []
    try:
        return read_ld_so_cache(host)
    except (LdCacheError, OSError) as exc:
        if problems is not None:
            from gpudoctor.process import problems as P

            problems.append(P.record("/etc/ld.so.cache", "unparsable", f"the root's /etc/ld.so.cache cannot be read: {exc}"))
        return []
