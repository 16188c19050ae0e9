"""Windows PE files read statically (issue 25 items 3-5): gpudoctor/formats/pe.py on real NVIDIA DLLs from
the win_amd64/win_arm64 wheels that .ci/fetch-real-wheels unpacks into .ci/cache/win/, each beside its
dist-info METADATA, whose version is the version the DLL must state. Damaged files are those real DLLs
cut short or overwritten, an ELF library of this machine, and text files; no invented DLLs."""
from __future__ import annotations

import glob
import hashlib
import os
import random
import shutil
import struct
import sys

import pytest

from conftest import CACHE, need
from gpudoctor.formats import pe
from gpudoctor.formats.pe import PeError, cuda_dll_versions, nvidia_driver_version, read_pe

WIN = os.path.join(CACHE, "win")


def real(dist_dir: str, dll: str):
    """(path of the real DLL, the wheel's version from its METADATA); skip or fail when not fetched."""
    found = glob.glob(os.path.join(WIN, dist_dir, "site-packages", "**", dll), recursive=True)
    metadata = glob.glob(os.path.join(WIN, dist_dir, "site-packages", "*.dist-info", "METADATA"))
    need(bool(found) and bool(metadata), f"{dll} from a Windows wheel in .ci/cache/win/{dist_dir} (.ci/fetch-real-wheels)")
    with open(metadata[0], encoding="utf-8") as f:
        version = next(line.split(":", 1)[1].strip() for line in f if line.startswith("Version:"))
    return found[0], version


def lower(names):
    return {n.lower() for n in names}


def test_cudart_12_states_its_wheel_version_and_imports_only_windows_api_sets():
    path, version = real("cudart-cu12", "cudart64_12.dll")
    info = read_pe(path)
    assert (info.machine, info.is_dll) == ("x86-64", True)
    assert cuda_dll_versions(info) == {"library": "cudart", "major_from_name": "12", "product_version": version,
                                       "file_version": ".".join(map(str, info.file_version)),
                                       "company": "NVIDIA Corporation"}
    # cudart's fixed FileVersion is 6.14.11.<CUDART_VERSION>: major*1000 + minor*10 (12.4.127 -> 12040)
    major, minor = map(int, version.split(".")[:2])
    assert info.file_version == (6, 14, 11, major * 1000 + minor * 10)
    assert info.strings["ProductName"] == f"NVIDIA CUDA {version} Runtime"
    assert info.strings["OriginalFilename"] == f"CUDART64_{major}{minor}_{version.split('.')[2]}.DLL"
    # The driver (nvcuda.dll) is loaded at run time, never imported: a missing driver is no import failure.
    assert "nvcuda.dll" not in lower(info.imports)
    assert "api-ms-win-core-libraryloader-l1-2-0.dll" in lower(info.imports)
    assert info.delay_imports == ()


def test_cudart_11_and_13_names_carry_their_cuda_major():
    path11, version11 = real("cudart-cu11", "cudart64_110.dll")
    path13, version13 = real("cudart-13", "cudart64_13.dll")
    got11, got13 = cuda_dll_versions(read_pe(path11)), cuda_dll_versions(read_pe(path13))
    assert (got11["major_from_name"], got11["product_version"]) == ("11", version11)  # 110: CUDA 11.0's name for all 11.x
    assert (got13["major_from_name"], got13["product_version"]) == ("13", version13)


def test_machine_of_the_32_bit_and_arm64_builds():
    i386, _ = real("cudart-cu11", "cudart32_110.dll")
    arm64, version = real("cudart-13-arm64", "cudart64_13.dll")
    assert read_pe(i386).machine == "i386"
    info = read_pe(arm64)
    assert (info.machine, info.is_dll, cuda_dll_versions(info)["product_version"]) == ("arm64", True, version)


def test_nvrtc_states_its_release_in_words_not_in_its_fixed_file_version():
    path, version = real("nvrtc-cu12", "nvrtc64_120_0.dll")
    info = read_pe(path)
    got = cuda_dll_versions(info)
    assert (got["library"], got["major_from_name"], got["product_version"]) == ("nvrtc", "12", version)
    assert info.strings["ProductName"] == f"NVIDIA CUDA {version} NVRTC Library"
    # 6.14.11.9000 for 12.9.86: the fixed version does not carry the release, so it is not used for one
    assert info.file_version[:3] == (6, 14, 11) and info.file_version[3] != int(version.split(".")[2])
    # nvrtc loads its builtins library at run time: it is not in the import table
    assert not any("builtins" in n.lower() for n in info.imports)
    assert {"kernel32.dll", "advapi32.dll"} <= lower(info.imports) and info.delay_imports == ()


