"""Tests for gpudoctor.formats.fatbin against real binaries built here by nvcc.

Binaries are compiled once per session (nvcc 13.0 from /usr/local/cuda and,
if installed, Debian's nvcc 11.8 at /usr/bin/nvcc).  The reference listing
is ``cuobjdump --list-elf / --list-ptx``.  The only cuobjdump on this machine
is Debian's 11.8 one (/usr/bin/cuobjdump): it lists 11.8-built binaries and
the distro's CUDA 11.8 libraries correctly, but misreads every CUDA 13
fatbin ("Support for 'sm_4' has been removed"), so 13.0-built binaries are
checked against the -gencode sets they were built with instead.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import struct
import subprocess
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

try:
    import gpudoctor.formats.fatbin  # noqa: F401
except ImportError:  # run from a checkout without an installed package
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpudoctor.formats.fatbin import (
    Coverage,
    CudaBinary,
    CudaBinaryError,
    coverage,
    read_cuda_binary,
)

NVCC13 = Path("/usr/local/cuda/bin/nvcc")
NVCC118 = Path("/usr/bin/nvcc")
CUOBJDUMP = shutil.which("cuobjdump") or "/usr/bin/cuobjdump"

KERNEL = r"""
__global__ void add(float *a, const float *b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] += b[i];
}
extern "C" int launch(float *a, const float *b, int n) {
    add<<<(n + 255) / 256, 256>>>(a, b, n);
    return (int)cudaGetLastError();
}
"""
MAIN = r"""
__global__ void k(int *p) { *p = 1; }
int main() { k<<<1, 1>>>(0); return 0; }
"""

GENCODE13 = [
    "-gencode", "arch=compute_75,code=sm_75",
    "-gencode", "arch=compute_90,code=[sm_90,compute_90]",
    "-gencode", "arch=compute_90a,code=sm_90a",
    "-gencode", "arch=compute_100,code=sm_100",
]
SASS13 = ("sm_75", "sm_90", "sm_90a", "sm_100")
PTX13 = ("compute_90",)

GENCODE_FAMILY = [
    "-gencode", "arch=compute_100a,code=[sm_100a,compute_100a]",
    "-gencode", "arch=compute_100f,code=[sm_100f,compute_100f]",
    "-gencode", "arch=compute_103f,code=sm_103f",
    "-gencode", "arch=compute_120a,code=sm_120a",
    "-gencode", "arch=compute_121f,code=sm_121f",
    "-gencode", "arch=compute_120,code=compute_120",
    "-gencode", "arch=compute_86,code=sm_86",
]
SASS_FAMILY = ("sm_86", "sm_100a", "sm_100f", "sm_103f", "sm_120a", "sm_121f")
PTX_FAMILY = ("compute_100a", "compute_100f", "compute_120")

GENCODE118 = [
    "-gencode", "arch=compute_75,code=sm_75",
    "-gencode", "arch=compute_80,code=[sm_80,compute_80]",
    "-gencode", "arch=compute_90,code=sm_90",
]

CUBINS13 = ("sm_75", "sm_90", "sm_90a", "sm_100", "sm_100a", "sm_100f", "sm_120", "sm_121f")


def _env118():
    env = dict(os.environ)
    # keep 13.0's ptxas (on PATH via /usr/local/cuda/bin) away from nvcc 11.8
    env["PATH"] = ":".join(
        p for p in env.get("PATH", "").split(":") if p and not p.startswith("/usr/local")
    ) or "/usr/bin:/bin"
    return env


def _run(cmd, env=None):
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed:\n{proc.stderr}")


@pytest.fixture(scope="session")
def built(tmp_path_factory):
    """Compile the test binaries (in parallel); {name: Path}."""
    d = tmp_path_factory.mktemp("fatbin")
    (d / "k.cu").write_text(KERNEL)
    (d / "main.cu").write_text(MAIN)
    jobs = {}
    if NVCC13.exists():
        n = [str(NVCC13)]
        so = ["-shared", "-Xcompiler", "-fPIC"]
        jobs["lib13.so"] = (n + so + GENCODE13 + [str(d / "k.cu")], None)
        jobs["lib13c.so"] = (n + so + GENCODE13 + ["-Xfatbin=-compress-all", str(d / "k.cu")], None)
        jobs["exe13"] = (n + GENCODE13 + [str(d / "main.cu")], None)
        jobs["k13.fatbin"] = (n + ["-fatbin"] + GENCODE13 + [str(d / "k.cu")], None)
        jobs["k13nc.fatbin"] = (
            n + ["-fatbin", "--compress-mode=none"] + GENCODE13 + [str(d / "k.cu")], None)
        jobs["k13size.fatbin"] = (
            n + ["-fatbin", "--compress-mode=size"] + GENCODE13 + [str(d / "k.cu")], None)
        jobs["family13.fatbin"] = (n + ["-fatbin"] + GENCODE_FAMILY + [str(d / "k.cu")], None)
        jobs["rdc13.o"] = (
            n + ["-rdc=true", "-c", "-Xcompiler", "-fPIC", "-arch=sm_80", str(d / "k.cu")], None)
        for sm in CUBINS13:
            jobs[f"{sm}.cubin"] = (n + ["-cubin", f"-arch={sm}", str(d / "k.cu")], None)
    if NVCC118.exists():
        n = [str(NVCC118), "-ccbin", "g++-11"]
        env = _env118()
        so = ["-shared", "-Xcompiler", "-fPIC"]
        jobs["lib118.so"] = (n + so + GENCODE118 + [str(d / "k.cu")], env)
        jobs["exe118"] = (n + GENCODE118 + [str(d / "main.cu")], env)
        jobs["k118c.fatbin"] = (
            n + ["-fatbin", "-Xfatbin=-compress-all"] + GENCODE118 + [str(d / "k.cu")], env)
        jobs["sm_86_118.cubin"] = (n + ["-cubin", "-arch=sm_86", str(d / "k.cu")], env)
    out = {}

    def build(item):
        name, (cmd, env) = item
        _run(cmd + ["-o", str(d / name)], env=env)
        return name

    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as ex:
        for name in ex.map(build, jobs.items()):
            out[name] = d / name
    plain = d / "plain"
    if shutil.which("gcc"):
        (d / "plain.c").write_text("int main(void){return 0;}\n")
        _run(["gcc", str(d / "plain.c"), "-o", str(plain)])
        out["plain"] = plain
    out["_dir"] = d
    return out


def need(built, name):
    if name not in built:
        if name.endswith("118") or "118" in name:
            pytest.skip("/usr/bin/nvcc (Debian nvcc 11.8) is not installed")
        pytest.skip(f"{NVCC13} is not installed")
    return built[name]


# --------------------------------------------------------------------------
# cuobjdump oracle
# --------------------------------------------------------------------------

_LIST_RE = re.compile(r"^(ELF|PTX) file\s+\d+: .*\.(sm_\d+[a-z]?)\.(cubin|ptx)\s*$")


def cuobjdump_listing(path):
    """Counter of ('sass', 'sm_XY') / ('ptx', 'compute_XY') from cuobjdump."""
    if not os.path.exists(CUOBJDUMP):
        pytest.skip("cuobjdump is not installed")
    got = Counter()
    for flag in ("--list-elf", "--list-ptx"):
        proc = subprocess.run(
            [CUOBJDUMP, flag, str(path)], capture_output=True, text=True, timeout=300
        )
        assert "fatal" not in proc.stderr, proc.stderr
        for line in proc.stdout.splitlines():
            m = _LIST_RE.match(line.strip())
            if not m:
                continue
            arch = m.group(2)
            if m.group(1) == "ELF":
                got[("sass", arch)] += 1
            else:
                got[("ptx", arch.replace("sm_", "compute_"))] += 1
    return got


def our_listing(b: CudaBinary):
    return Counter((e.kind, e.arch) for e in b.entries if e.kind in ("sass", "ptx"))


# --------------------------------------------------------------------------
# CUDA 13.0 builds
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["lib13.so", "lib13c.so", "exe13"])
def test_host_elf_13(built, name):
    b = read_cuda_binary(need(built, name))
    assert b.kind == "elf-host"
    assert b.sass == SASS13
    assert b.ptx == PTX13
    assert b.fatbin_count >= 1
    assert ".nv_fatbin" in b.sections
    ptx = [e for e in b.entries if e.kind == "ptx"]
    assert ptx and all(e.ptx_isa == "9.0" for e in ptx)  # CUDA 13.0 writes PTX ISA 9.0


def test_compress_all_marks_every_entry(built):
    plain = read_cuda_binary(need(built, "lib13.so"))
    comp = read_cuda_binary(need(built, "lib13c.so"))
    assert comp.compressed_entries == len(comp.entries) > 0
    # nvcc 13 compresses only PTX by default
    assert plain.compressed_entries == sum(1 for e in plain.entries if e.kind == "ptx")
    for e in comp.entries:
        assert e.compressed and e.uncompressed_size and e.uncompressed_size > 0


def test_raw_fatbin_13(built):
    b = read_cuda_binary(need(built, "k13.fatbin"))
    assert b.kind == "fatbin"
    assert (b.sass, b.ptx) == (SASS13, PTX13)
    assert b.fatbin_count == 1
    assert Counter(e.arch for e in b.entries) == Counter(SASS13 + PTX13)


def test_compress_modes(built):
    nc = read_cuda_binary(need(built, "k13nc.fatbin"))
    sz = read_cuda_binary(need(built, "k13size.fatbin"))
    assert nc.compressed_entries == 0
    assert sz.compressed_entries >= 1
    assert (nc.sass, nc.ptx) == (sz.sass, sz.ptx) == (SASS13, PTX13)


def test_family_and_arch_specific_suffixes(built):
    b = read_cuda_binary(need(built, "family13.fatbin"))
    assert b.sass == SASS_FAMILY
    assert b.ptx == PTX_FAMILY


def test_entry_payload_is_the_cubin_it_claims(built):
    """Uncompressed SASS payloads are ELF cubins whose e_flags agree with the
    entry header's arch (cross-check of header vs payload)."""
    path = need(built, "k13nc.fatbin")
    data = path.read_bytes()
    b = read_cuda_binary(path)
    d = built["_dir"]
    for i, e in enumerate(b.entries):
        if e.kind != "sass":
            continue
        hsize = struct.unpack_from("<I", data, e.offset + 4)[0]
        payload = data[e.offset + hsize : e.offset + hsize + e.payload_size]
        assert payload[:4] == b"\x7fELF"
        p = d / f"payload{i}.cubin"
        p.write_bytes(payload)
        inner = read_cuda_binary(p)
        assert inner.kind == "cubin"
        assert inner.sass == (e.arch,)


