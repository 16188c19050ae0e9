"""What a version served only as an sdist fetches when pip builds it at install (issue 26).

NVIDIA's TensorRT packages on PyPI (``tensorrt-cu13``, ``tensorrt-cu13-libs``, ...) are sdists: the meta package
pins its parts in ``PKG-INFO`` (``Requires-Dist: tensorrt_cu13_libs==11.4.0.106``), and a part's
``pyproject.toml`` names ``build-backend = "wheel_stub.buildapi"`` with ``[tool.wheel_stub] index_url =
"https://pypi.nvidia.com/"``: its build downloads the real wheel from that index. PyPI serving the sdist says
nothing of whether that index is reachable or has the wheel. This module reads the two files from the sdist
(a few KB; never built, never run) and caches what they say under the sdist's URL.
"""
from __future__ import annotations

import io
import tarfile
import zipfile
from email.parser import Parser
from typing import Dict, List, Optional

__all__ = ["build_source", "MAX_SDIST_BYTES"]

#: Largest sdist read (bytes): the stubs are ~17 KB; a real source package is not what this looks for.
MAX_SDIST_BYTES = 4 << 20
_MEMBER_BYTES = 1 << 20
_CACHE_FORMAT = 1


class _Unreadable(ValueError):
    """A file of the sdist that is there but cannot be read as what it should be."""


def _one_line(text: str) -> str:
    return " ".join(text.split())[:200]


def _read_members(data: bytes, url: str) -> Dict[str, bytes]:
    """{"pyproject.toml": bytes, "PKG-INFO": bytes} of the sdist's top directory (``name-version/``); ValueError
    for an archive that is neither .tar.gz nor .zip or has no such files."""
    wanted = ("pyproject.toml", "PKG-INFO")
    out: Dict[str, bytes] = {}
    if url.split("?")[0].endswith(".zip"):
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            for info in z.infolist()[:10000]:
                parts = info.filename.split("/")
                if len(parts) == 2 and parts[1] in wanted and info.file_size <= _MEMBER_BYTES:
                    out[parts[1]] = z.read(info)
    else:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as t:
            for n, m in enumerate(t):
                if n > 10000:
                    break
                parts = m.name.split("/")
                if len(parts) == 2 and parts[1] in wanted and m.isfile() and m.size <= _MEMBER_BYTES:
                    fh = t.extractfile(m)
                    out[parts[1]] = fh.read() if fh else b""
    if not out:
        raise ValueError("no pyproject.toml or PKG-INFO at its top")
    return out


def _parse(members: Dict[str, bytes]) -> dict:
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        import tomli as tomllib
    backend, stub = None, None
    if "pyproject.toml" in members:
        try:
            doc = tomllib.loads(members["pyproject.toml"].decode("utf-8", "replace"))
        except tomllib.TOMLDecodeError as exc:
            raise _Unreadable(f"its sdist's pyproject.toml cannot be read ({exc})") from None
        backend = (doc.get("build-system") or {}).get("build-backend")
        stub = ((doc.get("tool") or {}).get("wheel_stub") or {}).get("index_url")
    requires: List[str] = []
    if "PKG-INFO" in members:
        meta = Parser().parsestr(members["PKG-INFO"].decode("utf-8", "replace"))
        requires = [r.strip() for r in meta.get_all("Requires-Dist") or [] if r.strip()]
    return {"backend": backend if isinstance(backend, str) else None,
            "stub_index": stub if isinstance(stub, str) and stub.startswith(("https://", "http://")) else None,
            "requires": requires}


def build_source(url: str, *, offline: bool = False, timeout: float = 5.0, cache_dir: Optional[str] = None) -> dict:
    """What the sdist at ``url`` fetches when built: ``{"backend": "wheel_stub.buildapi" | other | None,
    "stub_index": "https://pypi.nvidia.com/" | None, "requires": ["tensorrt_cu13_libs==11.4.0.106", ...]}``, or
    ``{"error": one line}`` when it cannot be read (offline without a cached answer, unreachable, over
    :data:`MAX_SDIST_BYTES`, not an sdist). Cached under the URL (an index's file URL names one immutable file).
    Never raises."""
    from gpudoctor.install.pip_index import redact_url
    from gpudoctor.process.cache import Cache

    cache = Cache("pip-sdist", root=cache_dir)
    shown = redact_url(url)  # the key hashes the URL; what is stored never holds a credential
    inputs = {"format": _CACHE_FORMAT, "url": url}
    try:
        got = cache.get_json(inputs)
    except OSError:
        got = None
    if (isinstance(got, dict) and got.get("url") == shown and isinstance(got.get("requires"), list)
            and all(isinstance(r, str) for r in got["requires"])):
        return {k: got.get(k) for k in ("backend", "stub_index", "requires")}
    if offline:
        return {"error": "not read (--offline)"}
    try:
        import requests
    except ImportError as exc:
        return {"error": f"not read: {exc}"}
    try:
        with requests.get(url, timeout=timeout, stream=True) as resp:
            if resp.status_code != 200:
                return {"error": f"HTTP {resp.status_code} for its sdist"}
            data = b""
            for chunk in resp.iter_content(64 << 10):
                data += chunk
                if len(data) > MAX_SDIST_BYTES:
                    return {"error": f"its sdist is over {MAX_SDIST_BYTES} bytes: not read"}
    except requests.RequestException as exc:
        return {"error": f"its sdist is unreachable ({type(exc).__name__})"}
    try:
        found = _parse(_read_members(data, url))
    except _Unreadable as exc:
        return {"error": _one_line(str(exc))}
    except (ValueError, tarfile.TarError, zipfile.BadZipFile, OSError, EOFError, UnicodeError) as exc:
        return {"error": _one_line(f"its sdist cannot be read ({type(exc).__name__}: {exc})")}
    try:
        cache.put_json(inputs, dict(found, url=shown))
    except (OSError, TypeError, ValueError):
        pass
    return found
