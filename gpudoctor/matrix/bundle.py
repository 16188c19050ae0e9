"""Matrix updates: a verified bundle of the matrix files, downloaded over HTTPS, installed atomically.

A **bundle** is a directory (a URL ending in ``/``) holding ``manifest.json`` and the matrix files::

    {"format": 1, "schema_version": 1, "data_version": "YYYY-MM-DD",
     "files": {"cuda.json": "<sha256 hex>", ...}}      # exactly the files of gpudoctor.matrix.FILES

:func:`build_bundle` writes one from ``compat_matrix/`` (what a release publishes;
``scripts/build_matrix_bundle.py``). :func:`update` downloads one with ``requests`` (timeouts;
proxies and CA bundles from the environment, as requests reads them), and refuses it unless every
file's SHA-256 matches the manifest, the files pass the same schema validation as the bundled
matrix, and its ``data_version`` is newer than the matrix in use. It then goes to
``<user data dir>/matrix/<data_version>/`` (``platformdirs``; ``XDG_DATA_HOME`` honoured), written
to a temporary directory and renamed into place, and ``active.json`` (replaced atomically) points
at it. :func:`installed` reads it back, verifying the hashes again before use.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from typing import Dict, Mapping, Optional, Tuple

__all__ = ["BundleError", "build_bundle", "update", "installed", "data_root", "DEFAULT_URL", "FORMAT"]

FORMAT = 1
#: Where a release publishes its matrix bundle (override with --from or $GPUDOCTOR_MATRIX_URL).
DEFAULT_URL = "https://gpudoctor.github.io/matrix/latest/"
CONNECT_TIMEOUT, READ_TIMEOUT = 5.0, 20.0
MAX_FILE = 16 << 20  # a matrix file is ~100 KB: anything this big is not one
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


class BundleError(Exception):
    """A bundle that cannot be used: unreachable, incomplete, tampered, invalid or not newer."""


def data_root(env: Optional[Mapping[str, str]] = None) -> str:
    env = os.environ if env is None else env
    if env.get("XDG_DATA_HOME") and os.path.isabs(env["XDG_DATA_HOME"]):
        return os.path.join(env["XDG_DATA_HOME"], "gpudoctor", "matrix")
    import platformdirs

    return os.path.join(platformdirs.user_data_dir("gpudoctor", appauthor=False), "matrix")


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def build_bundle(src_dir: str, out_dir: str) -> dict:
    """Copy the matrix files of ``src_dir`` into ``out_dir`` with their manifest; returns the manifest.
    Raises MatrixError if ``src_dir`` does not hold a valid matrix."""
    from gpudoctor.matrix import FILES, SCHEMA_VERSION, load_matrix

    m = load_matrix(src_dir)  # never publish what the tool would reject
    os.makedirs(out_dir, exist_ok=True)
    files = {}
    for name in FILES:
        with open(os.path.join(src_dir, name), "rb") as fh:
            data = fh.read()
        with open(os.path.join(out_dir, name), "wb") as fh:
            fh.write(data)
        files[name] = _sha256(data)
    manifest = {"format": FORMAT, "schema_version": SCHEMA_VERSION, "data_version": m.data_version, "files": files}
    with open(os.path.join(out_dir, "manifest.json"), "w", encoding="utf-8") as fh:
        json.dump(manifest, fh, indent=1)
        fh.write("\n")
    return manifest


def _check_manifest(manifest: object) -> dict:
    from gpudoctor.matrix import FILES, SCHEMA_VERSION

    if not isinstance(manifest, dict):
        raise BundleError("manifest.json is not a JSON object")
    if manifest.get("format", FORMAT) != FORMAT:
        raise BundleError(f"manifest format {manifest.get('format')!r} is not supported (this gpudoctor reads {FORMAT})")
    if manifest.get("schema_version", SCHEMA_VERSION) != SCHEMA_VERSION:
        raise BundleError(f"the bundle's matrix schema {manifest.get('schema_version')!r} is not this gpudoctor's "
                          f"({SCHEMA_VERSION}): update gpudoctor itself")
    dv = manifest.get("data_version")
    if not isinstance(dv, str) or not _DATE.match(dv):
        raise BundleError(f"manifest data_version must be 'YYYY-MM-DD', got {dv!r}")
    files = manifest.get("files")
    if not isinstance(files, dict) or set(files) != set(FILES):
        got = sorted(files) if isinstance(files, dict) else files
        raise BundleError(f"manifest files must be exactly {list(FILES)}, got {got!r}")
    for name, digest in files.items():
        if not (isinstance(digest, str) and re.fullmatch(r"[0-9a-f]{64}", digest)):
            raise BundleError(f"manifest: the SHA-256 of {name} is not 64 hex digits: {digest!r}")
    return manifest


def _verify(manifest: dict, blobs: Mapping[str, bytes]):
    """Hashes, then the schema; returns the validated Matrix. Raises BundleError."""
    from gpudoctor.matrix import Matrix, MatrixError, _read_docs

    for name, digest in manifest["files"].items():
        got = _sha256(blobs[name])
        if got != digest:
            raise BundleError(f"{name}: SHA-256 {got[:16]}... does not match the manifest's {digest[:16]}... "
                              "(tampered or truncated)")
    try:
        m = Matrix(_read_docs(lambda name: blobs[name].decode("utf-8")))
    except (MatrixError, UnicodeDecodeError) as exc:
        raise BundleError(f"the bundle's matrix is invalid: {exc}") from None
    if m.data_version != manifest["data_version"]:
        raise BundleError(f"manifest says data_version {manifest['data_version']}, the files say {m.data_version}")
    return m


def _get(session, url: str) -> bytes:
    import requests

    try:
        r = session.get(url, timeout=(CONNECT_TIMEOUT, READ_TIMEOUT), stream=True)
        if r.status_code != 200:
            raise BundleError(f"{url}: HTTP {r.status_code} {r.reason}")
        data = bytearray()
        for chunk in r.iter_content(1 << 16):
            data += chunk
            if len(data) > MAX_FILE:
                raise BundleError(f"{url}: larger than {MAX_FILE >> 20} MiB: not a matrix file")
        declared = r.headers.get("Content-Length")
        if declared and declared.isdigit() and int(declared) != len(data):
            raise BundleError(f"{url}: truncated download ({len(data)} of {declared} bytes)")
        return bytes(data)
    except requests.exceptions.ConnectionError as exc:
        raise BundleError(f"cannot reach {url} ({type(exc).__name__}): offline, or behind a proxy? requests uses "
                          "HTTPS_PROXY/NO_PROXY from the environment; or give another --from URL") from None
    except requests.exceptions.Timeout:
        raise BundleError(f"{url}: no answer within {READ_TIMEOUT:g} s") from None
    except requests.exceptions.RequestException as exc:
        raise BundleError(f"{url}: {type(exc).__name__}: {exc}") from None


def download(url: str) -> Tuple[dict, Dict[str, bytes]]:
    """The manifest and the files of the bundle at ``url`` (a directory URL), not yet verified."""
    import requests

    base = url if url.endswith("/") else url + "/"
    with requests.Session() as session:  # trust_env: proxies, NO_PROXY, REQUESTS_CA_BUNDLE from the environment
        raw = _get(session, base + "manifest.json")
        try:
            manifest = _check_manifest(json.loads(raw.decode("utf-8")))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise BundleError(f"{base}manifest.json is not JSON ({exc})") from None
        blobs = {name: _get(session, base + name) for name in manifest["files"]}
    return manifest, blobs


def update(url: str, current_version: str, env: Optional[Mapping[str, str]] = None) -> dict:
    """Download, verify and install the bundle at ``url``; returns ``{"data_version", "dir", "source"}``.
    Raises BundleError (nothing installed) when it cannot be used or is not newer than ``current_version``."""
    manifest, blobs = download(url)
    m = _verify(manifest, blobs)
    if m.data_version < current_version:
        raise BundleError(f"the bundle's matrix ({m.data_version}) is older than the one in use ({current_version}): "
                          "refused")
    if m.data_version == current_version:
        raise BundleError(f"the matrix in use is already {current_version}: nothing to update")
    root = data_root(env)
    os.makedirs(root, exist_ok=True)
    final = os.path.join(root, m.data_version)
    tmp = tempfile.mkdtemp(prefix=f".{m.data_version}.", dir=root)
    try:
        for name, data in blobs.items():
            with open(os.path.join(tmp, name), "wb") as fh:
                fh.write(data)
        with open(os.path.join(tmp, "manifest.json"), "w", encoding="utf-8") as fh:
            json.dump(manifest, fh, indent=1)
        shutil.rmtree(final, ignore_errors=True)
        os.rename(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    info = {"data_version": m.data_version, "dir": final, "source": url,
            "installed": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    from gpudoctor.process.atomic import write_atomic

    write_atomic(os.path.join(root, "active.json"), json.dumps(info, indent=1) + "\n")
    return info


def installed(env: Optional[Mapping[str, str]] = None):
    """``(Matrix, info)`` of the downloaded matrix, verified again (hashes and schema), or ``(None, why)``
    when there is none or it no longer verifies (then the bundled matrix is used)."""
    root = data_root(env)
    try:
        with open(os.path.join(root, "active.json"), encoding="utf-8") as fh:
            info = json.load(fh)
        with open(os.path.join(info["dir"], "manifest.json"), encoding="utf-8") as fh:
            manifest = _check_manifest(json.load(fh))
        blobs = {}
        for name in manifest["files"]:
            with open(os.path.join(info["dir"], name), "rb") as fh:
                blobs[name] = fh.read()
        return _verify(manifest, blobs), info
    except FileNotFoundError:
        return None, "no downloaded matrix"
    except (OSError, ValueError, KeyError, TypeError, BundleError) as exc:
        return None, f"the downloaded matrix in {root} is not usable ({exc}); using the bundled one"