def test_relocatable_object_nv_relfatbin(built):
    b = read_cuda_binary(need(built, "rdc13.o"))
    assert b.kind == "elf-host"
    assert "__nv_relfatbin" in b.sections
    assert b.sass == ("sm_80",)


@pytest.mark.parametrize("sm", CUBINS13)
def test_cubin_13(built, sm):
    b = read_cuda_binary(need(built, f"{sm}.cubin"))
    assert b.kind == "cubin"
    assert b.sass == (sm,)
    assert b.ptx == ()
    assert b.fatbin_count == 0
    assert len(b.entries) == 1 and b.entries[0].kind == "sass"


def test_cubin_13_uses_new_eflags_layout(built):
    """CUDA 13 cubins are ELF ABI version 8 with the SM in e_flags bits 8..15."""
    data = need(built, "sm_120.cubin").read_bytes()
    assert data[8] == 8
    assert (struct.unpack_from("<I", data, 48)[0] >> 8) & 0xFF == 120


def test_host_elf_without_fatbin(built):
    if "plain" not in built:
        pytest.skip("gcc not available")
    b = read_cuda_binary(built["plain"])
    assert b.kind == "elf-host"
    assert b.sass == () and b.ptx == () and b.entries == ()
    assert b.fatbin_count == 0


# --------------------------------------------------------------------------
# CUDA 11.8 builds, checked against cuobjdump 11.8
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["lib118.so", "exe118", "k118c.fatbin"])
def test_matches_cuobjdump_118(built, name):
    path = need(built, name)
    b = read_cuda_binary(path)
    ref = cuobjdump_listing(path)
    assert our_listing(b) == ref
    assert b.sass == ("sm_75", "sm_80", "sm_90")
    assert b.ptx == ("compute_80",)
    for e in b.entries:
        if e.kind == "ptx":
            assert e.ptx_isa == "7.8"  # CUDA 11.8 writes PTX ISA 7.8


