"""Regression on a real report: the facts `gpudoctor check --json` collected on the lent H100
(docs/examples/h100-check.json) must judge to a healthy stack, with both smoke tests passing."""
from __future__ import annotations

import json
import os

from gpudoctor.findings import Severity
from tests.conftest import ROOT, by_id, judge


def _facts(name="h100-check.json"):
    with open(os.path.join(ROOT, "docs", "examples", name)) as fh:
        rep = json.load(fh)
    return {n: p["facts"] for n, p in rep["probes"].items() if p["status"] == "ok"}


def test_h100_report_has_no_failures_and_one_true_warning():
    """The image really carries two cuDNNs: apt's 9.14 (ldconfig) and torch's pip 9.19."""
    findings = judge(_facts())
    bad = [f for f in findings if f.severity.rank >= Severity.WARN.rank]
    assert [f.id for f in bad] == ["cudnn.mismatch"], [f.title for f in bad]
    assert "9.14.0, 9.19.0" in bad[0].title and bad[0].severity == Severity.WARN


def test_h100_with_cuda_visible_devices_1_hides_the_only_gpu():
    """Real run on the one-GPU H100 with CUDA_VISIBLE_DEVICES=1."""
    facts = _facts("h100-cuda-visible-devices-1.json")
    assert facts["cuda"]["api"]["cuInit"]["result"] == "CUDA_ERROR_NO_DEVICE"
    (f,) = by_id(judge(facts), "device.not_visible")
    assert f.severity == Severity.FAIL and "index 1 is out of range" in f.title


def test_h100_report_positive_checks():
    findings = judge(_facts())
    assert by_id(findings, "driver.ok") and "580.159.04" in by_id(findings, "driver.ok")[0].title
    (g,) = by_id(findings, "gpu.health")
    assert g.severity == Severity.OK and "compute capability 9.0" in g.title
    assert [f for f in by_id(findings, "smoke.nvrtc", Severity.OK) if "sm_90" in f.title]
    assert [f for f in by_id(findings, "smoke.nvcc", Severity.OK) if "13.0" in f.title]
    assert by_id(findings, "arch.binary_ok")
