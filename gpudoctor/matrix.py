"""Compatibility matrix: sourced NVIDIA facts about CUDA, cuDNN, TensorRT and GPUs.

The data lives in four JSON files (``cuda.json``, ``cudnn.json``, ``tensorrt.json``,
``gpus.json``) shipped as package data under ``gpudoctor.compat_matrix`` (the
top-level ``compat_matrix/`` directory of the source tree). Their schema is
described in ``compat_matrix/README.md``. Every row carries the NVIDIA document
it comes from (``source``) and the names of the fields that could not be
confirmed from a source (``unconfirmed``).

Use :func:`load_matrix` to get a validated, immutable :class:`Matrix`; any
defect in the files raises :class:`MatrixError` naming the file, the row index
and the field.

Version strings are returned exactly as stored ("12.4", "550.54.14"). Query
methods never raise for keys that are not in the matrix: they return ``None``
(or ``"unknown"`` for :meth:`Matrix.driver_supports`).

Only the standard library and ``packaging`` are used.
"""

from __future__ import annotations

import datetime
import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from packaging.version import InvalidVersion, Version

__all__ = [
    "FILES",
    "SCHEMA_VERSION",
    "CudaRelease",
    "CudnnRelease",
    "GpuInfo",
    "Matrix",
    "MatrixError",
    "MinorCompat",
    "TensorrtRelease",
    "load_matrix",
    "sm_of",
]

SCHEMA_VERSION = 1
#: The data files, in the order they are loaded and validated.
FILES = ("cuda.json", "cudnn.json", "tensorrt.json", "gpus.json")

_OSES = ("linux", "windows")


class MatrixError(Exception):
    """A data file of the matrix is missing, unreadable or violates the schema.

    ``file`` is the file name (e.g. ``"cuda.json"``); ``message`` says where
    (row index, field) and what is wrong. ``str(err)`` is ``"<file>: <message>"``.
    """

    def __init__(self, file: str, message: str) -> None:
        self.file = file
        self.message = message
        super().__init__(f"{file}: {message}")


# --------------------------------------------------------------------------- records


@dataclass(frozen=True)
class MinorCompat:
    """CUDA minor version compatibility floor for one CUDA major release.

    From Table 2 of the CUDA Toolkit release notes ("CUDA Toolkit and Minimum
    Required Driver Version for CUDA Minor Version Compatibility"). Driver
    versions are strings such as ``"450.80.02"``; ``min_driver_windows`` may be
    ``None`` when the source gives none.
    """

    cuda_major: int
    min_driver_linux: str
    min_driver_windows: Optional[str]
    source: Tuple[str, ...]
    unconfirmed: Tuple[str, ...] = ()


@dataclass(frozen=True)
class CudaRelease:
    """One CUDA toolkit minor release ("12.4").

    * ``min_driver_linux`` / ``min_driver_windows``: the GA toolkit driver of
      that release, Table 3 of the CUDA Toolkit release notes ("CUDA Toolkit and
      Corresponding Driver Versions"); Windows is ``None`` where Table 3 says N/A.
    * ``max_gcc`` / ``max_clang``: newest host compiler major version accepted by
      ``crt/host_config.h`` of that release (CUDA Installation Guide for Linux).
    * ``sms``: every real target (``sm_XX``, plus arch-specific ``sm_XXa`` and
      family-specific ``sm_XXf``) nvcc of that release accepts for ``-arch`` /
      ``-code`` (nvcc "GPU feature list"); ``min_sm`` / ``max_sm`` are the lowest
      and highest plain targets among them.
    * ``source``: URLs; ``unconfirmed``: names of fields not confirmed by a source.
    """

    cuda: str
    min_driver_linux: str
    min_driver_windows: Optional[str]
    max_gcc: int
    max_clang: int
    min_sm: str
    max_sm: str
    sms: Tuple[str, ...]
    source: Tuple[str, ...]
    unconfirmed: Tuple[str, ...] = ()
    notes: Optional[str] = None

    @property
    def major(self) -> int:
        return int(self.cuda.split(".")[0])


