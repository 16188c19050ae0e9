"""The CUDA toolkits of a Linux root on disk, read from their files (nothing in them is executed): each toolkit's
own version files, the nvcc a shell of the root runs (launcher scripts followed), nvcc's own version line read
from the binary, its nvcc.profile, its host_config.h bounds, and the gcc a shell of the root would run."""
from __future__ import annotations

import json
import os
import re
from typing import Dict, List, Optional


def _host_config(view, home: str) -> Optional[dict]:
    """The host-compiler bounds the toolkit's nvcc enforces (``crt/host_config.h``: max_gcc, max_clang, ...)."""
    from gpudoctor.formats.nvcc import parse_host_config

    for inc in ("targets/x86_64-linux/include", "targets/sbsa-linux/include", "include"):
        path = os.path.join(home, inc, "crt", "host_config.h")
        text = view.read_text(path, 1 << 20)
        if text:
            return dict(parse_host_config(text), path=path)
    return None


_GCC_NAME = re.compile(r"^(?:[\w-]+-)?g(?:cc|\+\+)-(\d+)$")


def _host_compilers(view) -> dict:
    """``{"gcc": {"path", "realpath", "major", "major_from"} | None, "installed_gcc_majors": [11, 12],
    "gxx_by_major": {"11": "/usr/bin/g++-11"}, "ccbin": NVCC_CCBIN}``: the gcc a shell of the root runs and its
    major from its file name (gcc-12, x86_64-linux-gnu-gcc-12), else from the one /usr/lib/gcc/<triplet>/<N>
    directory there is; nothing is run."""
    majors = sorted({int(n) for base in view.glob("/usr/lib/gcc/*") for n in view.listdir(base) if n.isdigit()})
    gcc = view.which("gcc")
    facts = None
    if gcc:
        real = view.realpath(gcc) or gcc
        m = next((m for m in (_GCC_NAME.match(os.path.basename(p)) for p in (real, gcc)) if m), None)
        major, why = (int(m.group(1)), f"its file name {os.path.basename(real)}") if m else \
            ((majors[0], "the one /usr/lib/gcc/<triplet>/<N> there is") if len(majors) == 1 else (None, None))
        facts = {"path": gcc, "realpath": real, "major": major, "major_from": why}
    gxx = {}
    for mj in majors:
        found = view.which(f"g++-{mj}")
        if found:
            gxx[str(mj)] = found
    return {"gcc": facts, "installed_gcc_majors": majors, "gxx_by_major": gxx, "ccbin": view.env.get("NVCC_CCBIN")}


_NVCC_SAYS = re.compile(rb"Cuda compilation tools, release (\d{1,2}\.\d{1,2}), V(\d{1,2}\.\d{1,2}\.\d{1,4})")
#: Largest nvcc binary searched for its own version line (bytes; CUDA 13.0's is 30 MB).
MAX_NVCC_BYTES = 256 << 20


def nvcc_says(view, nvcc: str) -> Optional[dict]:
    """``{"release": "11.8", "version": "11.8.89"}``: the line ``nvcc --version`` prints, read from the nvcc
    binary itself (it is a string in the program), so nothing is run; None when it is not there."""
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


def _profile_path(view, nvcc: str) -> List[str]:
    """The directories nvcc.profile puts on PATH for nvcc's own children (``PATH += dir:``; Debian's nvcc adds its
    bin dir, where a gcc wrapper picks the host compiler)."""
    text = view.read_text(os.path.join(os.path.dirname(view.realpath(nvcc) or nvcc), "nvcc.profile"), 64 << 10) or ""
    out = []
    for m in re.finditer(r"^\s*PATH\s*\+=\s*(\S+)", text, re.M):
        out += [d for d in m.group(1).split(":") if d and "$" not in d]
    return out


def _toolkits(view) -> List[dict]:
    """Each toolkit once (``/usr/local/cuda`` and ``cuda-13`` are usually links to ``cuda-13.0``): the first
    name, with the others in ``aliases``; then the toolkit of the nvcc first on PATH when it is none of them
    (a distribution's, e.g. Debian's ``/usr/bin/nvcc``). ``nvcc`` is the path a shell of the root runs when it
    is that toolkit's, ``nvcc_says`` its own version line, ``host_compiler_dirs`` what its nvcc.profile puts on
    PATH before the user's (a gcc there is the host compiler, not the one on PATH)."""
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
                         "nvcc_path": nvcc if has_nvcc else None, "nvcc_says": said,
                         "host_config": _host_config(view, home),
                         "host_compiler_dirs": [d for d in _profile_path(view, os.path.join(home, "bin", "nvcc"))
                                                if view.isfile(os.path.join(d, "gcc"))]
                         if has_nvcc else []}
        out.append(by_real[real])
    return out


def toolkit_facts(root_facts: dict) -> dict:
    """The live toolkit probe's shape for the rules that need only nvcc's release (``{"toolkits": [{"nvcc",
    "release"}]}``), from a root's toolkits."""
    return {"toolkits": [{"nvcc": t["nvcc_path"], "release": t["version"]} for t in root_facts.get("toolkits") or []
                         if t.get("nvcc_path") and t.get("version")]}


