"""Layers applied to an image root, safe against hostile tars.

Every write goes through directory file descriptors opened component by component with ``O_NOFOLLOW``, so
the host never follows a symlink on the way. An entry's parent directory is first resolved inside the image
root as containerd applies a layer (``fs.RootPath``: a link on the way is followed in the root's scope, an
absolute target is the root's own path, ``..`` stops at the root), so ``lib/x.so`` under a ``lib -> usr/lib``
link lands in ``usr/lib``; the entry's own name is never followed. Symlinks are stored with their target
resolved inside the image root and rewritten as a plain relative path (leading ``..`` only, never more than
the link's depth), so that following them on the host stays under the root; hard links must name a regular
file this layer wrote; devices and FIFOs are refused; modes lose setuid/setgid/sticky and group/other
write; ownership is never changed. OCI whiteouts (``.wh.NAME``, ``.wh..wh..opq``) act on lower layers only,
as the image spec says, whatever their order inside the layer."""
from __future__ import annotations

import errno
import os
import posixpath
import shutil
import stat
import tarfile
from typing import Dict, List, Optional

from gpudoctor.sysroot.image_limits import ImageError, Limits, show
from gpudoctor.sysroot.image_streams import BlobReader, CountedStream

WHITEOUT = ".wh."
OPAQUE = ".wh..wh..opq"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_HEADER_CAP = 16 << 20  # pax / GNU long-name headers are read whole by tarfile: cap them first
_NOTES_MAX = 50


class _GuardedTarInfo(tarfile.TarInfo):
    """tarfile reads a pax or GNU long-name header into memory whole; a hostile size must not get that far."""

    def _proc_member(self, tarfile_):
        if self.type in (tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE,
                         tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK) and self.size > _HEADER_CAP:
            raise ImageError(f"an extended tar header of {self.size} bytes (over {_HEADER_CAP}) in member "
                             f"{show(self.name)}")
        return super()._proc_member(tarfile_)


def member_parts(name: str, what: str) -> List[str]:
    """The components of an archive path; ImageError for an absolute path, ``..``, or control/undecodable
    bytes. ``""``, ``.`` and ``./`` prefixes vanish (``[]`` is the root itself)."""
    if not name.isprintable() or any("\udc80" <= c <= "\udcff" for c in name):
        raise ImageError(f"{what} {show(name)} has a control or non-UTF-8 byte in its name")
    if name.startswith("/"):
        raise ImageError(f"{what} {show(name)} is an absolute path")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ImageError(f"{what} {show(name)} has a '..' component")
    return parts


