"""Host C/C++ compilers: the default ones, every versioned g++-N / clang++-N, and the variables
that make nvcc or CMake pick another (CUDAHOSTCXX, NVCC_CCBIN, CC, CXX)."""
from __future__ import annotations

import glob
import os
import re
import shutil
from concurrent.futures import ThreadPoolExecutor

from gpudoctor import parsers
from gpudoctor.subproc import run

_VERSIONED = re.compile(r"^(g\+\+|clang\+\+)-(\d+)(?:\.\d+)?$")


def _version(path: str, timeout: float):
    res = run([path, "--version"], timeout=timeout)
    if not res.ok:
        return None, res.error or res.output[-200:]
    text = res.stdout
    v = parsers.parse_clang_version(text) if "clang" in text.lower() else parsers.parse_gcc_version(text)
    return v, None


def probe(ctx) -> dict:
    """``{"default": {name: {path, version, kind, error}}, "versioned": [{path, kind, major}],
    "env": {CUDAHOSTCXX, NVCC_CCBIN, CC, CXX}}``."""
    path = ctx.env.get("PATH", "")
    names = ["gcc", "g++", "clang", "clang++"]
    located = {n: shutil.which(n, path=path) for n in names}
    with ThreadPoolExecutor(max_workers=4) as pool:
        versions = dict(zip(names, pool.map(lambda n: _version(located[n], ctx.timeout) if located[n] else (None, None), names)))
    default = {
        n: {"path": located[n], "version": versions[n][0], "error": versions[n][1],
            "kind": "clang" if n.startswith("clang") else "gnu"}
        for n in names if located[n]
    }
    versioned, seen = [], set()
    for d in path.split(os.pathsep):
        for p in sorted(glob.glob(os.path.join(d, "g++-*")) + glob.glob(os.path.join(d, "clang++-*"))):
            m = _VERSIONED.match(os.path.basename(p))
            if m and os.access(p, os.X_OK) and os.path.basename(p) not in seen:
                seen.add(os.path.basename(p))
                versioned.append({"path": p, "kind": "gnu" if m.group(1) == "g++" else "clang", "major": int(m.group(2))})
    env = {k: ctx.env[k] for k in ("CUDAHOSTCXX", "NVCC_CCBIN", "CC", "CXX") if ctx.env.get(k)}
    return {"default": default, "versioned": sorted(versioned, key=lambda v: (v["kind"], v["major"])), "env": env}
