"""Image archives unpacked into a temporary root (issue 25 item 2): docker save (classic and blobs/),
docker export and OCI layouts built here with tarfile from real files of this machine, whiteouts, and crafted
hostile archives that must each be refused with ImageError, leaving nothing in dest and nothing new anywhere
else under the test's tmp dir."""
from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import stat
import subprocess
import sys
import tarfile
import types
from pathlib import Path

import pytest

from gpudoctor.sysroot.image import ImageError, ImageInfo, Limits, unpack_image

OS_RELEASE = Path("/etc/os-release")
REAL_LIBS = [Path("/usr/lib/x86_64-linux-gnu/libcuda.so.1"), Path("/usr/lib/x86_64-linux-gnu/libz.so.1"),
             Path("/lib/x86_64-linux-gnu/libz.so.1")]
REAL_LIB = next((p for p in REAL_LIBS if p.exists()), None)
SMALL_LIB = next((p for p in REAL_LIBS[1:] if p.exists()), REAL_LIB)
_MISSING = REAL_LIB is None or not OS_RELEASE.exists()
if _MISSING and os.environ.get("GPUDOCTOR_REQUIRE_REAL") == "1":
    raise AssertionError("tests/test_image_extract.py needs /etc/os-release and a real libcuda.so.1 or libz.so.1")
pytestmark = pytest.mark.skipif(_MISSING, reason="needs /etc/os-release and a real libcuda.so.1 or libz.so.1")


# -- archive builders ------------------------------------------------------------------------------------
def tar_of(*items, end=True) -> bytes:
    """A tar from (kind, name, ...) items: ("file", name, data[, mode]), ("dir", name), ("sym", name, target),
    ("link", name, target), ("chr", name), ("fifo", name)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for kind, name, *rest in items:
            ti = tarfile.TarInfo(name)
            ti.mtime = 1_700_000_000
            if kind == "file":
                data = rest[0]
                ti.size, ti.mode = len(data), rest[1] if len(rest) > 1 else 0o644
                tf.addfile(ti, io.BytesIO(data))
                continue
            ti.type, ti.mode = {"dir": (tarfile.DIRTYPE, 0o755), "sym": (tarfile.SYMTYPE, 0o777),
                                "link": (tarfile.LNKTYPE, 0o644), "chr": (tarfile.CHRTYPE, 0o666),
                                "fifo": (tarfile.FIFOTYPE, 0o644)}[kind]
            if kind in ("sym", "link"):
                ti.linkname = rest[0]
            if kind == "chr":
                ti.devmajor, ti.devminor = 1, 3
            tf.addfile(ti)
    return buf.getvalue()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def config_json(layers, env=("PATH=/usr/local/cuda/bin:/usr/bin", "CUDA_VERSION=12.4.1", "EMPTY=")) -> bytes:
    return json.dumps({"architecture": "amd64", "os": "linux",
                       "config": {"Env": list(env), "Cmd": ["bash"], "WorkingDir": "/work",
                                  "Labels": {"maintainer": "NVIDIA CORPORATION"}},
                       "rootfs": {"type": "layers", "diff_ids": ["sha256:" + sha(x) for x in layers]}}).encode()


def docker_save(layers, layout="classic", tags=("cuda:12.4",), manifest_layers=None, blob_override=None,
                diff_layers=None) -> bytes:
    """A docker save archive: classic (<id>/layer.tar, <config sha>.json) or Docker 25+ (blobs/sha256/...);
    the config's diff_ids are those of ``diff_layers`` when given."""
    cfg = config_json(diff_layers or layers)
    files = []
    if layout == "classic":
        names = []
        for i, layer in enumerate(layers):
            lid = sha(b"v1-id-%d" % i)
            files += [("dir", lid), ("file", f"{lid}/VERSION", b"1.0"), ("file", f"{lid}/layer.tar", layer)]
            names.append(f"{lid}/layer.tar")
        config_name = sha(cfg) + ".json"
        files.append(("file", config_name, cfg))
    else:
        names = [f"blobs/sha256/{sha(x)}" for x in layers]
        config_name = f"blobs/sha256/{sha(cfg)}"
        files += [("dir", "blobs"), ("dir", "blobs/sha256")]
        files += [("file", n, (blob_override or {}).get(i, x)) for i, (n, x) in enumerate(zip(names, layers))]
        files += [("file", config_name, cfg), ("file", "oci-layout", b'{"imageLayoutVersion": "1.0.0"}'),
                  ("file", "index.json", b'{"schemaVersion": 2, "manifests": []}')]
    manifest = [{"Config": config_name, "RepoTags": list(tags),
                 "Layers": names if manifest_layers is None else manifest_layers}]
    files.append(("file", "manifest.json", json.dumps(manifest).encode()))
    return tar_of(*files)


