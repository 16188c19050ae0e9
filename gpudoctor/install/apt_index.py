"""What OS package repositories serve: apt (a Debian-style ``Packages`` index), dnf (an RPM repository's
``repodata/repomd.xml`` and the primary metadata it names) and winget.

Each checker answers ``served(name, source, *, offline=False, timeout=5.0, cache_dir=None) -> IndexAnswer``
(:mod:`gpudoctor.install.index_types`). ``source`` is the index URL, a list of them, or one URL with shell-style
braces (``.../dists/bookworm/{main,contrib,non-free}/binary-amd64/Packages.xz``): the answer is the union of the
indexes, and unknown if any of them cannot be read (a pin absent from the readable ones might be in the other).

Each index is fetched once, parsed to a compact ``{package: [versions]}`` map and kept in the user cache
(:class:`gpudoctor.process.cache.Cache`, namespace ``os-index``, keyed on the URL) for :data:`TTL_S`; an entry
that fails its checksum, names another URL or is out of date is never used. ``offline=True`` answers from a
fresh cache entry or not at all: it never touches the network. Sources: Debian Policy 5.1 and 5.3 (the
``Packages`` control file; Package and Version are simple one-line fields), the Debian repository format
(wiki.debian.org/DebianRepository/Format), createrepo_c's repomd.xml / primary.xml (rpm-software-management).
"""
from __future__ import annotations

import bz2
import gzip
import itertools
import lzma
import os
import re
import time
import xml.etree.ElementTree as ET
from typing import Dict, List, Optional, Sequence, Tuple, Union
from urllib.parse import urljoin

from gpudoctor.install.index_types import IndexAnswer
from gpudoctor.install.pkg_versions import sort_versions

__all__ = ["CHECKERS", "TTL_S", "served_apt", "served_dnf", "served_winget", "repository_for", "os_requirements",
           "parse_packages", "parse_primary", "parse_modules", "expand_source", "IndexUnavailable"]

#: How long a parsed index is trusted (seconds): repositories publish several times a day at most.
TTL_S = 6 * 3600
#: Bumped when the cached map's shape changes (an older entry is another key).
_PARSER = 2
#: Largest index read (bytes, compressed or not): Debian's main Packages is ~50 MB uncompressed.
_MAX_BYTES = 256 << 20

Source = Union[str, Sequence[str]]


class IndexUnavailable(Exception):
    """The index could not be read: one line saying why (unreachable, timed out, HTTP status, not an index)."""


def expand_source(source: Source) -> List[str]:
    """The URLs a ``source`` names: a list as given, or one string with ``{a,b}`` braces expanded in order."""
    if not isinstance(source, str):
        return [u for s in source for u in expand_source(s)]
    parts = re.split(r"\{([^{}]*)\}", source)
    choices = [[p] if i % 2 == 0 else p.split(",") for i, p in enumerate(parts)]
    return ["".join(c) for c in itertools.product(*choices)]


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


def _load_map(kind: str, url: str, timeout: float) -> Dict[str, List[str]]:
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


#: In-process copies of cache entries, keyed on the entry file's identity (a changed file is read again).
_MEMO: Dict[Tuple[str, str], Tuple[Tuple[int, int, int], dict]] = {}


def _valid_entry(data: object, kind: str, url: str, now: float) -> bool:
    if not (isinstance(data, dict) and data.get("url") == url and data.get("kind") == kind):
        return False
    at, pkgs = data.get("fetched_at"), data.get("packages")
    return (isinstance(at, (int, float)) and -60 <= now - at <= TTL_S and isinstance(pkgs, dict)
            and all(isinstance(v, list) for v in itertools.islice(pkgs.values(), 50)))


