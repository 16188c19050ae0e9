"""Read the header of a serialized TensorRT engine plan (.engine / .plan / .trt).

Pure Python, standard library only, no TensorRT needed.  Only the first bytes
of the file are read (``max_bytes`` at most, 1 MiB by default), so a 10 GB
engine costs one small read.

What the header is known to hold, where each fact comes from and how sure it
is, is written down in ``docs/engine-plan.md``.  In short:

* offset 0, 4 bytes: the plan tag.  ``b"ftrt"`` (little-endian u32
  ``0x74727466`` = 1953657958) for every ordinary engine.  Safety-runtime
  engines start with ``b"NLYM"`` (1297697870) and a third tag, ``b"ptrt"``
  (1953657968), has been seen in a public load failure.
* offset 4, u32: 0 in the plan-file header that TensorRT 8.6 introduced.
* offsets 24..27, one byte each: major, minor, patch, build of the TensorRT
  that built the plan (layout ``"trt8.6+"``: 8.6, 9.x, 10.x and, as far as is
  known, later).  This is what ``trtexec --getPlanVersionOnly`` prints.
* older plans (TensorRT 7.x - 8.5, layout ``"trt-legacy"``): the TensorRT
  version is not at a documented place; byte 8 holds a serialization tag, of
  which three values are publicly tied to a release line (205: 8.2, 213: 8.4,
  232: 8.5), giving a partial version such as ``(8, 5)``.
* a file written by Ultralytics' exporter is ``u32 length + JSON + plan``;
  it is recognised (layout ``"ultralytics+<inner layout>"``) and the plan
  inside it is read.

The version-compatible / lean-runtime flags, the hardware-compatibility level
and the target compute capability are *not* at any publicly documented
offset, so :class:`PlanHeader` reports them as ``None`` (unknown) for every
layout.  No field is guessed.
"""

from __future__ import annotations

import os
import stat as _stat
import struct
from dataclasses import dataclass
from typing import Optional, Tuple, Union

__all__ = [
    "PlanFormatError",
    "PlanHeader",
    "read_plan_header",
    "what_is_it",
    "PLAN_TAG",
    "SAFETY_TAG",
    "PTRT_TAG",
    "LAYOUT_TRT86",
    "LAYOUT_LEGACY",
    "LAYOUT_UNKNOWN",
    "LAYOUT_SAFETY",
    "LAYOUT_PTRT",
    "ULTRALYTICS_PREFIX",
    "LEGACY_SERIALIZATION_TAGS",
    "header_facts",
]

#: The tag every ordinary TensorRT plan starts with (u32 LE 0x74727466).
PLAN_TAG = b"ftrt"
#: First 4 bytes of an engine built for the safety runtime (EngineCapability.SAFETY):
#: the standard runtime reports "incompatible serialization version (1297697870 != 1953657958)".
SAFETY_TAG = b"NLYM"
#: A tag seen once in a public error: "(1953657968 != 1953657958)".  Meaning unknown.
PTRT_TAG = b"ptrt"

LAYOUT_TRT86 = "trt8.6+"
LAYOUT_LEGACY = "trt-legacy"
LAYOUT_UNKNOWN = "trt-unknown"
LAYOUT_SAFETY = "trt-safety"
LAYOUT_PTRT = "trt-ptrt"            # a 'ptrt' plan of a variant not (yet) understood: TensorRT 7.x-8.5
LAYOUT_PTRT8 = "trt8.0-8.5"         # 'ptrt', u32 0, u32 serialization tag, u32 0, u64 size-24
LAYOUT_PTRT7 = "trt7"               # 'ptrt', u32 serialization version (97 = 7.1), u32 211, u32 size-24
LAYOUT_PRE7 = "trt-pre7"            # no tag: u64 file size first (a TensorRT 5.0 plan, JetPack 4.2)
ULTRALYTICS_PREFIX = "ultralytics+"

