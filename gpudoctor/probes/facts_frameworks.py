"""Typed facts of the frameworks, TensorRT and NCCL probes, validated where they are parsed.

As :mod:`gpudoctor.probes.facts`: a probe hands what a file, distribution or library said to ``X.parse(raw,
origin)``; a version is kept only when plausible, else it is ``None`` and an ``implausible`` problem record
naming the file or module that answered (``probe.implausible_value``), never an input to a version rule.
``to_dict()`` gives the probe's JSON shape as it was (same keys, same order); keys not typed here pass through.

Plausible (structure only, never the matrix):

* a package version (torch ``2.9.0+cu130``, jaxlib ``0.7.2``): PEP 440, at most 64 characters;
* the CUDA a framework was built for: ``major.minor[.patch]``, major 1-20, minor 0-9 (torch's version.py
  ``cuda = "13.0"``, TensorFlow's build_info ``"12.5.1"``); a CUDA major in a distribution name
  (``jax-cuda13-plugin``, ``cupy-cuda12x``, ``tensorrt-cu12``): 1-20;
* a TensorRT version: major 1-30, then up to three numeric parts and an optional pre-release
  (``10.13.3.9``, ``8.6.1``, ``10.0.0b6``; a file name's ``10``);
* an NCCL version: ``2.x.y`` from ncclGetVersion (0 from a call that succeeded is implausible); a file
  name may say only ``2`` or ``2.x``.
"""
from __future__ import annotations

import re
from gpudoctor.probes.record import factclass, field
from typing import Callable, Dict, List, Optional, Tuple

from gpudoctor.probes.facts import Implausible, Origin, cuda_version

__all__ = ["Implausible", "Origin", "package_version", "built_for_cuda", "cuda_major", "tensorrt_version",
           "nccl_version", "BuiltFramework", "JaxFacts", "CupyFacts", "FrameworksFacts", "TensorRTModule",
           "TensorRTFacts", "NcclLibrary", "NcclFacts"]

_TRT = re.compile(r"(\d{1,2})(\.\d{1,3}){0,3}((a|b|rc)\d{0,3})?(\+\w+)?")
_NCCL_API = re.compile(r"2\.\d{1,2}\.\d{1,3}")
_NCCL_FILE = re.compile(r"2(\.\d{1,2}(\.\d{1,3}(\.\d{1,3})?)?)?")  # conda's nccl says 2.23.4.1
_MAJOR_IN_NAME = re.compile(r"cuda[-_]?(\d{2})|cu(\d{2,3})x?$")  # jax-cuda13-plugin, cupy-cuda12x, cupy-cuda102
_TRT_CU = re.compile(r"-cu(\d+)(?=-|$)")  # tensorrt-cu13, tensorrt-cu12-libs


def package_version(value) -> str:
    """A distribution's or module's ``__version__`` as given; raises :class:`Implausible` unless PEP 440."""
    from packaging.version import InvalidVersion, Version

    try:
        if isinstance(value, str) and 0 < len(value.strip()) <= 64:
            Version(value.strip())
            return value.strip()
    except InvalidVersion:
        pass
    raise Implausible(value, "a package version (PEP 440, e.g. 2.9.0+cu130)")


def built_for_cuda(value) -> str:
    """The CUDA a framework says it was built for, as given (``"12.5.1"`` stays so); raises :class:`Implausible`
    unless its major.minor passes :func:`gpudoctor.probes.facts.cuda_version` and the rest is numeric."""
    expected = "a CUDA version (major 1-20, minor 0-9, e.g. 13.0)"
    text = value.strip() if isinstance(value, str) else None
    m = re.fullmatch(r"64_(\d{1,2})(\d)", text or "")
    if m:  # TensorFlow <= 2.10 on Windows names the cudart DLL's suffix: '64_112' (cudart64_112.dll) is CUDA 11.2
        text = f"{int(m.group(1))}.{m.group(2)}"
    parts = text.split(".") if text else []
    if not 2 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
        raise Implausible(value, expected)
    try:
        cuda_version(".".join(parts[:2]))
    except Implausible:
        raise Implausible(value, expected) from None
    return text


