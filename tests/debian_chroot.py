"""A fresh Debian 12 root made with ``debootstrap --variant=minbase`` in which an install plan's script runs as
root and ``gpudoctor check`` runs after it (tests/test_debian_plan_chroot.py).

The .debs come from the mirror through this machine's apt cache (/var/cache/apt/archives, given to debootstrap
as ``--cache-dir`` and bind-mounted at the root's own archives directory while apt runs), so a machine that
already has Debian's CUDA packages downloads nothing twice. /proc is mounted for apt and for the check; every
mount is undone before the functions return. gpudoctor goes in as tests/image_from_packages.py puts it in an
image: its source tree and its pure-Python requirements under /opt/gpudoctor (PYTHONPATH).
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from typing import Dict, Iterator, List, Optional

MIRROR = "http://deb.debian.org/debian"
SUITE = "bookworm"
APT_CACHE = "/var/cache/apt/archives"
#: Components the plans' Debian packages live in (nvidia-cuda-toolkit is in non-free).
SOURCES = f"deb {MIRROR} {SUITE} main contrib non-free\n"
ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root", "LANG": "C.UTF-8",
       "DEBIAN_FRONTEND": "noninteractive", "PYTHONPATH": "/opt/gpudoctor"}


class ChrootUnavailable(Exception):
    """Why no chroot can be made here (not root, no debootstrap, mirror unreachable): one line."""


def can_make_root() -> None:
    """Raise ChrootUnavailable unless this process can debootstrap a root from the mirror."""
    if os.geteuid() != 0:
        raise ChrootUnavailable("needs root (debootstrap, chroot and mount)")
    if not shutil.which("debootstrap"):
        raise ChrootUnavailable("debootstrap is not installed (apt-get install debootstrap)")
    import requests

    try:
        requests.head(f"{MIRROR}/dists/{SUITE}/Release", timeout=10).raise_for_status()
    except requests.RequestException as exc:
        raise ChrootUnavailable(f"Debian's mirror {MIRROR} is unreachable ({type(exc).__name__})") from None


def debootstrap(root: str, log: str) -> None:
    """A minbase bookworm in ``root`` (created), with main, contrib and non-free in its sources.list."""
    cache = ["--cache-dir", APT_CACHE] if os.path.isdir(APT_CACHE) else []
    with open(log, "ab") as out:
        rc = subprocess.run(["debootstrap", "--variant=minbase", *cache, SUITE, root, MIRROR], stdout=out,
                            stderr=subprocess.STDOUT, timeout=1200).returncode
    if rc != 0:
        raise ChrootUnavailable(f"debootstrap exited with {rc} (log: {log})")
    with open(os.path.join(root, "etc", "apt", "sources.list"), "w") as fh:
        fh.write(SOURCES)
    shutil.copy("/etc/resolv.conf", os.path.join(root, "etc", "resolv.conf"))


@contextlib.contextmanager
def mounted(root: str) -> Iterator[None]:
    """/proc, and this machine's apt cache at the root's own (its .debs reused, new ones kept for next time)."""
    done: List[str] = []
    try:
        for src, dst, args in (("proc", "proc", ["-t", "proc"]), (APT_CACHE, "var/cache/apt/archives", ["--bind"])):
            if args[0] == "--bind" and not os.path.isdir(src):
                continue
            target = os.path.join(root, dst)
            os.makedirs(target, exist_ok=True)
            subprocess.run(["mount", *args, src, target], check=True, capture_output=True, timeout=60)
            done.append(target)
        yield
    finally:
        for target in reversed(done):
            subprocess.run(["umount", "-l", target], capture_output=True, timeout=60)


def run_in(root: str, argv: List[str], log: str, timeout: float = 1200, env: Optional[Dict[str, str]] = None):
    """``argv`` run as root inside ``root`` (cwd /, a clean environment); output appended to ``log``."""
    with open(log, "ab") as out:
        out.write(f"\n$ {' '.join(argv)}\n".encode())
        out.flush()
        return subprocess.run(["chroot", root, "/usr/bin/env", "-i", *[f"{k}={v}" for k, v in (env or ENV).items()],
                               *argv], stdout=out, stderr=subprocess.STDOUT, timeout=timeout, cwd="/").returncode


def add_gpudoctor(root: str) -> None:
    """gpudoctor and its pure-Python requirements under /opt/gpudoctor, and a ``gpudoctor`` command that runs it
    (the plans' own Verify step calls ``gpudoctor check``; no GPU here, so it adds ``--no-gpu``)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import image_from_packages

    image_from_packages.add_gpudoctor(root)
    shim = os.path.join(root, "usr", "local", "bin", "gpudoctor")
    os.makedirs(os.path.dirname(shim), exist_ok=True)
    with open(shim, "w") as fh:
        fh.write('#!/bin/sh\n# gpudoctor from /opt/gpudoctor; this root has no GPU.\n'
                 'if [ "$1" = check ]; then shift; exec python3 -m gpudoctor check --no-gpu --no-smoke "$@"; fi\n'
                 'exec python3 -m gpudoctor "$@"\n')
    os.chmod(shim, 0o755)


def check(root: str, log: str) -> dict:
    """``gpudoctor check --no-gpu --no-smoke --json`` run inside ``root``: the report."""
    out = subprocess.run(["chroot", root, "/usr/bin/env", "-i", *[f"{k}={v}" for k, v in ENV.items()],
                          "python3", "-m", "gpudoctor", "check", "--no-gpu", "--no-smoke", "--json"],
                         capture_output=True, text=True, timeout=300, cwd="/")
    with open(log, "a") as fh:
        fh.write(f"\n$ gpudoctor check --no-gpu --no-smoke --json (exit {out.returncode})\n{out.stderr}\n")
    try:
        return json.loads(out.stdout)
    except ValueError:
        raise AssertionError(f"gpudoctor check printed no report (exit {out.returncode}): {out.stderr[-2000:]}")
