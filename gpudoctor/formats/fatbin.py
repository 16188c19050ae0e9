"""List the SASS (cubin) and PTX targets embedded in CUDA binaries.

Pure Python, stdlib only, no CUDA toolkit needed.  Works on

* host ELF shared objects / executables / relocatable objects (64-bit,
  little-endian) that carry device code in a ``.nv_fatbin`` or
  ``__nv_relfatbin`` section,
* raw fat binaries (``nvcc -fatbin``), and
* cubins (``nvcc -cubin``; ELF with ``e_machine == EM_CUDA``).

Only headers are read (through ``mmap``); payloads are skipped using the
sizes recorded in the headers, so a 1 GB library takes milliseconds.

The on-disk layout used here is described, with its sources and how it was
verified, in ``docs/fatbin.md``.

``coverage()`` then answers "would this binary have a kernel image for a
device of compute capability X.Y?" following the CUDA C Programming Guide's
binary-compatibility rules.
"""

from __future__ import annotations

import mmap
import os
import re
import stat as _stat
import struct
from dataclasses import dataclass, field
from typing import Any, Iterable, List, Optional, Sequence, Tuple, Union

__all__ = [
    "CudaBinaryError",
    "FatbinEntry",
    "CudaBinary",
    "Coverage",
    "read_cuda_binary",
    "coverage",
    "parse_arch",
    "parse_cc",
]

# --------------------------------------------------------------------------
# constants (see docs/fatbin.md)
# --------------------------------------------------------------------------

FATBIN_MAGIC = 0xBA55ED50
_FATBIN_MAGIC_BYTES = struct.pack("<I", FATBIN_MAGIC)
_FATBIN_HEADER = struct.Struct("<IHHQ")  # magic, version, header_size, fat_size
# kind, (u16 unknown, 0x0101), header_size, payload_size, compressed_size,
# options_offset, version minor, version major, arch, obj name off, obj name len,
# flags, (u64 unknown), uncompressed_size
_ENTRY_HEADER = struct.Struct("<HHIQIIHHIIIQQQ")
_ENTRY_MIN = _ENTRY_HEADER.size  # 64

ENTRY_KIND_PTX = 0x1
ENTRY_KIND_ELF = 0x2
ENTRY_KIND_LTO = 0x8  # NVVM IR for link-time optimisation (-code=lto_XY)
_KIND_NAMES = {ENTRY_KIND_PTX: "ptx", ENTRY_KIND_ELF: "sass", ENTRY_KIND_LTO: "lto_ir"}

FLAG_64BIT = 0x1
FLAG_DEBUG = 0x2
FLAG_LINUX = 0x10
FLAG_COMPRESSED_LZ = 0x2000  # CUDA <= 12.x (LZ4-like)
FLAG_COMPRESSED_ZSTD = 0x8000  # CUDA 13 (payload starts with the zstd magic)
FLAG_ARCH_SPECIFIC = 0x100000  # sm_90a / compute_100a ...
FLAG_FAMILY_SPECIFIC = 0x200000  # sm_100f / compute_120f ...
_COMPRESSED_FLAGS = FLAG_COMPRESSED_LZ | FLAG_COMPRESSED_ZSTD

EM_CUDA = 190
_FATBIN_SECTIONS = (b".nv_fatbin", b"__nv_relfatbin")
SHT_NOBITS = 8

_ELF_HEADER = struct.Struct("<16sHHIQQQIHHHHHH")
_SECTION_HEADER = struct.Struct("<IIQQQQIIQQ")


class CudaBinaryError(ValueError):
    """The file is missing, unreadable, or not a well-formed CUDA binary."""