def test_118_compressed(built):
    b = read_cuda_binary(need(built, "k118c.fatbin"))
    assert b.compressed_entries == len(b.entries) == 4


def test_cubin_118_old_eflags_layout(built):
    path = need(built, "sm_86_118.cubin")
    data = path.read_bytes()
    assert data[8] == 7  # ELF ABI version 7: SM in the low byte of e_flags
    assert read_cuda_binary(path).sass == ("sm_86",)


REAL_LIBS = [
    "/usr/lib/x86_64-linux-gnu/libnvjpeg.so.11",
    "/usr/lib/x86_64-linux-gnu/libnppitc.so.11",
]


@pytest.mark.parametrize("lib", REAL_LIBS)
def test_real_cuda_118_library_matches_cuobjdump(lib):
    if not os.path.exists(lib):
        pytest.skip(f"{lib} not installed (Debian nvidia-cuda-toolkit libraries)")
    b = read_cuda_binary(lib)
    ref = cuobjdump_listing(lib)
    assert sum(ref.values()) > 0
    assert our_listing(b) == ref


# --------------------------------------------------------------------------
# garbage in -> CudaBinaryError, never anything else
# --------------------------------------------------------------------------


def test_missing_file(tmp_path):
    with pytest.raises(CudaBinaryError, match="no such file"):
        read_cuda_binary(tmp_path / "nope.so")


