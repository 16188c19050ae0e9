"""What a Windows DLL says about the CUDA it needs besides its import table.

* Its GPU code: nvcc puts a program's fat binaries in the PE section ``.nv_fatb`` (the ELF hosts'
  ``.nv_fatbin``), and each PTX image in them states the PTX ISA version it was written in, which the CUDA
  release of the nvcc that built it fixes ("8.8": CUDA 12.9; the PTX ISA release history). For a library that
  links its CUDA dependencies by name at run time (cuDNN's ``LoadLibrary`` of ``cublasLt64_12.dll``, no import
  table entry), that is what the file itself says about the CUDA it was built for.
  Only headers are read: the section is found with pefile and walked by :mod:`gpudoctor.formats.fatbin`'s
  container walker over a read-only map of the file, payloads skipped by their recorded sizes.
* The DLL names it hands to ``LoadLibrary``: string constants in its read-only data section ``.rdata``
  (``cublasLt64_12.dll`` and ``nvrtc64_120_0.dll`` in cuDNN 9's cudnn_adv64_9.dll and
  cudnn_engines_precompiled64_9.dll, ``nvrtc-builtins64_129.dll`` in NVRTC's nvrtc64_120_0.dll)."""
from __future__ import annotations

import mmap
import os
import re
from typing import List, Tuple

__all__ = ["FATBIN_SECTION", "ptx_isas", "rdata_size", "dll_names_in_rdata"]

#: The PE section nvcc writes fat binaries to (``.nv_fatb``, the 8-character cut of ``.nv_fatbin``).
FATBIN_SECTION = b".nv_fatb"


# A library name with a number as CUDA's and NVIDIA's DLLs are named ("cublasLt64_12.dll", "nvrtc64_120_0.dll",
# "nvrtc-builtins64_129.dll"), in ASCII (LoadLibraryA) or UTF-16LE (LoadLibraryW).
_NAME = rb"[A-Za-z][A-Za-z0-9_\-]{0,40}(?:32|64)_\d{1,4}(?:_\d)?\.dll"
_ASCII_NAME = re.compile(_NAME, re.I)
_WIDE_NAME = re.compile(rb"(?:[A-Za-z]\x00)(?:[A-Za-z0-9_\-]\x00){0,40}(?:3\x002\x00|6\x004\x00)_\x00(?:\d\x00){1,4}"
                        rb"(?:_\x00\d\x00)?\.\x00[dD]\x00[lL]\x00[lL]\x00")


def _section_extent(host_path: str, section_name: bytes = FATBIN_SECTION) -> Tuple[int, int]:
    """``(file offset, size)`` of a section's raw data (``.nv_fatb`` unless named), ``(0, 0)`` without one. Raises
    :class:`gpudoctor.formats.pe.PeError` for a file pefile rejects or whose section runs past its end."""
    from gpudoctor.formats.pe import PeError, load_pe

    pe = load_pe(host_path)
    try:
        section = next((s for s in pe.sections if s.Name.rstrip(b"\0") == section_name), None)
        if section is None or not section.SizeOfRawData:
            return 0, 0
        off, size = section.PointerToRawData, section.SizeOfRawData
    finally:
        pe.close()
    if off + size > os.path.getsize(host_path):
        raise PeError(f"{host_path}: section {section_name.decode()} ({size} bytes at {off:#x}) runs past the end of the file")
    return off, size


def ptx_isas(host_path: str) -> List[str]:
    """The PTX ISA versions ("8.8", "9.5") of the PTX images in the ``.nv_fatb`` section of the PE file at
    ``host_path`` (this machine's path), sorted and unique; [] when it has no such section or no PTX (SASS
    only). Raises :class:`gpudoctor.formats.pe.PeError` (not a PE file, damaged, cut short) or
    :class:`gpudoctor.formats.fatbin.CudaBinaryError` (a fat binary in it that is damaged)."""
    # fatbin.py's container walker over a byte range: its public reader takes ELF files and raw fat binaries
    from gpudoctor.formats.fatbin import _RELEASED, _walk_fatbins

    off, size = _section_extent(host_path)
    if not size:
        return []
    entries = []
    with open(host_path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        try:
            _walk_fatbins(buf, off, off + size, f"{host_path} [.nv_fatb]", entries)
        finally:
            _RELEASED.pop(id(buf), None)
    return sorted({e.ptx_isa for e in entries if e.ptx_isa}, key=lambda v: tuple(int(p) for p in v.split(".")))


def rdata_size(host_path: str) -> int:
    """Bytes of the PE file's ``.rdata`` section (0 without one): what :func:`dll_names_in_rdata` reads. Raises
    :class:`gpudoctor.formats.pe.PeError` as :func:`ptx_isas`."""
    return _section_extent(host_path, b".rdata")[1]


def dll_names_in_rdata(host_path: str) -> List[str]:
    """The numbered DLL names ("cublasLt64_12.dll") in the ``.rdata`` section of the PE file at ``host_path``,
    ASCII or UTF-16LE, as written, sorted and unique without case, its own file name left out; [] without such
    a section. Reads the section through a read-only map. Raises :class:`gpudoctor.formats.pe.PeError` as
    :func:`ptx_isas`."""
    off, size = _section_extent(host_path, b".rdata")
    if not size:
        return []
    own = os.path.basename(host_path).lower()
    found = {}
    with open(host_path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        for pattern, width in ((_ASCII_NAME, 1), (_WIDE_NAME, 2)):
            for m in pattern.finditer(buf, off, off + size):
                name = m.group(0)[::width].decode("ascii")
                found.setdefault(name.lower(), name)
    found.pop(own, None)
    return [found[k] for k in sorted(found)]