#: The plan-file header read by ``trtexec --getPlanVersionOnly``: 28 bytes.
HEADER_SIZE = 28
#: Serialization tags at byte 8 of pre-8.6 plans, as publicly reported (issue NVIDIA/TensorRT#3073
#: and "Current Version: N" errors).  Only the release line is known, so the version is partial.
LEGACY_SERIALIZATION_TAGS = {205: (8, 2), 213: (8, 4), 232: (8, 5)}
#: Release line per serialization tag of 'ptrt' plans (TensorRT 8.0-8.5), with the evidence in
#: docs/engine-plan.md: 232 in two plans from a TensorRT-8.5.1.7 tree; 205 in a JetPack 4.6 /
#: DeepStream 6.0 plan (TensorRT 8.0.1) and in public "Current Version: 205" errors of 8.2: 8.0-8.2.
PTRT8_TAGS = {205: ((8,), "8.0-8.2"), 213: ((8, 4), "8.4"), 232: ((8, 5), "8.5")}
#: 'ptrt' plans of TensorRT 7: the serialization version at offset 4 (97 in plans from a
#: TensorRT-7.1.3.4 tree).
PTRT7_VERSIONS = {97: ((7, 1), "7.1")}

# The Ultralytics metadata prefix is a few hundred bytes of JSON in practice; refuse absurd lengths.
_MAX_ULTRALYTICS_JSON = 16 << 20
_FIRST_READ = 4096

_Source = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview]


class PlanFormatError(ValueError):
    """Not a readable engine plan. ``reason`` is one of: "empty", "truncated", "not_an_engine", "unreadable"."""

    REASONS = ("empty", "truncated", "not_an_engine", "unreadable")

    def __init__(self, reason: str, message: str):
        if reason not in self.REASONS:
            raise ValueError(f"unknown PlanFormatError reason {reason!r}")
        super().__init__(message)
        self.reason = reason
        self.message = message

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class PlanHeader:
    size: int                                   # bytes in the file
    magic: str                                  # the tag as read, e.g. "ftrt"
    trt_version: Optional[Tuple[int, ...]]      # e.g. (8, 6, 1, 6) or (10, 3, 0, 26) as recorded; None if not found
    layout: str                                 # which documented layout matched, e.g. "trt8.6+"
    version_compatible: Optional[bool] = None   # built with kVERSION_COMPATIBLE (None: not recorded/unknown)
    lean: Optional[bool] = None
    hardware_compatibility: Optional[str] = None  # "none" | "ampere_plus" | "same_compute_capability"
    compute_capability: Optional[Tuple[int, int]] = None
    fields: Tuple[Tuple[str, int, int], ...] = ()  # (name, offset, value) evidence for every field read
    #: What the layout says of the release when the exact version is not recorded: "8.5", "8.0-8.2",
    #: "7.x-8.5, exact release unknown", "6 or older". None when ``trt_version`` is exact.
    release_line: Optional[str] = None

    @property
    def trt_version_text(self) -> Optional[str]:
        """The recorded version as text, e.g. "8.6.1.6"; a partial legacy version reads "8.5"; where only a
        release line is known, that line ("8.0-8.2", "7.x-8.5, exact release unknown")."""
        if self.release_line and (self.trt_version is None or len(self.trt_version) < 2):
            return self.release_line
        if self.trt_version is None:
            return None
        return ".".join(str(part) for part in self.trt_version)

    @property
    def plan_offset(self) -> int:
        """Where the TensorRT plan itself starts (non-zero only inside a wrapper such as Ultralytics')."""
        for name, _offset, value in self.fields:
            if name == "plan_offset":
                return value
        return 0

    @property
    def version_is_partial(self) -> bool:
        """True when only the release line is known (legacy plans: ``(8, 5)``)."""
        return self.trt_version is not None and len(self.trt_version) < 3


# ----------------------------------------------------------------------------------------- reading


def _hexbytes(data: bytes) -> str:
    return " ".join(f"{b:02x}" for b in data)


def _printable(data: bytes) -> str:
    return "".join(chr(b) if 32 <= b < 127 else "." for b in data)


