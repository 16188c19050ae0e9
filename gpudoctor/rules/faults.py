"""The invariant: every problem a probe recorded reaches the report.

Specific rules explain the problems they know (``toolkit.broken``, ``compiler.broken``,
``driver.not_loaded`` naming the failing ``nvidia-smi``, ...) and name the problem's path
in their evidence. :func:`unreported_problems` runs after every other rule and turns each
record that no warn/fail finding names into a finding of its own, so a tool that hung,
crashed, exited non-zero or printed garbage, a file that could not be read or a library
that would not load is never reported as fine. The finding keeps the tool's last words
(``stderr_tail``), which ``gpudoctor check`` reads with ``explain``'s knowledge
(:mod:`gpudoctor.explain.annotate`) to state the cause.
"""
from __future__ import annotations

import os
import re
import shlex
from typing import Iterable, List

from gpudoctor.process import problems as P
from gpudoctor.process.more_detail import instruction
from gpudoctor.findings import Finding, Fix, Severity

_COMMAND_KINDS = ("timeout", "signal", "exit", "not_found", "cannot_run", "unparsable")
#: Report area of each probe's problems (the console groups findings by area).
AREA = {"smoke_nvrtc": "smoke", "smoke_nvcc": "smoke", "smoke_tensorrt": "smoke", "smoke_multigpu": "smoke",
        "nccl": "multigpu", "engine": "tensorrt",
        "compilers": "toolkit"}


def inspect_fixes(rec: dict, os_family: str) -> tuple:
    """How to see for yourself what a failing tool or file is: run it by hand, then find out what it is."""
    path = rec["path"]
    q = shlex.quote(path)
    fixes = []
    if rec["kind"] in _COMMAND_KINDS and rec.get("command"):
        cmd = rec["command"].replace(" ...", "")
        asked = instruction(rec.get("stderr_tail"))
        if asked:  # the tool said how to learn more: the by-hand run does it that way
            fixes.append(Fix(f"Run it by hand the way it asks ({asked[0]}={asked[1]}) to see the details.",
                             (f"{asked[0]}={shlex.quote(asked[1])} timeout 10 {cmd}; echo \"exit code $?\"",)))
        else:
            fixes.append(Fix("Run it by hand to see what it does (it should answer within a second or two).",
                             (f"timeout 10 {cmd}; echo \"exit code $?\"",)))
    owner = f"dpkg -S {shlex.quote(os.path.realpath(path))}" if os_family == "debian" else \
        f"rpm -qf {shlex.quote(os.path.realpath(path))}" if os_family == "rhel" else None
    what = ["ls -l " + q, "file -L " + q] + ([owner] if owner else [])
    hint = {"signal": "A tool killed by a signal is a corrupt or foreign binary: reinstall the package that owns it.",
            "timeout": "A tool that hangs is often a wrapper script waiting on a network mount, a licence server or "
                       "a lock: find out what it is, and remove it from PATH or fix what it waits for.",
            "unreadable": "Restore read permission, or reinstall the package that owns it.",
            "unparsable": "A wrapper or a foreign program under this name answers differently from the real tool: "
                          "find out what it is."}.get(rec["kind"], "Find out what it is and which package owns it.")
    fixes.append(Fix(hint, tuple(what)))
    return tuple(fixes)


def _dist_fix(rec: dict) -> tuple:
    m = re.match(r"(.+?)-([^-]+)\.dist-info$", os.path.basename(rec["path"]))
    if not m:
        return ()
    name, version = m.group(1).replace("_", "-"), m.group(2)
    return (Fix("Reinstall the package so pip records its files again (its RECORD and METADATA).",
                (f"python -m pip install --force-reinstall --no-deps '{name}=={version}'",)),)


def _load_fix(rec: dict) -> tuple:
    q = shlex.quote(rec["path"])
    return (Fix("List what it needs and cannot find.", (f"ldd {q} | grep -E 'not found|=> /'",)),)


_IDS = {"unreadable": "file.unreadable", "load_error": "library.load_failed", "broken_dist": "python.broken_dist"}


def finding_for(rec: dict, area: str, os_family: str) -> Finding:
    """The generic finding for one problem record (used when no specific rule explains it)."""
    fid = _IDS.get(rec["kind"], "tool.failed")
    title = rec["what"] if rec["path"] in rec["what"] else f"{rec['path']}: {rec['what']}"
    # stderr_tail: the tool's own words; `gpudoctor check` reads them with explain's knowledge (explain.annotate)
    evidence = {k: rec[k] for k in ("path", "kind", "program", "command", "last_line", "stderr_tail") if rec.get(k)}
    fixes = _dist_fix(rec) if rec["kind"] == "broken_dist" else _load_fix(rec) if rec["kind"] == "load_error" else ()
    return Finding(fid, Severity.WARN, area, title, evidence=evidence, fixes=fixes + inspect_fixes(rec, os_family),
                   detail="gpudoctor could not use this, so the checks that need it are missing from this report.")


def _strings(value) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield str(k)
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)


def named_paths(findings: List[Finding]) -> set:
    """Every string in the evidence of warn/fail findings (a problem is explained when one of them is its path)."""
    out = set()
    for f in findings:
        if f.severity.rank >= Severity.WARN.rank:
            out.update(_strings(f.evidence))
    return out


def _shared_program(rec: dict) -> bool:
    """The record names the interpreter that runs gpudoctor's workers: one path for many different steps, so
    a finding explains it only when it names the step's command too (one crash explained hides no other)."""
    return bool(rec.get("command")) and rec["command"].startswith(rec["path"] + " -m gpudoctor.process.worker")


def unreported_problems(facts, findings: List[Finding], os_family: str) -> List[Finding]:
    """A generic finding for every recorded problem that no warn/fail finding names (by path), one per
    (path, kind), in probe order."""
    named = named_paths(findings)
    out, seen = [], set()
    for probe, probe_facts in facts.items():
        for rec in P.walk(probe_facts):
            key = (rec["path"], rec["kind"], rec.get("command") if _shared_program(rec) else None)
            explained = rec["path"] in named and (not _shared_program(rec) or rec.get("command") in named)
            if key in seen or explained:
                continue
            seen.add(key)
            out.append(finding_for(rec, AREA.get(probe, probe), os_family))
    return out