@dataclass(frozen=True)
class CudnnRelease:
    """One cuDNN release line ("9.10") from the cuDNN support matrix.

    ``cuda_majors`` lists the CUDA majors it has builds for; ``cuda_min`` /
    ``cuda_max`` are the oldest / newest supported CUDA toolkit ("12.9", or
    "12.x"), either may be ``None`` when the source only gives majors.
    ``exact`` is False when the query asked for a newer minor of the same major
    and this is the newest row not above it.
    """

    cudnn: str
    cuda_majors: Tuple[int, ...]
    cuda_min: Optional[str]
    cuda_max: Optional[str]
    source: Tuple[str, ...]
    unconfirmed: Tuple[str, ...] = ()
    notes: Optional[str] = None
    exact: bool = True


@dataclass(frozen=True)
class TensorrtRelease:
    """One TensorRT release line ("10.3") from the TensorRT support matrix / release notes.

    Fields as :class:`CudnnRelease`, plus ``cudnn``: the cuDNN major.minor the
    release was validated with (optional dependency from TensorRT 10), or None.
    """

    tensorrt: str
    cuda_majors: Tuple[int, ...]
    cuda_min: Optional[str]
    cuda_max: Optional[str]
    cudnn: Optional[str]
    source: Tuple[str, ...]
    unconfirmed: Tuple[str, ...] = ()
    notes: Optional[str] = None
    exact: bool = True


@dataclass(frozen=True)
class GpuInfo:
    """A GPU product family matched by NVML product name.

    ``pattern`` is a case-insensitive regex (``re.search``) over the NVML name;
    ``cc`` the compute capability ("9.0"), ``family`` the architecture name,
    from developer.nvidia.com/cuda-gpus (and the legacy page).
    """

    pattern: str
    cc: str
    family: str
    example: str
    source: Tuple[str, ...]
    unconfirmed: Tuple[str, ...] = ()


# --------------------------------------------------------------------------- parsing helpers

_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DRIVER_RE = re.compile(r"^\d+(\.\d+){0,2}$")
_MAJOR_MINOR_RE = re.compile(r"^\d+\.\d+$")
_CUDA_MAX_RE = re.compile(r"^\d+\.(\d+|x)$")
_SM_RE = re.compile(r"^sm_(\d{2,3})([af]?)$")
_CC_RE = re.compile(r"^\d+\.\d+$")
_FAMILY_KEY_RE = re.compile(r"^\d+(\.\d+)?$")
_SOURCE_RE = re.compile(r"^(https?|file)://\S+$")
_LOOSE_VERSION_RE = re.compile(r"^\s*[vV]?(\d+)(?:\.(\d+))?(?:\.\d+)*\s*$")


def _version_key(text: str) -> Version:
    return Version(text)


def _sm_number(sm: str) -> int:
    m = _SM_RE.match(sm)
    if not m:
        raise ValueError(sm)
    return int(m.group(1))


def _sm_key(sm: str) -> Tuple[int, str]:
    m = _SM_RE.match(sm)
    if not m:
        raise ValueError(sm)
    return int(m.group(1)), m.group(2)


def sm_of(cc: str) -> str:
    """Map a compute capability to its real target: ``"9.0"`` -> ``"sm_90"``, ``"12.1"`` -> ``"sm_121"``.

    Raises ValueError when ``cc`` is not ``"<major>.<minor>"`` with a one-digit minor.
    """
    text = str(cc).strip()
    m = re.match(r"^(\d+)\.(\d)$", text)
    if not m:
        raise ValueError(f"not a compute capability: {cc!r}")
    return f"sm_{int(m.group(1))}{m.group(2)}"


def _major_minor(version: Union[str, int, None], int_scheme: str) -> Optional[Tuple[int, int]]:
    """Parse "12.4", "12.4.1", "v12.4" or an integer encoding into (major, minor).

    ``int_scheme`` is "cuda" (12040 -> 12.4, CUDA_VERSION / cudaRuntimeGetVersion)
    or "lib" (cuDNN/TensorRT: 90100 -> 9.1 for major >= 9 style five-digit values,
    8906 -> 8.9 for four-digit values).
    """
    if isinstance(version, bool) or version is None:
        return None
    if isinstance(version, int):
        if version <= 0:
            return None
        if int_scheme == "cuda":
            return version // 1000, (version % 1000) // 10
        if version >= 10000:
            return version // 10000, (version % 10000) // 100
        return version // 1000, (version % 1000) // 100
    if not isinstance(version, str):
        return None
    m = _LOOSE_VERSION_RE.match(version)
    if not m or m.group(2) is None:
        return None
    return int(m.group(1)), int(m.group(2))


