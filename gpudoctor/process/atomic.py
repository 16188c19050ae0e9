"""Write a report file so that readers only ever see a complete one.

``gpudoctor check -o FILE`` on many nodes writes into a shared directory that ``gpudoctor
fleet`` reads: a node killed mid-check must leave either no file or the previous complete
one, never half a report. The text goes to a hidden temporary file in the same directory
(same filesystem, so the rename is atomic), is flushed to disk, then renamed over FILE.
Temporary names start with ``.`` and end in ``.tmp``, which ``fleet DIR`` (``*.json``) skips.
"""
from __future__ import annotations

import os
import tempfile


def write_atomic(path: str, text: str) -> None:
    """Replace ``path`` with ``text`` (UTF-8) atomically. Raises OSError (nothing replaced) on failure."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(path) + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        if os.path.exists(path):  # keep the old file's permissions, not mkstemp's 0600
            os.chmod(tmp, os.stat(path).st_mode & 0o7777)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:  # make the rename itself durable
        dfd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass
