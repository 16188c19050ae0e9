"""What a file that should be a shared library really is: an ELF of which class and machine, whole or
cut short, or not ELF at all (a Git LFS pointer, an HTML page, an empty file, text, zeros, an archive).

Reads only the ELF header, the program and section header tables and the dynamic section (a few KiB),
never the whole file. The layout is the System V ABI's ``Elf32_Ehdr``/``Elf64_Ehdr``, ``Elf*_Phdr`` and
``Elf*_Dyn`` (elf(5)); what the dynamic loader does with each kind is glibc's ``elf/dl-load.c``
``open_verify``: a non-ELF or a file shorter than its header fails the load, an ELF of another class or
machine is skipped and the search goes on, a file shorter than its segments is mapped anyway and the
first touch of a page past its end raises SIGBUS.
"""
from __future__ import annotations

import os
import re
import stat
import struct
from typing import Callable, Dict, List, Optional

#: e_machine values (elf.h) a library on Linux is likely to have.
MACHINES = {3: "i386", 8: "MIPS", 20: "PowerPC", 21: "PowerPC64", 22: "S/390", 40: "ARM", 62: "x86-64",
            183: "AArch64", 190: "CUDA", 243: "RISC-V", 258: "LoongArch"}
TYPES = {0: "none", 1: "relocatable", 2: "executable", 3: "shared object", 4: "core"}
_PT_LOAD, _PT_DYNAMIC = 1, 2
_DT_NEEDED, _DT_STRTAB, _DT_STRSZ, _DT_SONAME, _DT_RPATH, _DT_RUNPATH = 1, 5, 10, 14, 15, 29
LFS_MAGIC = b"version https://git-lfs.github.com/spec"
_MAX_PHNUM = 4096  # more program headers than any linker writes: the header is garbage
_HEAD = 4096

ReadAt = Callable[[int, int], bytes]  # (offset, length) -> the bytes there (fewer at end of file)