def _parse_driver(driver: Union[str, None]) -> Optional[Version]:
    if not isinstance(driver, str):
        return None
    text = driver.strip()
    if not _DRIVER_RE.match(text):
        return None
    try:
        return Version(text)
    except InvalidVersion:  # pragma: no cover - regex already guarantees validity
        return None


# --------------------------------------------------------------------------- validation

_Check = Callable[[Any], Optional[str]]  # returns an error text, or None when valid


def _is_str(v: Any) -> Optional[str]:
    return None if isinstance(v, str) and v.strip() else "must be a non-empty string"


def _is_int(v: Any) -> Optional[str]:
    return None if isinstance(v, int) and not isinstance(v, bool) and v > 0 else "must be a positive integer"


def _regex_str(rx: "re.Pattern[str]", what: str, nullable: bool = False) -> _Check:
    def check(v: Any) -> Optional[str]:
        if v is None and nullable:
            return None
        if not isinstance(v, str) or not rx.match(v):
            return f"must be {what}" + (" or null" if nullable else "") + f", got {v!r}"
        try:
            Version(v.replace(".x", ""))
        except InvalidVersion:
            return f"does not parse as a version: {v!r}"
        return None

    return check


def _sm(v: Any) -> Optional[str]:
    return None if isinstance(v, str) and _SM_RE.match(v) else f"must be an SM target like 'sm_90' or 'sm_90a', got {v!r}"


def _sm_list(v: Any) -> Optional[str]:
    if not isinstance(v, list) or not v:
        return "must be a non-empty list of SM targets"
    for i, s in enumerate(v):
        err = _sm(s)
        if err:
            return f"item {i} {err}"
    if len(set(v)) != len(v):
        return "has duplicate entries"
    return None


def _majors(v: Any) -> Optional[str]:
    if not isinstance(v, list) or not v or not all(isinstance(x, int) and not isinstance(x, bool) for x in v):
        return "must be a non-empty list of integers"
    if v != sorted(set(v)):
        return "must be sorted and unique"
    return None


def _source(v: Any) -> Optional[str]:
    items = [v] if isinstance(v, str) else v
    if not isinstance(items, list) or not items:
        return "must be a non-empty URL string or a non-empty list of URLs"
    for s in items:
        if not isinstance(s, str) or not _SOURCE_RE.match(s):
            return f"must contain only http(s):// or file:// URLs, got {s!r}"
    return None


def _pattern(v: Any) -> Optional[str]:
    if not isinstance(v, str) or not v:
        return "must be a non-empty regex string"
    try:
        re.compile(v, re.IGNORECASE)
    except re.error as exc:
        return f"is not a valid regex: {exc}"
    return None


_DRIVER = _regex_str(_DRIVER_RE, "a driver version like '550.54.14'")
_DRIVER_OPT = _regex_str(_DRIVER_RE, "a driver version like '550.54.14'", nullable=True)
_MM = _regex_str(_MAJOR_MINOR_RE, "a 'major.minor' version")
_MM_OPT = _regex_str(_MAJOR_MINOR_RE, "a 'major.minor' version", nullable=True)
_CMAX_OPT = _regex_str(_CUDA_MAX_RE, "a 'major.minor' or 'major.x' version", nullable=True)
_CC = _regex_str(_CC_RE, "a compute capability like '9.0'")

# field -> (check, required)
_Schema = Dict[str, Tuple[_Check, bool]]

