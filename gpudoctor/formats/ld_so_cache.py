"""glibc's ``/etc/ld.so.cache``, read from its bytes: what ``ldconfig -p`` would print for a cache file, without
running anything (so a cache inside an unpacked image can be read on any host, of any architecture).

Source of the layout: glibc ``sysdeps/generic/dl-cache.h`` (structs), ``sysdeps/generic/ldconfig.h`` (flag
values), ``elf/cache.c`` (``print_cache``/``print_entry``: how ``ldconfig -p`` reads and words it;
``save_cache``/``write_extensions``: how ldconfig writes it) and ``elf/dl-cache.c`` (how ld.so reads it),
glibc 2.33-2.36, at https://github.com/bminor/glibc/blob/release/2.36/master/sysdeps/generic/dl-cache.h,
https://github.com/bminor/glibc/blob/release/2.36/master/sysdeps/generic/ldconfig.h,
https://github.com/bminor/glibc/blob/release/2.36/master/elf/cache.c and
https://github.com/bminor/glibc/blob/release/2.36/master/elf/dl-cache.c (mirror of
https://sourceware.org/git/glibc.git). Where glibc versions word an entry differently, ``ldconfig -p`` of
glibc 2.36 is the reference (tests compare with it). In C terms::

    struct cache_file      { char magic[11] = "ld.so-1.7.0"; uint32 nlibs; struct file_entry libs[nlibs]; }
    struct file_entry      { int32 flags; uint32 key, value; }           12 bytes, strings from &libs[nlibs]
    struct cache_file_new  { char magic[17] = "glibc-ld.so.cache"; char version[3] = "1.1";
                             uint32 nlibs, len_strings; uint8 flags; uint8 pad[3];
                             uint32 extension_offset; uint32 unused[3];
                             struct file_entry_new libs[nlibs]; }      48 bytes + entries
    struct file_entry_new  { int32 flags; uint32 key, value; uint32 osversion; uint64 hwcap; }   24 bytes
    struct cache_extension { uint32 magic = 0xeaa42174, count; struct { uint32 tag, flags, offset, size; } [count]; }

* Old format (libc5, glibc < 2.2, ``ldconfig -c old``): key/value index the bytes after the last entry.
* New format (default since glibc 2.32): key/value index from the start of ``cache_file_new``.
* Both (``ldconfig -c compat``, the default of glibc 2.2-2.31): the old entries, then the new header aligned to
  its struct's alignment (8 on 64-bit, 4 on some 32-bit ABIs: both are tried), whose entries are the ones
  read, as ``ldconfig -p`` and ld.so do.
* Byte order: native to the writer. ``flags & 3`` of the new header says it since glibc 2.33 (2 little,
  3 big, 1 "invalid: ignore this cache"); a cache without it (0, and every old-format cache) is read in the
  order under which its entry count fits the file (and :data:`MAX_ENTRIES`).
* Extension directory (glibc 2.33+), offsets from the start of the file: tag 0 the generator string, tag 1
  the glibc-hwcaps subdirectory names (uint32 string indices, also from the start of the file). An entry whose
  ``hwcap`` has bit 62 set (ignoring the 10 ISA-level bits above bit 32) names its subdirectory by the index
  in its low 32 bits; ``ldconfig -p`` prints it as ``hwcap: "x86-64-v3"``. (In a compat file glibc 2.36 writes
  those indices from the new header but ldconfig -p and ld.so read them from the file's start, so they name
  another string, which no loader matches; it is read here as glibc reads it.)
"""
from __future__ import annotations

import os
import stat
import struct
from typing import List, Optional, Tuple

OLD_MAGIC = b"ld.so-1.7.0"
NEW_MAGIC = b"glibc-ld.so.cache1.1"  # CACHEMAGIC_NEW followed by CACHE_VERSION
_OLD_HEADER, _OLD_ENTRY = 16, 12
_NEW_HEADER, _NEW_ENTRY = 48, 24
_EXTENSION_MAGIC = 0xEAA42174
_TAG_HWCAPS = 1
_HWCAP_EXTENSION = 1 << 62
_ISA_LEVEL_MASK = (1 << 10) - 1
#: Entries a cache may claim: far over any real system's (a full distribution install has a few thousand), and
#: a bound on the memory a hostile file can make the result take (a 64 MiB file holds 2.8 million entries).
MAX_ENTRIES = 1 << 17
#: PATH_MAX: ldconfig writes no longer name or path, and a bound keeps a string without NUL from costing a scan.
MAX_STRING = 4096

