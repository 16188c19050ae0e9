"""Typed facts of the toolkit and compilers probes, validated where they are parsed (as :mod:`gpudoctor.probes.facts`).

A value a tool printed is kept only when plausible; a rejected one is ``None`` in the facts and an ``implausible``
problem record naming the tool that printed it (``Origin.take``), reported as ``probe.implausible_value``.
Where it lands decides what else is said: an nvcc or ptxas release rejected goes to the toolkit's (or
``ptxas_on_path``'s) problems, as a toolkit with no usable release is one that could not be asked
(``toolkit.broken``); a compiler version rejected goes to a list no compiler rule reads (``host_compiler``'s or
the compilers probe's own ``problems``, present only then), so it is a probe error and nothing else: the
compiler's other answers (the dry run's ``--gnu_version``) are not trusted in its place and no ``compiler.*``
finding is built. ``to_dict()`` gives today's JSON shape (docs/json-report.md); unknown keys pass through.

Plausible, from the tools' own numbering (structure only, never the matrix):

* nvcc / ptxas release: ``major.minor``, major 1-20, minor 0-9 (:func:`gpudoctor.probes.facts.cuda_version`);
* gcc / clang version (``--version``, ``-dumpfullversion``, nvcc's ``--gnu_version=120200``): ``N[.N[.N]]``,
  major 1-99, minor and patch 0-999 (gcc 2.95 ... 15.x, clang 3.x ... 21.x, NVHPC 24.5);
* host_config.h bounds: gcc and clang majors 1-99; MSVC ``_MSC_VER`` 1200-1999 (VS 6.0 ... VS 2022 is 1949);
* a ``g++-N`` / ``clang++-N`` file name's N: 1-99.
"""
from __future__ import annotations

import re
from gpudoctor.probes.record import factclass, field
from typing import Dict, List, Optional

from gpudoctor.probes.facts import Implausible, Origin, cuda_version

_COMPILER = re.compile(r"(\d{1,2})(?:\.(\d{1,3})){0,2}")


def nvcc_release(value) -> str:
    """``"13.0"``; raises :class:`Implausible` outside major 1-20, minor 0-9 (``"0.0"`` from a wrapper)."""
    return cuda_version(value)


def compiler_version(value) -> str:
    """``"12.2.0"``, ``"12"`` or ``"14.0.6"`` as given; raises :class:`Implausible` for a major 0 or past 99,
    more than three parts, or anything not dotted digits."""
    text = value.strip() if isinstance(value, str) else None
    if not text or not _COMPILER.fullmatch(text) or int(text.split(".")[0]) < 1:
        raise Implausible(value, "a gcc or clang version (major 1-99, e.g. 12.2.0)")
    return text


