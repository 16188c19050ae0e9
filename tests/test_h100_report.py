"""Regression on a real report: the facts `gpudoctor check --json` collected on the lent H100
(docs/examples/h100-check.json) must judge to a healthy stack, with both smoke tests passing."""
from __future__ import annotations

import json
import os

from gpudoctor.findings import Severity
from tests.conftest import ROOT, by_id, judge


def _facts():
    with open(os.path.join(ROOT, "docs", "examples", "h100-check.json")) as fh:
        rep = json.load(fh)
    return {n: p["facts"] for n, p in rep["probes"].items() if p["status"] == "ok"}


def test_h100_report_has_no_failures_or_warnings():
    findings = judge(_facts())
    bad = [f"{f.id}: {f.title}" for f in findings if f.severity.rank >= Severity.WARN.rank]
    assert not bad, bad


def test_h100_report_positive_checks():
    findings = judge(_facts())
    assert by_id(findings, "driver.ok") and "580.159.04" in by_id(findings, "driver.ok")[0].title
    (g,) = by_id(findings, "gpu.health")
    assert g.severity == Severity.OK and "compute capability 9.0" in g.title
    assert [f for f in by_id(findings, "smoke.nvrtc", Severity.OK) if "sm_90" in f.title]
    assert [f for f in by_id(findings, "smoke.nvcc", Severity.OK) if "13.0" in f.title]
    assert by_id(findings, "arch.binary_ok")