_MVC_SCHEMA: _Schema = {
    "cuda_major": (_is_int, True),
    "min_driver_linux": (_DRIVER, True),
    "min_driver_windows": (_DRIVER_OPT, True),
}
_CUDA_SCHEMA: _Schema = {
    "cuda": (_MM, True),
    "min_driver_linux": (_DRIVER, True),
    "min_driver_windows": (_DRIVER_OPT, True),
    "max_gcc": (_is_int, True),
    "max_clang": (_is_int, True),
    "min_sm": (_sm, True),
    "max_sm": (_sm, True),
    "sms": (_sm_list, True),
}
_CUDNN_SCHEMA: _Schema = {
    "cudnn": (_MM, True),
    "cuda_majors": (_majors, True),
    "cuda_min": (_MM_OPT, True),
    "cuda_max": (_CMAX_OPT, True),
}
_TRT_SCHEMA: _Schema = {
    "tensorrt": (_MM, True),
    "cuda_majors": (_majors, True),
    "cuda_min": (_MM_OPT, True),
    "cuda_max": (_CMAX_OPT, True),
    "cudnn": (_MM_OPT, True),
}
_GPU_SCHEMA: _Schema = {
    "pattern": (_pattern, True),
    "cc": (_CC, True),
    "family": (_is_str, True),
    "example": (_is_str, True),
}
_META = {"source", "unconfirmed", "notes"}


def _check_row(file: str, where: str, row: Any, schema: _Schema) -> Dict[str, Any]:
    if not isinstance(row, dict):
        raise MatrixError(file, f"{where}: must be an object")
    for field, (check, required) in schema.items():
        if field not in row:
            if required:
                raise MatrixError(file, f"{where}: missing field '{field}'")
            continue
        err = check(row[field])
        if err:
            raise MatrixError(file, f"{where}: field '{field}' {err}")
    if "source" not in row:
        raise MatrixError(file, f"{where}: missing field 'source'")
    err = _source(row["source"])
    if err:
        raise MatrixError(file, f"{where}: field 'source' {err}")
    unconf = row.get("unconfirmed", [])
    if not isinstance(unconf, list) or not all(isinstance(u, str) for u in unconf):
        raise MatrixError(file, f"{where}: field 'unconfirmed' must be a list of field names")
    if len(set(unconf)) != len(unconf):
        raise MatrixError(file, f"{where}: field 'unconfirmed' has duplicate entries")
    for u in unconf:
        if u not in schema or u not in row:
            raise MatrixError(file, f"{where}: field 'unconfirmed' names '{u}', which is not a data field of this row")
    if "notes" in row and _is_str(row["notes"]):
        raise MatrixError(file, f"{where}: field 'notes' must be a non-empty string")
    extra = set(row) - set(schema) - _META
    if extra:
        raise MatrixError(file, f"{where}: unknown field(s) {sorted(extra)}")
    return row


def _check_sorted_unique(file: str, table: str, rows: Sequence[Dict[str, Any]], key_field: str,
                         key: Callable[[Any], Any]) -> None:
    for i in range(1, len(rows)):
        a, b = key(rows[i - 1][key_field]), key(rows[i][key_field])
        if a == b:
            raise MatrixError(file, f"{table}[{i}]: duplicate {key_field} {rows[i][key_field]!r} (also {table}[{i - 1}])")
        if a > b:
            raise MatrixError(file, f"{table}[{i}]: {key_field} {rows[i][key_field]!r} is out of order "
                                    f"(after {rows[i - 1][key_field]!r}); rows must be sorted ascending")


def _rows(file: str, doc: Mapping[str, Any], table: str) -> List[Any]:
    rows = doc.get(table)
    if not isinstance(rows, list) or not rows:
        raise MatrixError(file, f"top-level '{table}' must be a non-empty list")
    return rows


def _check_header(file: str, doc: Any) -> None:
    if not isinstance(doc, dict):
        raise MatrixError(file, "top level must be a JSON object")
    sv = doc.get("schema_version")
    if isinstance(sv, bool) or sv != SCHEMA_VERSION:
        raise MatrixError(file, f"schema_version must be {SCHEMA_VERSION}, got {sv!r}")
    dv = doc.get("data_version")
    if not isinstance(dv, str) or not _DATE_RE.match(dv):
        raise MatrixError(file, f"data_version must be a 'YYYY-MM-DD' date, got {dv!r}")
    try:
        datetime.date.fromisoformat(dv)
    except ValueError:
        raise MatrixError(file, f"data_version is not a valid date: {dv!r}") from None
    if _is_str(doc.get("description")):
        raise MatrixError(file, "description must be a non-empty string")