def cuda_major(value) -> int:
    """A CUDA major read from a distribution name (``jax-cuda13-plugin`` -> 13); raises :class:`Implausible` outside 1-20."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 20:
        raise Implausible(value, "a CUDA major (1-20)")
    return value


def tensorrt_version(value) -> str:
    """``"10.13.3.9"`` as given; raises :class:`Implausible` unless major 1-30 and up to 4 numeric parts."""
    text = value.strip() if isinstance(value, str) else None
    m = _TRT.fullmatch(text) if text else None
    if not m or not 1 <= int(m.group(1)) <= 30:
        raise Implausible(value, "a TensorRT version (major 1-30, e.g. 10.13.3.9)")
    return text


def nccl_version(value) -> str:
    """``"2.28.3"`` (what :func:`gpudoctor.formats.nccl_env.nccl_version_from_int` makes of ncclGetVersion's int);
    raises :class:`Implausible` unless it is 2.x.y."""
    if not isinstance(value, str) or not _NCCL_API.fullmatch(value.strip()):
        raise Implausible(value, "an NCCL version (2.x.y, e.g. 2.28.3)")
    return value.strip()


def nccl_file_version(value) -> str:
    """An NCCL version from a file or distribution name: ``2``, ``2.21``, ``2.21.5`` (conda: ``2.21.5.1``)."""
    if not isinstance(value, str) or not _NCCL_FILE.fullmatch(value.strip()):
        raise Implausible(value, "an NCCL version (2, 2.x or 2.x.y)")
    return value.strip()


def _ordered(raw: dict, typed: dict) -> dict:
    """``raw``'s keys in their order, the typed keys' values replaced (today's JSON shape)."""
    return {k: typed[k] if k in typed else v for k, v in raw.items()}


def majors_in_names(names, origin: Origin, where: Callable[[str], Optional[str]]) -> List[int]:
    """The validated CUDA majors that distribution names carry (``cupy-cuda12x`` -> 12), sorted, distinct."""
    out = set()
    for n in names:
        m = _MAJOR_IN_NAME.search(n.lower())
        if m:
            mj = origin.take(cuda_major, int((m.group(1) or m.group(2))[:2]), f"{n}: the CUDA major in its name",
                             path=where(n))
            if mj is not None:
                out.add(mj)
    return sorted(out)


@factclass
class BuiltFramework:
    """torch, TensorFlow or ONNX Runtime: ``version`` (PEP 440), ``cuda`` (the CUDA it was built for, None for a
    CPU or ROCm build); ``raw`` the other keys as read (path, hip, cudnn, is_cuda_build, archs, ...)."""

    name: str
    version: Optional[str]
    cuda: Optional[str]
    raw: Dict[str, object] = field(default_factory=dict, repr=False)

    @classmethod
    def parse(cls, name: str, raw: dict, origin: Origin, version_call: str, cuda_call: str,
              version_path: Optional[str] = None) -> "BuiltFramework":
        cuda = raw.get("cuda")  # None or "" (a CPU build's build_info) claims no CUDA: kept as it is
        return cls(name, origin.take(package_version, raw.get("version"), version_call, path=version_path),
                   cuda if cuda in ("", None) else origin.take(built_for_cuda, cuda, cuda_call), dict(raw))

    def to_dict(self) -> dict:
        return _ordered(self.raw, {"version": self.version, "cuda": self.cuda})


@factclass
class JaxFacts:
    """JAX: ``version``, ``jaxlib``, ``plugins`` ``{distribution: version}`` (PEP 440), ``cuda_majors`` from
    the plugins' names; ``raw`` the rest (archs)."""

    version: Optional[str]
    jaxlib: Optional[str]
    plugins: Dict[str, Optional[str]]
    cuda_majors: List[int]
    raw: Dict[str, object] = field(default_factory=dict, repr=False)

    @classmethod
    def parse(cls, raw: dict, origin: Origin, where: Callable[[str], Optional[str]]) -> "JaxFacts":
        plugins = {p: origin.take(package_version, v, f"{p} distribution version", path=where(p))
                   for p, v in (raw.get("plugins") or {}).items()}
        return cls(origin.take(package_version, raw.get("version"), "jax distribution version", path=where("jax")),
                   origin.take(package_version, raw.get("jaxlib"), "jaxlib distribution version", path=where("jaxlib")),
                   plugins, majors_in_names(list(plugins), origin, where), dict(raw))

    def to_dict(self) -> dict:
        return _ordered(self.raw, {"version": self.version, "jaxlib": self.jaxlib, "plugins": self.plugins,
                                   "cuda_majors": self.cuda_majors})


@factclass
class CupyFacts:
    """CuPy: ``distributions`` ``{name: version}`` (cupy-cuda13x ...), ``cuda_majors`` from their names."""

    distributions: Dict[str, Optional[str]]
    cuda_majors: List[int]
    raw: Dict[str, object] = field(default_factory=dict, repr=False)

    @classmethod
    def parse(cls, raw: dict, origin: Origin, where: Callable[[str], Optional[str]]) -> "CupyFacts":
        ds = {n: origin.take(package_version, v, f"{n} distribution version", path=where(n))
              for n, v in (raw.get("distributions") or {}).items()}
        return cls(ds, majors_in_names(list(ds), origin, where), dict(raw))

    def to_dict(self) -> dict:
        return _ordered(self.raw, {"distributions": self.distributions, "cuda_majors": self.cuda_majors})


@factclass
class FrameworksFacts:
    """The frameworks probe's facts (:func:`gpudoctor.probes.frameworks.probe`): each framework or None when
    not installed; ``problems`` unreadable files and rejected values."""

    torch: Optional[BuiltFramework]
    tensorflow: Optional[BuiltFramework]
    onnxruntime: Optional[BuiltFramework]
    jax: Optional[JaxFacts]
    cupy: Optional[CupyFacts]
    problems: List[dict]

    def builds(self) -> List[Tuple[str, Optional[str], str]]:
        """(framework, version, CUDA built for) as :func:`gpudoctor.rules._util.framework_cuda_builds` reads them."""
        out = [(f.name, f.version, f.cuda) for f in (self.torch, self.tensorflow, self.onnxruntime) if f and f.cuda]
        out += [(n, None, f"{mj}.0") for n, f in (("jax", self.jax), ("cupy", self.cupy)) if f for mj in f.cuda_majors]
        return out

    def to_dict(self) -> dict:
        d = {k: (getattr(self, k).to_dict() if getattr(self, k) is not None else None)
             for k in ("torch", "tensorflow", "onnxruntime", "jax", "cupy")}
        d["problems"] = self.problems
        return d


def _trt_distribution(name: str) -> bool:
    """TensorRT's own distributions (tensorrt, tensorrt-cu13-libs, tensorrt-lean-cu12 ...), whose version is a
    TensorRT version; others named tensorrt* (tensorrt-llm 0.x) are only PEP 440."""
    return re.fullmatch(r"tensorrt(-lean|-dispatch)?(-cu\d+)?(-libs|-bindings)?", name) is not None


@factclass
class TensorRTModule:
    """One importable TensorRT module: ``version`` (static ``__version__`` or what its import printed)."""

    name: str
    version: Optional[str]
    raw: Dict[str, object] = field(default_factory=dict, repr=False)

    @classmethod
    def parse(cls, raw: dict, origin: Origin, call: str, path: Optional[str]) -> "TensorRTModule":
        return cls(raw.get("name"), origin.take(tensorrt_version, raw.get("version"), call, path=path), dict(raw))

    def to_dict(self) -> dict:
        return _ordered(self.raw, {"version": self.version})


@factclass
class TensorRTFacts:
    """The tensorrt probe's facts (:func:`gpudoctor.probes.tensorrt.probe`): ``modules``, ``distributions``
    ``{name: version}`` (a name's CUDA major 1-20, TensorRT's own a TensorRT version), ``libnvinfer`` copies
    (version validated), ``raw`` the rest (libnvinfer_loaded, trtexec); ``problems`` only when a value was rejected."""

    modules: List[TensorRTModule]
    distributions: Dict[str, Optional[str]]
    libnvinfer: List[dict]
    problems: List[dict]
    raw: Dict[str, object] = field(default_factory=dict, repr=False)

    @classmethod
    def parse(cls, raw: dict, modules: List[TensorRTModule], origin: Origin,
              where: Callable[[str], Optional[str]]) -> "TensorRTFacts":
        ds = {}
        for n, v in (raw.get("distributions") or {}).items():
            m = _TRT_CU.search(n)
            if m and origin.take(cuda_major, int(m.group(1)), f"{n}: the CUDA major in its name", path=where(n)) is None:
                continue  # a wheel for an implausible CUDA major (recorded): no rule builds a pip command on it
            check = tensorrt_version if _trt_distribution(n) else package_version
            ds[n] = origin.take(check, v, f"{n} distribution version", path=where(n))
        copies = [dict(c, version=origin.take(tensorrt_version, c.get("version"), "libnvinfer version (file name)",
                                              path=c.get("realpath"))) for c in raw.get("libnvinfer") or []]
        return cls(modules, ds, copies, origin.problems, dict(raw))

    @property
    def cuda_majors(self) -> List[int]:
        """The CUDA majors TensorRT's wheels are built for (tensorrt-cu12 -> 12), from the validated names."""
        return sorted({int(m.group(1)) for n in self.distributions for m in [_TRT_CU.search(n)] if m})

    def to_dict(self) -> dict:
        out = _ordered(self.raw, {"modules": [m.to_dict() for m in self.modules], "distributions": self.distributions,
                                  "libnvinfer": self.libnvinfer})
        if self.problems:
            out["problems"] = self.problems
        return out


@factclass
class NcclLibrary:
    """One libnccl copy: ``version`` from its file or distribution name, ``api_version`` ncclGetVersion's answer
    as ``2.x.y`` (the raw int stays in ``api``); ``raw`` the copy's other keys."""

    realpath: Optional[str]
    version: Optional[str]
    api_version: Optional[str]
    raw: Dict[str, object] = field(default_factory=dict, repr=False)

    @classmethod
    def parse(cls, raw: dict, origin: Origin) -> "NcclLibrary":
        from gpudoctor.formats.nccl_env import nccl_version_from_int

        path = raw.get("realpath")
        code = (raw.get("api") or {}).get("ncclGetVersion")
        said = nccl_version_from_int(code) if isinstance(code, int) and not isinstance(code, bool) and code > 0 else code
        return cls(path, origin.take(nccl_file_version, raw.get("version"), "libnccl version (file name)", path=path),
                   origin.take(nccl_version, said, "ncclGetVersion", path=path), dict(raw))

    def to_dict(self) -> dict:
        return _ordered(self.raw, {"version": self.version, "api_version": self.api_version})


@factclass
class NcclFacts:
    """The nccl probe's facts (:func:`gpudoctor.probes.nccl.probe`): ``libraries``; ``raw`` the rest as read
    (loader_pick, vars, infiniband_devices, net_interfaces, shm); ``problems``."""

    libraries: List[NcclLibrary]
    problems: List[dict]
    raw: Dict[str, object] = field(default_factory=dict, repr=False)

    @classmethod
    def parse(cls, raw: dict, origin: Origin) -> "NcclFacts":
        libs = [NcclLibrary.parse(l, origin) for l in raw.get("libraries") or []]
        return cls(libs, list(raw.get("problems") or []) + origin.problems, dict(raw))

    @property
    def versions(self) -> List[str]:
        return sorted({l.api_version or l.version for l in self.libraries if l.api_version or l.version})

    def to_dict(self) -> dict:
        return _ordered(self.raw, {"libraries": [l.to_dict() for l in self.libraries], "problems": self.problems})
