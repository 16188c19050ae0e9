"""Plans checked against the index each requirement comes from (issue 26), with a loopback index serving
PyPI's recorded pages (tests/data/indexes/) in place of PyPI (PIP_INDEX_URL) and the FAKE PyTorch page:
'latest' skips a release the index does not serve, a pin it does not serve is refused with the versions it
does, an index that cannot answer leaves the plan printed with its requirements marked unverified."""
import functools
import json

import pytest

from gpudoctor.cli import main
from gpudoctor.install.pip_index import served
from gpudoctor.install.solver import GpuTarget, Pins, PlanError, Target, solve
from gpudoctor.install.verify import IndexSession, verify_plan
from gpudoctor.matrix import load_matrix
from loopback_index import LoopbackIndex, closed_port

M = load_matrix()
RTX4090 = GpuTarget("RTX 4090", "8.9")
WIN = ["install", "--os", "windows", "--gpu", "RTX 4090", "--driver", "install", "--pip-only", "--cuda", "12"]


@pytest.fixture
def idx(monkeypatch):
    with LoopbackIndex() as server:
        monkeypatch.setenv("PIP_INDEX_URL", server.url + "/simple")
        yield server


def _session(tmp_path, **kw):
    return IndexSession(checkers={"pip": functools.partial(served, cache_dir=str(tmp_path))}, **kw)


def _target(os_id="ubuntu-24.04"):
    return Target(M.os_info(os_id), RTX4090, None, "install")


def test_latest_tensorrt_skips_the_release_the_index_does_not_serve(idx, tmp_path):
    assert solve(M, _target(), Pins(cuda="12", tensorrt="latest")).tensorrt.tensorrt == "11.5"  # the matrix alone
    plan = solve(M, _target(), Pins(cuda="12", tensorrt="latest"), served=_session(tmp_path).unserved)
    assert plan.tensorrt.tensorrt == "11.4"
    note = next(n for n in plan.notes if n.startswith("TensorRT 11.5 (newer) does not fit"))
    assert "tensorrt-cu12==11.5.* is not on" in note and "newest served: 11.4.0.106" in note


def test_a_major_pin_skips_the_unserved_minor_and_says_so(idx, tmp_path):
    plan = solve(M, _target(), Pins(cuda="12", tensorrt="11"), served=_session(tmp_path).unserved)
    assert plan.tensorrt.tensorrt == "11.4"
    assert any(n.startswith("skipped: tensorrt-cu12==11.5.* is not on") for n in plan.notes), plan.notes


def test_a_pin_the_index_does_not_serve_is_refused_with_the_versions_it_does(idx, tmp_path, capsys):
    with pytest.raises(PlanError) as err:
        solve(M, _target(), Pins(cuda="12", tensorrt="11.5"), served=_session(tmp_path).unserved)
    assert "tensorrt-cu12==11.5.* is not on" in err.value.reasons[0] and "11.4.0.106" in err.value.reasons[0]
    assert main(WIN + ["--tensorrt", "11.5"]) == 2
    out = capsys.readouterr()
    assert out.out == "" and "tensorrt-cu12==11.5.* is not on" in out.err and "11.3.0.99, 11.4.0.106" in out.err


def _nvidia_index_at(monkeypatch, url):
    """pypi.nvidia.com (named by the real TensorRT sdists' pyproject.toml) answered by ``url`` instead: a
    loopback page, or a closed port, so the tests do not depend on this machine reaching it."""
    from gpudoctor.install import pip_index

    real = pip_index.served

    def served_here(name, index_url=None, **kw):
        if index_url and index_url.startswith("https://pypi.nvidia.com"):
            index_url = url
        return real(name, index_url, **kw)

    monkeypatch.setattr(pip_index, "served", served_here)


