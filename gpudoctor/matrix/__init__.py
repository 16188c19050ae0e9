"""Compatibility matrix: sourced NVIDIA facts about CUDA, cuDNN, TensorRT, GPUs, OSes and frameworks.

The data lives in JSON files (``cuda.json``, ``cudnn.json``, ``tensorrt.json``,
``gpus.json``, ``os.json``, ``frameworks.json``) shipped as package data under
``gpudoctor.compat_matrix`` (the top-level ``compat_matrix/`` directory of the
source tree). Their schema is described in ``compat_matrix/README.md``. Every
row carries the NVIDIA document it comes from (``source``) and the names of the
fields that could not be confirmed from a source (``unconfirmed``).

Use :func:`load_matrix` to get a validated, immutable :class:`Matrix`; any
defect in the files raises :class:`MatrixError` naming the file, the row index
and the field.

Version strings are returned exactly as stored ("12.4", "550.54.14"). Query
methods never raise for keys that are not in the matrix: they return ``None``
(or ``"unknown"`` for :meth:`Matrix.driver_supports`).

Only the standard library and ``packaging`` are used.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from pathlib import Path
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Tuple, Union

from packaging.version import InvalidVersion, Version

from gpudoctor.matrix.records import (
    ArchiveCuda, CudaRelease, CudnnRelease, GpuInfo, JaxRelease, MinorCompat, OnnxruntimeRelease, OsInfo,
    TensorflowRelease, TensorrtRelease, TorchBuild, TorchRelease, covers_cuda, from_row,
)
from gpudoctor.matrix.schema import (
    _CC_RE, _OSES, _SM_RE, FILES, SCHEMA_VERSION, MatrixError, _major_minor, _parse_driver, sm_of, validate,
)

__all__ = [
    "FILES", "SCHEMA_VERSION", "ArchiveCuda", "CudaRelease", "CudnnRelease", "GpuInfo", "JaxRelease", "Matrix",
    "MatrixError", "MinorCompat", "OnnxruntimeRelease", "OsInfo", "TensorflowRelease", "TensorrtRelease",
    "TorchBuild", "TorchRelease", "covers_cuda", "load_matrix", "sm_of",
]


def _tuple_src(v: Union[str, Sequence[str]]) -> Tuple[str, ...]:
    return (v,) if isinstance(v, str) else tuple(v)


class Matrix:
    """The validated compatibility matrix. Build it with :func:`load_matrix`."""

    def __init__(self, docs: Mapping[str, Mapping[str, Any]]) -> None:
        self._docs = docs
        self.schema_version: int = SCHEMA_VERSION
        #: Newest ``data_version`` over the files ("YYYY-MM-DD": when the data was checked).
        self.data_version: str = max(str(d["data_version"]) for d in docs.values())

        cuda = docs["cuda.json"]
        self._mvc = tuple(from_row(MinorCompat, r) for r in cuda["minor_version_compat"])
        self._cuda = tuple(from_row(CudaRelease, r) for r in cuda["releases"])
        self._cudnn = tuple(from_row(CudnnRelease, r) for r in docs["cudnn.json"]["releases"])
        self._trt = tuple(from_row(TensorrtRelease, r) for r in docs["tensorrt.json"]["releases"])
        gdoc = docs["gpus.json"]
        self._gpus = tuple(from_row(GpuInfo, r) for r in gdoc["gpus"])
        self._oses = tuple(from_row(OsInfo, r, archive_cuda=from_row(ArchiveCuda, r["archive_cuda"])
                                    if r.get("archive_cuda") else None) for r in docs["os.json"]["oses"])
        fw = docs["frameworks.json"]
        self._torch = tuple(
            from_row(TorchRelease, r, builds=tuple(from_row(TorchBuild, b) for b in r["builds"]))
            for r in fw["torch"])
        self._jax = tuple(from_row(JaxRelease, r) for r in fw["jax"])
        self._tf = tuple(from_row(TensorflowRelease, r) for r in fw["tensorflow"])
        self._ort = tuple(from_row(OnnxruntimeRelease, r) for r in fw["onnxruntime"])
        self._gpu_rx = tuple(re.compile(g.pattern, re.IGNORECASE) for g in self._gpus)
        self._families: Dict[str, str] = dict(gdoc["families"])

    # ------------------------------------------------------------------ general

    def sources(self) -> Tuple[str, ...]:
        """Every source URL cited anywhere in the matrix, sorted and de-duplicated."""
        urls = set()
        for recs in (self._mvc, self._cuda, self._cudnn, self._trt, self._gpus, self._oses, self._torch,
                     self._jax, self._tf, self._ort):
            for rec in recs:
                urls.update(rec.source)
        urls.update(_tuple_src(self._docs["gpus.json"].get("families_source", [])) or ())
        for row in self._docs["cuda.json"]["pip_wheels"]:
            urls.update(_tuple_src(row["source"]))
        return tuple(sorted(urls))

    # ------------------------------------------------------------------ CUDA

    def cuda_releases(self) -> Tuple[CudaRelease, ...]:
        """All CUDA releases, oldest first."""
        return self._cuda

    def cuda_release(self, version: Union[str, int]) -> Optional[CudaRelease]:
        """The release row for ``version``: "12.4", "12.4.1", "V12.4.131" or the integer 12040.

        Integer input uses the CUDA_VERSION / cudaRuntimeGetVersion encoding
        (1000*major + 10*minor). Returns None for unparsable or unknown versions.
        """
        mm = _major_minor(version, "cuda")
        if mm is None:
            return None
        key = f"{mm[0]}.{mm[1]}"
        for rel in self._cuda:
            if rel.cuda == key:
                return rel
        return None

    def pip_suffix(self, cuda: str) -> Optional[str]:
        """Suffix of NVIDIA's CUDA wheels for release ``cuda`` ("12.4" -> "-cu12", as in nvidia-cuda-runtime-cu12;
        "" from CUDA 13), or None when PyPI has no CUDA wheels for that release (before 11.7)."""
        mm = _major_minor(cuda, "cuda")
        for row in self._docs["cuda.json"]["pip_wheels"]:
            if mm and row["cuda_major"] == mm[0] and mm >= tuple(int(x) for x in row["cuda_min"].split(".")):
                return row["suffix"]
        return None

    def cuda_for_ptx_isa(self, isa: str) -> Optional[str]:
        """Oldest CUDA release ("12.4") whose driver JIT-compiles PTX of ISA version ``isa`` ("8.4"), or None."""
        try:
            want = Version(str(isa))
        except InvalidVersion:
            return None
        for rel in self._cuda:
            if rel.ptx_isa and Version(rel.ptx_isa) >= want:
                return rel.cuda
        return None

    def minor_version_compat(self, cuda_major: int) -> Optional[MinorCompat]:
        """Minor-version-compatibility driver floor (Table 2) for a CUDA major (11, 12, 13), or None."""
        for row in self._mvc:
            if row.cuda_major == cuda_major:
                return row
        return None

    @staticmethod
    def _os_driver(rec: Union[CudaRelease, MinorCompat], os: str) -> Optional[str]:
        if os not in _OSES:
            raise ValueError(f"os must be one of {_OSES}, got {os!r}")
        return rec.min_driver_linux if os == "linux" else rec.min_driver_windows

    def max_cuda_for_driver(self, driver_version: str, os: str = "linux") -> Optional[str]:
        """Newest CUDA release ("12.2") whose toolkit (GA) driver from Table 3 is <= ``driver_version``.

        This is the newest toolkit the driver runs natively (without minor
        version compatibility). Returns None when the driver is older than every
        release, unparsable, or (Windows, CUDA >= 13.1) Table 3 lists no driver.
        Raises ValueError for an ``os`` other than "linux" / "windows".
        """
        drv = _parse_driver(driver_version)
        if os not in _OSES:
            raise ValueError(f"os must be one of {_OSES}, got {os!r}")
        if drv is None:
            return None
        best = None
        for rel in self._cuda:
            need = self._os_driver(rel, os)
            if need is not None and Version(need) <= drv:
                best = rel.cuda
        return best

    def driver_supports(self, driver_version: str, cuda: Union[str, int], os: str = "linux") -> str:
        """Whether an installed driver runs applications built with CUDA ``cuda``.

        Returns one of:

        * ``"native"``: driver >= that release's toolkit driver (Table 3);
        * ``"minor_version_compat"``: below it, but >= the minor version
          compatibility floor of the same major (Table 2) - runs with limited
          features (no PTX JIT of newer PTX);
        * ``"unsupported"``: below both;
        * ``"unknown"``: the release or its major is not in the matrix, the
          driver version does not parse, or the source gives no driver to compare
          with (Windows, CUDA >= 13.1, when the floor is met).

        Raises ValueError for an ``os`` other than "linux" / "windows".
        """
        if os not in _OSES:
            raise ValueError(f"os must be one of {_OSES}, got {os!r}")
        drv = _parse_driver(driver_version)
        rel = self.cuda_release(cuda)
        if drv is None or rel is None:
            return "unknown"
        mvc = self.minor_version_compat(rel.major)
        need = self._os_driver(rel, os)
        floor = self._os_driver(mvc, os) if mvc is not None else None
        if need is not None and drv >= Version(need):
            return "native"
        if floor is not None and drv >= Version(floor):
            return "minor_version_compat" if need is not None else "unknown"
        if need is None and floor is None:
            return "unknown"
        return "unsupported"

    def toolkit_accepts_sm(self, cuda: Union[str, int], sm: str) -> Optional[bool]:
        """Whether nvcc of CUDA ``cuda`` accepts target ``sm`` ("sm_90", "sm_90a", "90", or a CC "9.0").

        Returns None when the release is unknown or ``sm`` cannot be parsed.
        """
        rel = self.cuda_release(cuda)
        if rel is None or not isinstance(sm, str):
            return None
        text = sm.strip().lower()
        if _CC_RE.match(text):
            try:
                text = sm_of(text)
            except ValueError:
                return None
        elif text.startswith("compute_"):
            text = "sm_" + text[len("compute_"):]
        elif re.match(r"^\d{2,3}[af]?$", text):
            text = "sm_" + text
        if not _SM_RE.match(text):
            return None
        return text in rel.sms

    # ------------------------------------------------------------------ cuDNN / TensorRT

    @staticmethod
    def _lookup(rows: Sequence[Any], field: str, version: Union[str, int]) -> Optional[Tuple[Any, bool]]:
        mm = _major_minor(version, "lib")
        if mm is None:
            return None
        best = None
        for row in rows:
            major, minor = (int(x) for x in getattr(row, field).split("."))
            if major != mm[0] or minor > mm[1]:
                continue
            if (major, minor) == mm:
                return row, True
            best = row  # rows are sorted ascending: the last hit is the newest
        return (best, False) if best is not None else None

    def cudnn_release(self, version: Union[str, int]) -> Optional[CudnnRelease]:
        """The cuDNN row for "9.14", "9.14.0", "9.14.0.64" or CUDNN_VERSION (91400; 8906 -> 8.9).

        Exact major.minor match gives ``exact=True``; otherwise the newest row of
        the same major with a lower minor, with ``exact=False``; None if none.
        """
        hit = self._lookup(self._cudnn, "cudnn", version)
        if hit is None:
            return None
        row, exact = hit
        return row if exact else _replace(row, exact=False)

    def cudnn_releases(self) -> Tuple[CudnnRelease, ...]:
        """All cuDNN release lines, oldest first."""
        return self._cudnn

    def tensorrt_release(self, version: Union[str, int]) -> Optional[TensorrtRelease]:
        """The TensorRT row for "10.3", "10.3.0.26" or NV_TENSORRT_VERSION (100300; 8601 -> 8.6).

        Same matching rule and ``exact`` flag as :meth:`cudnn_release`.
        """
        hit = self._lookup(self._trt, "tensorrt", version)
        if hit is None:
            return None
        row, exact = hit
        return row if exact else _replace(row, exact=False)

    def tensorrt_releases(self) -> Tuple[TensorrtRelease, ...]:
        """All TensorRT release lines, oldest first."""
        return self._trt

    # ------------------------------------------------------------------ GPUs

    def gpus(self) -> Tuple[GpuInfo, ...]:
        """All GPU rows, in file order."""
        return self._gpus

    def gpu_by_name(self, name: str) -> Optional[GpuInfo]:
        """The GPU row whose pattern matches the NVML product name (e.g. "NVIDIA A100-SXM4-80GB").

        When several patterns match, the one with the longest matched text wins
        (the shipped patterns are written so that all matches agree on the CC).
        Returns None when nothing matches.
        """
        if not isinstance(name, str) or not name.strip():
            return None
        best: Optional[GpuInfo] = None
        best_len = -1
        for info, rx in zip(self._gpus, self._gpu_rx):
            m = rx.search(name)
            if m and (m.end() - m.start()) > best_len:
                best, best_len = info, m.end() - m.start()
        return best

    def families(self) -> Dict[str, str]:
        """Copy of the CC -> architecture family map ("9.0" -> "Hopper"; keys "major" or "major.minor")."""
        return dict(self._families)

    def family(self, cc: str) -> Optional[str]:
        """Architecture family of a compute capability ("8.9" -> "Ada Lovelace"); the "major.minor" key wins over "major"."""
        if not isinstance(cc, str):
            return None
        text = cc.strip()
        m = re.match(r"^(\d+)(?:\.(\d+))?$", text)
        if not m:
            return None
        major = str(int(m.group(1)))
        if m.group(2) is not None:
            hit = self._families.get(f"{major}.{int(m.group(2))}")
            if hit is not None:
                return hit
        return self._families.get(major)

    # ------------------------------------------------------------------ OSes and frameworks

    def oses(self) -> Tuple[OsInfo, ...]:
        """Every OS ``gpudoctor install`` plans for, sorted by id."""
        return self._oses

    def os_info(self, os_id: str) -> Optional[OsInfo]:
        """The OS row for an id such as "ubuntu-22.04", "wsl-ubuntu" or "windows"; None if unknown."""
        for row in self._oses:
            if row.os == os_id:
                return row
        return None

    def torch_releases(self) -> Tuple[TorchRelease, ...]:
        """PyTorch release lines, oldest first, with their CUDA wheel variants."""
        return self._torch

    def torch_release(self, version: str) -> Optional[TorchRelease]:
        """The PyTorch line for "2.4", "2.4.1" or "2.4.1+cu121"; None if unknown."""
        mm = _major_minor(str(version).split("+")[0], "lib")
        if mm is None:
            return None
        for row in self._torch:
            if row.torch == f"{mm[0]}.{mm[1]}":
                return row
        return None

    def jax_releases(self) -> Tuple[JaxRelease, ...]:
        """JAX releases (where the CUDA plugin changed), oldest first."""
        return self._jax

    def tensorflow_releases(self) -> Tuple[TensorflowRelease, ...]:
        """TensorFlow releases with their tested CUDA/cuDNN build configuration, oldest first."""
        return self._tf

    def onnxruntime_releases(self) -> Tuple[OnnxruntimeRelease, ...]:
        """onnxruntime-gpu releases, oldest first."""
        return self._ort

    def cuda_range_for_sm(self, sm: str) -> Optional[Tuple[str, str]]:
        """Oldest and newest CUDA release whose nvcc accepts the plain target ``sm`` ("sm_89"), or None."""
        hits = [r.cuda for r in self._cuda if sm in r.sms]
        return (hits[0], hits[-1]) if hits else None


def _replace(obj: Any, **changes: Any) -> Any:
    return dataclasses.replace(obj, **changes)


# --------------------------------------------------------------------------- loading


def _read_docs(read: Callable[[str], str]) -> Dict[str, Any]:
    docs: Dict[str, Any] = {}
    for file in FILES:
        try:
            text = read(file)
        except FileNotFoundError:
            raise MatrixError(file, "file is missing") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise MatrixError(file, f"cannot be read: {exc}") from None
        try:
            docs[file] = json.loads(text)
        except json.JSONDecodeError as exc:
            raise MatrixError(file, f"invalid JSON: {exc}") from None
    validate(docs)
    return docs


def _source_tree_dir() -> Path:
    return Path(__file__).resolve().parent.parent.parent / "compat_matrix"


@functools.lru_cache(maxsize=1)
def _default_matrix() -> Matrix:
    try:
        from importlib.resources import files

        base = files("gpudoctor.compat_matrix")
        if not base.joinpath(FILES[0]).is_file():
            raise FileNotFoundError(FILES[0])
    except (ImportError, FileNotFoundError, TypeError):  # running from a checkout that is not installed
        root = _source_tree_dir()
        return Matrix(_read_docs(lambda name: (root / name).read_text(encoding="utf-8")))
    return Matrix(_read_docs(lambda name: base.joinpath(name).read_text(encoding="utf-8")))


@functools.lru_cache(maxsize=4)
def _effective_matrix(data_root: str) -> Matrix:
    """The newest valid matrix: the bundled one, or one installed by ``gpudoctor matrix update``."""
    from gpudoctor import __version__
    from gpudoctor.matrix import bundle

    bundled = _default_matrix()
    if not hasattr(bundled, "origin"):
        bundled.origin = f"bundled with gpudoctor {__version__}"
    downloaded, info = bundle.installed()  # data_root only keys this cache: one result per data directory
    if downloaded is not None and downloaded.data_version > bundled.data_version:
        downloaded.origin = f"downloaded from {info.get('source')} on {str(info.get('installed', ''))[:10]} ({info.get('dir')})"
        return downloaded
    if isinstance(info, str) and info != "no downloaded matrix":
        bundled.origin += f"; {info}"
    return bundled


def load_matrix(directory: Optional[Union[str, Path]] = None) -> Matrix:
    """Load and validate the matrix.

    With no ``directory``: the newest valid one of the package data ``gpudoctor.compat_matrix``
    (falling back to the source tree's ``compat_matrix/``) and the bundle ``gpudoctor matrix
    update`` installed (verified again before use; see :mod:`gpudoctor.matrix.bundle`), cached
    after the first call. With a ``directory``, reads the JSON files from it (not cached). The
    result's ``origin`` says where it came from. Raises :class:`MatrixError` on any missing file,
    invalid JSON or schema violation.
    """
    if directory is None:
        from gpudoctor.matrix import bundle

        return _effective_matrix(bundle.data_root())
    root = Path(directory)
    m = Matrix(_read_docs(lambda name: (root / name).read_text(encoding="utf-8")))
    m.origin = f"pinned with --matrix {root}"
    return m
