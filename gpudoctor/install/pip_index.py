"""What a Python package index serves of one project, asked the way pip would ask it.

:func:`served` reads the project's page of the index pip would use (the plan's ``--index-url``, else
``PIP_INDEX_URL``, else ``index-url`` from pip's configuration files, else PyPI) through the simple
repository API: the JSON form (PEP 691, ``application/vnd.pypi.simple.v1+json``) when the index offers it,
the HTML form (PEP 503) otherwise. Versions come from the file names (``packaging.utils``), yanked files
(PEP 592) left out: what ``pip install 'name==X.*'`` could pick.

Answers are cached in gpudoctor's user cache (``pip-index`` namespace, one entry per index URL and
normalised name) for :data:`CACHE_TTL` seconds; an entry is checked (shape, names, versions, time) before
use and ignored when it is stale, foreign or corrupt. Nothing is cached when the index could not answer.
"""
from __future__ import annotations

import configparser
import json
import os
import sys
import time
from html.parser import HTMLParser
from typing import Dict, List, Mapping, Optional, Tuple
from urllib.parse import urljoin, urlsplit, urlunsplit

from packaging.utils import (InvalidSdistFilename, InvalidWheelFilename, canonicalize_name,
                             parse_sdist_filename, parse_wheel_filename)
from packaging.version import InvalidVersion, Version

from gpudoctor.install.index_types import IndexAnswer

__all__ = ["served", "pip_index_url", "redact_url", "versions_from_page", "CACHE_TTL", "PYPI"]

PYPI = "https://pypi.org/simple"
#: Seconds an index's answer is reused (from the cache) before it is asked again.
CACHE_TTL = 3600.0
_JSON = "application/vnd.pypi.simple.v1+json"
_ACCEPT = f"{_JSON}, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.1"
_CACHE_FORMAT = 2  # 2: sdist-only versions kept