@dataclass(frozen=True)
class FatbinEntry:
    """One image inside a fat binary (or the cubin itself)."""

    kind: str  # "sass" | "ptx" | "lto_ir" | "unknown(N)"
    arch: str  # "sm_90a" for sass, "compute_90" for ptx / lto_ir
    compressed: bool
    payload_size: int  # bytes the (possibly compressed) payload occupies on disk
    uncompressed_size: Optional[int] = None  # from the header, when compressed
    ptx_isa: Optional[str] = None  # "9.0" for PTX entries (header version field)
    offset: int = 0  # file offset of the entry header
    flags: int = 0  # raw entry flags


@dataclass(frozen=True)
class CudaBinary:
    path: str
    kind: str  # "elf-host" | "cubin" | "fatbin"
    sass: Tuple[str, ...]
    ptx: Tuple[str, ...]
    entries: Tuple[FatbinEntry, ...]
    compressed_entries: int
    fatbin_count: int
    sections: Tuple[str, ...] = field(default=())  # fatbin sections found (ELF)


@dataclass(frozen=True)
class Coverage:
    cc: str  # normalised "9.0"
    verdict: str  # "sass" | "ptx_jit" | "none"
    entry: Optional[str]  # "sm_80" / "compute_75" / None
    reason: str


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------


def _arch_suffix(flags: int) -> str:
    if flags & FLAG_ARCH_SPECIFIC:
        return "a"
    if flags & FLAG_FAMILY_SPECIFIC:
        return "f"
    return ""


def _sort_key(arch: str) -> Tuple[int, str]:
    m = re.match(r"^(?:sm|compute|lto)_(\d+)([a-z]?)$", arch)
    if not m:
        return (1 << 30, arch)
    return (int(m.group(1)), m.group(2))


def _sorted_unique(items: Iterable[str]) -> Tuple[str, ...]:
    return tuple(sorted(set(items), key=_sort_key))


#: Mapped pages behind the walk are released every this many bytes: only headers are read, but each
#: touch maps a page, and a 1 GB libtorch_cuda.so holds tens of thousands of entries (RSS, issue 12).
RELEASE_EVERY = 16 << 20


def _release_behind(buf: Any, pos: int) -> None:
    """Drop this process's mapping of the pages before ``pos`` (an mmap only; they stay in the page
    cache, and are mapped again if touched)."""
    done = _RELEASED.get(id(buf), 0)
    if not hasattr(buf, "madvise") or pos - done < RELEASE_EVERY:
        return
    upto = pos - pos % mmap.PAGESIZE
    try:
        buf.madvise(mmap.MADV_DONTNEED, done, upto - done)
    except (OSError, ValueError, AttributeError):
        return
    _RELEASED[id(buf)] = upto


_RELEASED: dict = {}


