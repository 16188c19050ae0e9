"""A Linux root laid out from the Debian packages installed on this machine, file for file as ``dpkg -L`` lists
them (regular files copied with their modes and times, symlinks kept as symlinks, directories), with the
/etc/alternatives links those files go through, and gpudoctor with its pure-Python dependencies under
/opt/gpudoctor, so that ``python3.11 -m gpudoctor check`` runs inside it (chroot) as it would in an image.

Left out, to keep the root small: what neither a live check nor a check of the files reads or runs (static
``.a`` libraries, documentation, man and info pages, translations, and the compiler passes and tools that
neither ``nvcc --version``/``--dryrun``/``--list-gpu-code``, ``ptxas --version`` nor ``gcc -dumpfullversion``
starts: the C front end ``cc1``, ``lto1``, ``lto-dump``, ``nvdisasm``, compute-sanitizer). Nothing is invented:
every file in the root is a file of this machine.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from typing import Iterable, List

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: glibc, libstdc++ and the shell the nvcc wrapper scripts need; python3.11 with what its stdlib's ctypes,
#: hashlib and compression modules load; Debian's CUDA 11.8 toolkit (nvcc, ptxas, the headers of
#: nvidia-cuda-dev), its runtime; gcc 12 (the default gcc, with the unversioned gcc/g++/cpp links) and gcc 11
#: (which Debian's nvcc wrapper picks) with binutils; the driver 535 user space (libcuda1, libnvidia-ml1).
PACKAGES = (
    "libc6", "libc-bin", "libc6-dev", "libstdc++6", "libgcc-s1", "zlib1g", "dash",
    "python3.11-minimal", "libpython3.11-minimal", "libpython3.11-stdlib", "libexpat1", "libffi8", "libssl3",
    "libbz2-1.0", "liblzma5",
    "nvidia-cuda-toolkit", "nvidia-cuda-dev", "libcudart11.0",
    "gcc", "g++", "cpp", "gcc-12", "g++-12", "cpp-12", "gcc-12-base", "libgcc-12-dev", "libstdc++-12-dev",
    "gcc-11", "g++-11", "cpp-11", "gcc-11-base", "libgcc-11-dev", "libstdc++-11-dev",
    "binutils", "binutils-x86-64-linux-gnu", "libbinutils", "libctf0", "libctf-nobfd0", "libgprofng0",
    "libjansson4", "libcc1-0", "libgmp10", "libisl23", "libmpc3", "libmpfr6", "libzstd1",
    "libcuda1", "libnvidia-ml1", "libnvidia-ptxjitcompiler1", "nvidia-alternative",
)

#: Files neither check reads or runs (see the module's docstring).
LEFT_OUT = re.compile(r"^/usr/share/(doc|man|info|locale|lintian|bug)/|\.a$|/(cc1|lto1)$|lto-dump|/nvdisasm$"
                      r"|/compute-sanitizer(/|$)")

#: What the image's configuration sets (its Env), as a CUDA image's Dockerfile would.
IMAGE_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "PYTHONPATH": "/opt/gpudoctor"}

#: gpudoctor's requirements that the check does not import (cuda-python: the live check asks the libraries
#: with ctypes; requests: only `matrix update` downloads).
NOT_NEEDED = {"cuda-python", "requests"}


def missing_packages(packages: Iterable[str] = PACKAGES) -> List[str]:
    """The names in ``packages`` that dpkg does not list as installed here."""
    out = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${db:Status-Status}\n", *packages],
                         capture_output=True, text=True, timeout=60).stdout
    installed = {line.split()[0] for line in out.splitlines() if line.endswith(" installed")}
    return [p for p in packages if p not in installed]


def package_paths(package: str) -> List[str]:
    """The paths ``dpkg -L package`` lists, in its order (a directory before what it holds)."""
    out = subprocess.run(["dpkg-query", "-L", package], capture_output=True, text=True, timeout=60, check=True)
    return [p for p in out.stdout.splitlines() if p.startswith("/") and p != "/."]


def _in_root(root: str, path: str) -> str:
    """Where ``path`` of this machine lies in ``root``: its directory resolved on this machine (merged /usr:
    /lib64/ld-linux-x86-64.so.2 is /usr/lib64/...), so nothing is written through a link of the root."""
    return root + os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))


def _copy_one(root: str, path: str) -> None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:  # listed but removed here (a diverted or deleted conffile)
        return
    dst = _in_root(root, path)
    if os.path.islink(path):
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if not os.path.lexists(dst):
            os.symlink(os.readlink(path), dst)
    elif os.path.isdir(path):
        os.makedirs(dst, exist_ok=True)
        os.chmod(dst, st.st_mode & 0o7777)
    elif os.path.isfile(path) and not LEFT_OUT.search(path):
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy2(path, dst)


def _copy_link_chain(root: str, path: str) -> None:
    """``path`` and every link on the way to its file (e.g. /etc/alternatives/nvidia--libcuda.so.1), as they are."""
    for _ in range(16):
        dst = _in_root(root, path)
        if os.path.lexists(dst) and not os.path.islink(path):
            return
        if not os.path.lexists(path):
            return
        if not os.path.islink(path):
            _copy_one(root, path)
            return
        _copy_one(root, path)
        target = os.readlink(path)
        path = target if target.startswith("/") else os.path.normpath(os.path.join(os.path.dirname(path), target))


def lay_out(root: str, packages: Iterable[str] = PACKAGES) -> None:
    """Copy the files of ``packages`` into ``root`` (created), with merged /usr's top-level links as this machine
    has them, the /etc/alternatives links the packages' links go through, and /etc/os-release."""
    os.makedirs(root)
    for name in sorted(os.listdir("/")):
        if os.path.islink("/" + name) and not os.readlink("/" + name).startswith("/"):  # bin -> usr/bin
            os.symlink(os.readlink("/" + name), os.path.join(root, name))
    for d in ("proc", "dev", "tmp"):  # mount points of the live check
        os.makedirs(os.path.join(root, d), exist_ok=True)
    os.chmod(os.path.join(root, "tmp"), 0o1777)
    for package in packages:
        for path in package_paths(package):
            _copy_one(root, path)
    for link in alternative_links(root):
        _copy_link_chain(root, link)
    _copy_link_chain(root, "/etc/os-release")