def compiler_major(value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 99:
        raise Implausible(value, "a compiler major version (1-99)")
    return value


def msvc_version(value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1200 <= value <= 1999:
        raise Implausible(value, "an MSVC _MSC_VER (1200-1999, e.g. 1949)")
    return value


#: The ``via`` of a compiler's own version answer: one wording for both probes, so one file's rejected answers
#: are one ``probe.implausible_value`` finding.
ASKED_VERSION = "asked for its version"


def _without(raw: dict, typed) -> Dict[str, object]:
    return {k: v for k, v in raw.items() if k not in typed}


@factclass
class HostCompiler:
    """The host compiler one nvcc runs (``describe_nvcc``): ``command`` as nvcc names it, ``path`` on nvcc's PATH,
    ``kind`` gnu | clang, ``version_seen_by_nvcc`` what that compiler says of itself (else the dry run's),
    ``version_in_dryrun`` nvcc's ``--gnu_version``/``--clang_version`` as ``"12.2.0"``; ``problems`` the
    rejected versions (in the dict only when there is one)."""

    command: Optional[str]
    path: Optional[str]
    kind: Optional[str]
    version_seen_by_nvcc: Optional[str]
    version_in_dryrun: Optional[str]
    problems: List[dict] = field(default_factory=list)
    extra: Dict[str, object] = field(default_factory=dict)  # ccbin_from_env, extra_flags

    @classmethod
    def parse(cls, raw: dict, own_version, asked: Optional[str], nvcc: str) -> "HostCompiler":
        """``own_version`` is what the compiler printed to ``asked`` (e.g. ``"gcc -dumpfullversion -dumpversion"``);
        the dry run's value (printed by ``nvcc``) stands in only when the compiler printed nothing, never when
        what it printed was rejected."""
        problems: List[dict] = []
        dry = Origin(nvcc, "nvcc --dryrun", problems).take(compiler_version, raw.get("version_in_dryrun"),
                                                           "nvcc --dryrun (the host compiler's version)")
        mine = Origin(raw.get("path"), ASKED_VERSION, problems).take(compiler_version, own_version, asked or "?")
        seen = mine if own_version is not None else dry
        return cls(raw.get("command"), raw.get("path"), raw.get("kind"), seen, dry, problems,
                   _without(raw, ("command", "path", "kind", "version_seen_by_nvcc", "version_in_dryrun")))

    def to_dict(self) -> dict:
        out = {"command": self.command, "path": self.path, "kind": self.kind,
               "version_seen_by_nvcc": self.version_seen_by_nvcc, "version_in_dryrun": self.version_in_dryrun,
               **self.extra}
        if self.problems:
            out["problems"] = self.problems
        return out


@factclass
class Ptxas:
    """A ptxas and what its ``--version`` said: ``release`` ("13.0"), ``version``/``build`` as printed (in
    ``extra``, with ``realpath``, and ``problems`` for ``ptxas_on_path``). ``release`` is absent from the dict
    when ptxas printed no banner, as before."""

    path: Optional[str]
    release: Optional[str]
    said_release: bool
    extra: Dict[str, object] = field(default_factory=dict)

    @classmethod
    def parse(cls, raw: dict, origin: Origin) -> "Ptxas":
        return cls(raw.get("path"), origin.take(nvcc_release, raw.get("release"), "ptxas --version (release)"),
                   "release" in raw, _without(raw, ("path", "release")))

    def to_dict(self) -> dict:
        out = {"path": self.path, **self.extra}
        if self.said_release:
            out["release"] = self.release
        return out


@factclass
class HostConfig:
    """Host-compiler bounds from a toolkit's ``crt/host_config.h`` (inclusive; MSVC as ``_MSC_VER``), ``path``."""

    path: str
    bounds: Dict[str, Optional[int]]
    KINDS = {"gcc": compiler_major, "clang": compiler_major, "msvc": msvc_version}

    @classmethod
    def parse(cls, raw: dict, origin: Origin) -> "HostConfig":
        bounds = {}
        for key, value in raw.items():
            if key == "path":
                continue
            check = cls.KINDS.get(key.rpartition("_")[2])
            bounds[key] = origin.take(check, value, f"crt/host_config.h ({key})") if check else value
        return cls(raw.get("path"), bounds)

    def to_dict(self) -> dict:
        return dict(self.bounds, path=self.path)


@factclass
class Toolkit:
    """One nvcc (``describe_nvcc``): ``release`` ("13.0"), ``host_compiler``, ``ptxas``, ``host_config``;
    ``raw`` the rest in today's order (nvcc, home, version and build as printed, gpu_codes, errors, problems,
    differential). A key the probe never filled (an nvcc that could not be asked) stays absent."""

    release: Optional[str]
    host_compiler: Optional[HostCompiler]
    ptxas: Optional[Ptxas]
    host_config: Optional[HostConfig]
    raw: Dict[str, object]

    def to_dict(self) -> dict:
        out = dict(self.raw)
        for key in ("release", "host_compiler", "ptxas", "host_config"):
            if key in out:
                value = getattr(self, key)
                out[key] = value.to_dict() if hasattr(value, "to_dict") else value
        return out


@factclass
class ToolkitFacts:
    """The toolkit probe's facts: ``toolkits`` (the PATH's first), ``on_path`` the nvcc PATH finds,
    ``ptxas_on_path`` a ptxas first on PATH that no nvcc here runs, or None."""

    toolkits: List[Toolkit]
    on_path: Optional[str]
    ptxas_on_path: Optional[Ptxas]

    def to_dict(self) -> dict:
        return {"toolkits": [t.to_dict() for t in self.toolkits], "on_path": self.on_path,
                "ptxas_on_path": self.ptxas_on_path.to_dict() if self.ptxas_on_path else None}


@factclass
class Compiler:
    """A default compiler first on PATH (gcc, g++, clang, clang++): ``version`` from ``--version``, or None with
    ``error`` saying why (it printed none, or an implausible one) and the record in ``problems``."""

    path: str
    version: Optional[str]
    error: Optional[str]
    kind: str
    problems: List[dict]

    @classmethod
    def parse(cls, path: str, kind: str, printed, error: Optional[str], problems: List[dict],
              rejected: List[dict]) -> "Compiler":
        """``printed`` the version ``path --version`` printed, ``error``/``problems`` why it printed none;
        a rejected version is appended to ``rejected`` (the probe's own list) and its sentence is ``error``."""
        origin = Origin(path, ASKED_VERSION, rejected)
        version = origin.take(compiler_version, printed, f"{path.rsplit('/', 1)[-1]} --version")
        if printed is not None and version is None:
            error = rejected[-1]["what"]
        return cls(path, version, error, kind, problems)

    def to_dict(self) -> dict:
        return {"path": self.path, "version": self.version, "error": self.error, "kind": self.kind,
                "problems": self.problems}


@factclass
class VersionedCompiler:
    """A ``g++-N`` / ``clang++-N`` on PATH: ``major`` N from its file name."""

    path: str
    kind: str
    major: int

    def to_dict(self) -> dict:
        return {"path": self.path, "kind": self.kind, "major": self.major}


@factclass
class CompilerFacts:
    """The compilers probe's facts: ``default`` {name: :class:`Compiler`}, ``versioned`` sorted by (kind, major),
    ``env`` the variables that pick another host compiler (CUDAHOSTCXX, NVCC_CCBIN, CC, CXX), ``problems`` the
    rejected values: a default compiler's version, a versioned file name's major (the key only when there is one)."""

    default: Dict[str, Compiler]
    versioned: List[VersionedCompiler]
    env: Dict[str, str]
    problems: List[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        out = {"default": {n: c.to_dict() for n, c in self.default.items()},
               "versioned": [v.to_dict() for v in sorted(self.versioned, key=lambda v: (v.kind, v.major))],
               "env": self.env}
        if self.problems:
            out["problems"] = self.problems
        return out