def _walk_fatbins(
    buf: Any, start: int, end: int, where: str, entries: List[FatbinEntry]
) -> int:
    """Walk every fat binary container in buf[start:end]; return how many.

    Containers are concatenated, each 8-byte aligned; zero bytes between
    them are padding.  Anything else between containers is an error.
    """
    count = 0
    pos = start
    while pos < end:
        # skip zero padding between containers (cheap: at most a few bytes)
        if buf[pos] == 0:
            nxt = pos + 1
            while nxt < end and buf[nxt] == 0:
                nxt += 1
                if nxt - pos > 4096:
                    # long zero run: jump to the next magic (or the end)
                    found = buf.find(_FATBIN_MAGIC_BYTES, nxt, end)
                    nxt = end if found < 0 else found
                    break
            pos = nxt
            continue
        if end - pos < _FATBIN_HEADER.size:
            raise CudaBinaryError(
                f"{where}: truncated fatbin header at offset {pos:#x} "
                f"({end - pos} bytes left, need {_FATBIN_HEADER.size})"
            )
        magic, version, hsize, fsize = _FATBIN_HEADER.unpack_from(buf, pos)
        if magic != FATBIN_MAGIC:
            raise CudaBinaryError(
                f"{where}: expected fatbin magic 0x{FATBIN_MAGIC:08X} at offset "
                f"{pos:#x}, found 0x{magic:08X}"
            )
        if hsize < _FATBIN_HEADER.size:
            raise CudaBinaryError(
                f"{where}: fatbin at {pos:#x} has header size {hsize} (< 16)"
            )
        cend = pos + hsize + fsize
        if cend > end:
            raise CudaBinaryError(
                f"{where}: fatbin at {pos:#x} declares {fsize} bytes which runs "
                f"past the end of its container ({cend:#x} > {end:#x})"
            )
        count += 1
        _release_behind(buf, pos)
        epos = pos + hsize
        while epos < cend:
            if cend - epos < _ENTRY_MIN:
                # trailing bytes too short for an entry header
                if any(buf[epos:cend]):
                    raise CudaBinaryError(
                        f"{where}: truncated fatbin entry header at {epos:#x}"
                    )
                break
            (
                kind,
                _unk,
                ehsize,
                psize,
                csize,
                _optoff,
                vminor,
                vmajor,
                arch,
                _noff,
                _nlen,
                flags,
                _unk2,
                usize,
            ) = _ENTRY_HEADER.unpack_from(buf, epos)
            if ehsize == 0 and kind == 0:
                break  # zero filled tail
            if ehsize < _ENTRY_MIN:
                raise CudaBinaryError(
                    f"{where}: fatbin entry at {epos:#x} has header size "
                    f"{ehsize} (< {_ENTRY_MIN})"
                )
            nxt = epos + ehsize + psize
            if nxt > cend:
                raise CudaBinaryError(
                    f"{where}: fatbin entry at {epos:#x} ({ehsize}+{psize} bytes) "
                    f"runs past the end of its fatbin ({cend:#x})"
                )
            compressed = bool(flags & _COMPRESSED_FLAGS)
            suffix = _arch_suffix(flags)
            kname = _KIND_NAMES.get(kind, f"unknown({kind})")
            if kind == ENTRY_KIND_ELF:
                aname = f"sm_{arch}{suffix}"
            else:
                aname = f"compute_{arch}{suffix}"
            entries.append(
                FatbinEntry(
                    kind=kname,
                    arch=aname,
                    compressed=compressed,
                    payload_size=psize,
                    uncompressed_size=(usize if compressed and usize else None),
                    ptx_isa=(f"{vmajor}.{vminor}" if kind == ENTRY_KIND_PTX else None),
                    offset=epos,
                    flags=flags,
                )
            )
            epos = nxt
        pos = cend
    return count


def _elf_sections(buf: Any, size: int, where: str) -> List[Tuple[bytes, int, int, int]]:
    """Return [(name, type, offset, size)] for a 64-bit LE ELF."""
    if size < _ELF_HEADER.size:
        raise CudaBinaryError(f"{where}: truncated ELF header ({size} bytes)")
    (
        _ident,
        _etype,
        _mach,
        _ver,
        _entry,
        _phoff,
        shoff,
        _flags,
        _ehsize,
        _phentsize,
        _phnum,
        shentsize,
        shnum,
        shstrndx,
    ) = _ELF_HEADER.unpack_from(buf, 0)
    if shoff == 0:
        return []  # no section header table: no fatbin section
    if shentsize < _SECTION_HEADER.size:
        raise CudaBinaryError(f"{where}: bad ELF section header size {shentsize}")
    if shoff + shentsize > size:
        raise CudaBinaryError(
            f"{where}: ELF section header table at {shoff:#x} lies past the end "
            f"of the file ({size} bytes): file truncated?"
        )
    if shnum == 0:  # extended numbering: real count in section 0's sh_size
        shnum = _SECTION_HEADER.unpack_from(buf, shoff)[5]
    if shstrndx == 0xFFFF:
        shstrndx = _SECTION_HEADER.unpack_from(buf, shoff)[6]
    if shoff + shnum * shentsize > size:
        raise CudaBinaryError(
            f"{where}: ELF section header table ({shnum} entries at {shoff:#x}) "
            f"runs past the end of the file ({size} bytes): file truncated?"
        )
    raw = [
        _SECTION_HEADER.unpack_from(buf, shoff + i * shentsize) for i in range(shnum)
    ]
    if not raw:
        return []
    if shstrndx >= shnum:
        raise CudaBinaryError(f"{where}: ELF e_shstrndx {shstrndx} out of range")
    str_off, str_size = raw[shstrndx][4], raw[shstrndx][5]
    if str_off + str_size > size:
        raise CudaBinaryError(
            f"{where}: ELF section name table runs past the end of the file: "
            "file truncated?"
        )
    out = []
    for sh in raw:
        name_off = sh[0]
        if name_off >= str_size:
            name = b""
        else:
            nend = buf.find(b"\0", str_off + name_off, str_off + str_size)
            if nend < 0:
                nend = str_off + str_size
            name = bytes(buf[str_off + name_off : nend])
        out.append((name, sh[1], sh[4], sh[5]))
    return out