class RootWriter:
    """Applies layers, in order, to the empty directory ``root``; counts entries and bytes for the limits.

    ``entries`` and ``bytes`` (file data written, all layers) are read by the caller afterwards; ``notes``
    lists what was skipped, one line each."""

    def __init__(self, root: str, limits: Limits, notes: List[str]):
        self.limits, self.notes = limits, notes
        self.root_fd = os.open(root, _DIR_FLAGS)
        self.entries = 0
        self.bytes = 0
        self._layer: Dict[str, bool] = {}  # paths this layer made -> is a regular file
        self._label = ""
        self._skipped = 0

    def close(self) -> None:
        os.close(self.root_fd)

    def _note(self, line: str) -> None:
        self._skipped += 1
        if self._skipped <= _NOTES_MAX:
            self.notes.append(line)

    # -- one layer --------------------------------------------------------------------------------------
    def apply(self, blob: BlobReader, label: str, diff_id: Optional[str] = None, blob_digest: Optional[str] = None,
              diff_algo: str = "sha256") -> None:
        """Unpack one layer blob (tar, gzip or zstd by magic), then check its digests: ``blob_digest`` (hex)
        of the bytes as stored, ``diff_id`` (hex) of the uncompressed tar. ImageError on any fault."""
        stream = CountedStream(blob, label, self.limits, diff_algo if diff_id else None)
        self._layer, self._label = {}, label
        try:
            tf = tarfile.open(fileobj=stream, mode="r|", tarinfo=_GuardedTarInfo)
        except tarfile.TarError as e:
            raise ImageError(f"{label} is not a tar archive ({e})") from None
        try:
            while True:
                member = tf.next()
                if member is None:
                    break
                tf.members.clear()  # stream mode keeps every header otherwise: memory grows with the layer
                try:
                    self._member(tf, member)
                except OSError as e:  # a name too long, a full disk: still one line naming the member
                    raise ImageError(f"{label}: member {show(member.name)} cannot be written ({e.strerror or e})"
                                     ) from None
            stream.check_end(tf.offset)
        except tarfile.TarError as e:
            raise ImageError(f"{label}: corrupt or truncated tar ({e})") from None
        stream.drain()
        blob.verify(blob_digest)
        stream.verify_diff(diff_id)
        self._layer = {}

    def _member(self, tf: tarfile.TarFile, m: tarfile.TarInfo) -> None:
        self.entries += 1
        if self.entries > self.limits.max_entries:
            raise ImageError(f"{self._label}: more than {self.limits.max_entries} entries (at {show(m.name)})")
        where = f"{self._label}: member"
        parts = member_parts(m.name, where)
        if not parts:
            return  # the root directory itself: its mode stays ours
        if parts[-1].startswith(WHITEOUT):
            return self._whiteout(parts, m.name)
        if m.ischr() or m.isblk() or m.isfifo():
            kind = "character device" if m.ischr() else "block device" if m.isblk() else "FIFO"
            raise ImageError(f"{where} {show(m.name)} is a {kind}; device nodes and FIFOs are refused")
        if not (m.isreg() or m.isdir() or m.issym() or m.islnk()):
            return self._note(f"{self._label}: skipped {show(m.name)}, tar type {m.type!r}")
        if m.isreg() and m.size > self.limits.max_file_bytes:
            raise ImageError(f"{where} {show(m.name)} is {m.size} bytes, over the {self.limits.max_file_bytes}"
                             "-byte limit for one file")
        parts = self._in_root(parts[:-1], m.name) + parts[-1:]
        key = "/".join(parts)
        link_src = self._hardlink_source(m, key) if m.islnk() else None
        if m.islnk() and link_src == key:
            return  # a link to itself: the file is already there
        pfd = self._walk(parts[:-1], create=True, member=m.name)
        try:
            self._replace(pfd, parts[-1], keep_dir=m.isdir())
            if m.isdir():
                self._mkdir(pfd, parts[-1], m.mode)
            elif m.issym():
                os.symlink(self._symlink_target(parts, m), parts[-1], dir_fd=pfd)
            elif m.islnk():
                self._link(link_src, pfd, parts[-1], m.name)
            else:
                self._write_file(tf, m, pfd, parts[-1])
            self._layer[key] = m.isreg() or m.islnk()
        finally:
            os.close(pfd)

    # -- directories and walking ------------------------------------------------------------------------
    def _in_root(self, parts: List[str], member: str) -> List[str]:
        """``parts`` (a directory path under the root) with every symlink on the way resolved inside the root,
        as containerd resolves an entry's parent: the components of real directories, then the missing ones
        (made later). Every link was stored by :meth:`_symlink_target` (relative, never above the root); an
        absolute or climbing target is clamped anyway. ImageError after 40 links (a loop)."""
        out: List[str] = []
        todo = list(parts)
        hops = 0
        fd: Optional[int] = os.dup(self.root_fd)  # the directory ``out`` names; None once one is missing
        try:
            while todo:
                name = todo.pop(0)
                if name in ("", "."):
                    continue
                if name == ".." or fd is None:
                    if name != "..":
                        out.append(name)
                    elif out:
                        out.pop()
                    if fd is not None:
                        os.close(fd)
                        fd = self._walk(out, create=False, member=member)
                    continue
                try:
                    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except FileNotFoundError:
                    st = None
                if st is not None and stat.S_ISLNK(st.st_mode):
                    hops += 1
                    if hops > 40:
                        raise ImageError(f"{self._label}: member {show(member)}: more than 40 symlinks on its "
                                         "path (a loop); refused")
                    target = os.readlink(name, dir_fd=fd)
                    out = [] if target.startswith("/") else out
                    todo = target.split("/") + todo
                    os.close(fd)
                    fd = self._walk(out, create=False, member=member)
                    continue
                out.append(name)
                if st is not None and stat.S_ISDIR(st.st_mode):
                    nfd = os.open(name, _DIR_FLAGS, dir_fd=fd)
                    os.close(fd)
                    fd = nfd
                else:  # missing (made later), or a file where a directory must be (the write's walk refuses it)
                    os.close(fd)
                    fd = None
        finally:
            if fd is not None:
                os.close(fd)
        return out

    def _walk(self, parts: List[str], create: bool, member: str) -> Optional[int]:
        """An fd for root/parts, every component a real directory (never a symlink); missing ones are made
        when ``create`` (else None is returned). The caller closes the fd."""
        fd = os.dup(self.root_fd)
        try:
            for i, name in enumerate(parts):
                try:
                    nfd = os.open(name, _DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        return None
                    os.mkdir(name, 0o755, dir_fd=fd)
                    self._layer.setdefault("/".join(parts[:i + 1]), False)
                    nfd = os.open(name, _DIR_FLAGS, dir_fd=fd)
                except OSError as e:
                    if e.errno not in (errno.ELOOP, errno.ENOTDIR):
                        raise
                    is_link = stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
                    what = "a symlink" if is_link else "not a directory"
                    raise ImageError(f"{self._label}: member {show(member)} would be written through "
                                     f"{show('/'.join(parts[:i + 1]))}, which is {what}; refused") from None
                os.close(fd)
                fd = nfd
            found, fd = fd, -1
            return found
        finally:
            if fd >= 0:
                os.close(fd)

    def _mkdir(self, pfd: int, name: str, mode: int) -> None:
        try:
            os.mkdir(name, 0o700, dir_fd=pfd)
        except FileExistsError:
            pass  # a directory over a directory: contents stay, the mode is the new one
        fd = os.open(name, _DIR_FLAGS, dir_fd=pfd)
        try:
            os.fchmod(fd, (mode & 0o755) | 0o700)
        finally:
            os.close(fd)

    def _replace(self, pfd: int, name: str, keep_dir: bool) -> None:
        """Clear the way for a new entry: a directory stays for a directory, anything else is removed."""
        try:
            st = os.stat(name, dir_fd=pfd, follow_symlinks=False)
        except FileNotFoundError:
            return
        if stat.S_ISDIR(st.st_mode):
            if not keep_dir:
                shutil.rmtree(name, dir_fd=pfd)
        else:
            os.unlink(name, dir_fd=pfd)

    # -- files and links ---------------------------------------------------------------------------------
    def _write_file(self, tf: tarfile.TarFile, m: tarfile.TarInfo, pfd: int, name: str) -> None:
        src = tf.extractfile(m)
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=pfd)
        written = 0
        try:
            while True:
                chunk = src.read(1 << 20)
                if not chunk:
                    break
                written += len(chunk)
                self.bytes += len(chunk)
                if written > self.limits.max_file_bytes:
                    raise ImageError(f"{self._label}: member {show(m.name)} is over the "
                                     f"{self.limits.max_file_bytes}-byte limit for one file")
                if self.bytes > self.limits.max_total_bytes:
                    raise ImageError(f"{self._label}: the image holds more than {self.limits.max_total_bytes} "
                                     f"bytes of file data (at {show(m.name)})")
                os.write(fd, chunk)
            os.fchmod(fd, (m.mode & 0o755) | 0o600)
        finally:
            os.close(fd)

    def _hardlink_source(self, m: tarfile.TarInfo, key: str) -> str:
        named = member_parts(m.linkname, f"{self._label}: hard link {show(m.name)}: target")
        target = "/".join(self._in_root(named[:-1], m.name) + named[-1:])
        if target != key and not self._layer.get(target):
            raise ImageError(f"{self._label}: hard link {show(m.name)} -> {show(m.linkname)} does not name a "
                             "regular file extracted earlier in this layer; refused")
        return target

    def _link(self, target: str, pfd: int, name: str, member: str) -> None:
        parts = target.split("/")
        sfd = self._walk(parts[:-1], create=False, member=member)
        try:
            st = os.stat(parts[-1], dir_fd=sfd, follow_symlinks=False) if sfd is not None else None
            if st is None or not stat.S_ISREG(st.st_mode):
                raise ImageError(f"{self._label}: hard link {show(member)} -> {show(target)}: the target is no "
                                 "longer a regular file; refused")
            os.link(parts[-1], name, src_dir_fd=sfd, dst_dir_fd=pfd, follow_symlinks=False)
        finally:
            if sfd is not None:
                os.close(sfd)

    def _symlink_target(self, parts: List[str], m: tarfile.TarInfo) -> str:
        """The target to store: resolved inside the image root (absolute = from the root), as a relative path
        with leading ``..`` only. ImageError when a relative target climbs above the root or holds odd bytes."""
        target = m.linkname
        if not target or not target.isprintable():
            raise ImageError(f"{self._label}: symlink {show(m.name)} has an empty or odd target {show(target)}")
        here = parts[:-1]
        absolute = target.startswith("/")
        stack = [] if absolute else list(here)
        for comp in target.split("/"):
            if comp in ("", "."):
                continue
            if comp == "..":
                if not stack and absolute:
                    continue  # "/.." is "/", as in a chroot: an absolute target cannot leave the root
                if not stack:
                    raise ImageError(f"{self._label}: symlink {show(m.name)} -> {show(target)} points above the "
                                     "image root; refused")
                stack.pop()
            else:
                stack.append(comp)
        return posixpath.relpath("/" + "/".join(stack), "/" + "/".join(here))

    # -- whiteouts ---------------------------------------------------------------------------------------
    def _whiteout(self, parts: List[str], member: str) -> None:
        parts = self._in_root(parts[:-1], member) + parts[-1:]
        base = parts[-1]
        if base == OPAQUE:
            return self._opaque(parts[:-1], member)
        name = base[len(WHITEOUT):]
        if name.startswith(WHITEOUT) or name in ("", ".", ".."):
            return self._note(f"{self._label}: skipped whiteout metadata {show(member)}")
        key = "/".join(parts[:-1] + [name])
        if key in self._layer:
            return  # a whiteout hides lower layers only
        pfd = self._walk(parts[:-1], create=False, member=member)
        if pfd is None:
            return
        try:
            st = os.stat(name, dir_fd=pfd, follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                shutil.rmtree(name, dir_fd=pfd)
            else:
                os.unlink(name, dir_fd=pfd)
        except FileNotFoundError:
            pass
        finally:
            os.close(pfd)

    def _opaque(self, parts: List[str], member: str) -> None:
        fd = self._walk(parts, create=False, member=member)
        if fd is not None:
            try:
                self._prune(fd, "/".join(parts))
            finally:
                os.close(fd)

    def _prune(self, fd: int, prefix: str) -> None:
        """Remove from the directory ``fd`` whatever this layer did not make, recursing into what it made."""
        for name in os.listdir(fd):
            key = f"{prefix}/{name}" if prefix else name
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if key not in self._layer:
                if stat.S_ISDIR(st.st_mode):
                    shutil.rmtree(name, dir_fd=fd)
                else:
                    os.unlink(name, dir_fd=fd)
            elif stat.S_ISDIR(st.st_mode):
                sub = os.open(name, _DIR_FLAGS, dir_fd=fd)
                try:
                    self._prune(sub, key)
                finally:
                    os.close(sub)
