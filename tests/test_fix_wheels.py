"""`check`'s fixes that pin a pip wheel are checked against the index (issue 26): an unserved pin gets a note
naming the versions served; a served one and an unreachable index change nothing; a report without such a
fix never imports the index machinery."""
import subprocess
import sys

import pytest

from gpudoctor.findings import Finding, Fix, Severity
from gpudoctor.install.fix_check import check_fix_wheels, pip_pins
from loopback_index import LoopbackIndex, closed_port


class _Report:  # the two things check_fix_wheels reads of gpudoctor.check.Report
    def __init__(self, *findings):
        self.findings = list(findings)


def _finding(cmd, severity=Severity.FAIL):
    return Finding("tensorrt.python_missing", severity, "tensorrt", "TensorRT's Python bindings are missing",
                   fixes=(Fix("Install TensorRT's Python wheel.", (cmd,)),))


@pytest.fixture
def idx(monkeypatch):
    with LoopbackIndex() as server:
        monkeypatch.setenv("PIP_INDEX_URL", server.url + "/simple")
        yield server


def test_pip_pins_reads_the_requirements_a_command_pins():
    assert pip_pins("python -m pip install 'tensorrt-cu12==11.5.*'   # x86-64") == [("tensorrt-cu12==11.5.*", None)]
    assert pip_pins("python -m pip install --force-reinstall torch --index-url https://x/whl/cu128") == []
    assert pip_pins("python -m pip install 'torch==2.9.*' --index-url https://x/whl/cu128") == \
        [("torch==2.9.*", "https://x/whl/cu128")]
    assert pip_pins("sudo apt-get install -y libcudnn9-cuda-12") == []


def test_an_unserved_pin_gets_a_note_with_the_served_versions(idx):
    report = _Report(_finding("python -m pip install 'tensorrt-cu12==11.5.*'"),
                     _finding("python -m pip install 'tensorrt-cu12==11.4.*'"))
    assert check_fix_wheels(report) == 1
    noted, kept = report.findings[0].fixes[0].summary, report.findings[1].fixes[0].summary
    assert "NOTE: tensorrt-cu12==11.5.* is not on" in noted and "newest served: 11.4.0.106" in noted
    assert kept == "Install TensorRT's Python wheel."


def test_an_unreachable_index_changes_no_fix(monkeypatch):
    monkeypatch.setenv("PIP_INDEX_URL", f"http://127.0.0.1:{closed_port()}/simple")
    report = _Report(_finding("python -m pip install 'tensorrt-cu12==11.5.*'"))
    before = list(report.findings)
    assert check_fix_wheels(report) == 0 and report.findings == before


def test_a_healthy_report_asks_no_index_and_imports_no_http_library(idx):
    code = ("import sys\n"
            "from gpudoctor.findings import Finding, Fix, Severity\n"
            "from gpudoctor.install.fix_check import check_fix_wheels\n"
            "class R: findings = [Finding('driver.ok', Severity.OK, 'driver', 'ok', fixes=(Fix('x', (\"python -m pip "
            "install 'tensorrt-cu12==11.5.*'\",)),))]\n"
            "assert check_fix_wheels(R()) == 0\n"
            "assert not {'requests', 'urllib3', 'gpudoctor.install.verify'} & set(sys.modules), sys.modules\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert idx.requests == []


def test_an_os_package_a_fix_installs_is_asked_of_the_repositories_this_os_uses(monkeypatch, tmp_path):
    """On Debian 12 (the platform probe's facts), a fix's ``apt-get install`` packages are asked of NVIDIA's
    repository and Debian's archive (served here from loopback: Debian's recorded bookworm Packages, NVIDIA's
    FAKE debian12 Packages): one neither serves gets a note; one Debian serves, or one only NVIDIA's has,
    does not."""
    from types import SimpleNamespace

    from gpudoctor.install import apt_index
    from gpudoctor.install.fix_check import os_packages
    from tests.test_apt_index import _Server, debian

    server = _Server()
    try:
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
        monkeypatch.setattr(apt_index, "repository_for", lambda info, kind="nvidia": (
            server.url + "/nvidia/debian12/x86_64/Packages.gz" if kind == "nvidia" else debian(server)))
        platform = SimpleNamespace(facts={"system": "Linux", "os": {"id": "debian", "version_id": "12"}})

        def report(*cmds):
            r = _Report(*[_finding(c) for c in cmds])
            r.probes = {"platform": platform}
            return r

        r = report("sudo apt-get install -y libcudnn9-cuda-12", "sudo apt-get install -y nvidia-cuda-toolkit g++-11",
                   "sudo apt-get install -y libcudnn9-cuda-99 linux-headers-$(uname -r)")
        assert check_fix_wheels(r) == 1
        assert [f.fixes[0].summary.endswith("wheel.") for f in r.findings] == [True, True, False]
        assert "libcudnn9-cuda-99 is in none of" in r.findings[2].fixes[0].summary
    finally:
        server.close()
    assert os_packages("sudo apt-get install -y linux-headers-$(uname -r) nvidia-driver && sudo reboot") == \
        [("apt", "nvidia-driver")]
    assert os_packages("sudo dnf install -y kernel-devel-$(uname -r)") == []


def test_os_packages_are_answered_from_the_cache_only_when_check_asks(monkeypatch, tmp_path):
    """`check` passes ask_os_indexes=False: an OS repository's index (megabytes) is never fetched for a fix, only
    read from what `gpudoctor install` cached; the loopback repository sees no request."""
    from types import SimpleNamespace

    from gpudoctor.install import apt_index
    from tests.test_apt_index import _Server, debian

    server = _Server()
    try:
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
        monkeypatch.setattr(apt_index, "repository_for", lambda info, kind="nvidia": debian(server))
        r = _Report(_finding("sudo apt-get install -y libcudnn9-cuda-99"))
        r.probes = {"platform": SimpleNamespace(facts={"system": "Linux", "os": {"id": "debian", "version_id": "12"}})}
        assert check_fix_wheels(r, ask_os_indexes=False) == 0 and server.requests == []
        assert check_fix_wheels(r) == 1  # asked: fetched and cached
        apt_index._MEMO.clear()
        r.findings = [_finding("sudo apt-get install -y libcudnn9-cuda-99")]
        n = len(server.requests)
        assert check_fix_wheels(r, ask_os_indexes=False) == 1 and len(server.requests) == n  # from the cache
    finally:
        server.close()
