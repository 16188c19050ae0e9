"""Pip-only plans resolved for real: the plan's pip requirements handed to pip itself (`pip install --dry-run
--report`, a fresh venv of this Python, against PyPI) on this machine, a Debian 12 host as the plans are made
for. What the plan's verification says must be what pip then does: a requirement it calls served resolves to a
served version; the TensorRT requirement it calls unverified because pypi.nvidia.com does not answer fails in
pip with the wheel-stub's own words about that host. Needs PyPI (skips without it; fails in CI)."""
import json
import os
import subprocess
import sys

import pytest
from packaging.requirements import Requirement

from conftest import REQUIRE_REAL


@pytest.fixture(scope="module")
def pypi():
    import requests

    try:
        requests.head("https://pypi.org/simple/", timeout=10)
    except requests.RequestException as exc:
        if REQUIRE_REAL:
            pytest.fail(f"PyPI unreachable: {exc}")
        pytest.skip(f"PyPI unreachable: {exc}")


def _clean_env(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1", HOME=str(tmp_path))
    return env


def _plan(tmp_path, *args):
    out = subprocess.run([sys.executable, "-m", "gpudoctor", "install", "--os", "debian-12", "--gpu", "H100",
                          "--pip-only", "--json", *args], capture_output=True, text=True, timeout=120,
                         env=_clean_env(tmp_path))
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _dry_run(tmp_path, requirements):
    venv = tmp_path / "venv"
    if not venv.exists():
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    report = tmp_path / "report.json"
    # this venv's own pip, run from the test's interpreter against the fresh venv's Python: no packages of ours
    res = subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
                          "--dry-run", "--ignore-installed", "--report", str(report), "--index-url",
                          "https://pypi.org/simple", *requirements], capture_output=True, text=True, timeout=600,
                         env=_clean_env(tmp_path))
    resolved = {}
    if res.returncode == 0:
        resolved = {i["metadata"]["name"].lower(): i["metadata"]["version"]
                    for i in json.loads(report.read_text())["install"]}
    return res, resolved


@pytest.mark.skipif(sys.version_info[:2] != (3, 11), reason="Debian 12's Python is 3.11: the plans are made for it")
@pytest.mark.parametrize("cuda", ["12", "13"])
def test_a_plan_pip_resolves_as_its_verification_says(pypi, tmp_path, cuda):
    plan = _plan(tmp_path, "--cuda", cuda, "--tensorrt", "none")
    checks = plan["verification"]["checks"]
    reqs = [r["requirement"] for r in plan["pip"]]
    assert reqs and all(c["status"] == "served" for c in checks if c["kind"] == "pip"), checks
    res, resolved = _dry_run(tmp_path, reqs)
    assert res.returncode == 0, res.stderr[-2000:]
    for text in reqs:
        req = Requirement(text)
        assert req.specifier.contains(resolved[req.name.lower()]), (text, resolved)


@pytest.mark.skipif(sys.version_info[:2] != (3, 11), reason="Debian 12's Python is 3.11: the plans are made for it")
def test_the_tensorrt_requirement_fails_in_pip_exactly_when_its_verification_says_it_cannot_be_had(pypi, tmp_path):
    plan = _plan(tmp_path, "--cuda", "13", "--tensorrt", "latest", "--cudnn", "none")
    (trt,) = [c for c in plan["verification"]["checks"] if c["name"].startswith("tensorrt")]
    res, _ = _dry_run(tmp_path, [trt["requirement"]])
    if trt["status"] == "served":  # pypi.nvidia.com answers where this runs: pip builds the stub and gets it
        assert res.returncode == 0, res.stderr[-2000:]
    else:
        assert trt["status"] == "unverified" and "https://pypi.nvidia.com/" in trt["reason"], trt
        assert res.returncode != 0
        words = " ".join(res.stdout.split() + res.stderr.split())
        assert "downloads a real wheel package from https://pypi.nvidia.com/" in words, words[-3000:]
