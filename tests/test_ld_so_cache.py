"""ld.so.cache read from its bytes, against glibc's own reader: every cache here is written by the real
ldconfig (this machine's, or built into a temporary root) and ``ldconfig -C FILE -p`` of the same file is
the expected answer. Hostile files are derived from those real caches."""
import os
import random
import shutil
import struct
import subprocess

import pytest

from gpudoctor.formats.ld_so_cache import (MAX_ENTRIES, NEW_MAGIC, OLD_MAGIC, LdCacheError, parse_ld_so_cache,
                                           parse_ld_so_cache_records, read_ld_so_cache)
from gpudoctor.formats.ldconfig import parse_ldconfig_p
from tests.conftest import need

LDCONFIG = shutil.which("ldconfig", path="/sbin:/usr/sbin:/bin:/usr/bin")
# Real shared libraries of this machine that the built roots hold copies of (Debian 12 paths, then others).
_LIB_DIRS = ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64")
_LIBS = ("libz.so.1", "libzstd.so.1", "libbz2.so.1.0")


def ldconfig_p(cache_file) -> list:
    """``parse_ldconfig_p`` of the real ``ldconfig -C FILE -p`` (raw bytes decoded as the module decodes)."""
    res = subprocess.run([LDCONFIG, "-C", str(cache_file), "-p"], capture_output=True, timeout=60,
                         env={"LC_ALL": "C", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
    assert res.returncode == 0, res.stderr
    return parse_ldconfig_p(res.stdout.decode("utf-8", "surrogateescape"))


def host_cache(tmp_path):
    """A copy of this machine's /etc/ld.so.cache (a package install may rewrite the original meanwhile)."""
    need(LDCONFIG is not None and os.path.isfile("/etc/ld.so.cache"), "glibc ldconfig and /etc/ld.so.cache")
    copy = tmp_path / "host.cache"
    shutil.copyfile("/etc/ld.so.cache", copy)
    return copy


def real_libs():
    found = {}
    for name in _LIBS:
        for d in _LIB_DIRS:
            if os.path.exists(os.path.join(d, name)):
                found[name] = os.path.realpath(os.path.join(d, name))
                break
    need(len(found) == len(_LIBS), "real libraries %s in %s" % (", ".join(_LIBS), " or ".join(_LIB_DIRS)))
    return found


def built_cache(tmp_path, fmt: str):
    """A cache that the real ``ldconfig -r ROOT -c FMT`` writes for a root holding copies of real libraries:
    two directories from ld.so.conf, a default one, and glibc-hwcaps subdirectories (x86-64-v2, x86-64-v3)."""
    need(LDCONFIG is not None, "glibc ldconfig")
    if os.geteuid() != 0:
        pytest.skip("ldconfig -r chroots, which needs root (CI runs as root)")
    libs = real_libs()
    root = tmp_path / "root"
    placed = {"opt/a/lib": _LIBS, "opt/b/lib": _LIBS[:1], "usr/lib": _LIBS[1:],
              "opt/a/lib/glibc-hwcaps/x86-64-v3": _LIBS[:2], "opt/a/lib/glibc-hwcaps/x86-64-v2": _LIBS[:1]}
    for d, names in placed.items():
        (root / d).mkdir(parents=True, exist_ok=True)
        for name in names:  # ldconfig links the soname in a plain directory, not in a glibc-hwcaps one
            shutil.copyfile(libs[name], root / d / (name if "glibc-hwcaps" in d else os.path.basename(libs[name])))
    (root / "etc").mkdir()
    (root / "etc" / "ld.so.conf").write_text("/opt/a/lib\n/opt/b/lib\n")
    res = subprocess.run([LDCONFIG, "-r", str(root), "-c", fmt, "-C", "/etc/ld.so.cache"],
                         capture_output=True, text=True, timeout=60, env={"LC_ALL": "C"})
    assert res.returncode == 0, res.stderr
    return root / "etc" / "ld.so.cache"


def new_base(data: bytes) -> int:
    base = data.find(NEW_MAGIC)
    assert base >= 0
    return base


def test_this_machines_cache_is_what_ldconfig_p_prints(tmp_path):
    cache = host_cache(tmp_path)
    entries = read_ld_so_cache(str(cache))
    assert entries and entries == ldconfig_p(cache)
    records = read_ld_so_cache(str(cache), records=True)
    assert [r["soname"] for r in records] == [e["soname"] for e in entries]
    assert all(isinstance(r["flags"], int) and r["hwcap"] is not None and r["os_version"] is not None for r in records)


@pytest.mark.parametrize("fmt", ["new", "compat", "old"])
def test_caches_ldconfig_builds_are_read_as_ldconfig_p_reads_them(tmp_path, fmt):
    cache = built_cache(tmp_path, fmt)
    data = cache.read_bytes()
    assert data.startswith(NEW_MAGIC if fmt == "new" else OLD_MAGIC)
    assert (NEW_MAGIC in data) == (fmt != "old")
    entries = parse_ld_so_cache(data)
    assert entries == ldconfig_p(cache)
    paths = [e["path"] for e in entries]
    assert "/opt/a/lib/libz.so.1" in paths and "/usr/lib/libzstd.so.1" in paths
    assert "/opt/a/lib/glibc-hwcaps/x86-64-v3/libzstd.so.1" in paths
    records = parse_ld_so_cache_records(data)
    by_path = {r["path"]: r for r in records}
    hw = by_path["/opt/a/lib/glibc-hwcaps/x86-64-v3/libzstd.so.1"]
    if fmt == "new":  # the extension section names the subdirectory; ld.so searches those entries first
        assert hw["hwcaps"] == "x86-64-v3" and hw["extra"] == 'hwcap: "x86-64-v3"'
        assert by_path["/opt/a/lib/glibc-hwcaps/x86-64-v2/libz.so.1"]["hwcaps"] == "x86-64-v2"
        z = [r["path"] for r in records if r["soname"] == "libz.so.1"]
        assert z.index("/opt/a/lib/glibc-hwcaps/x86-64-v3/libz.so.1") < z.index("/opt/a/lib/libz.so.1")
    if fmt == "old":  # no hwcap, no OS version in the old format; no byte-order mark: the count tells
        assert hw["hwcaps"] is None and hw["hwcap"] is None and hw["os_version"] is None
        nlibs = struct.unpack_from("<I", data, 12)[0]
        swapped = bytearray(data)
        struct.pack_into(">I", swapped, 12, nlibs)
        for i in range(nlibs):
            struct.pack_into(">iII", swapped, 16 + 12 * i, *struct.unpack_from("<iII", data, 16 + 12 * i))
        assert parse_ld_so_cache_records(bytes(swapped)) == records
    assert all(r["arch"] == "libc6,x86-64" and r["flags"] == 0x0303 for r in records)


def test_every_flag_word_hwcap_and_os_abi_as_ldconfig_words_them(tmp_path):
    """Entries of a real cache rewritten to every flags value print_entry knows, raw hwcaps and OS versions;
    ldconfig -p of the rewritten file (it prints what the file says, for any architecture) is the oracle."""
    data = bytearray(host_cache(tmp_path).read_bytes())
    base = new_base(bytes(data))
    count = struct.unpack_from("<I", data, base + 20)[0]
    flags = [t | r for t in (0x00, 0x01, 0x02, 0x03, 0x07) for r in range(0, 0x1400, 0x100)] + [-1]
    hwcaps = [0, 1, 1 << 63, (1 << 62) | 7, (1 << 62) | (3 << 32)]  # the last two: an index outside the section
    osversions = [0, 0x00030200, 0x01020304, 0x09000001]
    need(count >= len(flags), "a host cache with %d entries" % len(flags))
    for i in range(count):
        at = base + 48 + 24 * i
        struct.pack_into("<i", data, at, flags[i % len(flags)])
        struct.pack_into("<IQ", data, at + 12, osversions[i % len(osversions)], hwcaps[i % len(hwcaps)])
    patched = tmp_path / "patched.cache"
    patched.write_bytes(bytes(data))
    entries = parse_ld_so_cache(bytes(data))
    assert entries == ldconfig_p(patched)
    words = {r["flags"]: r["arch"] for r in parse_ld_so_cache_records(bytes(data))}
    assert words[0x0A03] == "libc6,AArch64" and words[0x0903] == "libc6,hard-float" and words[0x0803] == "libc6,x32"
    assert words[0x0003] == "libc6" and words[0x1303] == "libc6,4864" and words[0x0007] == "unknown"
    assert {e["extra"] for e in entries} == {None, "hwcap: 0x0000000000000001", "hwcap: 0x8000000000000000",
                                             "hwcap: 0x4000000000000007", "hwcap: 0x4000000300000000"}
    # glibc >= 2.36 neither prints nor loads by the OS version; it is kept for a judgement about older loaders
    assert {r["os_version"] for r in parse_ld_so_cache_records(bytes(data))} == set(osversions)


def byte_swapped(data: bytes, endian_flag: int) -> bytes:
    """A new-format cache rewritten field by field into big-endian, as a big-endian ldconfig writes it."""
    out = bytearray(data)
    nlibs, len_strings, _flags, ext = struct.unpack_from("<IIB3xI", data, 20)
    struct.pack_into(">IIB3xI", out, 20, nlibs, len_strings, endian_flag, ext)
    for i in range(nlibs):
        struct.pack_into(">iIIIQ", out, 48 + 24 * i, *struct.unpack_from("<iIIIQ", data, 48 + 24 * i))
    if ext:
        magic, count = struct.unpack_from("<II", data, ext)
        struct.pack_into(">II", out, ext, magic, count)
        for s in range(count):
            tag, fl, off, size = struct.unpack_from("<IIII", data, ext + 8 + 16 * s)
            struct.pack_into(">IIII", out, ext + 8 + 16 * s, tag, fl, off, size)
            if tag == 1:
                for k in range(0, size, 4):
                    struct.pack_into(">I", out, off + k, *struct.unpack_from("<I", data, off + k))
    return bytes(out)


def test_byte_order_from_the_flags_byte_or_from_the_entry_count(tmp_path):
    path = host_cache(tmp_path)
    data = path.read_bytes()
    if not data.startswith(NEW_MAGIC):
        pytest.skip("this machine's cache is not in the new format only")
    expected = parse_ld_so_cache_records(data)
    unset = bytearray(data)
    unset[28] = 0  # written by an ldconfig before glibc 2.33: no byte order recorded
    (tmp_path / "unset.cache").write_bytes(bytes(unset))
    assert parse_ld_so_cache(bytes(unset)) == ldconfig_p(tmp_path / "unset.cache")
    assert parse_ld_so_cache_records(byte_swapped(data, 3)) == expected
    assert parse_ld_so_cache_records(byte_swapped(data, 0)) == expected
    invalid = bytearray(data)
    invalid[28] = 1
    (tmp_path / "invalid.cache").write_bytes(bytes(invalid))
    with pytest.raises(LdCacheError, match="invalid"):
        parse_ld_so_cache(bytes(invalid))
    assert subprocess.run([LDCONFIG, "-C", str(tmp_path / "invalid.cache"), "-p"], capture_output=True).returncode != 0


def hostile_variants(data: bytes):
    base = new_base(data)
    nlibs = struct.unpack_from("<I", data, base + 20)[0]
    ext = struct.unpack_from("<I", data, base + 32)[0]
    entries_end = base + 48 + 24 * nlibs
    yield "empty", b""
    for cut in sorted({1, 11, 16, base + 20, base + 47, base + 48, base + 48 + 24 * (nlibs // 2), entries_end,
                       (entries_end + len(data)) // 2, len(data) - 1}):
        yield "cut at %d" % cut, data[:cut]
    for count in (2 ** 31, 2 ** 32 - 1, nlibs + (len(data) - base) // 24):
        yield "count %d" % count, data[:base + 20] + struct.pack("<I", count) + data[base + 24:]
    yield "count over MAX_ENTRIES, file long enough", (data[:base + 20] + struct.pack("<I", MAX_ENTRIES + 1)
                                                       + data[base + 24:] + bytes(24 * (MAX_ENTRIES + 1)))
    for field, value in (("key", len(data) + 100), ("value", 2 ** 32 - 1), ("key", len(data) - base)):
        out = bytearray(data)
        struct.pack_into("<I", out, base + 48 + (4 if field == "key" else 8), value)
        yield "%s offset %d" % (field, value), bytes(out)
    for tail in (5000, 100):  # a string longer than PATH_MAX, one cut by the end of the file; no extension
        no_nul = bytearray(data[:entries_end]) + b"x" * tail
        struct.pack_into("<I", no_nul, base + 32, 0)
        struct.pack_into("<II", no_nul, base + 48 + 4, entries_end - base, entries_end - base)
        yield "string without NUL in %d bytes" % tail, bytes(no_nul)
    if ext:
        for at, value in ((ext, 0x12345678), (ext + 4, 2 ** 31), (ext + 8 + 8, len(data))):
            out = bytearray(data)
            struct.pack_into("<I", out, at, value)
            yield "extension field at %d set to %d" % (at, value), bytes(out)
        out = bytearray(data)
        struct.pack_into("<I", out, base + 32, len(data) + 4)
        yield "extension offset past the end", bytes(out)
    rnd = random.Random(25)
    for n in (1, 47, 4096, 65536):
        yield "%d random bytes" % n, rnd.randbytes(n)
        yield "new magic and %d random bytes" % n, NEW_MAGIC + rnd.randbytes(n)
    yield "old magic, huge count", OLD_MAGIC + b"\0" + struct.pack("<I", 2 ** 31) + rnd.randbytes(64)


def test_hostile_caches_are_one_line_errors(tmp_path):
    data = host_cache(tmp_path).read_bytes()
    seen = 0
    for what, bad in hostile_variants(data):
        with pytest.raises(LdCacheError) as err:
            parse_ld_so_cache(bad)
        assert "\n" not in str(err.value), what
        seen += 1
    assert seen > 30


def test_read_is_bounded_and_refuses_what_is_not_a_file(tmp_path):
    data = host_cache(tmp_path).read_bytes()
    big = tmp_path / "ld.so.cache"
    big.write_bytes(data)
    assert read_ld_so_cache(str(big)) == parse_ld_so_cache(data)
    with pytest.raises(LdCacheError, match="limit"):
        read_ld_so_cache(str(big), max_bytes=len(data) - 1)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(LdCacheError, match="regular file"):
        read_ld_so_cache(str(fifo))  # opened without blocking, refused without reading
    with pytest.raises(FileNotFoundError):
        read_ld_so_cache(str(tmp_path / "absent"))
