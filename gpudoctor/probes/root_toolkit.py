"""The CUDA toolkits of a Linux root on disk, read from their files (nothing in them is executed): each toolkit's
own version files, the nvcc a shell of the root runs (launcher scripts followed), nvcc's own version line read
from the binary, its nvcc.profile, its host_config.h bounds, and the gcc a shell of the root would run."""
from __future__ import annotations

import json
import os
import re
from typing import Dict, List, Optional, Tuple


_GCC_NAME = re.compile(r"^(?:[\w-]+-)?g(?:cc|\+\+)-(\d+)$")


_NVCC_SAYS = re.compile(rb"Cuda compilation tools, release (\d{1,2}\.\d{1,2}), V(\d{1,2}\.\d{1,2}\.\d{1,4})")
#: Largest nvcc binary searched for its own version line (bytes; CUDA 13.0's is 30 MB).
MAX_NVCC_BYTES = 256 << 20


def nvcc_says(view, nvcc: str) -> Optional[dict]:
    """``{"release": "11.8", "version": "11.8.89"}``: the line ``nvcc --version`` (or ``ptxas --version``) prints,
    read from the binary itself (it is a string in the program), so nothing is run; None when it is not there."""
    import mmap

    host = view.host(nvcc) if view.isfile(nvcc) else None
    if not host:
        return None
    try:
        with open(host, "rb") as fh:
            if os.fstat(fh.fileno()).st_size > MAX_NVCC_BYTES or os.fstat(fh.fileno()).st_size == 0:
                return None
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as m:
                found = _NVCC_SAYS.search(m)
                said = {"release": found.group(1).decode(), "version": found.group(2).decode()} if found else None
    except (OSError, ValueError):
        return None
    return said


_EXEC = re.compile(r'^\s*exec\s+"?(/[^\s"]+)"?\s+(?:"\$@"|\$@|\$\*)\s*$', re.M)


def launched(view, path: str, hops: int = 4) -> str:
    """The program a launcher script runs (a small ``#!`` script whose work is ``exec /abs/nvcc "$@"``, as module
    systems and installers put on PATH), followed up to ``hops`` times; ``path`` itself otherwise. Read, never run."""
    for _ in range(hops):
        head = view.read_bytes(path, 4096) if view.isfile(path) else None
        if not head or not head.startswith(b"#!") or (view.stat(path).st_size > 4096):
            return path
        m = _EXEC.search(head.decode("utf-8", errors="replace"))
        if not m:
            return path
        path = m.group(1)
    return path


def _toolkits(view) -> List[dict]:
    """Each toolkit once (``/usr/local/cuda`` and ``cuda-13`` are usually links to ``cuda-13.0``): the first
    name, with the others in ``aliases``; then the toolkit of the nvcc first on PATH when it is none of them
    (a distribution's, e.g. Debian's ``/usr/bin/nvcc``). ``nvcc`` is the path a shell of the root runs when it
    is that toolkit's, ``nvcc_says`` its own version line."""
    out = []
    by_real: Dict[str, dict] = {}
    homes = view.glob("/usr/local/cuda*")
    named: Dict[str, str] = {}  # the nvcc a PATH entry runs (a launcher followed, links resolved) -> that name
    for d in view.path_list("PATH"):  # every nvcc on PATH, as the live toolkit probe asks each of them
        cand = os.path.join(d, "nvcc")
        if not view.isfile(cand):
            continue
        real = view.realpath(launched(view, cand)) or cand
        named.setdefault(real, cand)
        if not any(real.startswith((view.realpath(h) or h) + "/") for h in homes):
            homes.append(os.path.dirname(os.path.dirname(real)))
    for home in homes:
        if not view.isdir(home):
            continue
        real = view.realpath(home)
        if real in by_real:
            by_real[real].setdefault("aliases", []).append(home)
            continue
        version = None
        raw = view.read_text(os.path.join(home, "version.json"), 1 << 20)
        if raw:
            try:
                version = ((json.loads(raw).get("cuda") or {}).get("version"))
            except (ValueError, AttributeError):
                version = None
        if version is None:  # a toolkit without version.json (pip-assembled ones): its runtime header says
            from gpudoctor.formats.tensorrt_header import parse_cudart_h_version

            version = parse_cudart_h_version(view.read_text(os.path.join(home, "include", "cuda_runtime_api.h"), 1 << 20) or "")
        nvcc = os.path.join(home, "bin", "nvcc")
        has_nvcc = view.isfile(nvcc)
        said = nvcc_says(view, nvcc) if has_nvcc else None
        if version is None and said:
            version = said["release"]
        if has_nvcc:
            nvcc = named.get(view.realpath(nvcc) or nvcc, nvcc)  # as a shell of the root names it (a launcher, a link)
        by_real[real] = {"home": home, "realpath": real, "version": version, "nvcc": has_nvcc,
                         "nvcc_path": nvcc if has_nvcc else None, "nvcc_says": said}
        out.append(by_real[real])
    return out


