"""The error and the caps shared by the image unpacker's modules (re-exported by :mod:`gpudoctor.sysroot.image`)."""
from __future__ import annotations

from dataclasses import dataclass

GiB = 1 << 30
MiB = 1 << 20


class ImageError(ValueError):
    """A malformed or hostile image archive. The message is one line naming what was wrong and where
    (the archive member or layer), fit for ``gpudoctor: error: <message>`` and exit status 2."""


@dataclass
class Limits:
    """Caps enforced while an image is unpacked; every count is of bytes actually read or written.

    - ``max_total_bytes``: file data written under the root, all layers together (bytes; 64 GiB).
    - ``max_entries``: tar members read, all layers together (2,000,000).
    - ``max_file_bytes``: one regular file (bytes; 16 GiB).
    - ``max_ratio``: decompressed bytes per compressed byte above which a layer is a bomb (200), applied once
      the layer has expanded past ``ratio_after_bytes`` (256 MiB; small in tests).
    - ``max_manifest_bytes``: manifest.json, index.json, oci-layout, an image manifest or config (64 MiB).
    """

    max_total_bytes: int = 64 * GiB
    max_entries: int = 2_000_000
    max_file_bytes: int = 16 * GiB
    max_ratio: float = 200.0
    max_manifest_bytes: int = 64 * MiB
    ratio_after_bytes: int = 256 * MiB

    def stream_cap(self) -> int:
        """The most decompressed bytes one tar stream may hold: all file data plus generous room for headers
        (4 KiB an entry), so a stream of padding or endless headers ends even where the ratio cannot tell."""
        return self.max_total_bytes + 4096 * self.max_entries


def show(name: str) -> str:
    """A member name quoted on one line, odd bytes escaped (names may hold what we are refusing)."""
    return ascii(name) if not name.isprintable() else repr(name)