class _Reader:
    """The first bytes of a file or buffer, read lazily, never more than ``max_bytes``."""

    def __init__(self, source: _Source, max_bytes: int):
        self.max_bytes = max_bytes
        self._fh = None
        self.name = "<bytes>"
        if isinstance(source, (bytes, bytearray, memoryview)):
            buf = bytes(memoryview(source)[:max_bytes])
            self.size = len(source) if not isinstance(source, memoryview) else source.nbytes
            self.data = buf
            return
        try:
            path = os.fspath(source)
        except TypeError:
            raise TypeError(f"source must be a path or bytes, not {type(source).__name__}") from None
        self.name = os.fsdecode(path)
        try:
            st = os.stat(path)
        except OSError as exc:
            raise PlanFormatError("unreadable", f"{self.name}: cannot stat: {exc.strerror or exc}") from None
        if _stat.S_ISDIR(st.st_mode):
            raise PlanFormatError("unreadable", f"{self.name}: is a directory, not an engine file")
        if not _stat.S_ISREG(st.st_mode):
            # FIFOs and devices could block or never end: refuse them rather than hang.
            raise PlanFormatError("unreadable", f"{self.name}: not a regular file")
        try:
            self._fh = open(path, "rb")
        except OSError as exc:
            raise PlanFormatError("unreadable", f"{self.name}: cannot open: {exc.strerror or exc}") from None
        try:
            self.size = os.fstat(self._fh.fileno()).st_size
            self.data = b""
            self.ensure(_FIRST_READ)
        except BaseException:
            self.close()
            raise

    def ensure(self, n: int) -> None:
        """Make sure ``self.data`` holds min(n, size, max_bytes) bytes."""
        want = min(n, self.max_bytes)
        if self._fh is None or len(self.data) >= want:
            return
        try:
            self._fh.seek(len(self.data))
            chunk = self._fh.read(want - len(self.data))
        except OSError as exc:
            raise PlanFormatError("unreadable", f"{self.name}: read failed: {exc.strerror or exc}") from None
        self.data += chunk

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def _need(r: _Reader, end: int, what: str) -> None:
    """Raise unless bytes [0, end) are available."""
    r.ensure(end)
    if len(r.data) >= end:
        return
    if r.size < end:
        raise PlanFormatError(
            "truncated",
            f"{r.name}: truncated TensorRT plan: {what} needs {end} bytes, the file has {r.size}",
        )
    raise PlanFormatError(
        "unreadable",
        f"{r.name}: {what} needs {end} bytes but max_bytes={r.max_bytes} stops the read",
    )


def _plausible_version(major: int, minor: int, patch: int, build: int) -> bool:
    # 8.6 introduced this header; majors seen so far run to 11.  Leave head-room, but refuse noise.
    if not 8 <= major <= 40:
        return False
    if major == 8 and minor < 6:
        return False
    return minor <= 99 and patch <= 99


def _parse_ftrt(r: _Reader, base: int) -> Tuple[str, Optional[Tuple[int, ...]], list]:
    """Layout, version and evidence of the plan whose "ftrt" tag is at ``base``."""
    _need(r, base + HEADER_SIZE, f"the {HEADER_SIZE}-byte plan header")
    d = r.data
    word4 = struct.unpack_from("<I", d, base + 4)[0]
    fields = [("magic", base, struct.unpack_from("<I", d, base)[0]), ("serialization_word", base + 4, word4)]
    major, minor, patch, build = d[base + 24], d[base + 25], d[base + 26], d[base + 27]
    if word4 == 0 and _plausible_version(major, minor, patch, build):
        fields += [
            ("trt_major", base + 24, major),
            ("trt_minor", base + 25, minor),
            ("trt_patch", base + 26, patch),
            ("trt_build", base + 27, build),
        ]
        return LAYOUT_TRT86, (major, minor, patch, build), fields
    tag = d[base + 8]
    fields.append(("serialization_tag", base + 8, tag))
    if tag in LEGACY_SERIALIZATION_TAGS:
        return LAYOUT_LEGACY, LEGACY_SERIALIZATION_TAGS[tag], fields
    if word4 != 0:
        return LAYOUT_LEGACY, None, fields
    return LAYOUT_UNKNOWN, None, fields


