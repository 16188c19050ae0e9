"""OS package index checkers (gpudoctor/install/apt_index.py) against loopback servers serving Debian's real
bookworm Packages (trimmed, tests/data/indexes/debian) and FAKE NVIDIA repositories built from the matrix
(tests/data/indexes/nvidia); version order checked with dpkg's and rpm's own test cases."""
from __future__ import annotations

import gzip
import http.server
import json
import lzma
import os
import socket
import subprocess
import threading

import pytest

from gpudoctor.install import apt_index
from gpudoctor.install.apt_index import (CHECKERS, expand_source, os_requirements, repository_for, served_apt,
                                         served_dnf, served_winget)
from gpudoctor.install.repo_metadata import parse_modules, parse_packages
from gpudoctor.install.pkg_versions import deb_compare, rpm_compare, satisfies, sort_versions

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "indexes")
COMPONENTS = ("main", "contrib", "non-free")


def _read(*parts: str) -> bytes:
    with open(os.path.join(DATA, *parts), "rb") as fh:
        return fh.read()


def _routes():
    r = {f"/debian/dists/bookworm/{c}/binary-amd64/Packages.xz": lzma.compress(_read("debian", "bookworm", c, "Packages"))
         for c in COMPONENTS}
    r["/nvidia/debian12/x86_64/Packages.gz"] = gzip.compress(_read("nvidia", "FAKE_debian12_Packages"))
    r["/nvidia/rhel9/x86_64/repodata/repomd.xml"] = _read("nvidia", "FAKE_rhel9", "repodata", "repomd.xml")
    r["/nvidia/rhel9/x86_64/repodata/FAKE-primary.xml.gz"] = gzip.compress(
        _read("nvidia", "FAKE_rhel9", "repodata", "FAKE-primary.xml"))
    r["/nvidia/rhel9/x86_64/repodata/FAKE-modules.yaml.gz"] = gzip.compress(
        _read("nvidia", "FAKE_rhel9", "repodata", "FAKE-modules.yaml"))
    r["/captive/Packages"] = b"<html><body>Please log in to the hotel wifi</body></html>"
    r["/truncated/Packages.xz"] = lzma.compress(_read("debian", "bookworm", "main", "Packages"))[:200]
    return r


class _Server:
    def __init__(self):
        routes, self.requests, self.hang = _routes(), [], threading.Event()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                outer.requests.append(self.path)
                if self.path.startswith("/hang/"):
                    outer.hang.wait(10)
                body = routes.get(self.path)
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Length", str(len(body or b"")))
                self.end_headers()
                self.wfile.write(body or b"")

            def log_message(self, *a):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.hang.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = _Server()
    yield s
    s.close()


@pytest.fixture
def cache(tmp_path):
    apt_index._MEMO.clear()
    return str(tmp_path / "cache")


def debian(server):
    return server.url + "/debian/dists/bookworm/{main,contrib,non-free}/binary-amd64/Packages.xz"


def test_served_package_and_version_from_debian_then_from_cache(server, cache):
    a = served_apt("nvidia-cuda-toolkit", debian(server), cache_dir=cache)
    assert a.known and a.versions == ("11.8.89~11.8.0-5~deb12u1",) and not a.from_cache and a.error is None
    assert a.extra["sources"][2].endswith("/non-free/binary-amd64/Packages.xz")
    n = len(server.requests)
    b = served_apt("g++-11", debian(server), cache_dir=cache)
    assert b.versions == ("11.3.0-12",) and b.from_cache and len(server.requests) == n
    apt_index._MEMO.clear()  # a new process: read back from disk, verified
    c = served_apt("g++", debian(server), cache_dir=cache)
    assert c.versions == ("4:12.2.0-3",) and c.from_cache and len(server.requests) == n
    assert c.fetched_at == a.fetched_at


def test_missing_package_is_known_and_empty(server, cache):
    a = served_apt("libcudnn9-cuda-12", debian(server), cache_dir=cache)
    assert a.known and a.versions == () and a.error is None


