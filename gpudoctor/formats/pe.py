"""Windows PE files (DLLs, EXEs, .pyd) read statically: machine, DLL or program, the version resource and
the DLL names of the import and delay-load import tables; the NVIDIA driver number from a driver file's
version; the version a CUDA library DLL states.

Parsing is pefile's (https://github.com/erocarrera/pefile), told to read only the three data directories
used here. The layout is Microsoft's PE format (https://learn.microsoft.com/en-us/windows/win32/debug/pe-format):
the MS-DOS stub's ``e_lfanew`` at 0x3c points at ``PE\\0\\0``, the COFF header's ``Machine`` and
``Characteristics`` (``IMAGE_FILE_DLL`` 0x2000), section raw data at ``PointerToRawData``; the version
resource is ``VS_VERSIONINFO`` (https://learn.microsoft.com/en-us/windows/win32/menurc/vs-versioninfo) with
``VS_FIXEDFILEINFO`` (https://learn.microsoft.com/en-us/windows/win32/api/verrsrc/ns-verrsrc-vs_fixedfileinfo)
and the ``StringFileInfo`` tables.
"""
from __future__ import annotations

import os
import re
import stat
import struct
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import pefile

from gpudoctor.formats import elf_check

Version4 = Tuple[int, int, int, int]

#: IMAGE_FILE_MACHINE_* values of the PE format's COFF header; others are written as "0x....".
MACHINES = {0x8664: "x86-64", 0x14C: "i386", 0xAA64: "arm64"}
_IMAGE_FILE_DLL = 0x2000
_DIRECTORIES = [pefile.DIRECTORY_ENTRY[name] for name in (
    "IMAGE_DIRECTORY_ENTRY_RESOURCE", "IMAGE_DIRECTORY_ENTRY_IMPORT", "IMAGE_DIRECTORY_ENTRY_DELAY_IMPORT")]
_SECURITY = pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_SECURITY"]
_HEAD = 4096
# pefile meets hostile bytes with assorted exceptions deep inside its parsers; each means the same to us:
# a damaged file, said in one line.
_PEFILE_SLIPS = (struct.error, IndexError, KeyError, ValueError, TypeError, AttributeError, OverflowError,
                 UnicodeError, RecursionError)


class PeError(ValueError):
    """The file is not a PE file, is cut short, or has a damaged header; the message is one line that names
    the file and says what it is instead."""


@dataclass(frozen=True)
class PeInfo:
    """What :func:`read_pe` read from one PE file.

    ``machine``: "x86-64" | "i386" | "arm64" | "0x01c4" (any other COFF Machine value, hex).
    ``is_dll``: the COFF header's IMAGE_FILE_DLL flag (a .dll or .pyd; False for an .exe).
    ``file_version`` / ``product_version``: VS_FIXEDFILEINFO's binary versions as four 16-bit fields
    ``(major, minor, build, private)``, e.g. ``(6, 14, 11, 12040)``; None without a version resource.
    ``strings``: the StringFileInfo table (CompanyName, FileDescription, FileVersion, ProductName,
    ProductVersion, OriginalFilename, InternalName, ... as present), values stripped of surrounding blanks;
    the first language's table wins, later tables only add names it lacks.
    ``imports``: DLL names of the import table, then of the delay-load import table, as written
    ("KERNEL32.dll"), de-duplicated case-insensitively (Windows file names are), first spelling and order kept.
    ``delay_imports``: the delay-load ones alone (loaded on first call, so a missing one fails late).
    """
    path: str
    machine: str
    is_dll: bool
    file_version: Optional[Version4]
    product_version: Optional[Version4]
    strings: Dict[str, str]
    imports: Tuple[str, ...]
    delay_imports: Tuple[str, ...]



def load_pe(path: str):
    """``pefile.PE(path, fast_load=True)`` (headers and sections only; the caller closes it). Raises
    :class:`PeError` with one line for a file pefile rejects or cannot read."""
    try:
        return pefile.PE(path, fast_load=True)
    except pefile.PEFormatError as exc:
        raise PeError(f"{path}: damaged PE header ({_one_line(exc.value)})") from None
    except (OSError, MemoryError) as exc:
        raise PeError(f"{path}: cannot read: {exc}") from None
    except _PEFILE_SLIPS as exc:
        raise PeError(f"{path}: damaged PE header ({type(exc).__name__}: {_one_line(exc)})") from None