def test_nvrtc_builtins_has_no_version_resource():
    path, version = real("nvrtc-cu12", "nvrtc-builtins64_129.dll")
    info = read_pe(path)
    assert (info.file_version, info.strings, info.imports) == (None, {}, ("KERNEL32.dll",))
    major, minor = version.split(".")[:2]
    assert os.path.basename(path) == f"nvrtc-builtins64_{major}{minor}.dll"
    assert cuda_dll_versions(info)["major_from_name"] == major
    assert cuda_dll_versions(info)["product_version"] is None


def test_nvjpeg_states_a_four_part_release():
    path, version = real("nvjpeg-cu12", "nvjpeg64_12.dll")
    got = cuda_dll_versions(read_pe(path))
    assert (got["major_from_name"], got["product_version"]) == ("12", version)  # "12.4.0.76"


def test_delay_load_imports_come_after_the_import_table():
    path, _ = real("onnxruntime", "onnxruntime.dll")
    info = read_pe(path)
    assert info.delay_imports == ("SHELL32.dll",)
    assert info.imports[-1] == "SHELL32.dll" and info.imports[0] == "KERNEL32.dll"
    assert len(lower(info.imports)) == len(info.imports)
    assert cuda_dll_versions(info)["product_version"] is None  # not an NVIDIA file


def test_an_exe_is_not_a_dll():
    """pip's own Windows launchers (distlib's t64.exe, t32.exe, t64-arm.exe): real EXEs of three machines."""
    try:
        import pip._vendor.distlib as distlib
    except ImportError:
        distlib = None
    folder = os.path.dirname(distlib.__file__) if distlib else ""
    need(os.path.isfile(os.path.join(folder, "t64.exe")), "pip's distlib launchers (t64.exe)")
    machines = {name: read_pe(os.path.join(folder, name)) for name in ("t64.exe", "t32.exe", "t64-arm.exe")
                if os.path.isfile(os.path.join(folder, name))}
    assert {n: (i.machine, i.is_dll) for n, i in machines.items()} == {
        n: m for n, m in {"t64.exe": ("x86-64", False), "t32.exe": ("i386", False),
                          "t64-arm.exe": ("arm64", False)}.items() if n in machines}
    assert "kernel32.dll" in lower(machines["t64.exe"].imports)


# --- damaged and wrong files -----------------------------------------------------------------------------

@pytest.fixture
def cudart():
    path, _ = real("cudart-cu12", "cudart64_12.dll")
    with open(path, "rb") as f:
        return f.read()


