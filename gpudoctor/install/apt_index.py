"""What OS package repositories serve: apt (a Debian-style ``Packages`` index), dnf (an RPM repository's
``repodata/repomd.xml`` and the primary metadata it names) and winget.

Each checker answers ``served(name, source, *, offline=False, timeout=5.0, cache_dir=None) -> IndexAnswer``
(:mod:`gpudoctor.install.index_types`). ``source`` is the index URL, a list of them, or one URL with shell-style
braces (``.../dists/bookworm/{main,contrib,non-free}/binary-amd64/Packages.xz``): the answer is the union of the
indexes, and unknown if any of them cannot be read (a pin absent from the readable ones might be in the other);
then ``extra["partial_versions"]`` holds what the readable ones serve of the name, if anything.

Each index is fetched once, parsed to a compact ``{package: [versions]}`` map and kept in the user cache
(:class:`gpudoctor.process.cache.Cache`, namespace ``os-index``, keyed on the URL) for :data:`TTL_S`; an entry
that fails its checksum, names another URL or is out of date is never used. ``offline=True`` answers from a
fresh cache entry or not at all: it never touches the network. Reading the indexes themselves:
:mod:`gpudoctor.install.repo_metadata`.
"""
from __future__ import annotations

import itertools
import os
import re
import time
from typing import Dict, List, Optional, Sequence, Tuple, Union

from gpudoctor.install.index_types import IndexAnswer
from gpudoctor.install.pkg_versions import sort_versions
from gpudoctor.install.repo_metadata import IndexUnavailable, load_map

__all__ = ["CHECKERS", "TTL_S", "served_apt", "served_dnf", "served_winget", "repository_for", "os_requirements",
           "expand_source", "IndexUnavailable"]

#: How long a parsed index is trusted (seconds): repositories publish several times a day at most.
TTL_S = 6 * 3600
#: Bumped when the cached map's shape changes (an older entry is another key).
_PARSER = 2

Source = Union[str, Sequence[str]]


def expand_source(source: Source) -> List[str]:
    """The URLs a ``source`` names: a list as given, or one string with ``{a,b}`` braces expanded in order."""
    if not isinstance(source, str):
        return [u for s in source for u in expand_source(s)]
    parts = re.split(r"\{([^{}]*)\}", source)
    choices = [[p] if i % 2 == 0 else p.split(",") for i, p in enumerate(parts)]
    return ["".join(c) for c in itertools.product(*choices)]


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
    data = {"kind": kind, "url": url, "fetched_at": time.time(), "packages": load_map(kind, url, timeout)}
    if cache.put_json(inputs, data) is not None:
        try:
            st = os.stat(data_path)
            _MEMO[(cache.dir, url)] = ((st.st_ino, st.st_size, st.st_mtime_ns), data)
        except OSError:
            pass
    return data, False


def _name_in_index(kind: str, url: str, name: str, offline: bool, timeout: float,
                   cache_dir: Optional[str]) -> Tuple[List[str], float, bool]:
    """(what ``url``'s index lists for ``name``, that index's fetched_at, whether from the cache). A warm run
    reads the small per-name entry (namespace ``os-index-name``) written from the same cached index, valid
    exactly as long as that index (same fetched_at, same :data:`TTL_S`), instead of loading the whole map
    (Debian's main: 2.3 MB of JSON, 0.2 s)."""
    from gpudoctor.process.cache import Cache

    names = Cache("os-index-name", root=cache_dir)
    inputs = {"kind": kind, "url": url, "name": name, "parser": _PARSER}
    got = names.get_json(inputs)
    now = time.time()
    if (isinstance(got, dict) and got.get("url") == url and got.get("name") == name
            and isinstance(got.get("fetched_at"), (int, float)) and -60 <= now - got["fetched_at"] <= TTL_S
            and isinstance(got.get("versions"), list) and all(isinstance(v, str) for v in got["versions"])):
        return list(got["versions"]), got["fetched_at"], True
    data, hit = _index(kind, url, offline, timeout, cache_dir)
    versions = list(data["packages"].get(name, []))
    names.put_json(inputs, {"url": url, "name": name, "fetched_at": data["fetched_at"], "versions": versions})
    return versions, data["fetched_at"], hit


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
            listed, at, hit = _name_in_index(kind, url, name, offline, timeout, cache_dir)
        except IndexUnavailable as exc:
            errors.append(str(exc))
            continue
        found += listed
        fetched.append(at)
        cached = cached and hit
    if errors:
        # Unknown as a whole; what the readable indexes serve is kept aside: it is enough to show that an
        # unpinned name is served, never that a pin is not.
        partial = {"partial_versions": sort_versions(kind, found)[0]} if found else {}
        return IndexAnswer(kind, name, label, None, "; ".join(errors), min(fetched) if fetched else None, False,
                           {"sources": urls, **partial})
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
