"""Schema of the compatibility matrix files: parsing helpers, field checks, and :func:`validate`.

Every defect raises :class:`MatrixError` naming the file, the row and the field.
The schema itself is documented in ``compat_matrix/README.md``.
"""

from __future__ import annotations

import datetime
import re
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from packaging.version import InvalidVersion, Version

SCHEMA_VERSION = 1
#: The data files, in the order they are loaded and validated.
FILES = ("cuda.json", "cudnn.json", "tensorrt.json", "gpus.json", "os.json", "frameworks.json")

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

_FULL_VERSION_RE = re.compile(r"^\d+(\.\d+){1,3}$")
_PY_RE = re.compile(r"^3\.\d+$")
_URL_RE = re.compile(r"^https://\S+$")
_OS_ID_RE = re.compile(r"^[a-z]+(-[a-z0-9.]+)?$")
_OS_FAMILIES = ("debian", "rhel", "windows")
_SEGMENTS = ("data-center", "workstation", "geforce", "jetson")


def _nullable(check: _Check) -> _Check:
    return lambda v: None if v is None else check(v)


def _is_bool(v: Any) -> Optional[str]:
    return None if isinstance(v, bool) else "must be true or false"


def _one_of(*allowed: str) -> _Check:
    return lambda v: None if v in allowed else f"must be one of {list(allowed)}, got {v!r}"


def _list_of(item: _Check, allow_empty: bool = True) -> _Check:
    def check(v: Any) -> Optional[str]:
        if not isinstance(v, list) or (not v and not allow_empty):
            return "must be a " + ("" if allow_empty else "non-empty ") + "list"
        for i, x in enumerate(v):
            err = item(x)
            if err:
                return f"item {i} {err}"
        if len(set(map(str, v))) != len(v):
            return "has duplicate entries"
        return None

    return check


def _map_of(key: _Check, value: _Check) -> _Check:
    def check(v: Any) -> Optional[str]:
        if not isinstance(v, dict):
            return "must be an object"
        for k, x in v.items():
            err = key(k) or value(x)
            if err:
                return f"entry {k!r} {err}"
        return None

    return check


def _template(*placeholders: str) -> _Check:
    """A package-name template: only the given ``{placeholders}`` may appear."""
    def check(v: Any) -> Optional[str]:
        if not isinstance(v, str) or not re.match(r"^[A-Za-z0-9._+:{}\-]+$", v):
            return f"must be a package name (template), got {v!r}"
        used = set(re.findall(r"\{(\w*)\}", v))
        if used - set(placeholders):
            return f"uses unknown placeholder(s) {sorted(used - set(placeholders))} (allowed: {list(placeholders)})"
        return None

    return check


_FULL = _regex_str(_FULL_VERSION_RE, "a version like '12.4.1'")
_PY = _regex_str(_PY_RE, "a Python version like '3.10'")


def _URL(v: Any) -> Optional[str]:
    return None if isinstance(v, str) and _URL_RE.match(v) else f"must be an https:// URL, got {v!r}"


def _os_id(v: Any) -> Optional[str]:
    return None if isinstance(v, str) and _OS_ID_RE.match(v) else f"must be an OS id like 'ubuntu-22.04', got {v!r}"

_PKG_VERSION = _regex_str(re.compile(r"^\d[\w.+~:-]*$"), "a package version like '9.1.1.17-1'")


def _exact_fields(v: dict, fields: Dict[str, Callable[[Any], Optional[str]]]) -> Optional[str]:
    """The first field of ``fields`` missing from ``v`` or failing its check, or a field ``v`` has beyond them."""
    for k, check in fields.items():
        if k not in v:
            return f"misses field '{k}'"
        err = check(v[k])
        if err:
            return f"field '{k}' {err}"
    extra = set(v) - set(fields)
    return f"has unknown field(s) {sorted(extra)}" if extra else None


def _torch_build(v: Any) -> Optional[str]:
    if not isinstance(v, dict):
        return "must be an object"
    fields = {"cuda": _MM, "index_url": _URL, "cudnn": _MM_OPT, "sass": _list_of(_sm), "ptx": _list_of(_ptx)}
    return _exact_fields(v, fields)


