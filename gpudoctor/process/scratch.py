"""Scratch directories of one run (nvcc's dry-run source, a smoke build, a rerun's cwd): removed when their
step ends, and all at once when the process must leave while a step is stuck (``gpudoctor check`` then exits
with ``os._exit``, which runs no ``finally``: without this, each stuck step left a directory in TMPDIR)."""
from __future__ import annotations

import shutil
import tempfile
import threading
from contextlib import contextmanager
from typing import Iterator, Set

__all__ = ["make", "remove", "remove_all", "scratch_dir"]

_live: Set[str] = set()
_lock = threading.Lock()


def make(prefix: str) -> str:
    """A new private directory in TMPDIR (``tempfile.mkdtemp``), remembered until :func:`remove`."""
    path = tempfile.mkdtemp(prefix=prefix)
    with _lock:
        _live.add(path)
    return path


def remove(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)
    with _lock:
        _live.discard(path)


def remove_all() -> None:
    """Remove every scratch directory still in use (the process is about to leave)."""
    with _lock:
        left = list(_live)
    for path in left:
        remove(path)


@contextmanager
def scratch_dir(prefix: str) -> Iterator[str]:
    """``with scratch_dir("gpudoctor-") as tmp``: :func:`make`, then :func:`remove` when the block ends."""
    path = make(prefix)
    try:
        yield path
    finally:
        remove(path)