def test_pins_against_fake_nvidia_repo(server, cache):
    src = server.url + "/nvidia/debian12/x86_64/Packages.gz"
    a = served_apt("libcudnn9-cuda-12", src, cache_dir=cache)
    assert "9.8.0.87-1" in a.versions and a.versions[0] == "9.0.0.312-1"
    assert satisfies("apt", a.versions, "=9.8.0.87-1") == ["9.8.0.87-1"]
    assert satisfies("apt", a.versions, "=9.99.0.1-1") == []
    tk = served_apt("cuda-toolkit-12-4", src, cache_dir=cache)
    assert tk.versions == ("12.4.0-1", "12.4.1-1")
    assert served_apt("cuda-toolkit-11-8", src, cache_dir=cache).versions == ()  # debian12 starts at 12.3


def test_dnf_repomd_primary_with_epochs(server, cache):
    src = server.url + "/nvidia/rhel9/x86_64/repodata/repomd.xml"
    drv = served_dnf("nvidia-driver", src, cache_dir=cache)
    assert drv.known and all(v.startswith("3:") for v in drv.versions)
    assert drv.versions[0] == "3:515.43.04-1.el9"  # oldest first, numerically (not 580 < 60x as text)
    assert served_dnf("libcudnn9-devel-cuda-12", src, cache_dir=cache).versions[-1].startswith("9.")
    assert served_dnf("libcudnn9-dev-cuda-12", src, cache_dir=cache).versions == ()
    stream = served_dnf("nvidia-driver:580-open", src, cache_dir=cache)  # `dnf module install` takes a stream
    assert stream.versions == ("20260101000000",)
    assert served_dnf("nvidia-driver:latest-dkms", src, cache_dir=cache).versions == ()  # a default, not a stream


def test_parse_modules_agrees_with_yaml():
    import yaml

    raw = _read("nvidia", "FAKE_rhel9", "repodata", "FAKE-modules.yaml")
    want = {}
    for doc in yaml.safe_load_all(raw):
        if doc and doc.get("document") == "modulemd":
            d = doc["data"]
            want.setdefault(f"{d['name']}:{d['stream']}", []).append(str(d["version"]))
    assert parse_modules(raw) == want and "nvidia-driver:580-dkms" in want


def test_unreachable_source_is_unknown_with_reason(cache):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    a = served_apt("nvidia-cuda-toolkit", f"http://127.0.0.1:{port}/Packages.xz", cache_dir=cache, timeout=2)
    assert not a.known and "unreachable" in a.error and str(port) in a.error


def test_slow_source_gives_up_at_the_timeout(server, cache):
    a = served_apt("x", server.url + "/hang/Packages.xz", cache_dir=cache, timeout=0.5)
    assert not a.known and "0.5 s" in a.error


def test_one_unreadable_component_makes_the_union_unknown(server, cache):
    src = server.url + "/debian/dists/bookworm/{main,nonexistent}/binary-amd64/Packages.xz"
    a = served_apt("g++-11", src, cache_dir=cache)
    assert not a.known and "HTTP 404" in a.error and "nonexistent" in a.error
    assert a.extra["partial_versions"] == ["11.3.0-12"]  # enough for an unpinned name, never for a pin
    assert "partial_versions" not in served_apt("no-such-package", src, cache_dir=cache).extra


@pytest.mark.parametrize("path,words", [("/captive/Packages", "not a Packages index"),
                                        ("/truncated/Packages.xz", "not a valid compressed file")])
def test_a_page_that_is_not_an_index_is_unknown(server, cache, path, words):
    a = served_apt("g++-11", server.url + path, cache_dir=cache)
    assert not a.known and words in a.error


