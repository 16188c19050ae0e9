"""Reading OS repositories' metadata: a Debian ``Packages`` index, an RPM repository's ``repodata/repomd.xml``
with the primary.xml and modules.yaml it names; fetched with ``requests`` inside one time bound and
decompressed by suffix (.gz, .xz, .bz2, .zst with the optional zstandard module).

Sources: Debian Policy 5.1 and 5.3 (the ``Packages`` control file; Package and Version are simple one-line
fields), the Debian repository format (wiki.debian.org/DebianRepository/Format), createrepo_c's repomd.xml and
primary.xml (rpm-software-management), modulemd v2 (fedora-modularity/libmodulemd's spec.v2.yaml).
"""
from __future__ import annotations

import bz2
import gzip
import lzma
import re
import time
import xml.etree.ElementTree as ET
from typing import Dict, List
from urllib.parse import urljoin

__all__ = ["IndexUnavailable", "load_map", "parse_packages", "parse_primary", "parse_modules"]

#: Largest index read (bytes, compressed or not): Debian's main Packages is ~50 MB uncompressed.
_MAX_BYTES = 256 << 20


class IndexUnavailable(Exception):
    """The index could not be read: one line saying why (unreachable, timed out, HTTP status, not an index)."""


def _decompress(url: str, data: bytes) -> bytes:
    path = url.split("?")[0]
    try:
        if path.endswith(".gz"):
            return gzip.decompress(data)
        if path.endswith(".xz"):
            return lzma.decompress(data)
        if path.endswith(".bz2"):
            return bz2.decompress(data)
        if path.endswith(".zst"):
            try:
                import zstandard
            except ImportError:
                raise IndexUnavailable(f"{url}: zstd-compressed, and the zstandard module is not installed") from None
            return zstandard.ZstdDecompressor().decompress(data, max_output_size=_MAX_BYTES)
    except (OSError, EOFError, lzma.LZMAError, ValueError) as exc:
        raise IndexUnavailable(f"{url}: not a valid compressed file ({exc})") from None
    return data


def _fetch(url: str, timeout: float) -> bytes:
    """The body of ``url``, decompressed by its suffix; the whole download bounded by ``timeout`` seconds."""
    import requests

    deadline = time.monotonic() + timeout
    try:
        with requests.get(url, timeout=timeout, stream=True) as r:
            if r.status_code != 200:
                raise IndexUnavailable(f"{url}: HTTP {r.status_code}")
            chunks, size = [], 0
            for chunk in r.iter_content(1 << 16):
                chunks.append(chunk)
                size += len(chunk)
                if size > _MAX_BYTES:
                    raise IndexUnavailable(f"{url}: larger than {_MAX_BYTES >> 20} MiB, not read")
                if time.monotonic() > deadline:
                    raise IndexUnavailable(f"{url}: gave up after {timeout:g} s (timeout)")
    except requests.Timeout:
        raise IndexUnavailable(f"{url}: gave up after {timeout:g} s (timeout)") from None
    except requests.RequestException as exc:
        raise IndexUnavailable(f"{url}: unreachable ({type(exc).__name__})") from None
    return _decompress(url, b"".join(chunks))


def parse_packages(text: bytes) -> Dict[str, List[str]]:
    """``{package: [versions]}`` of a Debian ``Packages`` file (stanzas separated by blank lines). Only the
    Package and Version fields are read: both are simple one-line fields (Debian Policy 5.6.7, 5.6.12), so a
    line scan gives what a full deb822 parser gives (tests compare it with python-debian's) in a sixth of
    the time. Raises IndexUnavailable when no stanza has both fields (an HTML page, a truncated file)."""
    out: Dict[str, List[str]] = {}
    for stanza in re.split(rb"\n[ \t]*\n", text.replace(b"\r\n", b"\n")):
        name = version = None
        for line in stanza.split(b"\n"):
            if line[:8] == b"Package:":
                name = line[8:].strip().decode("utf-8", "replace")
            elif line[:8] == b"Version:":
                version = line[8:].strip().decode("utf-8", "replace")
        if name and version:
            out.setdefault(name, []).append(version)
    if not out and text.strip():
        raise IndexUnavailable("not a Packages index (no stanza with Package and Version)")
    return out


def _tag(el: ET.Element) -> str:
    return el.tag.rsplit("}", 1)[-1]


