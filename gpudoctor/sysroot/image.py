"""Container image archives unpacked into a temporary root for ``gpudoctor check --image FILE.tar`` (issue 25).

:func:`unpack_image` takes a ``docker save`` archive (classic ``<id>/layer.tar`` or Docker 25+ ``blobs/``), a
``docker export`` root file system, or an OCI image layout (each may itself be gzip- or zstd-compressed, or
come on stdin), and lays the image's root file system out under ``dest/rootfs``, layer by layer with OCI
whiteouts. The archive is hostile input: paths, links, device nodes, sizes, entry counts, compression
ratios and digests are all checked while streaming (see :mod:`gpudoctor.sysroot.image_layers`), and any
fault is an :class:`ImageError` after which nothing is left under ``dest``."""
from __future__ import annotations

import os
import shutil
import stat
import sys
from dataclasses import dataclass, field
from typing import Dict, List, Tuple, Union

from gpudoctor.sysroot.image_archive import OuterArchive, Plan, docker_save_plan, oci_plan
from gpudoctor.sysroot.image_layers import RootWriter
from gpudoctor.sysroot.image_limits import ImageError, Limits
from gpudoctor.sysroot.image_streams import GZIP_MAGIC, ZSTD_MAGIC, BlobReader, CountedStream

__all__ = ["ImageError", "Limits", "ImageInfo", "unpack_image"]

ROOTFS = "rootfs"
_STDIN_SPOOL = "stdin.spool"
_DECOMPRESSED = "archive.tar"


@dataclass
class ImageInfo:
    """What was unpacked.

    - ``kind``: ``"docker-save"``, ``"docker-export"`` or ``"oci-layout"``.
    - ``layers``: layers applied (1 for docker export); ``entries``: tar members read in them;
      ``bytes``: file data written (bytes, overwritten files included).
    - ``config``: the image config's ``config`` part (Env, Entrypoint, Cmd, WorkingDir, Labels ...; ``{}``
      for docker export, which has none); ``env``: its Env as KEY -> VALUE.
    - ``tags``: RepoTags (docker save) or the index's image names (OCI).
    - ``skipped``: one line per thing passed over (other images or platforms in the archive, odd members).
    """

    kind: str
    layers: int
    entries: int
    bytes: int
    config: dict = field(default_factory=dict)
    env: Dict[str, str] = field(default_factory=dict)
    tags: List[str] = field(default_factory=list)
    skipped: List[str] = field(default_factory=list)


def unpack_image(source: Union[str, "os.PathLike[str]"], dest: str, limits: Limits = Limits()) -> ImageInfo:
    """Unpack the image archive ``source`` (a path, or ``"-"`` for stdin) into ``dest/rootfs``.

    ``dest`` must be an existing empty directory; stdin or a compressed archive is first spooled to a file
    in ``dest`` (counted against ``limits``, removed afterwards), since docker save archives are read out
    of order. Raises :class:`ImageError` (one line naming the member or layer) for a malformed or hostile
    archive, or a ``dest`` that is not an empty directory; on any exception everything written under
    ``dest`` is removed (``dest`` itself stays)."""
    _check_dest(dest)
    notes: List[str] = []
    try:
        path, label, spools = _source_tar(source, dest, limits)
        arc = OuterArchive(path, label, limits)
        try:
            kind = arc.kind()
            os.mkdir(os.path.join(dest, ROOTFS), 0o700)
            writer = RootWriter(os.path.join(dest, ROOTFS), limits, notes)
            try:
                plan = _apply(arc, kind, label, writer)
            finally:
                writer.close()
        finally:
            arc.close()
        for spool in spools:
            os.unlink(spool)
    except BaseException:
        _clear(dest)
        raise
    env = dict(_env_pair(e) for e in plan.config.get("Env") or [])
    layers = len(plan.layers) if kind != "docker-export" else 1
    return ImageInfo(kind, layers, writer.entries, writer.bytes, plan.config, env, plan.tags, plan.notes + notes)


def _apply(arc: OuterArchive, kind: str, label: str, writer: RootWriter) -> Plan:
    if kind == "docker-export":
        writer.apply(BlobReader(arc.fd, 0, os.fstat(arc.fd).st_size, label), label)
        return Plan()
    plan = docker_save_plan(arc) if kind == "docker-save" else oci_plan(arc)
    for layer in plan.layers:
        algo, hexd = layer.blob_digest or ("sha256", None)
        diff_algo, diff_hex = layer.diff_id or ("sha256", None)
        writer.apply(arc.blob(layer.key, layer.label, algo), layer.label, diff_id=diff_hex, blob_digest=hexd,
                     diff_algo=diff_algo)
    return plan


def _env_pair(entry: str) -> Tuple[str, str]:
    key, _, value = entry.partition("=")
    return key, value


def _check_dest(dest: str) -> None:
    try:
        st = os.lstat(dest)
    except OSError as e:
        raise ImageError(f"{dest}: cannot unpack an image there ({e.strerror})") from None
    if not stat.S_ISDIR(st.st_mode) or os.listdir(dest):
        raise ImageError(f"{dest}: an image is unpacked only into an existing empty directory")


def _clear(dest: str) -> None:
    """Remove what this call wrote under ``dest`` (it was empty before); symlinks are removed, not followed."""
    for name in os.listdir(dest):
        path = os.path.join(dest, name)
        if stat.S_ISDIR(os.lstat(path).st_mode):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)


def _source_tar(source, dest: str, limits: Limits) -> Tuple[str, str, List[str]]:
    """(path of the uncompressed outer tar, its label for messages, spool files to remove afterwards)."""
    spools: List[str] = []
    if str(source) == "-":
        label, path = "stdin", os.path.join(dest, _STDIN_SPOOL)
        _spool(sys.stdin.buffer, path, limits, label)
        spools.append(path)
    else:
        label = path = os.fspath(source)
        try:
            st = os.stat(path)
        except OSError as e:
            raise ImageError(f"{label}: cannot read the image archive ({e.strerror})") from None
        if stat.S_ISFIFO(st.st_mode) or stat.S_ISCHR(st.st_mode):  # /dev/stdin, <(docker save IMAGE)
            path = os.path.join(dest, _STDIN_SPOOL)
            with open(label, "rb") as pipe:
                _spool(pipe, path, limits, label)
            spools.append(path)
        elif not stat.S_ISREG(st.st_mode):
            raise ImageError(f"{label}: not a regular file; give a .tar archive (an OCI layout directory: "
                             f"tar -C DIR -cf layout.tar .)")
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        head = os.pread(fd, 4, 0)
        if head.startswith(GZIP_MAGIC) or head.startswith(ZSTD_MAGIC):
            out = os.path.join(dest, _DECOMPRESSED)
            stream = CountedStream(BlobReader(fd, 0, os.fstat(fd).st_size, label), label, limits)
            spools.append(out)
            _spool(stream, out, limits, label)
            path = out
    finally:
        os.close(fd)
    return path, label, spools


def _spool(src, path: str, limits: Limits, label: str) -> None:
    """Copy ``src`` (``read(n)``) into a new file ``path``, at most ``limits.stream_cap()`` bytes."""
    cap, total = limits.stream_cap(), 0
    with open(path, "xb") as out:
        while True:
            chunk = src.read(1 << 20)
            if not chunk:
                break
            total += len(chunk)
            if total > cap:
                raise ImageError(f"{label}: the archive is larger than {cap} bytes, the most the limits allow")
            out.write(chunk)