def _ultralytics_length(data: bytes, size: int) -> Optional[int]:
    """The JSON length if ``data`` starts like Ultralytics' ``u32 length + JSON`` prefix."""
    if len(data) < 5:
        return None
    n = struct.unpack_from("<I", data, 0)[0]
    if not 2 <= n <= _MAX_ULTRALYTICS_JSON or data[4:5] != b"{":
        return None
    return n


def read_plan_header(source: _Source, max_bytes: int = 1 << 20) -> PlanHeader:
    """source: a path (str/PathLike) or bytes. Reads at most max_bytes (engines are GBs: never read the whole file).

    Raises :class:`PlanFormatError` (reason "empty", "truncated", "not_an_engine" or "unreadable")
    for anything that is not a readable plan header.
    """
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
        raise ValueError(f"max_bytes must be a positive int, not {max_bytes!r}")
    r = _Reader(source, max_bytes)
    try:
        return _read(r)
    finally:
        r.close()


def _read(r: _Reader) -> PlanHeader:
    if r.size == 0:
        raise PlanFormatError("empty", f"{r.name}: empty file (0 bytes), not a TensorRT engine")
    head = r.data[:4]
    if len(head) < 4 and r.size < 4:
        if any(tag.startswith(head) for tag in (PLAN_TAG, SAFETY_TAG, PTRT_TAG)):
            raise PlanFormatError(
                "truncated",
                f"{r.name}: truncated TensorRT plan: {r.size} byte(s) ({_hexbytes(head)}), "
                f"the tag alone is 4 bytes",
            )
        raise PlanFormatError(
            "not_an_engine",
            f"{r.name}: not a TensorRT engine: {r.size} byte(s) ({_hexbytes(head)}); "
            f"looks like: {what_is_it(r.data)}",
        )
    _need(r, 4, "the plan tag")

    if head == PLAN_TAG:
        layout, version, fields = _parse_ftrt(r, 0)
        return PlanHeader(size=r.size, magic="ftrt", trt_version=version, layout=layout, fields=tuple(fields))
    if head == SAFETY_TAG:
        fields = (("magic", 0, struct.unpack_from("<I", head)[0]),)
        return PlanHeader(size=r.size, magic="NLYM", trt_version=None, layout=LAYOUT_SAFETY, fields=fields)
    if head == PTRT_TAG:
        return _parse_ptrt(r)
    if r.size >= 16 and len(r.data) >= 8 and struct.unpack_from("<Q", r.data, 0)[0] == r.size:
        # TensorRT 5 (and, as far as known, 6) wrote no tag: the plan starts with its own size.
        return PlanHeader(size=r.size, magic="", trt_version=None, layout=LAYOUT_PRE7,
                          fields=(("size_prefix", 0, r.size),), release_line="6 or older (no magic tag)")

    n = _ultralytics_length(r.data, r.size)
    if n is not None:
        base = 4 + n
        r.ensure(base + 4)
        if not _looks_like_json_text(r.data[4:base]):
            raise _not_an_engine(r, head)
        if r.size < base + 4:
            raise PlanFormatError(
                "truncated",
                f"{r.name}: truncated: starts like an Ultralytics engine ({n}-byte JSON metadata prefix) "
                f"but the file ends at {r.size} bytes, before the TensorRT plan",
            )
        _need(r, base + 4, f"the Ultralytics metadata prefix ({n} bytes of JSON) and the plan tag")
        inner = r.data[base:base + 4]
        if inner != PLAN_TAG:
            raise PlanFormatError(
                "not_an_engine",
                f"{r.name}: not a TensorRT engine: starts like Ultralytics' JSON metadata prefix ({n} bytes) "
                f"but no 'ftrt' tag follows it (found {_hexbytes(inner)} at offset {base})",
            )
        layout, version, fields = _parse_ftrt(r, base)
        fields = [("ultralytics_metadata_length", 0, n), ("plan_offset", 0, base)] + fields
        return PlanHeader(
            size=r.size, magic="ftrt", trt_version=version, layout=ULTRALYTICS_PREFIX + layout, fields=tuple(fields)
        )
    raise _not_an_engine(r, head)