def read_pe(path: str, max_bytes: int = 512 << 20) -> PeInfo:
    """Read the PE file at ``path`` (symlinks followed) without loading or running it.

    Reads the headers and the resource, import and delay-import directories only (pefile maps the file;
    it is never read whole). Raises :class:`PeError` naming the file when it is not a regular file, is
    unreadable, larger than ``max_bytes``, empty, not a PE file (an ELF file, a Git LFS pointer, an HTML
    page, text or other data: said which), cut short (shorter than its headers or its sections' raw data),
    or has headers pefile rejects."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise PeError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise PeError(f"{path}: not a regular file")
    size = st.st_size
    if size > max_bytes:
        raise PeError(f"{path}: {size} bytes, over the {max_bytes}-byte limit for a PE file")
    try:
        with open(path, "rb") as f:
            head = f.read(_HEAD)
    except OSError as exc:
        raise PeError(f"{path}: cannot read: {exc.strerror or exc}") from None
    _check_head(path, head, size)
    pe = load_pe(path)
    try:
        _check_extent(path, pe, size)
        try:
            pe.parse_data_directories(directories=_DIRECTORIES)
        except pefile.PEFormatError as exc:
            raise PeError(f"{path}: damaged PE data directory ({_one_line(exc.value)})") from None
        except _PEFILE_SLIPS as exc:
            raise PeError(f"{path}: damaged PE data directory ({type(exc).__name__}: {_one_line(exc)})") from None
        machine = pe.FILE_HEADER.Machine
        imports = _dll_names(getattr(pe, "DIRECTORY_ENTRY_IMPORT", ()))
        delay = _dll_names(getattr(pe, "DIRECTORY_ENTRY_DELAY_IMPORT", ()))
        file_version, product_version = _fixed_versions(pe)
        return PeInfo(path=path, machine=MACHINES.get(machine, f"0x{machine:04x}"),
                      is_dll=bool(pe.FILE_HEADER.Characteristics & _IMAGE_FILE_DLL),
                      file_version=file_version, product_version=product_version, strings=_strings(pe),
                      imports=_unique(imports + delay), delay_imports=_unique(delay))
    finally:
        pe.close()


def _one_line(what: object) -> str:
    return " ".join(str(what).split())[:200]


def _check_head(path: str, head: bytes, size: int) -> None:
    """The MS-DOS header's 'MZ' and the 'PE\\0\\0' at e_lfanew, checked before pefile so that the error
    says what the file is."""
    if head[:2] != b"MZ":
        raise PeError(f"{path}: not a Windows PE file: {_what_instead(path, head)}")
    if size < 0x40:
        raise PeError(f"{path}: a PE file cut short ({size} bytes, shorter than its 64-byte MS-DOS header)")
    (e_lfanew,) = struct.unpack_from("<I", head, 0x3C)
    if size < e_lfanew + 24:  # the signature and the 20-byte COFF header
        raise PeError(f"{path}: a PE file cut short ({size} bytes; its PE header starts at byte {e_lfanew})")
    if e_lfanew + 4 <= len(head) and head[e_lfanew:e_lfanew + 4] != b"PE\0\0":
        raise PeError(f"{path}: an MS-DOS 'MZ' file without a PE signature at byte {e_lfanew} "
                      "(a DOS program or a damaged header)")


def _what_instead(path: str, head: bytes) -> str:
    info = elf_check.check_file(path)
    if info.get("kind") == "elf":
        return f"it is an ELF file ({elf_check.what_it_is(info)}), a Linux library or program"
    if info.get("kind") == "data":
        return f"unrecognized data starting with bytes {head[:8].hex()}"
    return f"it is {elf_check.what_it_is(info)}"


def _check_extent(path: str, pe: "pefile.PE", size: int) -> None:
    """A file shorter than its headers, the raw data of its sections or its certificate table is cut
    short: pefile would read what is there and quietly miss the rest (the resource section is often last)."""
    needs = pe.OPTIONAL_HEADER.SizeOfHeaders
    for section in pe.sections:
        if section.SizeOfRawData:
            needs = max(needs, section.PointerToRawData + section.SizeOfRawData)
    if len(pe.OPTIONAL_HEADER.DATA_DIRECTORY) > _SECURITY:
        cert = pe.OPTIONAL_HEADER.DATA_DIRECTORY[_SECURITY]  # its VirtualAddress is a file offset
        if cert.VirtualAddress and cert.Size:
            needs = max(needs, cert.VirtualAddress + cert.Size)
    if size < needs:
        raise PeError(f"{path}: a PE file cut short ({size} of the {needs} bytes its headers describe)")


def _dll_names(entries) -> List[str]:
    return [e.dll.decode("ascii", "replace") for e in entries if getattr(e, "dll", None)]


def _unique(names: List[str]) -> Tuple[str, ...]:
    seen, out = set(), []
    for name in names:
        if name.casefold() not in seen:
            seen.add(name.casefold())
            out.append(name)
    return tuple(out)


def _fixed_versions(pe: "pefile.PE") -> Tuple[Optional[Version4], Optional[Version4]]:
    fixed = getattr(pe, "VS_FIXEDFILEINFO", None)
    if not fixed:
        return None, None
    info = fixed[0]

    def four(ms: int, ls: int) -> Version4:
        return (ms >> 16, ms & 0xFFFF, ls >> 16, ls & 0xFFFF)
    return (four(info.FileVersionMS, info.FileVersionLS), four(info.ProductVersionMS, info.ProductVersionLS))


def _strings(pe: "pefile.PE") -> Dict[str, str]:
    out: Dict[str, str] = {}
    for file_info in getattr(pe, "FileInfo", None) or ():
        for entry in file_info:
            for table in getattr(entry, "StringTable", ()):
                for key, value in table.entries.items():
                    name = key.decode("utf-8", "replace")
                    out.setdefault(name, value.decode("utf-8", "replace").strip(" \t\r\n\0"))
    return out


def nvidia_driver_version(file_version: Version4) -> Optional[str]:
    """The NVIDIA driver number ("581.15") that an NVIDIA Windows driver file's version states, e.g. the
    file version ``(32, 0, 15, 8115)`` of ``nvcuda.dll`` or ``nvml.dll``; None when it does not fit.

    Rule: the driver number is the last five digits of the third field followed by the fourth written
    with four digits ("15" + "8115" -> "158115" -> "58115" -> "581.15"). Sources: Microsoft's display driver
    file version form A.BB.CC.DDDD, CC 01-9999 and DDDD 0-9999
    (https://learn.microsoft.com/en-us/windows-hardware/drivers/display/driver-dll-for-display-adapter-or-chipset-has-properly-formatted-file-version),
    in which NVIDIA writes its driver number into the last five digits, as Mozilla's driver blocklist
    records ("257.21 ... corresponds to the last 5 digits in the technical version number, which for
    instance is 8.17.12.5721", https://wiki.mozilla.org/Blocklisting/Blocked_Graphics_Drivers, 2011). NVIDIA's
    own documentation, as far as we found, gives the driver number but not the rule.

    Not fitting (None): a field outside 0-65535, a fourth field over 9999, fewer than five digits, a first
    field below 7 (WDDM drivers start at 7 for Windows Vista; 6.14.x.x is XDDM, older than any CUDA driver
    judged here, and it is the form CUDA's own libraries carry, e.g. cudart's 6.14.11.12040), or a driver
    branch outside 100-999 (a leading zero)."""
    if len(file_version) != 4 or any(not isinstance(v, int) or not 0 <= v <= 0xFFFF for v in file_version):
        return None
    major, _minor, build, private = file_version
    if major < 7 or private > 9999:
        return None
    digits = f"{build}{private:04d}"
    if len(digits) < 5:
        return None
    last = digits[-5:]
    if last[0] == "0":
        return None
    return f"{last[:3]}.{last[3:]}"


#: DLL name stems of the CUDA toolkit's libraries, whose name number is a CUDA version (below).
_CUDA_TOOLKIT_STEMS = {
    "cudart", "nvrtc", "nvrtc-builtins", "nvjitlink", "cublas", "cublaslt", "nvblas", "cufft", "cufftw",
    "curand", "cusolver", "cusolvermg", "cusparse", "nvjpeg", "nppc", "nppial", "nppicc", "nppidei", "nppif",
    "nppig", "nppim", "nppist", "nppisu", "nppitc", "npps", "cufile", "nvfatbin", "nvptxcompiler"}
#: Stems whose name number is the library's own major version: cuDNN, TensorRT.
_OWN_MAJOR_STEMS = {"cudnn", "cudnn_graph", "cudnn_ops", "cudnn_cnn", "cudnn_adv", "cudnn_engines_precompiled",
                    "cudnn_engines_runtime_compiled", "cudnn_heuristic", "cudnn_ops_infer", "cudnn_ops_train",
                    "cudnn_cnn_infer", "cudnn_cnn_train", "cudnn_adv_infer", "cudnn_adv_train",
                    "nvinfer", "nvinfer_plugin", "nvonnxparser", "nvinfer_lean", "nvinfer_dispatch",
                    "nvinfer_vc_plugin", "nvparsers"}
# cudart64_12.dll, cudart64_110.dll, nvrtc64_120_0.dll, nvrtc64_120_0.alt.dll, nvrtc-builtins64_129.dll,
# nvJitLink_120_0.dll, cudnn64_9.dll, cudnn_ops64_9.dll, nvinfer_10.dll, cublasLt64_12.dll
_NAME_RE = re.compile(r"(?P<stem>[a-z][a-z_-]*?)(?:32|64)?_(?P<num>\d{1,3})(?:_\d+)?(?:\.alt)?\.dll", re.I)
# The words NVIDIA's CUDA libraries state their release in: ProductName "NVIDIA CUDA 12.4.127 Runtime",
# FileDescription "NVIDIA CUDA Runtime, Version 12.4.127", "NVIDIA CUDA NVJPEG Library, Version 12.4.0.76".
_STATED_RE = re.compile(r"(?:\bCUDA|\bVersion)\s+(\d{1,2}\.\d{1,3}\.\d{1,4}(?:\.\d{1,5})?)\b")


def cuda_dll_versions(info: PeInfo) -> Dict[str, Optional[str]]:
    """The versions an NVIDIA CUDA library DLL states, from its version resource and its file name.

    Returns ``{"library", "major_from_name", "product_version", "file_version", "company"}``:

    * ``library``: the name stem, lower case ("cudart", "nvrtc", "nvjitlink", "cudnn", "nvinfer"), or None
      for a name not of the ``stem[64]_NUM[_N][.alt].dll`` form.
    * ``major_from_name``: the major the file name promises, as the loader matches it. For the CUDA
      toolkit's libraries it is a CUDA major: CUDA 12 and 13 name the major alone (cudart64_12.dll,
      cublas64_12.dll); three digits are major and minor (cudart64_110.dll, nvrtc64_120_0.dll,
      nvrtc-builtins64_129.dll: "11", "12", "12"); two digits above 20 are the old major and minor
      (cudart64_92.dll: "9"). For cuDNN and TensorRT it is their own major (cudnn64_9.dll "9",
      nvinfer_10.dll "10"). None for other names.
    * ``product_version``: the release the resource states in words, from ProductName then FileDescription
      ("NVIDIA CUDA 12.4.127 Runtime" -> "12.4.127"; nvjpeg64_12.dll: "12.4.0.76"), only for a file whose
      CompanyName is NVIDIA's; None when no words state one (CUPTI states only its own 2025.x in FileVersion).
    * ``file_version``: VS_FIXEDFILEINFO's file version dotted ("6.14.11.12040"), or None. NVIDIA's
      libraries do not encode their release there uniformly (read from the real wheels: cudart 12.4.127
      6.14.11.12040, cudart 13.5 6.14.11.13050, nvjpeg 12.4 6.14.11.1240, nvrtc/nvJitLink/nvvm/ptxas 12.9
      all 6.14.11.9000), so rules use ``product_version``.
    * ``company``: the CompanyName string, or None.
    """
    name = os.path.basename(info.path)
    match = _NAME_RE.fullmatch(name)
    library = match.group("stem").lower() if match else None
    major = _major_from_name(library, match.group("num")) if match else None
    company = info.strings.get("CompanyName")
    stated = None
    if company and "NVIDIA" in company:
        for key in ("ProductName", "FileDescription"):
            found = _STATED_RE.search(info.strings.get(key, ""))
            if found:
                stated = found.group(1)
                break
    return {"library": library, "major_from_name": major, "product_version": stated,
            "file_version": ".".join(map(str, info.file_version)) if info.file_version else None,
            "company": company}


def _major_from_name(stem: Optional[str], num: str) -> Optional[str]:
    if stem in _OWN_MAJOR_STEMS:
        return str(int(num))
    if stem not in _CUDA_TOOLKIT_STEMS:
        return None
    if len(num) == 3:
        return str(int(num[:2]))
    value = int(num)
    return str(value) if value <= 20 else num[0]