_TKINFO_ARCH = re.compile(rb"-arch[ =](sm_(\d+)([af]?))\b")


def _cubin_arch(buf: Any, size: int, where: str) -> str:
    """sm_XY[a|f] of a cubin, from e_flags plus the ptxas notes."""
    abiver = buf[8]
    (eflags,) = struct.unpack_from("<I", buf, 48)
    if abiver >= 8:  # CUDA 13 (ELFABIVERSION_CUDA_V2)
        sm = (eflags >> 8) & 0xFF
        accel = bool(eflags & 0x8)
    else:  # CUDA <= 12.x (ELFABIVERSION_CUDA_V1)
        sm = eflags & 0xFF
        accel = bool(eflags & 0x800)
    suffix = "a" if accel else ""
    if not suffix:
        # e_flags does not always carry the 'a' bit (ptxas 13.0 leaves it
        # clear for kernels that use no arch-specific feature) and never
        # carries 'f'; ptxas records its command line in .note.nv.tkinfo.
        try:
            sections = _elf_sections(buf, size, where)
        except CudaBinaryError:
            sections = []
        for name, _typ, off, sz in sections:
            if name == b".note.nv.tkinfo" and off + sz <= size:
                m = _TKINFO_ARCH.search(bytes(buf[off : off + sz]))
                if m and int(m.group(2)) == sm:
                    suffix = m.group(3).decode()
                break
    if sm == 0:
        raise CudaBinaryError(f"{where}: cubin e_flags {eflags:#x} carry no SM number")
    return f"sm_{sm}{suffix}"


# --------------------------------------------------------------------------
# public API
# --------------------------------------------------------------------------


def read_cuda_binary(path: Union[str, "os.PathLike[str]"]) -> CudaBinary:
    """Inspect a host ELF, raw fatbin or cubin and list its GPU targets."""
    spath = os.fspath(path)
    where = spath
    try:
        fd = os.open(spath, os.O_RDONLY)
    except FileNotFoundError:
        raise CudaBinaryError(f"{where}: no such file") from None
    except IsADirectoryError:
        raise CudaBinaryError(f"{where}: is a directory") from None
    except OSError as exc:
        raise CudaBinaryError(f"{where}: cannot open: {exc.strerror}") from None
    try:
        try:
            st = os.fstat(fd)
        except OSError as exc:  # pragma: no cover
            raise CudaBinaryError(f"{where}: cannot stat: {exc}") from None
        if not _stat.S_ISREG(st.st_mode):
            raise CudaBinaryError(f"{where}: not a regular file")
        size = st.st_size
        if size == 0:
            raise CudaBinaryError(f"{where}: empty file, not an ELF, fatbin or cubin")
        try:
            buf = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError) as exc:
            raise CudaBinaryError(f"{where}: cannot map file: {exc}") from None
        if hasattr(mmap, "MADV_RANDOM"):  # headers only: no read-ahead around each one
            buf.madvise(mmap.MADV_RANDOM)
        try:
            return _read(buf, size, spath)
        finally:
            _RELEASED.pop(id(buf), None)
            buf.close()
    finally:
        os.close(fd)