def _tuple_src(v: Union[str, List[str]]) -> Tuple[str, ...]:
    return (v,) if isinstance(v, str) else tuple(v)


# --------------------------------------------------------------------------- the matrix


class Matrix:
    """The validated compatibility matrix. Build it with :func:`load_matrix`."""

    def __init__(self, docs: Mapping[str, Mapping[str, Any]]) -> None:
        self._docs = docs
        self.schema_version: int = SCHEMA_VERSION
        #: Newest ``data_version`` over the files ("YYYY-MM-DD": when the data was checked).
        self.data_version: str = max(str(d["data_version"]) for d in docs.values())

        cuda = docs["cuda.json"]
        self._mvc: Tuple[MinorCompat, ...] = tuple(
            MinorCompat(r["cuda_major"], r["min_driver_linux"], r["min_driver_windows"],
                        _tuple_src(r["source"]), tuple(r.get("unconfirmed", ())))
            for r in cuda["minor_version_compat"]
        )
        self._cuda: Tuple[CudaRelease, ...] = tuple(
            CudaRelease(r["cuda"], r["min_driver_linux"], r["min_driver_windows"], r["max_gcc"], r["max_clang"],
                        r["min_sm"], r["max_sm"], tuple(r["sms"]), _tuple_src(r["source"]),
                        tuple(r.get("unconfirmed", ())), r.get("notes"))
            for r in cuda["releases"]
        )
        self._cudnn: Tuple[CudnnRelease, ...] = tuple(
            CudnnRelease(r["cudnn"], tuple(r["cuda_majors"]), r["cuda_min"], r["cuda_max"], _tuple_src(r["source"]),
                         tuple(r.get("unconfirmed", ())), r.get("notes"))
            for r in docs["cudnn.json"]["releases"]
        )
        self._trt: Tuple[TensorrtRelease, ...] = tuple(
            TensorrtRelease(r["tensorrt"], tuple(r["cuda_majors"]), r["cuda_min"], r["cuda_max"], r["cudnn"],
                            _tuple_src(r["source"]), tuple(r.get("unconfirmed", ())), r.get("notes"))
            for r in docs["tensorrt.json"]["releases"]
        )
        gdoc = docs["gpus.json"]
        self._gpus: Tuple[GpuInfo, ...] = tuple(
            GpuInfo(r["pattern"], r["cc"], r["family"], r["example"], _tuple_src(r["source"]),
                    tuple(r.get("unconfirmed", ())))
            for r in gdoc["gpus"]
        )
        self._gpu_rx = tuple(re.compile(g.pattern, re.IGNORECASE) for g in self._gpus)
        self._families: Dict[str, str] = dict(gdoc["families"])

    # ------------------------------------------------------------------ general

    def sources(self) -> Tuple[str, ...]:
        """Every source URL cited anywhere in the matrix, sorted and de-duplicated."""
        urls = set()
        for recs in (self._mvc, self._cuda, self._cudnn, self._trt, self._gpus):
            for rec in recs:
                urls.update(rec.source)
        urls.update(_tuple_src(self._docs["gpus.json"].get("families_source", [])) or ())
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


def _replace(obj: Any, **changes: Any) -> Any:
    import dataclasses

    return dataclasses.replace(obj, **changes)


# --------------------------------------------------------------------------- loading