def test_offline_never_touches_the_network_but_reads_a_fresh_cache(server, cache):
    src = server.url + "/nvidia/debian12/x86_64/Packages.gz"
    a = served_apt("cuda-keyring", src, offline=True, cache_dir=cache)
    assert not a.known and "--offline" in a.error and server.requests == []
    served_apt("cuda-keyring", src, cache_dir=cache)
    n = len(server.requests)
    apt_index._MEMO.clear()
    b = served_apt("cuda-keyring", src, offline=True, cache_dir=cache)
    assert b.versions == ("1.1-1",) and b.from_cache and len(server.requests) == n


def _data_files(cache, namespace="os-index"):
    return [os.path.join(r, f) for r, _, fs in os.walk(os.path.join(cache, namespace)) for f in fs if f == "data.json"]


def test_corrupt_cache_entry_is_ignored_and_refetched(server, cache):
    src = server.url + "/nvidia/debian12/x86_64/Packages.gz"
    served_apt("cuda-keyring", src, cache_dir=cache)
    (path,) = _data_files(cache)
    with open(path, "w") as fh:  # a tampered answer: the package served at a version it never had
        json.dump({"kind": "apt", "url": src, "fetched_at": 1e18, "packages": {"cuda-keyring": ["9.9-9"]}}, fh)
    (name_entry,) = _data_files(cache, "os-index-name")
    with open(name_entry, "w") as fh:  # and the per-name answer written from it
        json.dump({"url": src, "name": "cuda-keyring", "fetched_at": 1e18, "versions": ["9.9-9"]}, fh)
    apt_index._MEMO.clear()
    n = len(server.requests)
    a = served_apt("cuda-keyring", src, cache_dir=cache)
    assert a.versions == ("1.1-1",) and not a.from_cache and len(server.requests) == n + 1


def test_a_warm_answer_comes_from_the_per_name_entry_of_the_same_fetch(server, cache, monkeypatch):
    """The second run reads the small per-name entry, never the whole map; it answers as the map would and
    carries the map's fetched_at."""
    src = server.url + "/nvidia/debian12/x86_64/Packages.gz"
    first = served_apt("cuda-keyring", src, cache_dir=cache)
    apt_index._MEMO.clear()

    def no_map(*args, **kwargs):
        raise AssertionError("the whole index map was loaded")

    monkeypatch.setattr(apt_index, "_index", no_map)
    again = served_apt("cuda-keyring", src, cache_dir=cache)
    assert again.versions == first.versions and again.from_cache and again.fetched_at == first.fetched_at


def test_expired_entry_is_refetched(server, cache, monkeypatch):
    src = server.url + "/nvidia/debian12/x86_64/Packages.gz"
    served_apt("cuda-keyring", src, cache_dir=cache)
    monkeypatch.setattr(apt_index, "TTL_S", -120)  # every entry is now older than its lifetime
    n = len(server.requests)
    assert not served_apt("cuda-keyring", src, cache_dir=cache).from_cache and len(server.requests) == n + 1
    apt_index._MEMO.clear()
    assert not served_apt("cuda-keyring", src, offline=True, cache_dir=cache).known


def test_winget_answers_unknown_saying_why():
    a = served_winget("Microsoft.VisualStudio.2022.BuildTools", "https://cdn.winget.microsoft.com/cache/source.msix")
    assert not a.known and "winget" in a.error
    assert CHECKERS == {"apt": served_apt, "dnf": served_dnf, "winget": served_winget}


def test_parse_packages_agrees_with_python_debian_deb822():
    from debian import deb822

    for comp in COMPONENTS:
        raw = _read("debian", "bookworm", comp, "Packages")
        want = {}
        for p in deb822.Packages.iter_paragraphs(raw.decode().splitlines(True), use_apt_pkg=False):
            want.setdefault(p["Package"], []).append(p["Version"])
        assert parse_packages(raw) == want and want