def descriptor(media: str, data: bytes, platform=None) -> dict:
    d = {"mediaType": media, "digest": "sha256:" + sha(data), "size": len(data)}
    if platform:
        d["platform"] = {"os": "linux", "architecture": platform}
    return d


def oci_layout(per_platform: dict) -> bytes:
    """An OCI layout whose index.json points at a nested index of one manifest per platform (gzip layers)."""
    blobs, manifests = {}, []
    for arch, layers in per_platform.items():
        gz = [gzip.compress(x, mtime=0) for x in layers]
        cfg = config_json(layers, env=(f"ARCH={arch}",))
        manifest = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                               "config": descriptor("application/vnd.oci.image.config.v1+json", cfg),
                               "layers": [descriptor("application/vnd.oci.image.layer.v1.tar+gzip", g) for g in gz]}
                              ).encode()
        for blob in gz + [cfg, manifest]:
            blobs[sha(blob)] = blob
        manifests.append(descriptor("application/vnd.oci.image.manifest.v1+json", manifest, arch))
    index = json.dumps({"schemaVersion": 2, "manifests": manifests}).encode()
    blobs[sha(index)] = index
    top = {"schemaVersion": 2, "manifests": [dict(descriptor("application/vnd.oci.image.index.v1+json", index),
                                                  annotations={"io.containerd.image.name": "nvcr.io/x/cuda:12"})]}
    return tar_of(("file", "./oci-layout", b'{"imageLayoutVersion": "1.0.0"}'),
                  ("file", "./index.json", json.dumps(top).encode()), ("dir", "./blobs"), ("dir", "./blobs/sha256"),
                  *[("file", f"./blobs/sha256/{h}", b) for h, b in blobs.items()])


# -- the two layers every format test uses -----------------------------------------------------------------
def base_layers(lib: Path):
    lower = tar_of(("dir", "etc"), ("file", "etc/os-release", OS_RELEASE.read_bytes()),
                   ("dir", "usr"), ("dir", "usr/lib"), ("dir", "usr/lib/x86_64-linux-gnu"),
                   ("file", f"usr/lib/x86_64-linux-gnu/{lib.name}", lib.read_bytes(), 0o4755),
                   ("sym", "usr/lib/x86_64-linux-gnu/libreal.so", lib.name),
                   ("dir", "usr/local"), ("dir", "usr/local/cuda-12.4"),
                   ("file", "usr/local/cuda-12.4/version.json", b"{}"),
                   ("sym", "usr/local/cuda", "/usr/local/cuda-12.4"),
                   ("dir", "opt"), ("dir", "opt/old"), ("file", "opt/old/a.txt", b"a"), ("dir", "opt/old/sub"),
                   ("file", "opt/old/sub/b.txt", b"b"), ("dir", "tmp"), ("file", "tmp/gone.txt", b"gone"))
    upper = tar_of(("file", "opt/old/new.txt", b"new"), ("file", "opt/old/.wh..wh..opq", b""),
                   ("file", "tmp/.wh.gone.txt", b""), ("file", "etc/hostname", b"img\n"),
                   ("link", "etc/hostname2", "etc/hostname"))
    return [lower, upper]


def assert_base_root(rootfs: Path, lib: Path) -> None:
    assert (rootfs / "etc/os-release").read_bytes() == OS_RELEASE.read_bytes()
    libfile = rootfs / "usr/lib/x86_64-linux-gnu" / lib.name
    assert libfile.read_bytes() == lib.read_bytes()
    assert stat.S_IMODE(libfile.stat().st_mode) == 0o755  # setuid stripped
    assert os.readlink(rootfs / "usr/lib/x86_64-linux-gnu/libreal.so") == lib.name
    assert os.readlink(rootfs / "usr/local/cuda") == "cuda-12.4"  # absolute target stored relative
    assert (rootfs / "usr/local/cuda/version.json").read_bytes() == b"{}"
    assert not (rootfs / "tmp/gone.txt").exists() and (rootfs / "tmp").is_dir()
    assert sorted(os.listdir(rootfs / "opt/old")) == ["new.txt"]  # opaque: lower a.txt and sub/ gone
    assert os.stat(rootfs / "etc/hostname").st_ino == os.stat(rootfs / "etc/hostname2").st_ino


