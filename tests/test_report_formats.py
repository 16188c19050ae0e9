"""`check --format json|junit|markdown|github` and `--redact`, on the real H100 report and live runs."""
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from gpudoctor.render.redact import Redactor, redact
from gpudoctor.render import ci_formats

ROOT = Path(__file__).resolve().parent.parent
H100 = json.loads((ROOT / "docs" / "examples" / "h100-check.json").read_text())


def test_redaction_of_the_real_h100_report():
    text = json.dumps(H100)
    assert "GPU-90ef4900-6f7f-5542-665c-a90ea1c84b18" in text  # the real UUID is in the raw report
    red = json.dumps(redact(H100, Redactor(hostnames=[], users=[])))
    assert "90ef4900" not in red and "GPU-<uuid>" in red
    assert "580.159.04" in red and "/usr/local/cuda/bin/nvcc" in red  # versions and paths survive


def test_redaction_of_hosts_users_and_secrets():
    r = Redactor(hostnames=["gpu-node-17.example.org", "gpu-node-17"], users=["alice"])
    data = {"path": "/home/alice/venv/lib/libcudnn.so.9", "win": "C:\\Users\\bob\\cuda", "motd": "gpu-node-17 up",
            "vars": {"HF_TOKEN": "anything", "CUDA_HOME": "/usr/local/cuda-12.4", "NVCC_FLAGS": "-O2"},
            "log": "export X=ghp_abcdefghijklmnopqrstuvwxyz0123 and AKIAABCDEFGHIJKLMNOP", "owner": "alice built it"}
    out = r.value(data)
    assert out["path"] == "/home/<user>/venv/lib/libcudnn.so.9" and out["win"] == "C:\\Users\\<user>\\cuda"
    assert out["motd"] == "<host> up" and out["owner"] == "<user> built it"
    assert out["vars"] == {"HF_TOKEN": "<redacted>", "CUDA_HOME": "/usr/local/cuda-12.4", "NVCC_FLAGS": "-O2"}
    assert "ghp_" not in out["log"] and "AKIA" not in out["log"]
    assert data["vars"]["HF_TOKEN"] == "anything"  # the input is not modified


def test_junit_counts_failures_and_strict_warnings():
    root = ET.fromstring(ci_formats.junit(H100).split("\n", 1)[1])
    suite = root.find("testsuite")
    fails = sum(1 for f in H100["findings"] if f["severity"] == "fail")
    assert int(suite.get("tests")) == len(H100["findings"]) and int(suite.get("failures")) == fails
    strict = ET.fromstring(ci_formats.junit(H100, strict=True).split("\n", 1)[1]).find("testsuite")
    warns = sum(1 for f in H100["findings"] if f["severity"] == "warn")
    assert int(strict.get("failures")) == fails + warns
    names = [c.get("name") for c in suite.iter("testcase")]
    assert any(n.startswith("cudnn.mismatch: ") for n in names)


def test_github_annotations_and_step_summary(tmp_path):
    data = dict(H100, findings=H100["findings"] + [{"id": "x.y", "severity": "fail", "area": "cuda",
                                                    "title": "line one\nline two: 100%", "fixes": []}])
    summary = tmp_path / "summary.md"
    out = ci_formats.github(data, summary_path=str(summary))
    assert "::warning title=gpudoctor cudnn.mismatch::" in out
    assert "::error title=gpudoctor x.y::line one%0Aline two: 100%25" in out
    assert summary.read_text().startswith("## gpudoctor check:")


def test_markdown_lists_problems_with_fixes():
    md = ci_formats.markdown(H100)
    assert "| ! | 2 cuDNN libraries of different versions" in md and "### ! " in md and "**Fix 1:**" in md


def _check(*args, env_extra=None):
    env = dict(os.environ, PYTHONPATH=str(ROOT), **(env_extra or {}))
    return subprocess.run([sys.executable, "-m", "gpudoctor", "check", "--no-smoke", *args], capture_output=True,
                          text=True, timeout=300, env=env, cwd=ROOT)


def test_cli_formats_on_this_machine(tmp_path):
    token = "ghp_" + "a1B2" * 9
    md = _check("--format", "markdown", env_extra={"NVCC_APPEND_FLAGS": f"-DTOKEN={token}"})
    assert md.returncode == 1 and md.stdout.startswith("## gpudoctor check:")  # real failures on this machine
    assert token not in md.stdout  # markdown is redacted by default
    raw = _check("--format", "json", env_extra={"NVCC_APPEND_FLAGS": f"-DTOKEN={token}"})
    assert token in raw.stdout  # the report really carries it (NVCC_APPEND_FLAGS); json is not redacted unless asked
    red = _check("--format", "json", "--redact", env_extra={"NVCC_APPEND_FLAGS": f"-DTOKEN={token}"})
    assert token not in red.stdout and json.loads(red.stdout)["findings"]
    ju = _check("--format", "junit")
    assert ET.fromstring(ju.stdout.split("\n", 1)[1]).find("testsuite").get("failures") != "0"