# dpkg's own cases (dpkg's lib/dpkg/t/t-version.c and deb-version(7)'s examples): (a, b, sign of a - b).
DPKG_CASES = [
    ("0", "0", 0), ("0", "00", 0), ("1.0", "1.0-0", 0), ("1:0", "0:0", 1), ("0:1", "1", 0),
    ("1:0", "1", 1), ("1:0.4", "10.3", 1), ("1.0-1", "1.0-2", -1), ("1.0~rc1", "1.0", -1),
    ("1.0~~", "1.0~~a", -1), ("1.0~~a", "1.0~", -1), ("1.0~", "1.0", -1), ("1.0", "1.0a", -1),
    ("1.0+", "1.0", 1), ("1.0a", "1.0+", -1), ("0:0-0", "0:0-00", 0), ("1.2.3", "1.2.3", 0),
    ("1.2.3-1", "1.2.3-1ubuntu1", -1), ("7.6p2-4", "7.6-0", 1), ("1.0.3-3", "1.0-1", 1),
    ("1.3", "1.2.2-2", 1), ("1.3", "1.2.2", 1), ("0-pre", "0-pre", 0), ("0-pre", "0-pree", -1),
    ("1.1.6r2-2", "1.1.6r-1", 1), ("2.6b2-1", "2.6b-2", 1), ("98.1p5-1", "98.1-pre2-b6-2", -1),
    ("0.4a6-2", "0.4-1", 1), ("1:3.0.5-2", "1:3.0.5.1", -1),
    ("11.8.89~11.8.0-5~deb12u1", "11.8.89~11.8.0-5", -1), ("4:12.2.0-3", "12.2.0-3", 1),
]


@pytest.mark.parametrize("a,b,sign", DPKG_CASES)
def test_deb_version_order_matches_dpkg(a, b, sign):
    assert deb_compare(a, b) == sign and deb_compare(b, a) == -sign


def test_deb_version_order_matches_apt_pkg_where_installed():
    """The same cases through apt's own comparison (python3-apt in the system Python), when present."""
    code = ("import apt_pkg, json, sys; apt_pkg.init_system(); "
            "print(json.dumps([apt_pkg.version_compare(a, b) for a, b, _ in json.load(sys.stdin)]))")
    try:
        out = subprocess.run(["/usr/bin/python3", "-c", code], input=json.dumps(DPKG_CASES), capture_output=True,
                             text=True, timeout=60)
    except OSError:
        pytest.skip("no /usr/bin/python3 here")
    if out.returncode != 0:
        pytest.skip("python3-apt is not installed in the system Python")
    got = [(r > 0) - (r < 0) for r in json.loads(out.stdout)]
    assert got == [s for _, _, s in DPKG_CASES]


def test_sort_versions_sets_malformed_aside():
    good, bad = sort_versions("apt", ["1.0", "1:0.1", "1.0~rc1", "not a version!", "1.0"])
    assert good == ["1.0~rc1", "1.0", "1:0.1"] and bad == ["not a version!"]


# rpm's own cases (rpm's tests/rpmvercmp.at): (a, b, sign of a - b).
RPM_CASES = [
    ("1.0", "1.0", 0), ("1.0", "2.0", -1), ("2.0.1", "2.0.1", 0), ("2.0", "2.0.1", -1), ("2.0.1a", "2.0.1a", 0),
    ("2.0.1a", "2.0.1", 1), ("5.5p1", "5.5p1", 0), ("5.5p1", "5.5p2", -1), ("5.5p10", "5.5p1", 1),
    ("10xyz", "10.1xyz", -1), ("xyz10", "xyz10.1", -1), ("xyz.4", "xyz.4", 0), ("xyz.4", "8", -1),
    ("8", "xyz.4", 1), ("xyz.4", "2", -1), ("5.5p2", "5.6p1", -1), ("5.6p1", "6.5p1", -1),
    ("6.0.rc1", "6.0", 1), ("10b2", "10a1", 1), ("10a2", "10b2", -1), ("1.0aa", "1.0aa", 0),
    ("1.0a", "1.0aa", -1), ("10.0001", "10.1", 0), ("10.0001", "10.0039", -1), ("4.999.9", "5.0", -1),
    ("20101121", "20101122", -1), ("2_0", "2_0", 0), ("2.0", "2_0", 0), ("a", "a", 0), ("a+", "a_", 0),
    ("+", "_", 0), ("1.0~rc1", "1.0~rc1", 0), ("1.0~rc1", "1.0", -1), ("1.0~rc1", "1.0~rc2", -1),
    ("1.0~rc1~git123", "1.0~rc1", -1), ("1.0^", "1.0^", 0), ("1.0^", "1.0", 1), ("1.0^git1", "1.0", 1),
    ("1.0^git1", "1.01", -1), ("1.0^20160101", "1.0.1", -1), ("1.0^git1~pre", "1.0^git1", -1),
    ("1.0~rc1^git1", "1.0~rc1", 1), ("1.0^git1", "1.0^git2", -1), ("1.0^git1", "1.0~rc1", 1),
    ("3:515.43.04-1.el9", "580.65.06-1.el9", 1), ("580.65.06-1.el9", "580.65.06-2.el9", -1),
]


