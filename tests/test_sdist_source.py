"""What an sdist fetches when pip builds it at install (gpudoctor.install.sdist_source), read from the real
TensorRT sdists recorded from PyPI (tests/data/indexes/pypi/files/) served on loopback, and what that means for
a plan: a FAKE pypi.nvidia.com page on loopback (the real host is not reachable from here) that serves the
libs part's wheel, or not."""
import io
import tarfile

import pytest

from gpudoctor.install.pip_index import served
from gpudoctor.install.sdist_source import MAX_SDIST_BYTES, build_source
from gpudoctor.install.verify import IndexSession
from loopback_index import LoopbackIndex


@pytest.fixture
def idx():
    with LoopbackIndex() as server:
        yield server


def test_the_meta_package_pins_its_parts_and_the_libs_part_is_a_wheel_stub_of_pypi_nvidia_com(idx, tmp_path):
    meta = build_source(f"{idx.url}/files/tensorrt_cu12-11.4.0.106.tar.gz", cache_dir=str(tmp_path))
    assert meta["requires"][:2] == ["tensorrt_cu12_libs==11.4.0.106", "tensorrt_cu12_bindings==11.4.0.106"]
    libs = build_source(f"{idx.url}/files/tensorrt_cu12_libs-11.4.0.106.tar.gz", cache_dir=str(tmp_path))
    assert (libs["backend"], libs["stub_index"]) == ("wheel_stub.buildapi", "https://pypi.nvidia.com/")
    asked = len(idx.requests)
    again = build_source(f"{idx.url}/files/tensorrt_cu12_libs-11.4.0.106.tar.gz", cache_dir=str(tmp_path), offline=True)
    assert again == libs and len(idx.requests) == asked  # from the cache, keyed on the file's URL


def _tar(members):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


@pytest.mark.parametrize("body, words", [
    (b"not a tar at all", "cannot be read"),
    (_tar({"pkg-1.0/README": b"x"}), "cannot be read"),
    (_tar({"pkg-1.0/pyproject.toml": b"[build-system\nrequires = "}), "pyproject.toml cannot be read"),
    (b"\0" * (MAX_SDIST_BYTES + 1), "over"),
])
def test_an_sdist_that_cannot_be_read_is_said_never_raised(body, words, tmp_path):
    with LoopbackIndex(routes={"/f/pkg-1.0.tar.gz": (200, "application/octet-stream", body)}) as server:
        got = build_source(f"{server.url}/f/pkg-1.0.tar.gz", cache_dir=str(tmp_path))
    assert words in got["error"] and "\n" not in got["error"]
    assert build_source("http://127.0.0.1:9/x.tar.gz", offline=True, cache_dir=str(tmp_path)) == \
        {"error": "not read (--offline)"}


def _fake_nvidia_page(versions):
    """FAKE: pypi.nvidia.com's project page in PEP 503 form (the real host is not reachable from here), listing
    wheels of tensorrt-cu12-libs named as PyPI names the bindings' wheels."""
    links = "".join(f'<a href="/w/tensorrt_cu12_libs-{v}-py2.py3-none-manylinux_2_28_x86_64.whl">'
                    f'tensorrt_cu12_libs-{v}-py2.py3-none-manylinux_2_28_x86_64.whl</a>\n' for v in versions)
    return (200, "text/html", f"<html><body>{links}</body></html>".encode())


@pytest.mark.parametrize("served_there, status", [(["11.3.0.99", "11.4.0.106"], "served"), (["11.3.0.99"], "not served")])
def test_a_tensorrt_requirement_is_what_its_wheel_stub_index_serves(idx, tmp_path, served_there, status):
    with LoopbackIndex(routes={"/simple/tensorrt-cu12-libs/": _fake_nvidia_page(served_there)}) as nvidia:
        def pip(name, index_url=None, **kw):
            if index_url and index_url.startswith("https://pypi.nvidia.com"):
                index_url = nvidia.url + "/simple/"
            return served(name, index_url, cache_dir=str(tmp_path), **kw)

        session = IndexSession(checkers={"pip": pip}, cache_dir=str(tmp_path))
        c = session.check("pip", "tensorrt-cu12==11.4.*", idx.url + "/simple/")
    assert c.status == status and c.matching == ("11.4.0.106",)
    if status == "not served":
        assert c.reason.startswith("tensorrt-cu12 11.4.0.106 is an sdist that pins tensorrt_cu12_libs==11.4.0.106: "
                                   "tensorrt_cu12_libs 11.4.0.106 is a wheel-stub sdist: its wheel comes from "
                                   "https://pypi.nvidia.com/ at install, and that index does not serve it (")
        assert "newest served: 11.3.0.99" in c.reason
