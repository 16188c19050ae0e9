"""Host C/C++ compilers: the default ones, every versioned g++-N / clang++-N, and the variables
that make nvcc or CMake pick another (CUDAHOSTCXX, NVCC_CCBIN, CC, CXX)."""
from __future__ import annotations

import glob
import os
import re
import shutil
from concurrent.futures import ThreadPoolExecutor

from gpudoctor.formats import compilers as compilers_fmt
from gpudoctor.probes import facts as typed
from gpudoctor.probes import facts_toolkit as ft
from gpudoctor.process.subproc import run

_VERSIONED = re.compile(r"^(g\+\+|clang\+\+)-(\d+)(?:\.\d+)?$")


def _version(path: str, timeout: float, env=None):
    """(version as printed, error, problem record): what ``path --version`` says, or why it said nothing
    usable; the version is validated by :class:`ft.Compiler`."""
    res = run([path, "--version"], timeout=timeout, env=env)
    text = res.stdout if res.ok else ""
    v = (compilers_fmt.parse_clang_version(text) if "clang" in text.lower() else compilers_fmt.parse_gcc_version(text)) if text else None
    if v:
        return v, None, None
    rec = res.problem(unparsable="compiler version")
    return None, rec["what"] if rec else "no version", rec


def probe(ctx) -> dict:
    """:class:`ft.CompilerFacts`'s dict: ``{"default": {name: {path, version, kind, error, problems}},
    "versioned": [{path, kind, major}], "env": {CUDAHOSTCXX, NVCC_CCBIN, CC, CXX}}`` (+ ``problems`` when a
    version was rejected: one a compiler printed, or a versioned file name's major)."""
    path = ctx.env.get("PATH", "")
    names = ["gcc", "g++", "clang", "clang++"]
    located = {n: shutil.which(n, path=path) for n in names}
    with ThreadPoolExecutor(max_workers=4) as pool:
        versions = dict(zip(names, pool.map(
            lambda n: _version(located[n], ctx.timeout, ctx.env) if located[n] else (None, None, None), names)))
    problems: list = []  # rejected values: reported as probe.implausible_value only, never compiler.broken
    default = {
        n: ft.Compiler.parse(located[n], "clang" if n.startswith("clang") else "gnu", versions[n][0], versions[n][1],
                             [versions[n][2]] if versions[n][2] else [], problems)
        for n in names if located[n]
    }
    versioned, seen = [], set()
    for d in path.split(os.pathsep):
        for p in sorted(glob.glob(os.path.join(d, "g++-*")) + glob.glob(os.path.join(d, "clang++-*"))):
            m = _VERSIONED.match(os.path.basename(p))
            if m and os.access(p, os.X_OK) and os.path.basename(p) not in seen:
                seen.add(os.path.basename(p))
                major = typed.Origin(p, "its file name", problems).take(ft.compiler_major, int(m.group(2)), "g++-N / clang++-N (N)")
                if major is not None:
                    versioned.append(ft.VersionedCompiler(p, "gnu" if m.group(1) == "g++" else "clang", major))
    env = {k: ctx.env[k] for k in ("CUDAHOSTCXX", "NVCC_CCBIN", "CC", "CXX") if ctx.env.get(k)}
    return ft.CompilerFacts(default, versioned, env, problems).to_dict()