@pytest.mark.parametrize("a,b,sign", RPM_CASES)
def test_rpm_version_order_matches_rpmvercmp(a, b, sign):
    assert rpm_compare(a, b) == sign and rpm_compare(b, a) == -sign


def test_expand_source_braces():
    assert expand_source("h/{a,b}/x/{1,2}") == ["h/a/x/1", "h/a/x/2", "h/b/x/1", "h/b/x/2"]
    assert expand_source(["u1", "u/{c,d}"]) == ["u1", "u/c", "u/d"]


def _plan(os_id, **pins):
    from gpudoctor.install.solver import Pins, solve
    from gpudoctor.install.target import target_from
    from gpudoctor.matrix import load_matrix

    m = load_matrix()
    return m, solve(m, target_from(m, {}, os_id, pins.pop("gpu", "RTX 4090"), pins.pop("driver", "keep")),
                    Pins(**pins))


def test_repository_for_every_matrix_os():
    from gpudoctor.matrix import load_matrix

    for o in load_matrix().oses():
        nv = repository_for(o, "nvidia")
        if o.family == "windows":
            assert nv is None and repository_for(o, "winget")
        elif o.family == "rhel":
            assert nv == f"https://developer.download.nvidia.com/compute/cuda/repos/{o.repo}/x86_64/repodata/repomd.xml"
        else:
            assert nv == f"https://developer.download.nvidia.com/compute/cuda/repos/{o.repo}/x86_64/Packages.gz"
    deb12 = load_matrix().os_info("debian-12")
    assert repository_for(deb12, "distro") == ("http://deb.debian.org/debian/dists/bookworm/{main,contrib,non-free}/"
                                               "binary-amd64/Packages.xz")


def test_os_requirements_reads_the_plan_steps():
    m, plan = _plan("debian-12", cudnn="9")
    reqs = os_requirements(plan)
    nv = repository_for(m.os_info("debian-12"), "nvidia")
    distro = repository_for(m.os_info("debian-12"), "distro")
    assert ("apt", "curl", None, distro) in reqs  # installed before NVIDIA's repository is added
    tk = [r for r in reqs if r[1].startswith("cuda-toolkit-")]
    assert tk == [("apt", f"cuda-toolkit-{plan.cuda.major}-{plan.cuda.minor}", None, [distro, nv])]
    cudnn = [r for r in reqs if r[1].startswith("libcudnn")]
    assert cudnn and all(r[2] == "=" + plan.cudnn.apt_versions[str(plan.cuda.major)] for r in cudnn)
    assert not any("uname" in r[1] or r[1].startswith("-") for r in reqs)


def test_os_requirements_rhel_and_windows():
    _, plan = _plan("rhel-9", driver="install")
    reqs = os_requirements(plan)
    assert all(k == "dnf" for k, *_ in reqs) and any(n.startswith("cuda-toolkit-") for _, n, _, _ in reqs)
    assert not any(n.startswith("kernel-") for _, n, _, _ in reqs)  # kernel-devel-"$(uname -r)": machine-bound
    _, win = _plan("windows")
    assert all(k == "winget" for k, *_ in os_requirements(win))