def _parse_ptrt(r: _Reader) -> PlanHeader:
    """The two 'ptrt' layouts seen in real plans (docs/engine-plan.md), else an unknown 'ptrt' variant."""
    r.ensure(24)
    data = r.data
    magic = ("magic", 0, struct.unpack_from("<I", data)[0])
    if len(data) >= 24:
        a, b, c = struct.unpack_from("<III", data, 4)
        rest64 = struct.unpack_from("<Q", data, 16)[0]
        if a == 0 and c == 0 and rest64 == r.size - 24:  # TensorRT 8.0-8.5
            version, line = PTRT8_TAGS.get(b, ((8,), None))
            fields = (magic, ("serialization_tag", 8, b), ("payload_size", 16, rest64))
            return PlanHeader(size=r.size, magic="ptrt", trt_version=version, layout=LAYOUT_PTRT8, fields=fields,
                              release_line=line or f"8.0-8.5 (serialization tag {b}), exact release unknown")
        if a and c == r.size - 24:  # TensorRT 7.x: the serialization version first
            version, line = PTRT7_VERSIONS.get(a, (None, None))
            fields = (magic, ("serialization_version", 4, a), ("tag", 8, b), ("payload_size", 12, c))
            return PlanHeader(size=r.size, magic="ptrt", trt_version=version, layout=LAYOUT_PTRT7, fields=fields,
                              release_line=line or f"7.x or older (serialization version {a}), exact release unknown")
    return PlanHeader(size=r.size, magic="ptrt", trt_version=None, layout=LAYOUT_PTRT, fields=(magic,),
                      release_line="7.x-8.5 ('ptrt' plan of an unrecognised variant), exact release unknown")


def _not_an_engine(r: _Reader, head: bytes) -> PlanFormatError:
    kind = what_is_it(r.data)
    hint = _HINTS.get(kind, "")
    if kind == "Git LFS pointer":
        import re

        m = re.search(rb"\nsize (\d+)", r.data[:1024])
        hint = (f": the real file ({m.group(1).decode()} bytes) was never downloaded; in the repository run "
                "`git lfs install && git lfs pull`" if m else hint)
    return PlanFormatError(
        "not_an_engine",
        f"{r.name}: not a TensorRT engine plan: expected the tag 'ftrt' (66 74 72 74) at offset 0, "
        f"found {_hexbytes(head)} ('{_printable(head)}'); looks like: {kind}{hint}",
    )


#: One line each for the files users pass by mistake.
_HINTS = {
    "Git LFS pointer": ": the real file was never downloaded; in the repository run `git lfs install && git lfs pull`",
    "ONNX model": ": build an engine from it: trtexec --onnx=model.onnx --saveEngine=model.engine",
    "Python pickle": ": a Python object saved with pickle, not a TensorRT engine",
    "PyTorch checkpoint (zip)": ": a torch.save() file; export to ONNX, then trtexec --onnx=model.onnx --saveEngine=model.engine",
}


def _looks_like_json_text(blob: bytes) -> bool:
    try:
        text = blob.decode("utf-8")
    except UnicodeDecodeError:
        # A cut in the middle of a multi-byte character is still text.
        try:
            text = blob[:-3].decode("utf-8")
        except UnicodeDecodeError:
            return False
    return text.lstrip().startswith("{") and all(c.isprintable() or c in "\t\r\n" for c in text)


# ----------------------------------------------------------------------------------------- guessing


def _varint(data: bytes, pos: int) -> Tuple[Optional[int], int]:
    value = shift = 0
    while pos < len(data) and shift <= 63:
        b = data[pos]
        value |= (b & 0x7F) << shift
        pos += 1
        if not b & 0x80:
            return value, pos
        shift += 7
    return None, pos