def _index(kind: str, url: str, offline: bool, timeout: float, cache_dir: Optional[str]) -> Tuple[dict, bool]:
    """(the cache entry ``{"kind", "url", "fetched_at", "packages"}``, whether it came from the cache)."""
    from gpudoctor.process.cache import Cache

    cache = Cache("os-index", root=cache_dir)
    inputs = {"kind": kind, "url": url, "parser": _PARSER}
    data_path = os.path.join(cache.dir, cache.key(inputs), "data.json")
    now = time.time()
    try:
        st = os.stat(data_path)
        ident = (st.st_ino, st.st_size, st.st_mtime_ns)
    except OSError:
        ident = None
    memo = _MEMO.get((cache.dir, url))
    if ident is not None and memo is not None and memo[0] == ident and _valid_entry(memo[1], kind, url, now):
        return memo[1], True
    data = cache.get_json(inputs) if ident is not None else None  # checksum-verified, else removed
    if _valid_entry(data, kind, url, now):
        _MEMO[(cache.dir, url)] = (ident, data)
        return data, True
    if offline:
        raise IndexUnavailable(f"{url}: not checked (--offline, and no answer from the last {TTL_S // 3600} h cached)")
    data = {"kind": kind, "url": url, "fetched_at": time.time(), "packages": _load_map(kind, url, timeout)}
    if cache.put_json(inputs, data) is not None:
        try:
            st = os.stat(data_path)
            _MEMO[(cache.dir, url)] = ((st.st_ino, st.st_size, st.st_mtime_ns), data)
        except OSError:
            pass
    return data, False


def _served(kind: str, name: str, source: Source, offline: bool, timeout: float,
            cache_dir: Optional[str]) -> IndexAnswer:
    urls = expand_source(source)
    label = source if isinstance(source, str) else " ".join(urls)
    found: List[str] = []
    errors: List[str] = []
    fetched: List[float] = []
    cached = True
    for url in urls:
        try:
            data, hit = _index(kind, url, offline, timeout, cache_dir)
        except IndexUnavailable as exc:
            errors.append(str(exc))
            continue
        found += data["packages"].get(name, [])
        fetched.append(data["fetched_at"])
        cached = cached and hit
    if errors:
        return IndexAnswer(kind, name, label, None, "; ".join(errors), min(fetched) if fetched else None, False,
                           {"sources": urls})
    versions, bad = sort_versions(kind, found)
    extra = {"sources": urls, **({"malformed_versions": bad} if bad else {})}
    return IndexAnswer(kind, name, label, tuple(versions), None, min(fetched), cached, extra)


def served_apt(name: str, source: Source, *, offline: bool = False, timeout: float = 5.0,
               cache_dir: Optional[str] = None) -> IndexAnswer:
    """Versions of binary package ``name`` (architecture as the Packages URL says) in the apt index(es)
    ``source``, oldest first as dpkg orders them; ``()`` when the index does not have it."""
    return _served("apt", name, source, offline, timeout, cache_dir)


def served_dnf(name: str, source: Source, *, offline: bool = False, timeout: float = 5.0,
               cache_dir: Optional[str] = None) -> IndexAnswer:
    """Versions (``[epoch:]version-release``) of package ``name`` in the RPM repository whose
    ``repodata/repomd.xml`` is ``source``, oldest first as rpm orders them. For a module stream
    (``nvidia-driver:580-open``, what ``dnf module install`` takes) the module versions of that stream in the
    repository's modules.yaml; ``()`` when the repository has no such stream (or no modules at all)."""
    return _served("dnf", name, source, offline, timeout, cache_dir)


def served_winget(name: str, source: Source, *, offline: bool = False, timeout: float = 5.0,
                  cache_dir: Optional[str] = None) -> IndexAnswer:
    """Always unknown: winget's community source is a packaged SQLite database (cdn.winget.microsoft.com/cache/
    source.msix) with no stable public query API, and it was unreachable where this was written, so no reader
    for it could be tested against the real thing."""
    label = source if isinstance(source, str) else " ".join(source)
    return IndexAnswer("winget", name, label, None,
                       "winget ids are not checked: winget's source (source.msix, a packaged SQLite index) has no "
                       "tested reader in gpudoctor")


CHECKERS = {"apt": served_apt, "dnf": served_dnf, "winget": served_winget}