def _ptx(v: Any) -> Optional[str]:
    return None if isinstance(v, str) and re.match(r"^compute_\d{2,3}[af]?$", v) else \
        f"must be a PTX target like 'compute_90', got {v!r}"


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
    "latest_update": (_FULL, True),
    "runfile_driver_linux": (_DRIVER_OPT, True),
    "msvc": (_list_of(_regex_str(re.compile(r"^20\d\d$"), "a Visual Studio year like '2022'")), True),
    "ptx_isa": (_MM, True),
}
_CUDNN_SCHEMA: _Schema = {
    "cudnn": (_MM, True),
    "cuda_majors": (_majors, True),
    "cuda_min": (_MM_OPT, True),
    "cuda_max": (_CMAX_OPT, True),
    "latest": (_FULL, True),
    "pip": (_list_of(_template()), True),
    "apt": (_list_of(_template("cuda_major")), True),
    "apt_versions": (_map_of(_regex_str(re.compile(r"^\d+$"), "a CUDA major like '12'"), _PKG_VERSION), True),
    "min_sm": (_nullable(_sm), True),
    "windows": (_is_bool, True),
}
_TRT_SCHEMA: _Schema = {
    "tensorrt": (_MM, True),
    "cuda_majors": (_majors, True),
    "cuda_min": (_MM_OPT, True),
    "cuda_max": (_CMAX_OPT, True),
    "cudnn": (_MM_OPT, True),
    "latest": (_FULL, True),
    "python": (_list_of(_PY), True),
    "min_sm": (_nullable(_sm), True),
    "max_sm": (_nullable(_sm), True),
    "pip": (_list_of(_template()), True),
    "apt_versions": (_map_of(_regex_str(re.compile(r"^\d+$"), "a CUDA major like '12'"), _PKG_VERSION), True),
    "windows": (_is_bool, True),
}
_GPU_SCHEMA: _Schema = {
    "pattern": (_pattern, True),
    "cc": (_CC, True),
    "family": (_is_str, True),
    "example": (_is_str, True),
    "segment": (_one_of(*_SEGMENTS), True),
}
def _matching(rx: "re.Pattern[str]", what: str) -> _Check:
    """A string matching ``rx`` (no version parse: names, paths)."""
    return lambda v: None if isinstance(v, str) and rx.match(v) else f"must be {what}, got {v!r}"


_DEB_NAME = _matching(re.compile(r"^[a-z0-9][a-z0-9.+-]+$"), "a Debian package name like 'g++-11'")
_DEB_VERSION = _matching(re.compile(r"^(\d+:)?\d[A-Za-z0-9.+~-]*$"), "a Debian version like '11.8.89~11.8.0-5~deb12u1'")


def _archive_cuda(v: Any) -> Optional[str]:
    """The distribution archive's own CUDA (records.ArchiveCuda): every field present and well-formed."""
    if not isinstance(v, dict):
        return "must be an object"
    fields = {"cuda": _MM, "suite": _matching(re.compile(r"^[a-z]+$"), "a release codename like 'bookworm'"),
              "components": _list_of(_one_of("contrib", "non-free", "non-free-firmware", "restricted", "universe",
                                             "multiverse"), allow_empty=False),
              "packages": _list_of(_DEB_NAME, allow_empty=False), "toolkit_version": _DEB_VERSION,
              "nvcc": _matching(re.compile(r"^/\S+$"), "an absolute path"), "driver_package": _DEB_NAME,
              "driver_version": _DEB_VERSION, "cudnn": _nullable(_DEB_NAME)}
    return _exact_fields(v, fields)


_OS_SCHEMA: _Schema = {
    "os": (_os_id, True),
    "family": (_one_of(*_OS_FAMILIES), True),
    "repo": (_nullable(_template()), True),
    "cuda_min": (_MM, True),
    "cuda_max": (_MM_OPT, True),
    "python": (_nullable(_PY), True),
    "driver_package": (_nullable(_template("branch")), True),
    "keyring": (_nullable(_URL), True),
    "archive_cuda": (_nullable(_archive_cuda), False),
}
_TORCH_SCHEMA: _Schema = {
    "torch": (_MM, True),
    "python": (_list_of(_PY, allow_empty=False), True),
    "default_cuda": (_MM_OPT, True),
    "builds": (_list_of(_torch_build), True),
}
_JAX_SCHEMA: _Schema = {
    "jax": (_FULL, True),
    "python": (_list_of(_PY, allow_empty=False), True),
    "cuda_majors": (_majors, True),
    "cuda_min": (_MM_OPT, True),
    "cudnn_min": (_MM_OPT, True),
    "pip": (_is_str, True),
    "min_sm": (_nullable(_sm), True),
}
_TF_SCHEMA: _Schema = {
    "tensorflow": (_MM, True),
    "python": (_list_of(_PY, allow_empty=False), True),
    "cuda": (_MM_OPT, True),
    "cudnn": (_MM_OPT, True),
    "pip": (_is_str, True),
}
_ORT_SCHEMA: _Schema = {
    "onnxruntime": (_MM, True),
    "cuda": (_list_of(_CMAX_OPT), True),
    "cudnn": (_list_of(_MM), True),
    "pip": (_list_of(_template(), allow_empty=False), True),
}
_PIP_WHEELS_SCHEMA: _Schema = {
    "cuda_major": (_is_int, True),
    "suffix": (lambda v: None if v in ("", "-cu11", "-cu12", "-cu13") else f"must be '' or '-cuNN', got {v!r}", True),
    "cuda_min": (_MM, True),
}
#: Fields added in the 2026-11 extension: a row may still lack them (the loader keeps defaults);
#: tests/test_matrix.py requires them in the shipped data.
EXTENSION_FIELDS = {
    "cuda.json": ("latest_update", "runfile_driver_linux", "msvc", "ptx_isa"),
    "cudnn.json": ("latest", "pip", "apt", "apt_versions", "min_sm", "windows"),
    "tensorrt.json": ("latest", "python", "min_sm", "max_sm", "pip", "apt_versions", "windows"),
    "gpus.json": ("segment",),
}
_META = {"source", "unconfirmed", "notes"}