def parse_primary(text: bytes) -> Dict[str, List[str]]:
    """``{package: ["[epoch:]version-release"]}`` of createrepo's primary.xml (``<package type="rpm">`` with
    ``<name>`` and ``<version epoch ver rel>``); epoch 0 is left out, as dnf prints it."""
    out: Dict[str, List[str]] = {}
    try:
        for _event, el in ET.iterparse(_BytesReader(text), events=("end",)):
            if _tag(el) != "package":
                continue
            name = next((c.text for c in el if _tag(c) == "name"), None)
            ver = next((c for c in el if _tag(c) == "version"), None)
            if name and ver is not None and ver.get("ver"):
                epoch = ver.get("epoch") or "0"
                evr = (f"{epoch}:" if epoch != "0" else "") + ver.get("ver") + (f"-{ver.get('rel')}" if ver.get("rel") else "")
                out.setdefault(name.strip(), []).append(evr)
            el.clear()
    except ET.ParseError as exc:
        raise IndexUnavailable(f"not a primary.xml ({exc})") from None
    return out


class _BytesReader:
    """A minimal file object over bytes for ``iterparse`` (it reads by ``read(n)``)."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def read(self, n: int = -1) -> bytes:
        end = len(self.data) if n is None or n < 0 else self.pos + n
        chunk, self.pos = self.data[self.pos:end], min(end, len(self.data))
        return chunk


def parse_modules(text: bytes) -> Dict[str, List[str]]:
    """``{"name:stream": [module versions]}`` of a repository's modules.yaml (modulemd v2 documents:
    ``document: modulemd`` with ``data: {name, stream, version}``; modulemd-defaults documents are skipped).
    Only those three top-level scalars of ``data`` are read, so no YAML library is needed."""
    out: Dict[str, List[str]] = {}
    for doc in re.split(r"^---[ \t]*$", text.decode("utf-8", "replace"), flags=re.M):
        if not re.search(r"^document:\s*modulemd\s*$", doc, re.M):
            continue
        fields = {k: v.strip().strip("'\"") for k, v in re.findall(r"^  (name|stream|version):[ \t]*(.+)$", doc, re.M)}
        if fields.get("name") and fields.get("stream"):
            out.setdefault(f"{fields['name']}:{fields['stream']}", []).append(fields.get("version") or "0")
    return out


def _repodata_urls(repomd_url: str, repomd: bytes) -> Dict[str, str]:
    """``{type: URL}`` of the metadata repomd.xml names (``<data type="primary"><location href=...>``)."""
    try:
        root = ET.fromstring(repomd)
    except ET.ParseError as exc:
        raise IndexUnavailable(f"{repomd_url}: not a repomd.xml ({exc})") from None
    base = repomd_url.rsplit("repodata/", 1)[0] if "repodata/" in repomd_url else repomd_url
    urls = {}
    for data in root:
        loc = next((c for c in data if _tag(c) == "location"), None)
        if _tag(data) == "data" and data.get("type") and loc is not None and loc.get("href"):
            urls[data.get("type")] = urljoin(base, loc.get("href"))
    if "primary" not in urls:
        raise IndexUnavailable(f"{repomd_url}: repomd.xml names no primary metadata")
    return urls


def load_map(kind: str, url: str, timeout: float) -> Dict[str, List[str]]:
    """``{name: [versions]}`` of the index at ``url``: ``kind`` "apt" (a Packages file) or "dnf" (a repomd.xml:
    its packages, and its module streams as ``name:stream``). Raises IndexUnavailable, the URL in its line."""
    if kind == "apt":
        try:
            return parse_packages(_fetch(url, timeout))
        except IndexUnavailable as exc:
            raise IndexUnavailable(str(exc) if str(exc).startswith(url) else f"{url}: {exc}") from None
    meta = _repodata_urls(url, _fetch(url, timeout))
    out: Dict[str, List[str]] = {}
    # Module streams ("name:stream" keys; no package name has a colon) live in their own file, when there is one.
    for kind_, parse in (("primary", parse_primary), ("modules", parse_modules)):
        if kind_ in meta:
            try:
                out.update(parse(_fetch(meta[kind_], timeout)))
            except IndexUnavailable as exc:
                raise IndexUnavailable(str(exc) if str(exc).startswith(meta[kind_]) else f"{meta[kind_]}: {exc}") from None
    return out
