"""Report formats for CI and issues, rendered from the report's JSON data (after redaction):

* ``markdown``: a summary table and every warning/failure with its evidence and fixes (for issues and
  GitHub step summaries);
* ``github``: workflow commands (``::error``/``::warning``/``::notice`` annotations) on stdout, and
  the markdown appended to ``$GITHUB_STEP_SUMMARY`` when that file is set;
* ``junit``: one ``<testcase>`` per finding (failures for ``fail``, and for ``warn`` with --strict)
  for CI test-report viewers.
"""
from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from typing import Any, Dict, List, Mapping, Optional

__all__ = ["FORMATS", "github", "junit", "markdown"]

FORMATS = ("console", "json", "junit", "markdown", "github")
_MARK = {"ok": "✓", "info": "•", "warn": "!", "fail": "✗"}


def _bad(findings: List[Dict[str, Any]], levels=("fail", "warn")) -> List[Dict[str, Any]]:
    return [f for f in findings if f.get("severity") in levels]


def markdown(data: Mapping[str, Any]) -> str:
    s = data.get("summary") or {}
    findings = data.get("findings") or []
    out = [f"## gpudoctor check: {s.get('fail', 0)} failure(s), {s.get('warn', 0)} warning(s), "
           f"{s.get('ok', 0)} passed",
           "",
           f"gpudoctor {data.get('gpudoctor_version')} · matrix {data.get('matrix_data_version')} · "
           f"{data.get('elapsed_s')} s",
           "",
           "| | finding | id |", "| --- | --- | --- |"]
    for f in findings:
        out.append(f"| {_MARK.get(f['severity'], '?')} | {_cell(f['title'])} | `{f['id']}` |")
    for f in _bad(findings):
        out += ["", f"### {_MARK[f['severity']]} {f['title']} (`{f['id']}`)"]
        if f.get("detail"):
            out += ["", f["detail"]]
        if f.get("evidence"):
            out += ["", "<details><summary>evidence</summary>", "", "```"]
            out += [f"{k}: {v}" for k, v in f["evidence"].items()]
            out += ["```", "", "</details>"]
        for i, fx in enumerate(f.get("fixes") or [], 1):
            out += ["", f"**Fix {i}:** {fx['summary']}"]
            if fx.get("commands"):
                out += ["", "```" + ("powershell" if fx.get("shell") == "powershell" else "sh")] + fx["commands"] + ["```"]
        if f.get("doc"):
            out += ["", f"Docs: {f['doc']}"]
    return "\n".join(out) + "\n"


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _escape_data(text: str) -> str:
    # Workflow-command escaping (actions/toolkit: escapeData / escapeProperty).
    return str(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_prop(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github(data: Mapping[str, Any], summary_path: Optional[str] = None) -> str:
    """Annotation lines for stdout; the markdown goes to ``summary_path`` (default $GITHUB_STEP_SUMMARY)."""
    kind = {"fail": "error", "warn": "warning", "info": "notice"}
    lines = []
    for f in data.get("findings") or []:
        if f["severity"] in kind:
            fix = (f.get("fixes") or [{}])[0]
            msg = f["title"] + (f" — fix: {fix['summary']}" if fix.get("summary") else "")
            lines.append(f"::{kind[f['severity']]} title={_escape_prop('gpudoctor ' + f['id'])}::{_escape_data(msg)}")
    path = summary_path if summary_path is not None else os.environ.get("GITHUB_STEP_SUMMARY")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(markdown(data))
    return "\n".join(lines) + ("\n" if lines else "")


def junit(data: Mapping[str, Any], strict: bool = False) -> str:
    findings = data.get("findings") or []
    failing = ("fail", "warn") if strict else ("fail",)
    suite = ET.Element("testsuite", name="gpudoctor", tests=str(len(findings)),
                       failures=str(sum(1 for f in findings if f["severity"] in failing)), errors="0", skipped="0",
                       time=str(data.get("elapsed_s", 0)))
    for f in findings:
        case = ET.SubElement(suite, "testcase", classname=f"gpudoctor.{f.get('area', 'check')}",
                             name=f"{f['id']}: {f['title'][:100]}")
        body = [f["title"]] + ([f["detail"]] if f.get("detail") else []) + \
            [f"fix: {fx['summary']}" + "".join(f"\n  $ {c}" for c in fx.get("commands") or []) for fx in f.get("fixes") or []]
        if f["severity"] in failing:
            fail = ET.SubElement(case, "failure", message=f["title"], type=f["severity"])
            fail.text = "\n".join(body)
        else:
            out = ET.SubElement(case, "system-out")
            out.text = "\n".join(body)
    root = ET.Element("testsuites")
    root.append(suite)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