def _read(buf: Any, size: int, spath: str) -> CudaBinary:
    where = spath
    head = bytes(buf[:16])
    entries: List[FatbinEntry] = []
    if head[:4] == _FATBIN_MAGIC_BYTES:
        count = _walk_fatbins(buf, 0, size, where, entries)
        return _result(spath, "fatbin", entries, count, ())
    if head[:4] != b"\x7fELF":
        raise CudaBinaryError(
            f"{where}: not an ELF, fatbin or cubin (starts with {head[:4]!r})"
        )
    if len(head) < 16 or size < _ELF_HEADER.size:
        raise CudaBinaryError(f"{where}: truncated ELF header ({size} bytes)")
    if head[4] == 1:
        raise CudaBinaryError(f"{where}: 32-bit ELF is not supported")
    if head[4] != 2:
        raise CudaBinaryError(f"{where}: bad ELF class {head[4]}")
    if head[5] == 2:
        raise CudaBinaryError(f"{where}: big-endian ELF is not supported")
    if head[5] != 1:
        raise CudaBinaryError(f"{where}: bad ELF data encoding {head[5]}")
    (machine,) = struct.unpack_from("<H", buf, 18)
    if machine == EM_CUDA:
        arch = _cubin_arch(buf, size, where)
        entry = FatbinEntry(
            kind="sass", arch=arch, compressed=False, payload_size=size, offset=0
        )
        return _result(spath, "cubin", [entry], 0, ())
    count = 0
    found = []
    for name, typ, off, sz in _elf_sections(buf, size, where):
        if name not in _FATBIN_SECTIONS or typ == SHT_NOBITS or sz == 0:
            continue
        sname = name.decode()
        if off + sz > size:
            raise CudaBinaryError(
                f"{where}: section {sname} ({sz} bytes at {off:#x}) runs past the "
                f"end of the file ({size} bytes): file truncated?"
            )
        found.append(sname)
        count += _walk_fatbins(buf, off, off + sz, f"{where} [{sname}]", entries)
    return _result(spath, "elf-host", entries, count, tuple(found))


def _result(
    path: str,
    kind: str,
    entries: List[FatbinEntry],
    count: int,
    sections: Tuple[str, ...],
) -> CudaBinary:
    return CudaBinary(
        path=path,
        kind=kind,
        sass=_sorted_unique(e.arch for e in entries if e.kind == "sass"),
        ptx=_sorted_unique(e.arch for e in entries if e.kind == "ptx"),
        entries=tuple(entries),
        compressed_entries=sum(1 for e in entries if e.compressed),
        fatbin_count=count,
        sections=sections,
    )


# --------------------------------------------------------------------------
# coverage
# --------------------------------------------------------------------------

_ARCH_RE = re.compile(r"^(sm|compute)_(\d{2,3})([af]?)$")


def parse_arch(arch: str) -> Tuple[str, int, int, str]:
    """'sm_90a' -> ('sm', 9, 0, 'a'); 'compute_120' -> ('compute', 12, 0, '')."""
    m = _ARCH_RE.match(arch.strip())
    if not m:
        raise ValueError(f"not a CUDA arch name: {arch!r}")
    n = int(m.group(2))
    return m.group(1), n // 10, n % 10, m.group(3)


def parse_cc(cc: Any) -> Tuple[int, int]:
    """'9.0' / '12.0' / '8.6' / (9, 0) / 'sm_90' / '90' -> (major, minor)."""
    if isinstance(cc, tuple) and len(cc) == 2:
        return int(cc[0]), int(cc[1])
    s = str(cc).strip().lower()
    m = re.match(r"^(\d+)\.(\d)$", s)
    if m:
        return int(m.group(1)), int(m.group(2))
    m = re.match(r"^(?:sm_|compute_)?(\d{2,3})[af]?$", s)
    if m:
        n = int(m.group(1))
        return n // 10, n % 10
    raise ValueError(f"not a compute capability: {cc!r}")