def test_directory(tmp_path):
    with pytest.raises(CudaBinaryError):
        read_cuda_binary(tmp_path)


def test_empty_file(tmp_path):
    p = tmp_path / "empty.so"
    p.write_bytes(b"")
    with pytest.raises(CudaBinaryError, match="empty"):
        read_cuda_binary(p)


def test_random_bytes(tmp_path):
    rnd = random.Random(1234)
    p = tmp_path / "random.bin"
    p.write_bytes(bytes(rnd.getrandbits(8) for _ in range(4096)))
    with pytest.raises(CudaBinaryError, match="not an ELF"):
        read_cuda_binary(p)


def test_text_file(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("this is not a CUDA binary\n" * 10)
    with pytest.raises(CudaBinaryError, match="not an ELF, fatbin or cubin"):
        read_cuda_binary(p)


def _patched(src: Path, dst: Path, offset: int, data: bytes) -> Path:
    buf = bytearray(src.read_bytes())
    buf[offset : offset + len(data)] = data
    dst.write_bytes(bytes(buf))
    return dst


def test_32bit_and_big_endian_elf(built, tmp_path):
    src = built.get("plain") or need(built, "lib13.so")
    with pytest.raises(CudaBinaryError, match="32-bit"):
        read_cuda_binary(_patched(src, tmp_path / "e32", 4, b"\x01"))
    with pytest.raises(CudaBinaryError, match="big-endian"):
        read_cuda_binary(_patched(src, tmp_path / "ebe", 5, b"\x02"))


def test_truncated_elf_header(tmp_path):
    p = tmp_path / "short.so"
    p.write_bytes(b"\x7fELF\x02\x01\x01" + b"\0" * 20)
    with pytest.raises(CudaBinaryError, match="truncated"):
        read_cuda_binary(p)


def test_so_truncated_in_fatbin_section(built, tmp_path):
    src = need(built, "lib13.so")
    b = read_cuda_binary(src)
    cut = b.entries[len(b.entries) // 2].offset + 100  # middle of .nv_fatbin
    p = tmp_path / "trunc.so"
    p.write_bytes(src.read_bytes()[:cut])
    with pytest.raises(CudaBinaryError, match="truncated"):
        read_cuda_binary(p)


def test_fatbin_size_past_section(built, tmp_path):
    src = need(built, "lib13.so")
    b = read_cuda_binary(src)
    first = min(e.offset for e in b.entries) - 16  # container header
    data = src.read_bytes()
    assert struct.unpack_from("<I", data, first)[0] == 0xBA55ED50
    p = _patched(src, tmp_path / "big.so", first + 8, struct.pack("<Q", 1 << 40))
    with pytest.raises(CudaBinaryError, match="runs past"):
        read_cuda_binary(p)


def test_truncated_raw_fatbin_every_cut(built, tmp_path):
    src = need(built, "k13.fatbin")
    data = src.read_bytes()
    p = tmp_path / "cut.fatbin"
    for cut in list(range(1, 80)) + list(range(80, len(data), 97)):
        p.write_bytes(data[:cut])
        with pytest.raises(CudaBinaryError):
            read_cuda_binary(p)


def test_truncated_so_many_cuts(built, tmp_path):
    src = need(built, "lib13c.so")
    data = src.read_bytes()
    rnd = random.Random(7)
    p = tmp_path / "cut.so"
    for cut in sorted(rnd.sample(range(1, len(data)), 40)):
        p.write_bytes(data[:cut])
        with pytest.raises(CudaBinaryError):
            read_cuda_binary(p)


def test_header_fuzz_only_raises_cudabinaryerror(built, tmp_path):
    """Random corruption of a real fatbin's headers: a result or a
    CudaBinaryError, never another exception."""
    src = need(built, "k13.fatbin")
    data = src.read_bytes()
    b = read_cuda_binary(src)
    hot = [0] + [e.offset for e in b.entries]
    rnd = random.Random(99)
    p = tmp_path / "fuzz.fatbin"
    for _ in range(300):
        buf = bytearray(data)
        for _ in range(rnd.randint(1, 4)):
            base = rnd.choice(hot)
            i = base + rnd.randrange(0, 64)
            buf[i] = rnd.getrandbits(8)
        p.write_bytes(bytes(buf))
        try:
            r = read_cuda_binary(p)
        except CudaBinaryError:
            continue
        assert isinstance(r, CudaBinary)


# --------------------------------------------------------------------------
# coverage
# --------------------------------------------------------------------------


def test_coverage_compatible_sass():
    c = coverage({"sass": ["sm_80"], "ptx": []}, "8.6")
    assert isinstance(c, Coverage)
    assert (c.verdict, c.entry) == ("sass", "sm_80")
    assert "8.6" in c.reason


def test_coverage_arch_specific():
    assert coverage(["sm_90a"], "9.0").verdict == "sass"
    c = coverage(["sm_90a"], "10.0")
    assert c.verdict == "none" and c.entry is None
    assert "no kernel image" in c.reason
    assert coverage(["sm_100a"], "10.3").verdict == "none"


def test_coverage_family_specific():
    assert coverage(["sm_100f"], "10.3").verdict == "sass"
    assert coverage(["sm_100f"], "10.0").verdict == "sass"
    assert coverage(["sm_103f"], "10.0").verdict == "none"
    assert coverage(["sm_100f"], "12.0").verdict == "none"
    assert coverage(["sm_120f"], "12.1").entry == "sm_120f"


def test_coverage_ptx_jit():
    c = coverage(["compute_75"], "9.0")
    assert (c.verdict, c.entry) == ("ptx_jit", "compute_75")
    assert coverage(["compute_100"], "9.0").verdict == "none"
    assert coverage(["compute_90a"], "10.0").verdict == "none"  # not forward compatible


def test_coverage_older_device_none():
    assert coverage(["sm_75"], "7.0").verdict == "none"
    assert coverage(["sm_75"], "8.0").verdict == "none"  # other major


def test_coverage_prefers_sass_and_best_match():
    c = coverage((["sm_80", "sm_86"], ["compute_90"]), "8.9")
    assert (c.verdict, c.entry) == ("sass", "sm_86")
    c = coverage((["sm_80", "sm_90"], ["compute_90"]), "12.0")
    assert (c.verdict, c.entry) == ("ptx_jit", "compute_90")
    assert coverage(["sm_90", "sm_90a"], "9.0").verdict == "sass"


def test_coverage_on_real_binary(built):
    b = read_cuda_binary(need(built, "lib13.so"))
    assert coverage(b, "9.0").verdict == "sass"
    assert coverage(b, "7.5").entry == "sm_75"
    assert coverage(b, "8.6").verdict == "none"  # no sm_8x, PTX is compute_90
    assert coverage(b, "12.0").verdict == "ptx_jit"
    assert coverage(b, "10.3").entry == "sm_100"


def test_coverage_bad_cc():
    with pytest.raises(ValueError):
        coverage(["sm_80"], "banana")