def alternative_links(root: str) -> List[str]:
    """The links update-alternatives made here (no package lists them: /usr/bin/cc, /usr/lib/x86_64-linux-gnu/
    libcuda.so.1 -> /etc/alternatives/nvidia--libcuda.so.1-x86_64-linux-gnu -> ...) whose chosen file or
    directory is in ``root``."""
    ua = ["update-alternatives", "--admindir", "/var/lib/dpkg/alternatives"]
    names = subprocess.run([*ua, "--get-selections"], capture_output=True, text=True, timeout=60).stdout.split("\n")
    links = []
    for name in (n.split()[0] for n in names if n.strip()):
        query = subprocess.run([*ua, "--query", name], capture_output=True, text=True, timeout=60).stdout
        head = query.split("\n\n")[0].splitlines()  # the group: its link, then its slaves' names and links
        pairs = [(name, line.split(":", 1)[1].strip()) for line in head if line.startswith("Link:")]
        pairs += [tuple(line.split()) for line in head if line.startswith(" ") and len(line.split()) == 2]
        for alt, link in pairs:
            chosen = "/etc/alternatives/" + alt
            if os.path.islink(chosen) and os.path.lexists(_in_root(root, os.readlink(chosen))):
                links.append(link)
    return links


def _requirement_closure(top: str) -> List[str]:
    """The installed distributions ``top`` needs (its requirements whose markers hold here, recursively), less
    :data:`NOT_NEEDED`; names as their metadata spells them."""
    from importlib import metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    seen, todo, names = set(), [top], []
    while todo:
        name = todo.pop()
        for line in metadata.requires(name) or []:
            req = Requirement(line)
            key = canonicalize_name(req.name)
            if key in seen or key in NOT_NEEDED or (req.marker and not req.marker.evaluate({"extra": ""})):
                continue
            seen.add(key)
            try:
                metadata.distribution(req.name)
            except metadata.PackageNotFoundError:
                continue
            names.append(req.name)
            todo.append(req.name)
    return sorted(names)


def add_gpudoctor(root: str, dest: str = "/opt/gpudoctor") -> List[str]:
    """gpudoctor's source tree (the package and compat_matrix/, where the package looks for it when it is not
    installed) and the files of each distribution it needs, as their RECORD lists them, under ``dest``; returns
    those distributions' names."""
    from importlib import metadata

    target = root + dest
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(os.path.join(REPO, "gpudoctor"), os.path.join(target, "gpudoctor"), ignore=ignore)
    shutil.copytree(os.path.join(REPO, "compat_matrix"), os.path.join(target, "compat_matrix"), ignore=ignore)
    names = _requirement_closure("gpudoctor")
    for name in names:
        dist = metadata.distribution(name)
        for f in dist.files or []:
            rel = str(f)
            if rel.startswith("..") or "__pycache__" in rel:  # console scripts live outside site-packages
                continue
            src = str(dist.locate_file(f))
            if os.path.isfile(src):
                os.makedirs(os.path.dirname(os.path.join(target, rel)), exist_ok=True)
                shutil.copy2(src, os.path.join(target, rel))
    return names


def build_ld_cache(root: str) -> None:
    """The root's own /etc/ld.so.cache from its /etc/ld.so.conf, by this machine's ldconfig (``ldconfig -r``)."""
    ldconfig = shutil.which("ldconfig", path="/sbin:/usr/sbin") or "ldconfig"
    subprocess.run([ldconfig, "-r", root], check=True, capture_output=True, timeout=120)


def tree_size(root: str) -> int:
    """Bytes of the regular files under ``root``."""
    total = 0
    for dirpath, _, filenames in os.walk(root):
        for name in filenames:
            p = os.path.join(dirpath, name)
            if not os.path.islink(p):
                total += os.path.getsize(p)
    return total


if __name__ == "__main__":  # python -m tests.image_from_packages DIR: lay one out to look at
    lay_out(sys.argv[1])
    add_gpudoctor(sys.argv[1])
    build_ld_cache(sys.argv[1])
    print(tree_size(sys.argv[1]) // 1_000_000, "MB")