def _check_row(file: str, where: str, row: Any, schema: _Schema) -> Dict[str, Any]:
    if not isinstance(row, dict):
        raise MatrixError(file, f"{where}: must be an object")
    optional = EXTENSION_FIELDS.get(file, ())
    for field, (check, required) in schema.items():
        if field not in row:
            if required and field not in optional:
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


def validate(docs: Mapping[str, Any]) -> None:
    """Check every file of ``docs`` (file name -> parsed JSON); raise :class:`MatrixError` at the first defect."""
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

    wheels = [_check_row(f, f"pip_wheels[{i}]", r, _PIP_WHEELS_SCHEMA) for i, r in enumerate(_rows(f, docs[f], "pip_wheels"))]
    _check_sorted_unique(f, "pip_wheels", wheels, "cuda_major", lambda v: v)

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

    f = "os.json"
    oses = [_check_row(f, f"oses[{i}]", r, _OS_SCHEMA) for i, r in enumerate(_rows(f, docs[f], "oses"))]
    _check_sorted_unique(f, "oses", oses, "os", lambda v: v)
    for i, r in enumerate(oses):
        if r["cuda_max"] is not None and _version_key(r["cuda_max"]) < _version_key(r["cuda_min"]):
            raise MatrixError(f, f"oses[{i}] ({r['os']}): 'cuda_max' is below 'cuda_min'")
        if (r["family"] == "windows") != (r["repo"] is None):
            raise MatrixError(f, f"oses[{i}] ({r['os']}): 'repo' must be null exactly for the windows family")
        arch = r.get("archive_cuda")
        if arch and r["family"] != "debian":
            raise MatrixError(f, f"oses[{i}] ({r['os']}): 'archive_cuda' is for the debian family (apt archives)")
        if arch and not any(c["cuda"] == arch["cuda"] for c in docs["cuda.json"]["releases"]):
            raise MatrixError(f, f"oses[{i}] ({r['os']}): 'archive_cuda' CUDA {arch['cuda']} is not in cuda.json")

    f = "frameworks.json"
    for table, key, schema in (("torch", "torch", _TORCH_SCHEMA), ("jax", "jax", _JAX_SCHEMA),
                               ("tensorflow", "tensorflow", _TF_SCHEMA), ("onnxruntime", "onnxruntime", _ORT_SCHEMA)):
        rows = [_check_row(f, f"{table}[{i}]", r, schema) for i, r in enumerate(_rows(f, docs[f], table))]
        _check_sorted_unique(f, table, rows, key, _version_key)
    for i, r in enumerate(docs[f]["torch"]):
        cudas = [b["cuda"] for b in r["builds"]]
        if cudas != sorted(cudas, key=_version_key):
            raise MatrixError(f, f"torch[{i}] ({r['torch']}): 'builds' must be sorted by 'cuda'")
        if r["default_cuda"] is not None and r["default_cuda"] not in cudas:
            raise MatrixError(f, f"torch[{i}] ({r['torch']}): 'default_cuda' {r['default_cuda']!r} is not one of its builds")
    for i, r in enumerate(docs[f]["onnxruntime"]):
        if len(r["cuda"]) != len(r["cudnn"]):
            raise MatrixError(f, f"onnxruntime[{i}]: 'cuda' and 'cudnn' must pair up (same length)")