# ModelProto field tags that may follow ir_version (field 1): producer_name 2, producer_version 3,
# domain 4, model_version 5, doc_string 6, graph 7, opset_import 8, metadata_props 14,
# training_info 20, functions 25, configuration 26.
_ONNX_NEXT_TAGS = {0x12, 0x1A, 0x22, 0x28, 0x32, 0x3A, 0x42, 0x72, 0xA2, 0xCA, 0xD2}


def _looks_like_onnx(data: bytes) -> bool:
    if len(data) < 3 or data[0] != 0x08:
        return False
    ir_version, pos = _varint(data, 1)
    if ir_version is None or not 1 <= ir_version <= 30 or pos >= len(data):
        return False
    return data[pos] in _ONNX_NEXT_TAGS


def _looks_like_text(data: bytes) -> bool:
    sample = data[:4096]
    if not sample or b"\x00" in sample:
        return False
    try:
        text = sample.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(sample) - 3:
            return False
        text = sample[:exc.start].decode("utf-8")
    if not text:
        return False
    printable = sum(1 for c in text if c.isprintable() or c in "\t\r\n\f")
    return printable >= 0.95 * len(text)


def what_is_it(data: bytes) -> str:
    """A short guess at what a file is, from its first bytes.

    Engines answer "TensorRT engine plan" (or the safety / wrapped variants); for other files one of
    "ONNX model", "TensorRT calibration cache", "safetensors", "ELF", "zip", "gzip", "text",
    "empty" or "unknown".  A TensorRT timing cache has no publicly documented signature and answers
    "unknown" (it is never taken for an engine: it does not start with 'ftrt').
    """
    data = bytes(data[:65536])
    if not data:
        return "empty"
    head = data[:4]
    if head == PLAN_TAG:
        return "TensorRT engine plan"
    if head == SAFETY_TAG:
        return "TensorRT safety-runtime engine"
    if head == PTRT_TAG:
        return "TensorRT 7.x-8.5 engine plan ('ptrt')"
    if data.startswith(b"version https://git-lfs.github.com/spec/"):
        return "Git LFS pointer"
    if data[:2] in (b"\x80\x02", b"\x80\x03", b"\x80\x04", b"\x80\x05") or data.startswith((b"ccopy_reg\n", b"(dp0", b"(lp0")):
        return "Python pickle"
    n = _ultralytics_length(data, len(data))
    if n is not None and data[4 + n:8 + n] == PLAN_TAG:
        return "Ultralytics-wrapped TensorRT engine"
    if data.startswith(b"\x7fELF"):
        return "ELF"
    if data[:4] in (b"PK\x03\x04", b"PK\x05\x06", b"PK\x07\x08"):
        return "PyTorch checkpoint (zip)" if b"data.pkl" in data[:4096] else "zip"
    if data.startswith(b"\x1f\x8b"):
        return "gzip"
    if data.startswith(b"TRT-") and data[4:5].isdigit():
        return "TensorRT calibration cache"
    if len(data) >= 10 and data[8:10] == b'{"':
        return "safetensors"
    if _looks_like_onnx(data):
        return "ONNX model"
    if _looks_like_text(data):
        return "text"
    return "unknown"


def header_facts(header: "PlanHeader") -> dict:
    """A :class:`gpudoctor.formats.engine_plan.PlanHeader` as JSON facts (what the ``engine`` probe reports)."""
    cc = header.compute_capability
    return {"trt_version": list(header.trt_version) if header.trt_version else None,
            "trt_version_text": header.trt_version_text, "layout": header.layout, "size": header.size,
            "magic": header.magic, "version_is_partial": header.version_is_partial, "plan_offset": header.plan_offset,
            "release_line": header.release_line,
            "version_compatible": header.version_compatible, "lean": header.lean,
            "hardware_compatibility": header.hardware_compatibility,
            "compute_capability": f"{cc[0]}.{cc[1]}" if cc else None,
            "fields": [{"name": n, "offset": o, "value": v} for n, o, v in header.fields]}
