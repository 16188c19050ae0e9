"""The library index of a root on disk: the same LibraryIndex as the live check, reading through a
SystemView: real driver libraries of this machine (Debian's 535 packages, whose links go through
/etc/alternatives with absolute targets) copied with their links into an image-like root, and the real cuDNN
wheel's files as a dist-packages install. Links resolve inside the root, never on this machine."""
import os
import shutil

import pytest

from gpudoctor.probes.libfind import LibraryIndex, root_site_dirs
from gpudoctor.sysroot.view import SystemView

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CUDNN = os.path.join(ROOT, ".ci", "cache", "cudnn-cu12", "site-packages")
LIBCUDA = "/usr/lib/x86_64-linux-gnu/libcuda.so.1"


def _copy_chain(path: str, root: str) -> None:
    """``path`` and every link on the way to its file, copied into ``root`` as they are (links kept)."""
    for _ in range(10):
        dst = root + path
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if os.path.islink(path):
            if not os.path.lexists(dst):
                os.symlink(os.readlink(path), dst)
            target = os.readlink(path)
            path = target if target.startswith("/") else os.path.join(os.path.dirname(path), target)
        else:
            shutil.copy2(path, dst)
            return


@pytest.mark.skipif(not os.path.islink(LIBCUDA) or not os.path.isdir(CUDNN),
                    reason="needs Debian's libcuda1 (.ci/install-real-parts) and the cuDNN wheel (.ci/fetch-real-wheels)")
def test_a_roots_libraries_are_found_and_resolved_inside_it(tmp_path):
    root = str(tmp_path / "rootfs")
    _copy_chain(LIBCUDA, root)
    real = os.path.realpath(LIBCUDA)
    sp = "/usr/local/lib/python3.10/dist-packages"
    shutil.copytree(CUDNN, root + sp)
    view = SystemView(root, "linux", {"PATH": "/usr/local/bin:/usr/bin:/bin", "LD_LIBRARY_PATH": ""})
    assert root_site_dirs(view) == [sp]
    idx = LibraryIndex(view.env, view=view)
    (cuda,) = idx.copies("libcuda")
    assert cuda.realpath == real and cuda.version == os.path.basename(real).split(".so.")[1]  # e.g. 535.261.03
    assert idx.loader_pick("libcuda.so.1") == LIBCUDA  # the default dirs (this root has no ld.so.cache)
    (cudnn,) = idx.copies("libcudnn")
    assert cudnn.package == "nvidia-cudnn-cu12" and cudnn.origin == "pip"
    assert cudnn.path == sp + "/nvidia/cudnn/lib/libcudnn.so.9" and cudnn.version.startswith("9.")
    assert idx.file_info(cuda.realpath)["kind"] == "elf" and idx.process_elf()["machine"] == "x86-64"

    # The root's /etc/alternatives decides, not this machine's: point the root's link at another file
    alt = root + os.readlink(LIBCUDA)
    os.remove(alt)
    os.symlink("/opt/vendor/libcuda.so.999.1.2", alt)
    os.makedirs(root + "/opt/vendor")
    shutil.copy2(real, root + "/opt/vendor/libcuda.so.999.1.2")
    idx = LibraryIndex(view.env, view=SystemView(root, "linux", view.env))
    assert idx.loader_pick("libcuda.so.1") == LIBCUDA
    assert idx._realpath(LIBCUDA) == "/opt/vendor/libcuda.so.999.1.2"


@pytest.mark.skipif(not os.path.islink(LIBCUDA) or os.geteuid() != 0 or not shutil.which("ldconfig", path="/sbin:/usr/sbin"),
                    reason="needs Debian's libcuda1 and root (ldconfig -r builds the root's own cache)")
def test_a_roots_own_ld_so_cache_decides_and_is_read_not_run(tmp_path):
    """The root's /etc/ld.so.cache, built by the real ldconfig for that root, names a vendor dir: the index
    parses the file (nothing of the root runs) and the loader pick comes from it, as ld.so's would."""
    root = str(tmp_path / "rootfs")
    real = os.path.realpath(LIBCUDA)
    os.makedirs(root + "/opt/vendor/lib")
    shutil.copy2(real, root + "/opt/vendor/lib/" + os.path.basename(real))
    os.symlink(os.path.basename(real), root + "/opt/vendor/lib/libcuda.so.1")
    os.makedirs(root + "/etc")
    with open(root + "/etc/ld.so.conf", "w") as fh:
        fh.write("/opt/vendor/lib\n")
    ldconfig = shutil.which("ldconfig", path="/sbin:/usr/sbin")
    import subprocess

    subprocess.run([ldconfig, "-r", root], check=True, capture_output=True, timeout=60)
    view = SystemView(root, "linux", {"PATH": "/usr/bin:/bin"})
    idx = LibraryIndex(view.env, view=view)
    assert [e["path"] for e in idx.cache if e["soname"] == "libcuda.so.1"] == ["/opt/vendor/lib/libcuda.so.1"]
    assert idx.loader_trace("libcuda.so.1") == {"path": "/opt/vendor/lib/libcuda.so.1", "via": "ldconfig",
                                                "entry": "/opt/vendor/lib"}
    assert [c.realpath for c in idx.copies("libcuda")] == ["/opt/vendor/lib/" + os.path.basename(real)]