def check_file(path: str) -> Dict[str, object]:
    """:func:`describe` of the file at ``path`` (symlinks followed). An unreadable file gives
    ``{"kind": "unreadable", "error": strerror}``; never raises."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # O_NONBLOCK: a FIFO must not block us
    except OSError as exc:
        return {"kind": "unreadable", "error": exc.strerror or str(exc)}
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return {"kind": "unreadable", "error": "not a regular file"}
        return describe(lambda off, n: os.pread(fd, n, off), st.st_size)
    except OSError as exc:
        return {"kind": "unreadable", "error": exc.strerror or str(exc)}
    finally:
        os.close(fd)


def describe(read_at: ReadAt, size: int) -> Dict[str, object]:
    """``{"kind", "size", ...}`` of a file of ``size`` bytes. ``kind``: ``elf`` (with ``elf_class`` 32|64,
    ``byte_order``, ``machine`` name, ``machine_code``, ``type``, ``needs_bytes``: the end of its furthest
    segment or header table, ``truncated``: size < needs_bytes, ``segments_truncated``: a segment the loader maps
    (or the program header table) runs past the end: loading it raises SIGBUS or fails, ``soname``/``needed``/``rpath``/``runpath``
    from the dynamic section when it lies inside the file, ``error`` for a header that contradicts itself) |
    ``empty`` | ``zeros`` | ``git_lfs_pointer`` (``lfs_oid``, ``lfs_size``: the real file's size) | ``html``
    (``title``) | ``linker_script`` | ``archive`` | ``compressed`` | ``text`` (``first_line``) | ``data``."""
    out: Dict[str, object] = {"size": size}
    if size == 0:
        return dict(out, kind="empty")
    head = read_at(0, min(size, _HEAD))
    if head[:4] == b"\x7fELF":
        out.update(_elf(head, read_at, size))
        return out
    out.update(_not_elf(head, size))
    return out


def _not_elf(head: bytes, size: int) -> Dict[str, object]:
    if head.startswith(LFS_MAGIC):
        text = head.decode("utf-8", "replace")
        oid = re.search(r"^oid (\S+)", text, re.M)
        real = re.search(r"^size (\d+)", text, re.M)
        return {"kind": "git_lfs_pointer", "lfs_oid": oid.group(1) if oid else None,
                "lfs_size": int(real.group(1)) if real else None}
    lower = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if lower.startswith((b"<!doctype html", b"<html", b"<head", b"<?xml")) or b"<html" in lower[:1024]:
        title = re.search(rb"<title[^>]*>([^<]{0,200})", head, re.I)
        return {"kind": "html", "title": title.group(1).decode("utf-8", "replace").strip() if title else None}
    if lower.startswith(b"/* gnu ld script") or re.match(rb"\s*(input|group|out_format)\s*\(", lower):
        return {"kind": "linker_script", "first_line": _first_line(head)}
    if head.startswith(b"!<arch>\n"):
        return {"kind": "archive"}
    if head.startswith((b"\x1f\x8b", b"PK\x03\x04", b"BZh", b"\xfd7zXZ", b"(\xb5/\xfd")):
        return {"kind": "compressed"}
    if not head.strip(b"\0"):
        return {"kind": "zeros"}  # a file of NUL bytes: space reserved, content never written
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None and all(c.isprintable() or c in "\t\r\n" for c in text[:512]):
        return {"kind": "text", "first_line": _first_line(head)}
    return {"kind": "data", "starts_with": head[:8].hex()}


def _first_line(head: bytes) -> str:
    line = next((l for l in head.decode("utf-8", "replace").splitlines() if l.strip()), "")
    return line.strip()[:120]


def _elf(head: bytes, read_at: ReadAt, size: int) -> Dict[str, object]:
    out: Dict[str, object] = {"kind": "elf"}
    cls, data = head[4:5], head[5:6]
    if cls not in (b"\x01", b"\x02") or data not in (b"\x01", b"\x02"):
        return dict(out, error=f"bad ELF identification (class {head[4:5].hex()}, data {head[5:6].hex()})")
    is64, e = cls == b"\x02", "<" if data == b"\x01" else ">"
    out.update(elf_class=64 if is64 else 32, byte_order="little" if e == "<" else "big")
    ehdr = struct.Struct(e + ("HHIQQQIHHHHHH" if is64 else "HHIIIIIHHHHHH"))
    ident = 16
    if len(head) < ident + ehdr.size:
        return dict(out, truncated=True, segments_truncated=True, needs_bytes=ident + ehdr.size,
                    error="file shorter than the ELF header")
    (etype, machine, _v, _entry, phoff, shoff, _flags, _ehsize, phentsize, phnum, shentsize, shnum,
     _shstrndx) = ehdr.unpack_from(head, ident)
    out.update(machine_code=machine, machine=MACHINES.get(machine, f"e_machine {machine}"),
               type=TYPES.get(etype, f"e_type {etype}"))
    phdr = struct.Struct(e + ("IIQQQQQQ" if is64 else "IIIIIIII"))
    if phnum and (phentsize != phdr.size or phnum > _MAX_PHNUM):
        return dict(out, error=f"program header entries of {phentsize} bytes x {phnum}: not a valid ELF")
    loadable = max(ident + ehdr.size, phoff + phnum * phentsize)  # what ld.so reads and maps
    segments: List[tuple] = []
    if phoff + phnum * phentsize <= size:
        table = read_at(phoff, phnum * phentsize)
        for i in range(phnum):
            f = phdr.unpack_from(table, i * phentsize)
            # 64-bit: type, flags, offset, vaddr, paddr, filesz, memsz, align; 32-bit: type, offset, vaddr, paddr, filesz, ...
            ptype, off, vaddr, filesz = (f[0], f[2], f[3], f[5]) if is64 else (f[0], f[1], f[2], f[4])
            segments.append((ptype, off, vaddr, filesz))
            if ptype in (_PT_LOAD, _PT_DYNAMIC) and filesz:
                loadable = max(loadable, off + filesz)
    needs = max(loadable, shoff + shnum * shentsize if shoff else 0)
    out.update(needs_bytes=needs, truncated=size < needs, segments_truncated=size < loadable)
    dyn = next((s for s in segments if s[0] == _PT_DYNAMIC), None)
    if dyn and dyn[1] + dyn[3] <= size:
        out.update(_dynamic(read_at, size, e, is64, dyn, [s for s in segments if s[0] == _PT_LOAD]))
    return out


def _dynamic(read_at: ReadAt, size: int, e: str, is64: bool, dyn: tuple, loads: List[tuple]) -> Dict[str, object]:
    """SONAME, NEEDED, RPATH and RUNPATH from the dynamic section (strings through DT_STRTAB's segment)."""
    entry = struct.Struct(e + ("qQ" if is64 else "iI"))
    raw = read_at(dyn[1], min(dyn[3], 64 * 1024))
    tags: Dict[int, List[int]] = {}
    for i in range(len(raw) // entry.size):
        tag, val = entry.unpack_from(raw, i * entry.size)
        if tag == 0:
            break
        tags.setdefault(tag, []).append(val)
    strtab = tags.get(_DT_STRTAB, [None])[0]
    strsz = tags.get(_DT_STRSZ, [0])[0]
    off = next((o + strtab - v for _t, o, v, fs in loads if strtab is not None and v <= strtab < v + fs), None)
    if off is None or off + strsz > size or strsz > 1 << 20:
        return {}
    strings = read_at(off, strsz)

    def s(i: int) -> Optional[str]:
        end = strings.find(b"\0", i)
        return strings[i:end if end >= 0 else None].decode("utf-8", "replace") if 0 <= i < len(strings) else None

    out: Dict[str, object] = {"needed": [s(i) for i in tags.get(_DT_NEEDED, [])]}
    for name, tag in (("soname", _DT_SONAME), ("rpath", _DT_RPATH), ("runpath", _DT_RUNPATH)):
        if tag in tags:
            out[name] = s(tags[tag][0])
    return out


def what_it_is(info: Dict[str, object]) -> str:
    """A few words for a user: "a Git LFS pointer (132 bytes; the real file is 29384912 bytes)",
    "an ELF cut short (4096 of 1867528 bytes)", "a 32-bit i386 shared object", ...."""
    kind = info.get("kind")
    size = info.get("size")
    if kind == "git_lfs_pointer":
        real = info.get("lfs_size")
        return f"a Git LFS pointer ({size} bytes" + (f"; the real file is {real} bytes)" if real else ")")
    if kind == "html":
        return "an HTML page" + (f" ({info['title']!r})" if info.get("title") else "") + f", {size} bytes"
    if kind == "elf":
        if info.get("segments_truncated"):
            return f"an ELF file cut short ({size} of at least {info.get('needs_bytes')} bytes)"
        if info.get("truncated"):
            return (f"an ELF file cut short after its last segment ({size} of {info.get('needs_bytes')} bytes: "
                    "the section headers are missing)")
        if info.get("error"):
            return f"a damaged ELF file ({info['error']})"
        return f"a {info.get('elf_class')}-bit {info.get('machine')} {info.get('type')}"
    words = {"empty": "an empty file", "zeros": f"{size} zero bytes", "linker_script": "a linker script",
             "archive": "a static archive (.a)", "compressed": "a compressed archive", "unreadable": "unreadable",
             "text": "a text file", "data": "not an ELF file"}
    base = words.get(str(kind), str(kind))
    if kind in ("text", "linker_script") and info.get("first_line"):
        base += f" starting {info['first_line'][:60]!r}"
    if kind == "unreadable" and info.get("error"):
        base += f" ({info['error']})"
    return base