def redact_url(url: str) -> str:
    """``url`` without a user or password (an index URL may carry a token): safe to print."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


def with_credentials_of(url: str, index_url: Optional[str]) -> str:
    """``url`` (a file link read from ``index_url``'s page, credentials removed) with the index's own user and
    password again when it is on the same host, as pip sends them; else ``url`` as it is."""
    if not index_url:
        return url
    idx, target = urlsplit(index_url), urlsplit(url)
    if "@" not in idx.netloc or "@" in target.netloc or target.netloc != idx.netloc.rsplit("@", 1)[1]:
        return url
    return urlunsplit(target._replace(netloc=idx.netloc))


def _pip_config_files(env: Mapping[str, str]) -> List[str]:
    """pip's configuration files, lowest priority first (pip's docs, "Configuration": global, user, site)."""
    if env.get("PIP_CONFIG_FILE") == os.devnull:
        return []
    home = os.path.expanduser("~")
    files: List[str] = []
    if sys.platform == "win32":
        files.append(os.path.join(env.get("PROGRAMDATA", r"C:\ProgramData"), "pip", "pip.ini"))
        files.append(os.path.join(env.get("APPDATA", home), "pip", "pip.ini"))
        files.append(os.path.join(home, "pip", "pip.ini"))
        site = "pip.ini"
    else:
        for d in reversed((env.get("XDG_CONFIG_DIRS") or "/etc/xdg").split(":")):
            files.append(os.path.join(d, "pip", "pip.conf"))
        files.append("/etc/pip.conf")
        files.append(os.path.join(home, ".pip", "pip.conf"))
        if sys.platform == "darwin":
            files.append(os.path.join(home, "Library", "Application Support", "pip", "pip.conf"))
        files.append(os.path.join(env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config"), "pip", "pip.conf"))
        site = "pip.conf"
    if env.get("VIRTUAL_ENV"):
        files.append(os.path.join(env["VIRTUAL_ENV"], site))
    if env.get("PIP_CONFIG_FILE"):
        files.append(env["PIP_CONFIG_FILE"])
    return files


def pip_index_url(env: Optional[Mapping[str, str]] = None) -> str:
    """The index ``pip install`` uses without ``--index-url``: ``PIP_INDEX_URL``, else ``index-url`` in pip's
    configuration (``[install]`` over ``[global]``, later files over earlier ones), else PyPI."""
    env = os.environ if env is None else env
    if env.get("PIP_INDEX_URL"):
        return env["PIP_INDEX_URL"].strip()
    found = None
    for path in _pip_config_files(env):
        if not os.path.isfile(path):
            continue
        cp = configparser.RawConfigParser()
        try:
            cp.read(path, encoding="utf-8")
        except (configparser.Error, OSError, UnicodeDecodeError):
            continue  # pip would refuse it too; the plan still names PyPI's answer as what it checked
        for section in ("global", "install"):
            for key in ("index-url", "index_url"):
                if cp.has_option(section, key) and cp.get(section, key).strip():
                    found = cp.get(section, key).strip()
    return found or PYPI


class _Anchors(HTMLParser):
    """[href, link text, data-yanked present] of every <a> of a PEP 503 page."""

    def __init__(self) -> None:
        super().__init__()
        self.files: List[list] = []
        self._in_a = False

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            a = dict(attrs)
            self.files.append([a.get("href") or "", "", "data-yanked" in a])
            self._in_a = True

    def handle_data(self, data):
        if self._in_a:
            self.files[-1][1] += data

    def handle_endtag(self, tag):
        if tag == "a":
            self._in_a = False


def _version_of(filename: str, name: str) -> Optional[str]:
    try:
        if filename.endswith(".whl"):
            proj, version, _, _ = parse_wheel_filename(filename)
        elif filename.endswith((".tar.gz", ".zip")):
            proj, version = parse_sdist_filename(filename)
        else:
            return None  # eggs, installers: pip does not pick them
    except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
        return None
    return str(version) if proj == name else None


def versions_from_page(body: bytes, content_type: str, name: str) -> Tuple[str, ...]:
    """Versions with at least one file not yanked on a project page, oldest first.

    ``content_type`` picks the form (PEP 691 JSON or PEP 503 HTML); raises ValueError for a page that is
    neither (a captive portal, an error page)."""
    return files_from_page(body, content_type, name)[0]


def files_from_page(body: bytes, content_type: str, name: str, page: str = "") -> Tuple[Tuple[str, ...], Dict[str, str]]:
    """(:func:`versions_from_page`, {version: its sdist's URL} for each version served as an sdist only): pip
    builds such a version at install, and what that build fetches is not on this page (NVIDIA's TensorRT
    packages on PyPI are sdists whose build downloads the wheel from pypi.nvidia.com). ``page`` resolves
    relative links."""
    norm = canonicalize_name(name)
    names: List[Tuple[str, bool, str]] = []
    if content_type.split(";")[0].strip() == _JSON:
        data = json.loads(body)
        if not isinstance(data, dict) or not isinstance(data.get("files"), list):
            raise ValueError("a JSON page without a files list is not a PEP 691 project page")
        for f in data["files"]:
            if isinstance(f, dict) and isinstance(f.get("filename"), str):
                names.append((f["filename"], bool(f.get("yanked")), str(f.get("url") or "")))
    else:
        text = body.decode("utf-8", "replace")
        if "<a" not in text.lower() and "<html" not in text.lower():
            raise ValueError("not a PEP 503 page (no HTML)")
        parser = _Anchors()
        parser.feed(text)
        for href, label, yanked in parser.files:
            fname = label.strip() or href.split("#")[0].rsplit("/", 1)[-1]
            names.append((fname, yanked, href))
    wheels: set = set()
    sdists: Dict[str, str] = {}
    for fname, yanked, url in names:
        v = None if yanked else _version_of(fname, norm)
        if v and fname.endswith(".whl"):
            wheels.add(v)
        elif v:
            sdists.setdefault(v, urljoin(page, url.split("#")[0]) if url else "")
    found = wheels | set(sdists)
    return tuple(sorted(found, key=Version)), {v: u for v, u in sdists.items() if v not in wheels and u}


# --------------------------------------------------------------------------- cache


def _cache(cache_dir: Optional[str]):
    from gpudoctor.process.cache import Cache

    return Cache("pip-index", root=cache_dir)


def _cache_inputs(page: str) -> Dict[str, object]:
    return {"format": _CACHE_FORMAT, "page": page}


def _from_cache(page: str, name: str, shown: str, cache_dir: Optional[str], now: float) -> Optional[IndexAnswer]:
    try:
        data = _cache(cache_dir).get_json(_cache_inputs(page))
    except OSError:
        return None
    if not (isinstance(data, dict) and data.get("page") == page and data.get("name") == name
            and isinstance(data.get("versions"), list) and all(isinstance(v, str) for v in data["versions"])
            and isinstance(data.get("fetched_at"), (int, float))):
        return None  # foreign or corrupt: asked again
    age = now - float(data["fetched_at"])
    if not 0 - 300 <= age <= CACHE_TTL:  # stale, or from a clock ahead of ours
        return None
    try:
        versions = tuple(str(Version(v)) for v in data["versions"])
    except InvalidVersion:
        return None
    sdist_only = data.get("sdist_only") or {}
    if not (isinstance(sdist_only, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in sdist_only.items())):
        return None
    return IndexAnswer("pip", name, shown, versions, None, float(data["fetched_at"]), True,
                       extra={"sdist_only": sdist_only})


def _to_cache(page: str, answer: IndexAnswer, cache_dir: Optional[str]) -> None:
    try:
        _cache(cache_dir).put_json(_cache_inputs(page), {"page": page, "name": answer.name,
                                                         "versions": list(answer.versions or ()),
                                                         "sdist_only": answer.extra.get("sdist_only") or {},
                                                         "fetched_at": answer.fetched_at})
    except OSError:
        pass  # an unwritable cache costs the next run a request, nothing else


# --------------------------------------------------------------------------- the question


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return (type(exc).__name__ + (": " + text if text else ""))[:200]


def _cause(exc: BaseException) -> str:
    """The innermost cause of a requests error, one line ("NameResolutionError"), not urllib3's whole story."""
    inner = exc
    while inner.__cause__ is not None or (inner.__context__ is not None and not inner.__suppress_context__):
        inner = inner.__cause__ or inner.__context__
    text = str(inner)
    if "Caused by " in text:  # urllib3's MaxRetryError: the reason's type says it
        text = text.split("Caused by ", 1)[1].split("(", 1)[0]
        return text.strip() or type(exc).__name__
    if inner is exc:
        return _one_line(exc)
    return {"gaierror": "host name not resolved"}.get(type(inner).__name__, type(inner).__name__)


def served(name: str, index_url: Optional[str] = None, *, offline: bool = False, timeout: float = 5.0,
           cache_dir: Optional[str] = None, env: Optional[Mapping[str, str]] = None) -> IndexAnswer:
    """What ``index_url`` (default: the index pip would use, :func:`pip_index_url`) serves of project ``name``.

    Returns an :class:`IndexAnswer` of kind "pip": ``versions`` (oldest first; empty when the index has no such
    project, HTTP 404) or None with ``error`` saying why (``--offline`` without a fresh cached answer, a timeout
    after ``timeout`` seconds, a refused connection, an HTTP error, a page that is no index page). ``index`` is
    the project page asked, without credentials. Never raises for network or page errors."""
    norm = canonicalize_name(name)
    base = (index_url or pip_index_url(env)).rstrip("/") + "/"
    page = urljoin(base, norm + "/")
    shown = redact_url(page)
    now = time.time()
    hit = _from_cache(page, norm, shown, cache_dir, now)
    if hit is not None:
        return hit
    if offline:
        return IndexAnswer("pip", norm, shown, None, "not checked (--offline)")
    try:
        import requests  # only when the network is asked: a warm cache never imports it
    except ImportError as exc:  # a declared dependency; said rather than raised
        return IndexAnswer("pip", norm, shown, None, f"not checked: {_one_line(exc)}")
    try:
        resp = requests.get(page, headers={"Accept": _ACCEPT}, timeout=timeout)
    except requests.Timeout:
        return IndexAnswer("pip", norm, shown, None, f"no answer within {timeout:.2g} s")
    except requests.RequestException as exc:
        return IndexAnswer("pip", norm, shown, None, f"unreachable: {_cause(exc)}")
    fetched = time.time()
    if resp.status_code == 404:
        answer = IndexAnswer("pip", norm, shown, (), None, fetched)
    elif resp.status_code != 200:
        return IndexAnswer("pip", norm, shown, None, f"HTTP {resp.status_code} {resp.reason or ''}".strip())
    else:
        try:
            versions, sdist_only = files_from_page(resp.content, resp.headers.get("Content-Type", ""), norm, page)
        except (ValueError, UnicodeDecodeError) as exc:
            return IndexAnswer("pip", norm, shown, None, f"not an index page ({_one_line(exc)})")
        # never a credential in an answer (printed, cached): with_credentials_of() puts the index's back
        answer = IndexAnswer("pip", norm, shown, versions, None, fetched,
                             extra={"sdist_only": {v: redact_url(u) for v, u in sdist_only.items()}})
    _to_cache(page, answer, cache_dir)
    return answer
