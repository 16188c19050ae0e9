"""Byte streams of the image unpacker: a blob read in place from the outer archive (hashed as it is read),
its decompression chosen by magic bytes, and the counted stream a layer's tar is read from (bomb ratio,
stream cap, the digest of the uncompressed tar, and enough of its tail to tell a clean end from a cut)."""
from __future__ import annotations

import gzip
import hashlib
import os
import zlib
from typing import Optional

from gpudoctor.sysroot.image_limits import ImageError, Limits

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_TAIL_KEEP = 256 * 1024  # tarfile reads 10 KiB ahead at most: the end-of-archive block is always in here
BLOCK = 512


class BlobReader:
    """``size`` bytes of the file ``fd`` from ``offset`` (a member of the outer tar, read with ``pread`` so
    several can be open at once), hashed with ``algo`` (sha256/sha512) as they are read."""

    def __init__(self, fd: int, offset: int, size: int, label: str, algo: str = "sha256"):
        self.fd, self.start, self.size, self.label = fd, offset, size, label
        self.pos = 0
        self.hash = hashlib.new(algo)

    def peek(self, n: int) -> bytes:
        return os.pread(self.fd, min(n, self.size - self.pos), self.start + self.pos)

    def read(self, n: int = -1) -> bytes:
        left = self.size - self.pos
        n = left if n is None or n < 0 else min(n, left)
        if n <= 0:
            return b""
        data = os.pread(self.fd, n, self.start + self.pos)
        if len(data) < n:
            raise ImageError(f"{self.label}: the archive ends inside this member (truncated)")
        self.pos += len(data)
        self.hash.update(data)
        return data

    def drain(self) -> None:
        while self.read(1 << 20):
            pass

    def verify(self, hexdigest: Optional[str]) -> None:
        """After :meth:`drain`: ImageError when the bytes read do not hash to ``hexdigest`` (None: no claim)."""
        if hexdigest is not None and self.hash.hexdigest() != hexdigest.lower():
            raise ImageError(f"{self.label}: digest mismatch (content hashes to {self.hash.name}:"
                             f"{self.hash.hexdigest()[:16]}..., its name or descriptor says {hexdigest[:16]}...)")


def _zstd_reader(raw, label: str):
    try:
        import zstandard
    except ImportError:
        raise ImageError(f"{label} is zstd-compressed; zstd layers need `pip install zstandard`") from None
    return zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True, read_size=1 << 20)


def decoder(raw: BlobReader, label: str):
    """(codec name, a reader with ``read(n)`` of the decompressed bytes), chosen by the blob's magic bytes."""
    head = raw.peek(4)
    if head.startswith(GZIP_MAGIC):
        return "gzip", gzip.GzipFile(fileobj=raw, mode="rb")
    if head.startswith(ZSTD_MAGIC):
        return "zstd", _zstd_reader(raw, label)
    return "tar", raw


class CountedStream:
    """The decompressed bytes of one tar stream, read by tarfile through :meth:`read`.

    Counts what comes out against the stream cap and the bomb ratio (compressed bytes are ``raw.pos``),
    hashes it when the uncompressed digest is to be checked, and keeps the last bytes read so that
    :meth:`check_end` can tell tarfile's quiet stop at a cut or garbage header from a real end-of-archive
    block. Decoder failures (truncated or corrupt gzip/zstd) become ImageError."""

    def __init__(self, raw: BlobReader, label: str, limits: Limits, diff_algo: Optional[str] = None):
        self.raw, self.label, self.limits = raw, label, limits
        self.codec, self._src = decoder(raw, label)
        self.out = 0
        self.diff_hash = hashlib.new(diff_algo) if diff_algo else None
        self._tail = bytearray()
        self._tail_start = 0

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:
            n = 1 << 20
        try:
            data = self._src.read(n)
        except ImageError:
            raise
        except (EOFError, OSError, zlib.error, ValueError) as e:  # gzip: EOFError/BadGzipFile; zstd: ZstdError
            raise ImageError(f"{self.label}: truncated or corrupt {self.codec} data ({e})") from None
        except Exception as e:  # zstandard.ZstdError is not an OSError
            if type(e).__name__ == "ZstdError":
                raise ImageError(f"{self.label}: truncated or corrupt zstd data ({e})") from None
            raise
        if not data:
            return b""
        self.out += len(data)
        if self.out > self.limits.stream_cap():
            raise ImageError(f"{self.label}: the layer expands past {self.limits.stream_cap()} bytes (a bomb)")
        if (self.codec != "tar" and self.out > self.limits.ratio_after_bytes
                and self.out > self.limits.max_ratio * max(self.raw.pos, 1)):
            raise ImageError(f"{self.label}: {self.raw.pos} compressed bytes expand to more than {self.out} "
                             f"(ratio above {self.limits.max_ratio:g}: a decompression bomb)")
        if self.diff_hash is not None:
            self.diff_hash.update(data)
        self._tail += data
        if len(self._tail) > 2 * _TAIL_KEEP:
            cut = len(self._tail) - _TAIL_KEEP
            del self._tail[:cut]
            self._tail_start += cut
        return data

    def check_end(self, offset: int) -> None:
        """ImageError unless the block at ``offset`` (where tarfile stopped) is an all-zero end block."""
        rel = offset - self._tail_start
        if rel < 0:
            return  # cannot happen with tarfile's read-ahead; nothing to judge
        block = bytes(self._tail[rel:rel + BLOCK])
        if len(block) < BLOCK:
            raise ImageError(f"{self.label}: the tar stream is truncated (it ends at byte {self.out}, "
                             "without an end-of-archive block)")
        if any(block):
            raise ImageError(f"{self.label}: corrupt tar header at byte {offset}")

    def drain(self) -> None:
        """Read to the end (trailing padding counts against the caps), then the raw blob's remainder."""
        while self.read(1 << 20):
            pass
        self.raw.drain()

    def verify_diff(self, hexdigest: Optional[str]) -> None:
        if hexdigest is not None and self.diff_hash is not None and self.diff_hash.hexdigest() != hexdigest:
            raise ImageError(f"{self.label}: the uncompressed layer does not match the config's diff_id "
                             f"({self.diff_hash.name}:{self.diff_hash.hexdigest()[:16]}... against "
                             f"{hexdigest[:16]}...)")