def _release(said: Optional[dict], version: Optional[str]) -> Optional[str]:
    """What ``nvcc --version`` says as the release ("12.6"): its own line, else the toolkit's version file cut to
    major.minor (version.json may say "12.6.3" or "12.6.20241114")."""
    if said:
        return said["release"]
    parts = (version or "").split(".")
    return f"{parts[0]}.{parts[1]}" if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit() else None


def _nvcc_candidates(view) -> List[Tuple[str, str]]:
    """[(path, found_via)] in the live probe's order (:func:`gpudoctor.probes.toolkit.nvcc_candidates`): the
    root's PATH, CUDA_HOME/CUDA_PATH/CUDA_ROOT, then the well-known dirs; one per file."""
    found, seen = [], set()

    def add(path: str, via: str) -> None:
        host = view.host(path) if view.isfile(path) else None
        if host and os.access(host, os.X_OK):
            real = view.realpath(path) or path
            if real not in seen:
                seen.add(real)
                found.append((path, via))

    for d in view.path_list("PATH"):
        add(os.path.join(d, "nvcc"), "PATH")
    for var in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"):
        if view.env.get(var):
            add(os.path.join(view.env[var], "bin", "nvcc"), var)
    for home in sorted(view.glob("/usr/local/cuda*")) + sorted(view.glob("/opt/cuda*")):
        add(os.path.join(home, "bin", "nvcc"), "well-known dir")
    add("/usr/bin/nvcc", "well-known dir")
    add("/usr/lib/nvidia-cuda-toolkit/bin/nvcc", "well-known dir")
    return found


_CHOICE = re.compile(r"^\s*(?:if|elif)\s+([\w.+-]+)\s+--version\s*>\s*/dev/null\s+2>&1\s*;\s*then\s*\n\s*prog=([\w.+-]+)\s*$", re.M)


def _chooser_pick(view, script: str, dirs: List[str]) -> Optional[str]:
    """A compiler-picking wrapper script (Debian's nvidia-cuda-toolkit gcc: ``if g++-11 --version >/dev/null 2>&1;
    then prog=gcc-11 ... exec $prog "$@"``): the ``prog`` of the first test whose program is on ``dirs``. That
    the test program is there stands in for its answering ``--version``. None when the script is not of that
    shape or picks nothing."""
    text = (view.read_bytes(script, 16 << 10) or b"").decode("utf-8", "replace")
    if not text.startswith("#!") or not re.search(r'^\s*exec\s+\$prog\s+"\$@"\s*$', text, re.M):
        return None
    for test, prog in _CHOICE.findall(text):
        if view.which(test, dirs) and view.which(prog, dirs):
            return view.which(prog, dirs)
    return None


def _runs(view, path: str, dirs: List[str]) -> Tuple[str, str]:
    """(the program ``path`` ends up running, how that was read): launcher scripts and compiler-picking wrappers
    followed, links resolved."""
    target = launched(view, path)
    how = "its file" if target == path else f"the launcher script {path}"
    picked = _chooser_pick(view, target, dirs)
    if picked:
        target, how = launched(view, picked), f"the wrapper script {target}, which picks {os.path.basename(picked)}"
    return view.realpath(target) or target, how


def _compiler_version(view, real: str) -> Tuple[Optional[str], str]:
    """(gcc's version as ``gcc --version`` prints it, where it was read): from the binary's own strings, else the
    major of its versioned file name (gcc-12); (None, why) when neither says."""
    from gpudoctor.formats.compilers import gcc_version_in_binary

    host = view.host(real) if view.isfile(real) else None
    if host and os.path.getsize(host) <= MAX_NVCC_BYTES:
        with open(host, "rb") as fh:
            said = gcc_version_in_binary(fh.read())
        if said:
            return said["version"], f"read from {real} (gcc --version's strings)"
    m = _GCC_NAME.match(os.path.basename(real))
    if m:
        return m.group(1), f"the major of its file name {os.path.basename(real)}"
    return None, f"{real} says no gcc version in its files"