def _validate(docs: Mapping[str, Any]) -> None:
    for file in FILES:
        _check_header(file, docs[file])

    f = "cuda.json"
    mvc = [_check_row(f, f"minor_version_compat[{i}]", r, _MVC_SCHEMA)
           for i, r in enumerate(_rows(f, docs[f], "minor_version_compat"))]
    _check_sorted_unique(f, "minor_version_compat", mvc, "cuda_major", lambda v: v)
    rels = [_check_row(f, f"releases[{i}]", r, _CUDA_SCHEMA) for i, r in enumerate(_rows(f, docs[f], "releases"))]
    _check_sorted_unique(f, "releases", rels, "cuda", _version_key)
    for i, r in enumerate(rels):
        where = f"releases[{i}] (cuda {r['cuda']})"
        for fld in ("min_sm", "max_sm"):
            if r[fld] not in r["sms"]:
                raise MatrixError(f, f"{where}: field '{fld}' {r[fld]!r} is not in 'sms'")
            if not r[fld][-1].isdigit():
                raise MatrixError(f, f"{where}: field '{fld}' must be a plain target (no 'a'/'f' suffix)")
        if _sm_number(r["min_sm"]) > _sm_number(r["max_sm"]):
            raise MatrixError(f, f"{where}: 'min_sm' {r['min_sm']} is above 'max_sm' {r['max_sm']}")
        plain = [_sm_number(s) for s in r["sms"] if s[-1].isdigit()]
        if min(plain) != _sm_number(r["min_sm"]) or max(plain) != _sm_number(r["max_sm"]):
            raise MatrixError(f, f"{where}: 'min_sm'/'max_sm' must be the lowest/highest plain target in 'sms'")

    for f, field, schema in (("cudnn.json", "cudnn", _CUDNN_SCHEMA), ("tensorrt.json", "tensorrt", _TRT_SCHEMA)):
        rows = [_check_row(f, f"releases[{i}]", r, schema) for i, r in enumerate(_rows(f, docs[f], "releases"))]
        _check_sorted_unique(f, "releases", rows, field, _version_key)
        for i, r in enumerate(rows):
            if r["cuda_min"] is not None and int(r["cuda_min"].split(".")[0]) not in r["cuda_majors"]:
                raise MatrixError(f, f"releases[{i}]: field 'cuda_min' {r['cuda_min']!r} is not in 'cuda_majors'")
            if r["cuda_max"] is not None and int(r["cuda_max"].split(".")[0]) not in r["cuda_majors"]:
                raise MatrixError(f, f"releases[{i}]: field 'cuda_max' {r['cuda_max']!r} is not in 'cuda_majors'")

    f = "gpus.json"
    gpus = [_check_row(f, f"gpus[{i}]", r, _GPU_SCHEMA) for i, r in enumerate(_rows(f, docs[f], "gpus"))]
    seen: Dict[str, int] = {}
    for i, g in enumerate(gpus):
        if g["pattern"] in seen:
            raise MatrixError(f, f"gpus[{i}]: duplicate pattern {g['pattern']!r} (also gpus[{seen[g['pattern']]}])")
        seen[g["pattern"]] = i
        if not re.search(g["pattern"], g["example"], re.IGNORECASE):
            raise MatrixError(f, f"gpus[{i}]: field 'pattern' {g['pattern']!r} does not match its own 'example'")
    fams = docs[f].get("families")
    if not isinstance(fams, dict) or not fams:
        raise MatrixError(f, "top-level 'families' must be a non-empty object")
    for k, v in fams.items():
        if not _FAMILY_KEY_RE.match(k):
            raise MatrixError(f, f"families: key {k!r} must be 'major' or 'major.minor'")
        if _is_str(v):
            raise MatrixError(f, f"families[{k!r}]: must be a non-empty string")
    if "families_source" in docs[f]:
        err = _source(docs[f]["families_source"])
        if err:
            raise MatrixError(f, f"families_source {err}")


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
    _validate(docs)
    return docs


def _source_tree_dir() -> Path:
    return Path(__file__).resolve().parent.parent / "compat_matrix"


@functools.lru_cache(maxsize=1)
def _default_matrix() -> Matrix:
    try:
        from importlib.resources import files

        base = files("gpudoctor.compat_matrix")
        if not base.joinpath(FILES[0]).is_file():
            raise FileNotFoundError(FILES[0])
    except (ImportError, FileNotFoundError, TypeError):
        return load_matrix(_source_tree_dir())
    return Matrix(_read_docs(lambda name: base.joinpath(name).read_text(encoding="utf-8")))


def load_matrix(directory: Optional[Union[str, Path]] = None) -> Matrix:
    """Load and validate the matrix.

    With no ``directory``, reads the package data ``gpudoctor.compat_matrix``
    (falling back to the source tree's ``compat_matrix/``), cached after the
    first call. With a ``directory``, reads the four JSON files from it (not
    cached). Raises :class:`MatrixError` on any missing file, invalid JSON or
    schema violation.
    """
    if directory is None:
        return _default_matrix()
    root = Path(directory)
    return Matrix(_read_docs(lambda name: (root / name).read_text(encoding="utf-8")))