def test_every_requirement_of_the_printed_plan_is_verified_and_said(idx, capsys, monkeypatch):
    _nvidia_index_at(monkeypatch, f"http://127.0.0.1:{closed_port()}/")
    assert main(WIN + ["--tensorrt", "latest", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["tensorrt"]["version"] == "11.4"
    checks = doc["verification"]["checks"]
    assert {c["requirement"] for c in checks} == {r["requirement"] for r in doc["pip"]}
    assert all(c["index"].startswith(idx.url) and c["matching"] for c in checks)
    # tensorrt-cu12 on PyPI is an sdist: pip builds it, and its libs part (an sdist too, wheel-stub) fetches
    # its wheel from pypi.nvidia.com, which did not answer: served by PyPI, yet unverified
    (trt,) = [c for c in checks if c["name"] == "tensorrt-cu12"]
    assert trt["status"] == "unverified" and "pins tensorrt_cu12_libs==11.4.0.106: tensorrt_cu12_libs 11.4.0.106 is a wheel-stub sdist" in trt["reason"]
    assert all(c["status"] == "served" for c in checks if c is not trt)
    assert main(WIN + ["--tensorrt", "latest", "--format", "ps1"]) == 0
    script = " ".join(capsys.readouterr().out.replace("# INDEX:", "").split())
    assert f"Verified against {idx.url}/simple (pip) as of " in script
    assert "tensorrt-cu12 11.4.0.106 is an sdist that pins tensorrt_cu12_libs==11.4.0.106" in script
    assert "answers from the cache" in script  # the second run reused the first one's answers


def test_an_unreachable_index_leaves_the_plan_printed_and_unverified(monkeypatch, capsys):
    monkeypatch.setenv("PIP_INDEX_URL", f"http://127.0.0.1:{closed_port()}/simple")
    assert main(WIN + ["--tensorrt", "latest", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    counts = doc["verification"]["counts"]
    assert counts["unverified"] == len(doc["pip"]) and counts["served"] == counts["not served"] == 0
    assert all(c["reason"].startswith("unreachable") for c in doc["verification"]["checks"])
    assert main(WIN + ["--tensorrt", "latest", "--format", "ps1"]) == 0
    assert "# INDEX: Unverified (pip http://127.0.0.1:" in capsys.readouterr().out


def test_a_silent_index_is_given_up_on_within_the_timeout(idx, capsys):
    idx.hang_s = 3.0
    assert main(WIN + ["--tensorrt", "latest", "--index-timeout", "0.5", "--json"]) == 0
    checks = json.loads(capsys.readouterr().out)["verification"]["checks"]
    assert checks[0]["reason"] in ("no answer within 0.5 s", "gave up after 0.5 s (--index-timeout): no answer yet")
    assert all(c["status"] == "unverified" for c in checks)
    assert all("no answer" in c["reason"] or c["reason"].startswith("gave up: the indexes' time budget (0.5 s")
               for c in checks[1:]), checks
    assert len(idx.requests) == 1  # the host that did not answer was not asked again


def test_offline_asks_no_index_and_says_so(idx, capsys, monkeypatch):
    _nvidia_index_at(monkeypatch, f"http://127.0.0.1:{closed_port()}/")
    assert main(WIN + ["--tensorrt", "latest", "--offline", "--format", "ps1"]) == 0
    script = capsys.readouterr().out
    assert idx.requests == [] and "TensorRT 11.5" in script  # nothing known: the matrix's choice stands
    assert "# INDEX: --offline" in script and "not checked (--offline)" in script
    assert main(WIN + ["--tensorrt", "latest", "--format", "ps1"]) == 0  # fills the cache
    capsys.readouterr()
    asked = len(idx.requests)
    assert main(WIN + ["--tensorrt", "latest", "--offline", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(idx.requests) == asked and doc["tensorrt"]["version"] == "11.4"
    checks = doc["verification"]["checks"]
    assert all(c["from_cache"] and c["status"] == "served" for c in checks if c["name"] != "tensorrt-cu12")
    # what its sdist fetches at install was never answered (pypi.nvidia.com did not answer): still unverified
    assert [c["status"] for c in checks if c["name"] == "tensorrt-cu12"] == ["unverified"]


def test_torch_is_checked_against_the_pytorch_index_the_plan_names(idx, tmp_path):
    """The FAKE cu130 page stands in for download.pytorch.org, which this machine cannot reach."""
    def pip(name, index, **kw):
        return served(name, index.replace("https://download.pytorch.org", idx.url) if index else None,
                      cache_dir=str(tmp_path), **kw)

    session = IndexSession(checkers={"pip": pip})
    plan = solve(M, _target(), Pins(cuda="13.0", torch="2.14", cudnn="none", pip_only=True), served=session.unserved)
    assert plan.torch_build.index_url == "https://download.pytorch.org/whl/cu130"
    [torch] = [c for c in verify_plan(plan, session=session).checks if c.name == "torch"]
    assert torch.status == "served" and torch.matching[-1] == "2.14.1+cu130" and "/whl/cu130/torch/" in torch.index
    with pytest.raises(PlanError) as err:  # 2.15 has no cu130 wheel; its cu132 index is not served here
        solve(M, _target(), Pins(cuda="13", torch="2.15", cudnn="none", pip_only=True), served=session.unserved)
    assert "torch==2.15.* is not on" in str(err.value)


def test_the_budget_holds_for_a_checker_that_outlasts_its_own_timeout(tmp_path):
    """FAKE_slow_checker ignores the timeout it is given (as a download plus parsing can): the session still
    answers within its budget, saying it gave up, and asks nothing more once the budget is spent."""
    import threading

    release = threading.Event()
    calls = []

    def FAKE_slow_checker(name, index, *, offline, timeout):
        calls.append((name, offline))
        if not offline:
            release.wait(10)
        from gpudoctor.install.index_types import IndexAnswer
        return IndexAnswer("apt", name, str(index), None, "not checked (--offline)" if offline else "late")

    session = IndexSession(timeout=0.3, checkers={"apt": FAKE_slow_checker})
    first = session.check("apt", "cuda-toolkit-12-9", "http://repo.invalid/Packages.gz")
    second = session.check("apt", "libcudnn9-cuda-12", "http://repo.invalid/Packages.gz")
    release.set()
    assert first.status == second.status == "unverified"
    assert first.reason == "gave up after 0.3 s (--index-timeout): no answer yet"
    assert second.reason.startswith("gave up: the indexes' time budget (0.3 s")
    assert calls == [("cuda-toolkit-12-9", False), ("libcudnn9-cuda-12", True)]  # the second: the cache only


def test_against_the_real_pypi_every_requirement_of_a_latest_plan_is_served(monkeypatch, capsys):
    """The live index, where it answers (skips here when PyPI is unreachable; fails in CI, which reaches it)."""
    import requests

    from conftest import REQUIRE_REAL

    try:
        requests.head("https://pypi.org/simple/", timeout=5)
    except requests.RequestException as exc:
        if REQUIRE_REAL:
            pytest.fail(f"PyPI unreachable: {exc}")
        pytest.skip(f"PyPI unreachable: {exc}")
    monkeypatch.delenv("PIP_INDEX_URL", raising=False)
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")  # this machine's pip.conf must not redirect the test
    assert main(WIN + ["--tensorrt", "latest", "--index-timeout", "30", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    counts = doc["verification"]["counts"]
    assert counts["not served"] == 0 and counts["served"] + counts["unverified"] == len(doc["pip"]) > 0
    # PyPI serves all of them; only what an sdist fetches at install from another index (TensorRT's wheel-stub
    # parts: pypi.nvidia.com) may stay unverified, where that index does not answer
    for c in doc["verification"]["checks"]:
        assert c["status"] == "served" or "wheel-stub sdist" in c["reason"], c


def test_a_release_passed_over_is_blamed_on_its_own_wheel_not_on_another_latest(idx, tmp_path, monkeypatch):
    """TensorRT latest and torch latest on Ubuntu 22.04 (Python 3.10): with TensorRT 11.5 every torch fails,
    the newest for Python 3.10 and the others because tensorrt-cu13==11.5.* is not served; the note on TensorRT
    11.5 names its own wheel, not torch's Python."""
    _nvidia_index_at(monkeypatch, f"http://127.0.0.1:{closed_port()}/")
    target = Target(M.os_info("ubuntu-22.04"), GpuTarget("H100", "9.0"), None, "install")
    plan = solve(M, target, Pins(tensorrt="latest", torch="latest"), served=_session(tmp_path).unserved)
    note = next(n for n in plan.notes if n.startswith("TensorRT 11.5 (newer) does not fit: "))
    assert note.startswith("TensorRT 11.5 (newer) does not fit: tensorrt-cu") and "==11.5.* is not on" in note
    assert "Python" not in note and plan.tensorrt.tensorrt == "11.4"