#: Release codenames of the distributions' own archives (their dists/ directories).
_CODENAMES = {"debian-11": "bullseye", "debian-12": "bookworm", "ubuntu-18.04": "bionic", "ubuntu-20.04": "focal",
              "ubuntu-22.04": "jammy", "ubuntu-24.04": "noble"}
_DEBIAN = "http://deb.debian.org/debian/dists/{suite}/{{main,contrib,non-free}}/binary-amd64/Packages.xz"
_UBUNTU = "http://archive.ubuntu.com/ubuntu/dists/{suite}/{{main,restricted,universe,multiverse}}/binary-amd64/Packages.xz"
_WINGET = "https://cdn.winget.microsoft.com/cache/source.msix"


def repository_for(os_info, kind: str = "nvidia") -> Optional[str]:
    """The index a plan's packages come from, for a matrix OS row (:class:`~gpudoctor.matrix.records.OsInfo`):
    ``kind`` "nvidia": NVIDIA's CUDA repository for it (the directory of its cuda-keyring .deb or .repo:
    ``Packages.gz`` for apt, ``repodata/repomd.xml`` for dnf); "distro": the distribution's own archive
    (Debian's/Ubuntu's release suite, all components; None for RHEL, whose repositories need a subscription,
    and WSL, whose Ubuntu release is not known); "winget" for Windows. None where there is none."""
    if kind == "winget":
        return _WINGET if os_info.family == "windows" else None
    if kind == "distro":
        suite = _CODENAMES.get(os_info.os)
        if suite is None:
            return None
        return (_DEBIAN if os_info.os.startswith("debian") else _UBUNTU).format(suite=suite)
    if kind != "nvidia":
        raise ValueError(f"repository_for: kind {kind!r}: use nvidia, distro or winget")
    if not os_info.keyring:
        return None
    base = os_info.keyring.rsplit("/", 1)[0] + "/"
    return base + ("repodata/repomd.xml" if os_info.family == "rhel" else "Packages.gz")


_INSTALL = re.compile(r"^(apt-get|dnf)(?: module)? install\b(.*)$")


def os_requirements(plan) -> List[Tuple[str, str, Optional[str], Optional[str]]]:
    """What a plan's OS steps install, read from :func:`gpudoctor.install.steps.linux_steps` (or the winget
    lines of :func:`~gpudoctor.install.steps.windows_steps`): ``[(kind, name, version_spec or None, source)]``
    in step order, one per package. ``version_spec`` is ``"=V"`` for apt's ``name=V`` pin; ``source`` the
    index it is fetched from: the distribution's archive for packages installed before NVIDIA's repository is
    added, both (a list) after it. Names that depend on the machine (``linux-headers-"$(uname -r)"``) are left
    out: no index can answer for an unknown kernel."""
    from gpudoctor.install import steps as st

    os_ = plan.target.os
    out: List[Tuple[str, str, Optional[str], Optional[str]]] = []
    if os_.family == "windows":
        for step in st.windows_steps(plan):
            for cmd in step.user:
                m = re.search(r"winget install --id (\S+)", cmd)
                if m:
                    out.append(("winget", m.group(1), None, repository_for(os_, "winget")))
        return out
    kind = "dnf" if os_.family == "rhel" else "apt"
    distro, nvidia = repository_for(os_, "distro"), repository_for(os_, "nvidia")
    repo_added = False
    for step in st.linux_steps(plan):
        for cmd in step.root:
            if "cuda-keyring" in cmd and cmd.startswith("dpkg -i") or cmd.startswith("dnf config-manager --add-repo"):
                repo_added = True
                continue
            m = _INSTALL.match(cmd)
            if not m:
                continue
            srcs = [s for s in ((distro, nvidia) if repo_added else (distro,)) if s]
            source = srcs[0] if len(srcs) == 1 else (list(srcs) if srcs else None)
            for word in m.group(2).split():
                if word.startswith("-") or "$" in word or '"' in word:
                    continue
                name, _, ver = word.partition("=") if kind == "apt" else (word, "", "")
                out.append((kind, name, f"={ver}" if ver else None, source))
    return out