def write(tmp_path, name: str, data: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def error_of(path: str, **kw) -> str:
    with pytest.raises(PeError) as caught:
        read_pe(path, **kw)
    message = str(caught.value)
    assert message.startswith(path + ": ") and "\n" not in message
    return message


def test_a_dll_cut_to_200_bytes(tmp_path, cudart):
    message = error_of(write(tmp_path, "cudart64_12.dll", cudart[:200]))
    (e_lfanew,) = struct.unpack_from("<I", cudart, 0x3C)
    assert "cut short" in message and f"starts at byte {e_lfanew}" in message


def test_a_dll_cut_to_half_its_size(tmp_path, cudart):
    half = len(cudart) // 2
    message = error_of(write(tmp_path, "cudart64_12.dll", cudart[:half]))
    assert f"cut short ({half} of the {len(cudart)} bytes" in message


def test_an_elf_library_says_it_is_elf(tmp_path):
    libc = "/usr/lib/x86_64-linux-gnu/libc.so.6"
    elf = libc if os.path.isfile(libc) else os.path.realpath(sys.executable)
    copy = shutil.copy(elf, tmp_path / "cudart64_12.dll")
    message = error_of(str(copy))
    assert "not a Windows PE file" in message and "ELF" in message and "x86-64" in message


def test_empty_lfs_pointer_html_and_random_bytes(tmp_path, cudart):
    oid = hashlib.sha256(cudart).hexdigest()
    lfs = f"version https://git-lfs.github.com/spec/v1\noid sha256:{oid}\nsize {len(cudart)}\n".encode()
    html = b"<!DOCTYPE html><html><head><title>Download NVIDIA CUDA</title></head><body></body></html>"
    noise = random.Random(25).randbytes(4096)
    assert noise[:2] != b"MZ"
    cases = {"empty": (b"", "an empty file"), "lfs": (lfs, f"Git LFS pointer ({len(lfs)} bytes; the real file is {len(cudart)} bytes)"),
             "html": (html, "an HTML page ('Download NVIDIA CUDA')"), "noise": (noise, "unrecognized data starting with bytes")}
    for name, (data, words) in cases.items():
        message = error_of(write(tmp_path, f"{name}.dll", data))
        assert "not a Windows PE file" in message and words in message, name


def test_mz_without_pe_signature(tmp_path, cudart):
    (e_lfanew,) = struct.unpack_from("<I", cudart, 0x3C)
    damaged = cudart[:e_lfanew] + b"XX\0\0" + cudart[e_lfanew + 4:]
    assert "without a PE signature" in error_of(write(tmp_path, "cudart64_12.dll", damaged))


def test_damaged_resource_and_import_bytes_never_escape_as_a_traceback(tmp_path, cudart):
    """Every section's bytes overwritten with seeded noise in turn: a result or a PeError, nothing else."""
    info = pe.pefile.PE(data=cudart, fast_load=True)
    sections = [(s.PointerToRawData, s.SizeOfRawData) for s in info.sections]
    info.close()
    rng = random.Random(25)
    for offset, size in sections:
        damaged = bytearray(cudart)
        damaged[offset:offset + size] = rng.randbytes(size)
        path = write(tmp_path, "damaged.dll", bytes(damaged))
        try:
            read_pe(path)
        except PeError as exc:
            assert str(exc).startswith(path)


def test_over_the_size_limit_is_refused_unread(tmp_path):
    path = tmp_path / "huge.dll"
    with open(path, "wb") as f:
        f.truncate(600 << 20)  # sparse: nothing written, nothing read
    assert "over the 536870912-byte limit" in error_of(str(path))
    assert "over the 100-byte limit" in error_of(write(tmp_path, "small.dll", b"MZ" + bytes(200)), max_bytes=100)


def test_not_a_regular_file_or_missing(tmp_path):
    assert "not a regular file" in error_of(str(tmp_path))
    assert "cannot read" in error_of(str(tmp_path / "nvcuda.dll"))


# --- NVIDIA driver number from a driver file's Windows version -------------------------------------------

@pytest.mark.parametrize("file_version, driver", [
    # https://github.com/the-database/mpv-AnimeJaNai/pull/81 ("verified 31.0.15.7652 -> 576.52"; 32.0.16.1047 -> 610.47)
    ((31, 0, 15, 7652), "576.52"),
    ((32, 0, 16, 1047), "610.47"),
    # https://wiki.mozilla.org/Blocklisting/Blocked_Graphics_Drivers: 257.21 is 8.17.12.5721 on Windows 7/Vista
    ((8, 17, 12, 5721), "257.21"),
])
def test_driver_number_from_sourced_pairs(file_version, driver):
    assert nvidia_driver_version(file_version) == driver


@pytest.mark.parametrize("file_version", [
    (6, 14, 11, 12040),   # cudart64_12.dll's own version: a CUDA library, not the driver
    (6, 14, 11, 1240),    # nvjpeg64_12.dll's: "111240" would read as 112.40, but 6.x is not a WDDM driver
    (1, 32, 0, 1112),     # onnxruntime.dll: not an NVIDIA driver file
    (31, 0, 0, 42),       # too few digits: "00042"
    (31, 0, 15, 10000),   # a fourth field over 9999 is outside Microsoft's DDDD
    (31, 0, 15, 70000),   # not a 16-bit field
])
def test_versions_that_are_no_driver_number(file_version):
    assert nvidia_driver_version(file_version) is None


def test_driver_number_of_a_real_cuda_library_file_is_none():
    path, _ = real("cudart-cu12", "cudart64_12.dll")
    assert nvidia_driver_version(read_pe(path).file_version) is None
