"""Policies: --require and gpudoctor.toml / [tool.gpudoctor], judged on real facts (the H100 report and
this machine's driver-535 user space)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpudoctor.rules.requirements import PolicyError, actual_values, load_policy, parse_requirement

ROOT = Path(__file__).resolve().parent.parent
H100 = json.loads((ROOT / "docs" / "examples" / "h100-check.json").read_text())
FACTS = {k: v.get("facts") or {} for k, v in H100["probes"].items()}


@pytest.mark.parametrize("name,expected", [
    ("driver", ["580.159.04"]), ("driver.cuda", ["13.0"]), ("cuda", ["13.0"]), ("cudnn", ["9.14.0", "9.19.0"]),
    ("torch", ["2.11.0"]), ("torch.cuda", ["13.0"]), ("gpu.count", ["1"]), ("gpu.cc", ["9.0"]), ("python", ["3.12.3"]),
])
def test_values_from_the_real_h100_report(name, expected):
    assert actual_values(FACTS, name)[0] == expected


@pytest.mark.parametrize("text,ok", [
    ("cuda>=12.4", True), ("cuda>=13.1", False), ("driver>=550", True), ("driver>=590", False),
    ("cudnn==9.*", True), ("cudnn>=9.19", False),  # every cuDNN copy must match: apt's 9.14 does not
    ("torch.arch>=sm_90", True), ("torch.arch>=sm_130", False), ("torch.arch==sm_86", True),
    ("gpu.count>=2", False), ("gpu.cc>=8.0", True), ("tensorrt>=10", False),  # no TensorRT there
])
def test_requirements_on_the_h100(text, ok):
    req = parse_requirement(text)
    assert req.check(actual_values(FACTS, req.name)[0]) is ok


@pytest.mark.parametrize("text", ["cuda>>12", "cuda", "cudnn 9", "vram>=80", "torch.arch>=90", "python>=three"])
def test_bad_requirements_are_refused(text):
    with pytest.raises(PolicyError):
        parse_requirement(text)


def test_policy_files(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n[tool.gpudoctor]\nrequire = ["cuda>=12.4"]\nstrict = true\n')
    p = load_policy(["driver>=550"], tmp_path)
    assert [r.text for r in p.requirements] == ["cuda>=12.4", "driver>=550"] and p.strict
    (tmp_path / "gpudoctor.toml").write_text('require = ["cudnn==9.*"]\ntarget-gpu = "H100"\n')
    p = load_policy([], tmp_path)  # gpudoctor.toml wins over pyproject.toml
    assert [r.text for r in p.requirements] == ["cudnn==9.*"] and p.target_gpus == ["H100"]
    (tmp_path / "gpudoctor.toml").write_text('requires = ["cuda>=12"]\n')
    with pytest.raises(PolicyError, match="unknown key"):
        load_policy([], tmp_path)
    (tmp_path / "gpudoctor.toml").write_text('require = [\n')
    with pytest.raises(PolicyError, match="cannot be read"):
        load_policy([], tmp_path)


def _check(cwd, *args):
    return subprocess.run([sys.executable, "-m", "gpudoctor", "check", "--no-smoke", "--json", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300, env=dict(os.environ, PYTHONPATH=str(ROOT)))


def test_check_applies_the_policy_file_on_this_machine(tmp_path):
    """This machine has the real driver-535 user space (CUDA 12.2)."""
    (tmp_path / "gpudoctor.toml").write_text('require = ["driver>=550", "driver.cuda>=12.2"]\n')
    out = _check(tmp_path)
    found = {f["evidence"]["requirement"]: f for f in json.loads(out.stdout)["findings"] if f["id"].startswith("policy.")}
    assert found["driver>=550"]["id"] == "policy.unmet" and found["driver>=550"]["evidence"]["actual"] == ["535.261.03"]
    assert found["driver.cuda>=12.2"]["id"] == "policy.met"
    assert out.returncode == 1
    bad = _check(tmp_path, "--require", "vram>=80")
    assert bad.returncode == 2 and "unknown name 'vram'" in bad.stderr
