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
