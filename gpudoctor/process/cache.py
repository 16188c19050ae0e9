"""A verified on-disk cache for pure functions of files (a smoke binary, a fatbinary scan).

Entries live in the user's cache directory (``platformdirs.user_cache_dir("gpudoctor")``, which
honours ``XDG_CACHE_HOME``), one directory per entry: ``<namespace>/<key>/`` holding the payload
files and ``meta.json`` = ``{"format", "key", "inputs", "files": {name: sha256}, "created"}``.
The key is the SHA-256 of the canonical JSON of the inputs the result depends on (file paths
with size and mtime, tool versions, flags, source hashes), so a changed input is a new key.

Trust nothing read back: an entry whose meta.json is unreadable, names another key or format, or
whose payload's SHA-256 differs is deleted and reported as a miss (the caller rebuilds). Writes are
atomic: the entry is assembled in a temporary sibling directory and renamed into place, so a killed
process leaves no half entry. A cache that cannot be written (read-only home, full disk) only costs
the rebuild next time: :meth:`Cache.put_files` returns None and the caller says so.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from typing import Dict, Mapping, Optional

__all__ = ["Cache", "cache_root", "file_identity", "FORMAT"]

FORMAT = 1


def cache_root(env: Optional[Mapping[str, str]] = None) -> str:
    """The user cache directory for gpudoctor (``$XDG_CACHE_HOME/gpudoctor`` when set in ``env``)."""
    env = os.environ if env is None else env
    if env.get("XDG_CACHE_HOME") and os.path.isabs(env["XDG_CACHE_HOME"]):
        return os.path.join(env["XDG_CACHE_HOME"], "gpudoctor")
    try:
        import platformdirs
    except ImportError:  # a declared dependency, but the cache is an optimisation: never fail a check on it
        return os.path.join(os.path.expanduser("~"), ".cache", "gpudoctor")
    return platformdirs.user_cache_dir("gpudoctor", appauthor=False)


def file_identity(path: str) -> Dict[str, object]:
    """``{path (real), size, mtime_ns}`` of a file: what a cache key uses instead of its contents."""
    real = os.path.realpath(path)
    st = os.stat(real)
    return {"path": real, "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class Cache:
    """One namespace (e.g. ``smoke-nvcc``) of the cache. ``enabled=False`` (``--no-cache``) makes every
    lookup a miss and every store a no-op."""

    def __init__(self, namespace: str, enabled: bool = True, root: Optional[str] = None,
                 env: Optional[Mapping[str, str]] = None) -> None:
        self.enabled = enabled
        self.dir = os.path.join(root or cache_root(env), namespace)

    @staticmethod
    def key(inputs: Mapping[str, object]) -> str:
        return hashlib.sha256(json.dumps(inputs, sort_keys=True, default=str).encode()).hexdigest()[:32]

    def _entry(self, key: str) -> str:
        return os.path.join(self.dir, key)

    def get_files(self, inputs: Mapping[str, object]) -> Optional[Dict[str, object]]:
        """The entry for ``inputs``, verified: ``{"dir", "key", "files": {name: path}, "created"}``, or None."""
        return self.get_by_key(self.key(inputs))

    def get_by_key(self, key: str) -> Optional[Dict[str, object]]:
        """Like :meth:`get_files`, for a key remembered from an earlier run (see :meth:`remember`)."""
        if not self.enabled or not key.isalnum():
            return None
        entry = self._entry(key)
        meta_path = os.path.join(entry, "meta.json")
        if not os.path.isfile(meta_path):
            return None
        try:
            with open(meta_path, encoding="utf-8") as fh:
                meta = json.load(fh)
            ok = (isinstance(meta, dict) and meta.get("format") == FORMAT and meta.get("key") == key
                  and isinstance(meta.get("files"), dict) and meta["files"]
                  and all(_sha256(os.path.join(entry, name)) == digest for name, digest in meta["files"].items()))
        except (OSError, ValueError, TypeError):
            ok = False
        if not ok:  # corrupt, foreign or tampered: never trusted, removed so it is rebuilt
            shutil.rmtree(entry, ignore_errors=True)
            return None
        return {"dir": entry, "key": key, "files": {n: os.path.join(entry, n) for n in meta["files"]},
                "created": meta.get("created")}

    def remember(self, hint: Mapping[str, object], key: str) -> None:
        """Note that ``hint`` (inputs known early, before the full ones) last led to entry ``key``:
        a later run may start that entry's work early and check the full key when it has it."""
        if not self.enabled:
            return
        try:
            from gpudoctor.process.atomic import write_atomic

            os.makedirs(os.path.join(self.dir, "hints"), exist_ok=True)
            write_atomic(os.path.join(self.dir, "hints", self.key(hint) + ".json"), json.dumps({"key": key}))
        except OSError:
            pass

    def recall(self, hint: Mapping[str, object]) -> Optional[str]:
        """The entry key :meth:`remember` noted for ``hint``, or None (never trusted beyond a lookup)."""
        if not self.enabled:
            return None
        try:
            with open(os.path.join(self.dir, "hints", self.key(hint) + ".json"), encoding="utf-8") as fh:
                key = json.load(fh).get("key")
        except (OSError, ValueError, AttributeError):
            return None
        return key if isinstance(key, str) and key.isalnum() else None

    def put_files(self, inputs: Mapping[str, object], files: Mapping[str, str]) -> Optional[str]:
        """Store copies of ``files`` (name -> source path) under ``inputs``; the entry's dir, or None."""
        if not self.enabled:
            return None
        key = self.key(inputs)
        try:
            os.makedirs(self.dir, exist_ok=True)
            tmp = tempfile.mkdtemp(prefix=f".{key}.", suffix=".tmp", dir=self.dir)
            try:
                digests = {}
                for name, src in files.items():
                    dst = os.path.join(tmp, name)
                    shutil.copy2(src, dst)
                    digests[name] = _sha256(dst)
                meta = {"format": FORMAT, "key": key, "inputs": inputs, "files": digests,
                        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
                with open(os.path.join(tmp, "meta.json"), "w", encoding="utf-8") as fh:
                    json.dump(meta, fh, indent=1, default=str)
                entry = self._entry(key)
                shutil.rmtree(entry, ignore_errors=True)
                os.rename(tmp, entry)  # atomic on one filesystem; a concurrent writer's entry is equivalent
                return entry
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
        except OSError:
            return None

    def get_json(self, inputs: Mapping[str, object]) -> Optional[object]:
        hit = self.get_files(inputs)
        if hit is None:
            return None
        try:
            with open(hit["files"]["data.json"], encoding="utf-8") as fh:
                return json.load(fh)
        except (OSError, ValueError, KeyError):
            return None

    def put_json(self, inputs: Mapping[str, object], data: object) -> Optional[str]:
        if not self.enabled:
            return None
        try:
            os.makedirs(self.dir, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".data.", suffix=".json", dir=self.dir)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(data, fh)
        except OSError:
            return None
        try:
            return self.put_files(inputs, {"data.json": tmp})
        finally:
            try:
                os.unlink(tmp)
            except OSError:
                pass