def _include_dirs(env: Dict[str, str], home: str) -> List[str]:
    """Where nvcc's ``crt/host_config.h`` is, in the live probe's order: nvcc.profile's ``-I``, the toolkit's
    include dirs, and /usr/include for Debian's packaging (:func:`gpudoctor.probes.toolkit._include_dir`)."""
    m = re.search(r'-I"?([^"\s]+)', env.get("INCLUDES", ""))
    out = ([os.path.normpath(m.group(1))] if m else []) + [os.path.join(home, "include"),
                                                            os.path.join(home, "targets", "x86_64-linux", "include")]
    if home.startswith("/usr/lib/nvidia-cuda-toolkit"):
        out.append("/usr/include")
    return out


_NVCC_ENV = (b"NVCC_PREPEND_FLAGS", b"NVCC_APPEND_FLAGS", b"NVCC_CCBIN")


def _ccbin(view, nvcc_real: str) -> Tuple[str, str]:
    """(the host compiler command nvcc runs, why): ``-ccbin`` in NVCC_PREPEND_FLAGS / NVCC_APPEND_FLAGS, else
    NVCC_CCBIN, each only when the nvcc binary names that variable (nvcc 11.8 has no NVCC_CCBIN and ignores it:
    its dry run still runs gcc), else "gcc" from its PATH."""
    import mmap

    host = view.host(nvcc_real) if view.isfile(nvcc_real) else None
    known = set()
    try:
        with open(host or "", "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            known = {name.decode() for name in _NVCC_ENV if mm.find(name) >= 0}
    except (OSError, ValueError):
        pass
    for var in ("NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS"):
        m = re.search(r"(?:-ccbin|--compiler-bindir)(?:=|\s+)(\S+)", view.env.get(var) or "")
        if m and var in known:
            return m.group(1).strip("'\""), f"-ccbin in {var}"
    if view.env.get("NVCC_CCBIN") and "NVCC_CCBIN" in known:
        return view.env["NVCC_CCBIN"], "NVCC_CCBIN"
    ignored = [v for v in _NVCC_ENV if view.env.get(v.decode()) and v.decode() not in known]
    return "gcc", "nvcc's PATH" + (f" ({', '.join(v.decode() for v in ignored)} set, but this nvcc does not read it)"
                                   if ignored else "")


def _live_toolkit(view, path: str, via: str, record: dict, problems: list) -> dict:
    """One nvcc in the live probe's shape (:class:`gpudoctor.probes.facts_toolkit.Toolkit`), from files: nvcc's
    own PATH after its nvcc.profile picks the host compiler and ptxas, as ``nvcc --dryrun`` would show."""
    from gpudoctor.formats.nvcc import parse_host_config
    from gpudoctor.formats.nvcc_profile import apply_profile
    from gpudoctor.probes import facts as typed
    from gpudoctor.probes import facts_toolkit as ft

    real = view.realpath(launched(view, path)) or path
    here = os.path.dirname(real)
    home = os.path.dirname(here)
    said = record.get("nvcc_says")
    own: List[dict] = []
    release = typed.Origin(real, "its version line, read from the file", own).take(
        ft.nvcc_release, _release(said, record.get("version")), "nvcc's release")
    env = apply_profile(view.read_text(os.path.join(here, "nvcc.profile"), 64 << 10), view.env, here)
    dirs = [d for d in env.get("PATH", "").split(":") if d]
    command, command_from = _ccbin(view, real)
    host_path = command if command.startswith("/") else view.which(command, dirs)
    if host_path and view.isdir(host_path):  # -ccbin DIR: nvcc runs the gcc there
        host_path = os.path.join(host_path, "gcc")
    kind = "clang" if "clang" in os.path.basename(command) else "gnu"
    raw_host = {"command": command, "command_from": command_from, "path": host_path, "kind": kind,
                "version_in_dryrun": None, "ccbin_from_env": view.env.get("NVCC_CCBIN")}
    version, asked = None, None
    if host_path and kind == "gnu":
        runs, how = _runs(view, host_path, dirs)
        version, asked = _compiler_version(view, runs)
        raw_host.update(runs=runs, runs_from=how)
    host = ft.HostCompiler.parse(raw_host, version, asked, real)
    hc = None
    for inc in _include_dirs(env, home):
        cfg = os.path.join(inc, "crt", "host_config.h")
        text = view.read_text(cfg, 1 << 20)
        if text is not None:
            hc = ft.HostConfig.parse(dict(parse_host_config(text), path=cfg), typed.Origin(cfg, f"read for {path}", own))
            break
    ptxas_path = view.which("ptxas", dirs)
    raw = {"nvcc": path, "nvcc_realpath": view.realpath(path) or path, "found_via": via, "release": release,
           "version": (said or {}).get("version") or record.get("version"), "build": None, "home": home,
           "home_from": "nvcc's own directory, read from the files", "errors": [], "problems": own,
           "host_compiler": host, "include_dir": os.path.dirname(os.path.dirname(hc.path)) if hc else None,
           "gpu_codes": None}
    if hc:
        raw["host_config"] = hc
    if ptxas_path:
        raw["ptxas"] = ft.Ptxas.parse(dict(nvcc_says(view, view.realpath(launched(view, ptxas_path)) or ptxas_path) or {},
                                           path=ptxas_path, realpath=view.realpath(ptxas_path) or ptxas_path),
                                      typed.Origin(ptxas_path, "its version line, read from the file", own))
    problems += own
    return ft.Toolkit(release, host, raw.get("ptxas"), hc, raw).to_dict()


def toolkit_facts(view, records: List[dict]) -> dict:
    """The live toolkit probe's facts (``{"toolkits": [...], "on_path", "ptxas_on_path"}``, see
    :class:`gpudoctor.probes.facts_toolkit.ToolkitFacts`) for the root's nvccs, read from their files, so the live
    rules (compiler bounds, mixed toolkits, the inventory, PTX against the driver) judge them. An nvcc whose
    release no file says is left out, with a problem record."""

    by_home = {r["realpath"]: r for r in records if r.get("realpath")}
    out, homes, problems = [], set(), []
    for path, via in _nvcc_candidates(view):
        real = view.realpath(launched(view, path)) or path
        home = os.path.dirname(os.path.dirname(real))
        if home in homes:
            continue
        homes.add(home)
        record = by_home.get(home) or {"nvcc_says": nvcc_says(view, real)}
        if not _release(record.get("nvcc_says"), record.get("version")):
            from gpudoctor.process.problems import record as problem

            problems.append(problem(path, "unparsable", f"{path}: no file says its release (no version line in the "
                                                        "binary, no version.json or cuda_runtime_api.h beside it)"))
            continue
        out.append(_live_toolkit(view, path, via, record, problems))
    on_path = view.which("nvcc")
    ptxas = view.which("ptxas")
    ptxas_on_path = None
    if ptxas and (view.realpath(ptxas) or ptxas) not in {(t.get("ptxas") or {}).get("realpath") for t in out}:
        said = nvcc_says(view, view.realpath(launched(view, ptxas)) or ptxas) or {}
        ptxas_on_path = dict(said, path=ptxas, problems=[])
    facts = {"toolkits": out, "on_path": on_path, "ptxas_on_path": ptxas_on_path}
    if problems:
        facts["problems"] = problems
    return facts


_VERSIONED = re.compile(r"^(g\+\+|clang\+\+)-(\d+)(?:\.\d+)?$")


def compilers_facts(view) -> dict:
    """The live compilers probe's facts (:class:`gpudoctor.probes.facts_toolkit.CompilerFacts`) from the root's
    files: gcc and g++ first on its PATH with the version their binaries carry, and every ``g++-N`` /
    ``clang++-N`` on PATH (the fixes offer them)."""
    from gpudoctor.probes import facts as typed
    from gpudoctor.probes import facts_toolkit as ft

    rejected: List[dict] = []
    default = {}
    for name in ("gcc", "g++", "clang", "clang++"):
        path = view.which(name)
        if not path:
            continue
        kind = "clang" if name.startswith("clang") else "gnu"
        version = _compiler_version(view, _runs(view, path, view.path_list("PATH"))[0])[0] if kind == "gnu" else None
        error = None if version else "its version is not read from files (it would have to run)"
        default[name] = ft.Compiler.parse(path, kind, version, error, [], rejected)
    versioned, seen = [], set()
    for d in view.path_list("PATH"):
        for name in sorted(view.listdir(d)):
            m = _VERSIONED.match(name)
            if m and name not in seen and view.which(name, [d]):
                seen.add(name)
                major = typed.Origin(os.path.join(d, name), "its file name", rejected).take(
                    ft.compiler_major, int(m.group(2)), "g++-N / clang++-N (N)")
                if major is not None:
                    versioned.append(ft.VersionedCompiler(os.path.join(d, name), "gnu" if m.group(1) == "g++" else "clang", major))
    env = {k: view.env[k] for k in ("CUDAHOSTCXX", "NVCC_CCBIN", "CC", "CXX") if view.env.get(k)}
    return ft.CompilerFacts(default, versioned, env, rejected).to_dict()