@pytest.fixture
def dest(tmp_path):
    d = tmp_path / "dest"
    d.mkdir()
    return d


@pytest.mark.parametrize("layout", ["classic", "blobs"])
def test_docker_save_two_layers_whiteouts(tmp_path, dest, layout):
    lib = REAL_LIB if layout == "classic" else SMALL_LIB
    layers = base_layers(lib)
    archive = tmp_path / "img.tar"
    archive.write_bytes(docker_save(layers, layout))
    info = unpack_image(str(archive), str(dest))
    assert isinstance(info, ImageInfo) and info.kind == "docker-save" and info.layers == 2
    assert info.entries == 18 + 5
    assert info.bytes == len(OS_RELEASE.read_bytes()) + lib.stat().st_size + 2 + 1 + 1 + 4 + 3 + 4
    assert info.env == {"PATH": "/usr/local/cuda/bin:/usr/bin", "CUDA_VERSION": "12.4.1", "EMPTY": ""}
    assert info.config["Cmd"] == ["bash"] and info.config["WorkingDir"] == "/work"
    assert info.tags == ["cuda:12.4"] and info.skipped == []
    assert os.listdir(dest) == ["rootfs"]
    assert_base_root(dest / "rootfs", lib)


def test_docker_export_plain_rootfs(tmp_path, dest):
    archive = tmp_path / "export.tar"
    archive.write_bytes(tar_of(("dir", "./"), ("dir", "./etc"), ("file", "./etc/os-release", OS_RELEASE.read_bytes()),
                               ("dir", "./lib"), ("file", f"./lib/{SMALL_LIB.name}", SMALL_LIB.read_bytes()),
                               ("file", "./.dockerenv", b"")))
    info = unpack_image(archive, str(dest))
    assert (info.kind, info.layers, info.entries, info.config, info.env) == ("docker-export", 1, 6, {}, {})
    assert (dest / "rootfs/lib" / SMALL_LIB.name).read_bytes() == SMALL_LIB.read_bytes()
    assert (dest / "rootfs/etc/os-release").read_bytes() == OS_RELEASE.read_bytes()


def test_oci_layout_two_platforms_picks_amd64(tmp_path, dest):
    arm = [tar_of(("file", "etc/arch", b"arm64"))]
    archive = tmp_path / "oci.tar"
    archive.write_bytes(oci_layout({"arm64": arm, "amd64": base_layers(SMALL_LIB)}))
    info = unpack_image(str(archive), str(dest))
    assert info.kind == "oci-layout" and info.layers == 2 and info.env == {"ARCH": "amd64"}
    assert info.tags == ["nvcr.io/x/cuda:12"]
    assert any("linux/amd64" in note and "linux/arm64" in note for note in info.skipped)
    assert not (dest / "rootfs/etc/arch").exists()
    assert_base_root(dest / "rootfs", SMALL_LIB)


def test_gzipped_docker_save_from_stdin(tmp_path, dest, monkeypatch):
    data = gzip.compress(docker_save(base_layers(SMALL_LIB), "blobs"))
    monkeypatch.setattr(sys, "stdin", types.SimpleNamespace(buffer=io.BytesIO(data)))
    info = unpack_image("-", str(dest))
    assert info.kind == "docker-save" and info.layers == 2
    assert os.listdir(dest) == ["rootfs"]  # the spools are gone
    assert_base_root(dest / "rootfs", SMALL_LIB)