# print_entry's words for (flags & FLAG_TYPE_MASK) and (flags & FLAG_REQUIRED_MASK), ldconfig.h values.
_TYPE_WORDS = {0x00: "libc4", 0x01: "ELF", 0x02: "libc5", 0x03: "libc6"}
_REQUIRED_WORDS = {
    0x0000: "", 0x0100: ",64bit", 0x0200: ",IA-64", 0x0300: ",x86-64", 0x0400: ",64bit", 0x0500: ",64bit",
    0x0600: ",N32", 0x0700: ",64bit", 0x0800: ",x32", 0x0900: ",hard-float", 0x0A00: ",AArch64",
    0x0B00: ",soft-float", 0x0C00: ",nan2008", 0x0D00: ",N32,nan2008", 0x0E00: ",64bit,nan2008",
    0x0F00: ",soft-float", 0x1000: ",double-float",
}  # LoongArch's 0x1100 and 0x1200 have no word in glibc 2.36's print_entry: ",4352", ",4608" as it prints them


class LdCacheError(ValueError):
    """The bytes are not a usable ld.so.cache: wrong magic, cut short, an entry count the file cannot hold
    or over :data:`MAX_ENTRIES`, a string or extension outside the file; the message is one line."""


def parse_ld_so_cache(data: bytes) -> List[dict]:
    """The entries of an ld.so.cache in the file's order (the order ld.so searches), in exactly the shape of
    :func:`gpudoctor.formats.ldconfig.parse_ldconfig_p` for ``ldconfig -p`` of the same file:
    ``[{"soname": "libz.so.1", "arch": "libc6,x86-64", "extra": None | 'hwcap: "x86-64-v3"' |
    "hwcap: 0x0000000000000001", "path": "/opt/lib/libz.so.1"}]``. Strings are decoded as UTF-8 with
    ``surrogateescape`` (``os.fsdecode``'s choice: a path that is not UTF-8 still opens). ``extra`` is worded
    as glibc 2.36 and later word it (no "OS ABI" part: see ``os_version`` in :func:`parse_ld_so_cache_records`).

    Raises :class:`LdCacheError` for anything but a well-formed cache (an empty file too)."""
    return [{"soname": r["soname"], "arch": r["arch"], "extra": r["extra"], "path": r["path"]}
            for r in parse_ld_so_cache_records(data)]