def _sass_runs_on(suffix: str, major: int, minor: int, dmaj: int, dmin: int) -> bool:
    if suffix == "a":  # arch-specific: exactly that CC
        return (major, minor) == (dmaj, dmin)
    # plain and family-specific cubins: same major, device minor >= cubin minor
    return major == dmaj and dmin >= minor


def _ptx_jits_on(suffix: str, major: int, minor: int, dmaj: int, dmin: int) -> bool:
    if suffix == "a":  # arch-specific PTX is not forward compatible
        return (major, minor) == (dmaj, dmin)
    if suffix == "f":  # family-specific PTX: same family only
        return major == dmaj and dmin >= minor
    return (major, minor) <= (dmaj, dmin)


def _split_sets(obj: Any) -> Tuple[Sequence[str], Sequence[str]]:
    if isinstance(obj, CudaBinary):
        return obj.sass, obj.ptx
    if isinstance(obj, dict):
        return tuple(obj.get("sass", ())), tuple(obj.get("ptx", ()))
    if isinstance(obj, str):
        obj = [obj]
    items = list(obj)
    if (
        len(items) == 2
        and not isinstance(items[0], str)
        and not isinstance(items[1], str)
    ):
        return tuple(items[0]), tuple(items[1])
    sass = [a for a in items if str(a).startswith("sm_")]
    ptx = [a for a in items if str(a).startswith("compute_")]
    return sass, ptx


def coverage(binary_or_sets: Any, cc: Any) -> Coverage:
    """Which image of the binary a device of compute capability ``cc`` uses.

    ``binary_or_sets``: a CudaBinary, a {"sass": [...], "ptx": [...]} dict, a
    (sass, ptx) pair, or an iterable of arch names ("sm_80", "compute_90").
    """
    dmaj, dmin = parse_cc(cc)
    ccs = f"{dmaj}.{dmin}"
    sass, ptx = _split_sets(binary_or_sets)

    best = None
    for a in sass:
        _k, ma, mi, suf = parse_arch(a)
        if _sass_runs_on(suf, ma, mi, dmaj, dmin):
            rank = (mi == dmin, mi, {"a": 2, "f": 1, "": 0}[suf])
            if best is None or rank > best[0]:
                best = (rank, a, ma, mi, suf)
    if best is not None:
        _r, a, ma, mi, suf = best
        if (ma, mi) == (dmaj, dmin):
            why = f"exact SASS {a} for compute capability {ccs}"
        elif suf == "f":
            why = f"family-specific SASS {a} runs on the {ma}.x family member {ccs}"
        else:
            why = (
                f"SASS {a} is binary compatible with {ccs} "
                f"(same major {ma}, minor {dmin} >= {mi})"
            )
        return Coverage(ccs, "sass", a, why)

    bestp = None
    for a in ptx:
        _k, ma, mi, suf = parse_arch(a)
        if _ptx_jits_on(suf, ma, mi, dmaj, dmin):
            rank = (ma, mi)
            if bestp is None or rank > bestp[0]:
                bestp = (rank, a)
    if bestp is not None:
        a = bestp[1]
        return Coverage(
            ccs,
            "ptx_jit",
            a,
            f"no compatible SASS; PTX {a} would be JIT-compiled by the driver "
            f"for {ccs} (slow first launch, needs a driver that knows its ISA)",
        )

    why = [f"no kernel image is available for execution on a {ccs} device"]
    if sass:
        why.append("SASS present: " + ", ".join(sass))
        if any(parse_arch(a)[3] == "a" for a in sass):
            why.append("(arch-specific 'a' SASS runs only on exactly its CC)")
    if ptx:
        why.append("PTX present but none JIT-able: " + ", ".join(ptx))
    if not sass and not ptx:
        why.append("the binary carries no device code")
    return Coverage(ccs, "none", None, "; ".join(why))