def test_stdin_of_a_real_process(tmp_path, dest):
    """``docker save IMAGE | gpudoctor check --image -``: the archive arrives on a pipe, read by a subprocess."""
    archive = tmp_path / "img.tar"
    archive.write_bytes(docker_save(base_layers(SMALL_LIB), "classic"))
    code = ("import sys; from gpudoctor.sysroot.image import unpack_image; "
            "i = unpack_image('-', sys.argv[1]); print(i.kind, i.layers, i.tags[0])")
    root = Path(__file__).resolve().parents[1]
    with open(archive, "rb") as stdin:
        out = subprocess.run([sys.executable, "-c", code, str(dest)], stdin=stdin, capture_output=True, text=True,
                             cwd=root, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["docker-save", "2", "cuda:12.4"]
    assert os.listdir(dest) == ["rootfs"]
    assert_base_root(dest / "rootfs", SMALL_LIB)


def test_symlinks_are_stored_so_host_resolution_stays_inside(tmp_path, dest):
    # lexically d/t -> s/../.. is the root, but on the host s -> .. would make it climb out: stored canonical
    archive = tmp_path / "links.tar"
    archive.write_bytes(tar_of(("dir", "d"), ("sym", "d/s", ".."), ("sym", "d/t", "s/../.."),
                               ("sym", "d/abs", "/../etc/../etc"), ("dir", "etc")))
    unpack_image(str(archive), str(dest))
    rootfs = os.path.realpath(dest / "rootfs")
    for name in ("d/s", "d/t", "d/abs"):
        resolved = os.path.realpath(dest / "rootfs" / name)
        assert resolved == rootfs or resolved.startswith(rootfs + os.sep), (name, resolved)
    assert os.readlink(dest / "rootfs/d/abs") == "../etc"


def test_an_entry_under_a_link_lands_where_the_link_leads_inside_the_root(tmp_path, dest):
    """As containerd applies a layer (its parent resolved with fs.RootPath): a merged-/usr image's ``lib ->
    usr/lib``, a later layer's ``lib/x86_64-linux-gnu/libcuda.so.1`` is written to ``usr/lib/...``; ``evil ->
    /etc`` with ``evil/passwd`` writes the image's own /etc/passwd, never the host's; a whiteout and a hard link
    under the link act on the file the link leads to."""
    base = tar_of(("dir", "usr"), ("dir", "usr/lib"), ("sym", "lib", "usr/lib"), ("sym", "evil", "/etc"),
                  ("dir", "etc"), ("sym", "up", "/../.."), ("file", "usr/lib/gone.so", b"old"))
    top = tar_of(("dir", "lib/x86_64-linux-gnu"), ("file", "lib/x86_64-linux-gnu/libcuda.so.1", b"\x7fELF"),
                 ("file", "evil/passwd", b"root::0:0\n"), ("file", "up/usr/lib/deep.so", b"d"),
                 ("link", "lib/hard.so", "lib/x86_64-linux-gnu/libcuda.so.1"), ("file", "lib/.wh.gone.so", b""))
    archive = tmp_path / "layers.tar"
    archive.write_bytes(docker_save([base, top]))
    host_passwd = Path("/etc/passwd").read_bytes()
    unpack_image(str(archive), str(dest))
    root = dest / "rootfs"
    assert (root / "usr/lib/x86_64-linux-gnu/libcuda.so.1").read_bytes() == b"\x7fELF"
    assert os.readlink(root / "lib") == "usr/lib" and (root / "etc/passwd").read_bytes() == b"root::0:0\n"
    assert (root / "usr/lib/deep.so").read_bytes() == b"d"  # "up" climbs no higher than the root
    assert os.path.samefile(root / "usr/lib/hard.so", root / "usr/lib/x86_64-linux-gnu/libcuda.so.1")
    assert not (root / "usr/lib/gone.so").exists()
    assert Path("/etc/passwd").read_bytes() == host_passwd


@pytest.mark.skipif(shutil.which("tar") is None or not os.path.isdir("/etc/alternatives"),
                    reason="needs GNU tar and /etc/alternatives")
def test_gnu_tar_of_real_tree_links_rewritten_inside(tmp_path, dest):
    """A docker-export-like tar written by GNU tar from this machine's /etc/alternatives (absolute links) and
    /etc/ssl/certs (relative links): every link is stored relative and points where the image meant, in it."""
    archive = tmp_path / "real.tar"
    subprocess.run(["tar", "-C", "/", "-cf", str(archive), "etc/alternatives", "etc/ssl/certs"], check=True)
    info = unpack_image(str(archive), str(dest))
    rootfs = str(dest / "rootfs")
    checked = 0
    for sub in ("etc/alternatives", "etc/ssl/certs"):
        for name in os.listdir(os.path.join("/", sub)):
            host = os.path.join("/", sub, name)
            if not os.path.islink(host):
                continue
            ours = os.path.join(rootfs, sub, name)
            stored, meant = os.readlink(ours), os.readlink(host)
            assert not stored.startswith("/")
            want = os.path.normpath(os.path.join("/" + sub, meant))  # absolute targets are from the root
            assert os.path.normpath(os.path.join(os.path.dirname(ours), stored)) == rootfs + want
            checked += 1
    assert checked > 10 and info.entries > checked


def test_zstd_layer(tmp_path, dest, monkeypatch):
    zstandard = pytest.importorskip("zstandard")
    layer = tar_of(("file", "etc/os-release", OS_RELEASE.read_bytes()))
    archive = tmp_path / "z.tar"
    archive.write_bytes(_zstd_save(layer, zstandard.ZstdCompressor().compress(layer)))
    unpack_image(str(archive), str(dest))
    assert (dest / "rootfs/etc/os-release").read_bytes() == OS_RELEASE.read_bytes()


def test_zstd_layer_without_zstandard(tmp_path, dest, monkeypatch):
    blob = b"\x28\xb5\x2f\xfd" + bytes(64)  # the magic is all it takes to be told what to install
    archive = tmp_path / "z.tar"
    archive.write_bytes(_zstd_save(tar_of(("file", "a", b"x")), blob))
    monkeypatch.setitem(sys.modules, "zstandard", None)
    with pytest.raises(ImageError, match="pip install zstandard"):
        unpack_image(str(archive), str(dest))
    assert os.listdir(dest) == []


def _zstd_save(layer: bytes, blob: bytes) -> bytes:
    cfg = config_json([layer])
    manifest = [{"Config": f"blobs/sha256/{sha(cfg)}", "RepoTags": [], "Layers": [f"blobs/sha256/{sha(blob)}"]}]
    return tar_of(("file", f"blobs/sha256/{sha(blob)}", blob), ("file", f"blobs/sha256/{sha(cfg)}", cfg),
                  ("file", "manifest.json", json.dumps(manifest).encode()))


# -- hostile archives ------------------------------------------------------------------------------------
def _cut_at_last_member(data: bytes) -> bytes:
    with tarfile.open(fileobj=io.BytesIO(data)) as tf:
        last = tf.getmembers()[-1]
    return data[:last.offset_data + -(-last.size // 512) * 512]


def _hostile():
    small = Limits(max_entries=5, max_file_bytes=1000, max_total_bytes=3000)
    no_bomb = Limits(ratio_after_bytes=1 << 20, max_ratio=50)
    good = [tar_of(("file", "etc/os-release", OS_RELEASE.read_bytes()))]
    bomb = gzip.compress(tar_of(("file", "zeros", bytes(8 << 20))), mtime=0)
    bomb_save = docker_save([tar_of(("file", "zeros", bytes(8 << 20)))], "blobs")
    return {
        "dotdot": (tar_of(("file", "../escape", b"x")), None, "'..'"),
        "dotdot-inner": (tar_of(("dir", "a"), ("file", "a/../../escape", b"x")), None, "'..'"),
        "absolute": (tar_of(("file", "/abs/path", b"x")), None, "absolute"),
        "nul-byte": (tar_of(("file", "a\x01b", b"x")), None, "control"),
        "symlink-loop-on-the-way": (tar_of(("sym", "a", "b"), ("sym", "b", "a"), ("file", "a/x", b"")), None,
                                    "more than 40 symlinks"),
        "symlink-to-a-file-on-the-way": (tar_of(("file", "f", b""), ("sym", "d", "f"), ("file", "d/x", b"")), None,
                                         "not a directory"),
        "symlink-climbs-out": (tar_of(("dir", "a"), ("sym", "a/up", "../../../../tmp")), None, "above the image root"),
        "hardlink-outside": (tar_of(("link", "h", "../../etc/passwd")), None, "'..'"),
        "hardlink-not-extracted": (tar_of(("link", "h", "etc/passwd")), None, "not name a regular file"),
        "hardlink-to-symlink": (tar_of(("sym", "s", "x"), ("link", "h", "s")), None, "not name a regular file"),
        "char-device": (tar_of(("dir", "dev"), ("chr", "dev/null")), None, "character device"),
        "fifo": (tar_of(("fifo", "run/pipe")), None, "FIFO"),
        "gzip-bomb-outer": (bomb, no_bomb, "bomb"),
        "gzip-bomb-layer": (docker_save([gzip.decompress(bomb)], "blobs", blob_override={0: bomb}), no_bomb, "bomb"),
        "too-many-entries": (tar_of(*[("file", f"f{i}", b"") for i in range(10)]), small, "more than 5 entries"),
        "file-too-big": (tar_of(("file", "big", bytes(2000))), small, "over the 1000-byte limit"),
        "total-too-big": (tar_of(*[("file", f"f{i}", bytes(900)) for i in range(4)]), small, "more than 3000 bytes"),
        "truncated-save": (docker_save(good)[:1500], None, "truncated|corrupt|not in the archive"),
        "truncated-member-boundary": (_cut_at_last_member(tar_of(("file", "a", b"x"), ("file", "b", b"y"))), None,
                                      "truncated"),
        "truncated-gzip": (gzip.compress(tar_of(("file", "a", os.urandom(4000))))[:-300], None,
                           "truncated or corrupt gzip"),
        "garbage": (os.urandom(64 * 1024), None, "not a tar archive"),
        "empty": (b"", None, "not a tar archive"),
        "missing-layer": (docker_save(good, manifest_layers=["0" * 64 + "/layer.tar"]), None, "not in the archive"),
        "docker-save-before-1.10": (tar_of(("file", "repositories", b"{}"), ("file", "0" * 64 + "/layer.tar", good[0])),
                                    None, "without manifest.json"),
        "oci-without-index": (tar_of(("file", "oci-layout", b"{}"), ("dir", "blobs")), None, "without index.json"),
        "index-wrong-type": (tar_of(("file", "oci-layout", b'{"imageLayoutVersion": "1.0.0"}'),
                                    ("file", "index.json", b'{"manifests": {"a": 1}}')), None, "wrong type"),
        "layers-wrong-type": (docker_save(good, manifest_layers="layer.tar"), None, "wrong type"),
        "digest-mismatch": (docker_save(good, "blobs", blob_override={0: tar_of(("file", "etc/os-release", b"evil"))}),
                            None, "digest mismatch"),
        "diff-id-mismatch": (docker_save(good, diff_layers=[tar_of(("file", "other", b""))]), None, "diff_id"),
        "save-file-too-big": (bomb_save, Limits(max_file_bytes=1000), "over the 1000-byte limit"),
    }


HOSTILE = _hostile()


def _snapshot(base: Path, skip: Path) -> dict:
    out = {}
    for dirpath, dirnames, filenames in os.walk(base):
        if Path(dirpath) == skip or skip in Path(dirpath).parents:
            continue
        for name in dirnames + filenames:
            if Path(dirpath, name) == skip:
                continue  # dest itself changes (its mtime) and is checked to be empty
            st = os.lstat(os.path.join(dirpath, name))
            out[os.path.join(dirpath, name)] = (st.st_mode, st.st_size, st.st_mtime_ns)
    return out


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_archive_refused_nothing_written_outside(tmp_path, dest, case):
    data, limits, match = HOSTILE[case]
    archive = tmp_path / "hostile.tar"
    archive.write_bytes(data)
    sentinel = tmp_path / "sentinel"
    (sentinel / "etc").mkdir(parents=True)
    (sentinel / "etc/passwd").write_text("keep\n")
    before = _snapshot(tmp_path, dest)
    host_passwd = Path("/etc/passwd").read_bytes()
    with pytest.raises(ImageError, match=match) as err:
        unpack_image(str(archive), str(dest), limits or Limits())
    assert "\n" not in str(err.value)
    assert os.listdir(dest) == []
    assert _snapshot(tmp_path, dest) == before
    assert (sentinel / "etc/passwd").read_text() == "keep\n"
    assert Path("/etc/passwd").read_bytes() == host_passwd


def test_dest_must_be_an_empty_directory(tmp_path, dest):
    archive = tmp_path / "a.tar"
    archive.write_bytes(tar_of(("file", "a", b"x")))
    (dest / "other").write_text("mine")
    with pytest.raises(ImageError, match="empty directory"):
        unpack_image(str(archive), str(dest))
    assert (dest / "other").read_text() == "mine"