def parse_ld_so_cache_records(data: bytes) -> List[dict]:
    """:func:`parse_ld_so_cache` with the raw fields too: each entry is ``{"soname", "path", "arch", "extra",
    "flags": int (file_entry.flags: FLAG_ELF_LIBC6 | FLAG_X8664_LIB64 is 0x303), "hwcap": int | None (the
    64-bit field; None in an old-format cache, which has none), "hwcaps": str | None (the glibc-hwcaps
    subdirectory the entry is for, e.g. "x86-64-v3"), "os_version": int | None (0xOOMMmmpp: OS, kernel
    major, minor, patch; None in an old-format cache)}``. Raises :class:`LdCacheError`."""
    if not isinstance(data, (bytes, bytearray)):
        data = bytes(data)
    size = len(data)
    if size == 0:
        raise LdCacheError("empty file, not an ld.so.cache")
    if data.startswith(NEW_MAGIC):
        return _parse_new(data, 0)
    if not data.startswith(OLD_MAGIC):
        raise LdCacheError("not an ld.so.cache: the file starts with %r" % bytes(data[:20]))
    if size < _OLD_HEADER:
        raise LdCacheError("ld.so.cache cut short: %d bytes, the old-format header needs %d" % (size, _OLD_HEADER))
    order, nlibs = _byte_order(data, 12, _OLD_HEADER, _OLD_ENTRY, None)
    end_old = _OLD_HEADER + nlibs * _OLD_ENTRY
    for align in (8, 4):  # alignof(struct cache_file_new): 8 where uint64 is 8-aligned, else 4
        base = -(-end_old // align) * align
        if size > base + _NEW_HEADER and data[base:base + len(NEW_MAGIC)] == NEW_MAGIC:
            return _parse_new(data, base)
    strings = _Strings(data, end_old)
    out = []
    for flags, key, value in struct.iter_unpack(order + "iII", memoryview(data)[_OLD_HEADER:end_old]):
        out.append(_record(strings.at(key), strings.at(value), flags, None, None, None))
    return out


def read_ld_so_cache(path: str, max_bytes: int = 64 << 20, records: bool = False) -> List[dict]:
    """:func:`parse_ld_so_cache` (or, with ``records``, :func:`parse_ld_so_cache_records`) of the file at
    ``path`` (symlinks followed: re-root them before calling when reading an image). At most ``max_bytes``
    are read. Raises :class:`LdCacheError` for a file over ``max_bytes``, one that is not a regular file (a
    FIFO is never waited on) or is malformed; ``OSError`` (``FileNotFoundError`` among them) when it cannot be
    opened or read: a missing cache is the caller's fact to state, not a broken one."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise LdCacheError("%s is not a regular file" % path)
        if st.st_size > max_bytes:
            raise LdCacheError("%s is %d bytes, over the %d-byte limit for an ld.so.cache"
                               % (path, st.st_size, max_bytes))
        chunks, left = [], max_bytes + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > max_bytes:  # grew after fstat
        raise LdCacheError("%s is over the %d-byte limit for an ld.so.cache" % (path, max_bytes))
    return parse_ld_so_cache_records(data) if records else parse_ld_so_cache(data)


class _Strings:
    """NUL-terminated strings of ``data`` at ``base + index``, bounded and decoded once per index."""

    def __init__(self, data: bytes, base: int):
        self.data, self.base, self.seen = data, base, {}  # type: bytes, int, Dict[int, str]

    def at(self, index: int) -> str:
        text = self.seen.get(index)
        if text is None:
            text = self.seen[index] = _c_string(self.data, self.base + index)
        return text


def _c_string(data: bytes, start: int) -> str:
    if start >= len(data):
        raise LdCacheError("string offset %d past the end of the %d-byte file" % (start, len(data)))
    end = data.find(b"\0", start, start + MAX_STRING)
    if end < 0:
        raise LdCacheError("string at offset %d has no NUL within %d bytes or before the end of the file"
                           % (start, MAX_STRING))
    return data[start:end].decode("utf-8", "surrogateescape")


def _byte_order(data: bytes, count_at: int, header: int, entry: int, marked: Optional[str]) -> Tuple[str, int]:
    """(struct byte-order char, entry count) of a header whose count is at ``count_at``: the marked order,
    else the one under which the count's entries fit in the file (native of the writer), little first."""
    size = len(data)
    room = max(0, (size - header) // entry)
    orders = (marked,) if marked else ("<", ">")
    for order in orders:
        nlibs = struct.unpack_from(order + "I", data, count_at)[0]
        if nlibs <= min(room, MAX_ENTRIES):
            return order, nlibs
    nlibs = struct.unpack_from(orders[0] + "I", data, count_at)[0]
    if nlibs <= room:
        raise LdCacheError("ld.so.cache claims %d entries, over the %d any real cache has" % (nlibs, MAX_ENTRIES))
    raise LdCacheError("ld.so.cache claims %d entries, the %d-byte file holds at most %d" % (nlibs, size, room))


def _parse_new(data: bytes, base: int) -> List[dict]:
    size = len(data)
    if size < base + _NEW_HEADER:
        raise LdCacheError("ld.so.cache cut short: %d bytes, the header needs %d" % (size, base + _NEW_HEADER))
    endian = data[base + 28] & 3  # cache_file_new.flags & cache_file_new_flags_endian_mask
    if endian == 1:
        raise LdCacheError("ld.so.cache marked invalid by ldconfig (cache_file_new_flags_endian_invalid)")
    order, nlibs = _byte_order(memoryview(data)[base:], 20, _NEW_HEADER, _NEW_ENTRY,
                               {2: "<", 3: ">"}.get(endian))
    extension_offset = struct.unpack_from(order + "I", data, base + 32)[0]
    hwcaps = _hwcaps_section(data, order, extension_offset)
    strings = _Strings(data, base)
    names = _Strings(data, 0)  # hwcaps string indices count from the file's start (cache.c glibc_hwcaps_string)
    start = base + _NEW_HEADER
    out = []
    for flags, key, value, osversion, hwcap in struct.iter_unpack(
            order + "iIIIQ", memoryview(data)[start:start + nlibs * _NEW_ENTRY]):
        subdir = None
        if hwcaps and ((hwcap >> 32) & ~_ISA_LEVEL_MASK) == (_HWCAP_EXTENSION >> 32):
            index = hwcap & 0xFFFFFFFF
            if index < hwcaps[1]:
                name_at = struct.unpack_from(order + "I", data, hwcaps[0] + 4 * index)[0]
                if name_at < size:
                    subdir = names.at(name_at)
        out.append(_record(strings.at(key), strings.at(value), flags, hwcap, subdir, osversion))
    return out


def _hwcaps_section(data: bytes, order: str, offset: int) -> Optional[Tuple[int, int]]:
    """(file offset, element count) of the glibc-hwcaps section, None when absent; dl-cache.h
    ``cache_extension_load`` and ``cache_extension_verify``: a directory outside the file is an error (ldconfig
    -p: "Malformed extension data"), an empty, misaligned or odd-sized hwcaps section is ignored."""
    if offset == 0:
        return None
    size = len(data)
    if offset % 4 or offset + 8 > size:
        raise LdCacheError("ld.so.cache extension directory at %d is misaligned or past the end of the %d-byte file"
                           % (offset, size))
    magic, count = struct.unpack_from(order + "II", data, offset)
    if magic != _EXTENSION_MAGIC:
        raise LdCacheError("ld.so.cache extension directory at %d has magic %#x, not %#x"
                           % (offset, magic, _EXTENSION_MAGIC))
    end = offset + 8 + 16 * count
    if end > size:
        raise LdCacheError("ld.so.cache extension directory claims %d sections, past the end of the %d-byte file"
                           % (count, size))
    found = None
    for tag, _flags, at, length in struct.iter_unpack(order + "IIII", memoryview(data)[offset + 8:end]):
        if at + length > size:
            raise LdCacheError("ld.so.cache extension section %d at %d+%d runs past the end of the %d-byte file"
                               % (tag, at, length, size))
        if tag == _TAG_HWCAPS:
            found = (at, length)  # a later section of the same tag wins, as in cache_extension_load
    if found is None or found[1] == 0 or found[0] % 4 or found[1] % 4:
        return None
    return found[0], found[1] // 4


def _record(soname: str, path: str, flags: int, hwcap: Optional[int], subdir: Optional[str],
            osversion: Optional[int]) -> dict:
    """One entry with ``ldconfig -p``'s words for it (cache.c print_entry), as glibc 2.36 prints them: it
    ignores ``osversion``, which older ldconfig -p printed as ", OS ABI: Linux 3.2.0" (and older ld.so
    compared with the running kernel). It stays in the record (``os_version``) for a judgement about those."""
    required = flags & 0xFF00
    words = _TYPE_WORDS.get(flags & 0xFF, "unknown") + _REQUIRED_WORDS.get(required, ",%d" % required)
    if subdir is not None:
        extra = 'hwcap: "%s"' % subdir
    else:  # an extension index without a usable hwcaps section is printed as a number too
        extra = "hwcap: 0x%016x" % hwcap if hwcap else None
    return {"soname": soname, "path": path, "arch": words, "extra": extra, "flags": flags,
            "hwcap": hwcap, "hwcaps": subdir, "os_version": osversion}
