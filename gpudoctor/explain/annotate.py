"""The tool's own words, read with ``explain``'s knowledge: a post-pass over a check's findings.

Every failed tool or step keeps its last words (``evidence["stderr_tail"]``, and ``evidence["rerun"]
["stderr_tail"]`` when it was rerun the way it asked, :mod:`gpudoctor.process.more_detail`; problem
records carry theirs, :mod:`gpudoctor.process.problems`). :func:`annotate` runs each warn/fail finding's
words through the signatures of ``gpudoctor explain`` (:func:`gpudoctor.explain.diagnose.diagnose_text`)
and states what it finds:

* ``evidence["said"]``: the line of the tool's output that matters (the matched one, else its last error line);
  the title says it ("nvcc ... could not be asked: nvcc exited with code 1; nvcc said: ...").
* ``evidence["cause"] = {"id", "title", "confidence", "score", "line"}``: the best diagnosis. At high
  confidence the title says it too and its fixes come first; at medium it is in ``detail`` and its fixes
  follow the finding's own; at low it is evidence only.
* ``evidence["provided_by"]``: for an import error (``No module named 'cuda.bindings'``, ``libX.so: cannot
  open shared object file``), the distribution that provides it (:mod:`gpudoctor.probes.providers`), with
  the exact ``pip install`` line, or where the installed package is shadowed.

The id stays the rule's (ids are stable) and so does the severity, except for the generic fallback
(``tool.failed``, ``library.load_failed``: "gpudoctor could not use this"), which fails when its tool's words
are read at high confidence as a failure class (``evidence["severity_from"]`` says so); the runtime-refusal
severity of a rule's own finding is the rule's call. Layering: explain (layer 5) reads the check's report (layer 4); ``gpudoctor check`` (cli, layer 6)
applies it before rendering. A check where nothing failed has no words to read: :func:`annotate` returns
at once, and the signatures are never loaded (this module imports only the standard library and
:mod:`gpudoctor.findings` until it has words to read).
"""
from __future__ import annotations

import dataclasses
import os
from typing import Dict, Iterable, List, Optional, Tuple

from gpudoctor.findings import Finding, Fix, Severity

__all__ = ["annotate", "annotate_findings", "words_of"]

#: What Python's and the loader's import errors say (a cheap test before the providers are looked up).
_IMPORT_MARKS = ("No module named", "cannot open shared object file")
#: Findings of the generic fallback (rules/faults.py): their warning means "gpudoctor could not use this", not a
#: judgement, so a confident reading of the tool's words that shows a failure makes them fail.
UNJUDGED = ("tool.failed", "library.load_failed")
#: Longest quote of a tool's line in a title (characters).
SAID_MAX = 160
# compiled on first use (re caches it): a healthy check never needs it
_ERRORISH = (r"(?i)error|fatal|fail|cannot|can't|could not|couldn't|not found|no such|invalid|unknown|"
             r"unsupported|denied|refused|mismatch|incompatible|abort|WARN")


def _strings(value) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)


def _records(probes) -> List[dict]:
    """Problem records that carry a tool's words, from a report's probe facts (``{name: ProbeResult|dict}``)."""
    from gpudoctor.process.problems import walk

    out = []
    for r in (probes or {}).values():
        facts = getattr(r, "facts", r)
        out += [rec for rec in walk(facts or {}) if rec.get("stderr_tail")]
    return out


def words_of(f: Finding, records: List[dict]) -> Tuple[Optional[str], Optional[str]]:
    """(the tool's words a finding rests on, the tool's path or None): its own ``stderr_tail`` (and its
    rerun's), else those of the problem records it names by path (a rule that explained a record, e.g.
    toolkit.broken)."""
    ev = f.evidence or {}
    rerun = ev.get("rerun") if isinstance(ev.get("rerun"), dict) else {}
    parts = [p for p in (ev.get("stderr_tail"), rerun.get("stderr_tail")) if isinstance(p, str) and p.strip()]
    path = next((ev[k] for k in ("tool", "path", "nvcc", "library") if isinstance(ev.get(k), str)), None)
    if not parts and records:
        # a record is this finding's when the finding names its path and quotes what failed (its "what" or last
        # line): a finding that only mentions the tool (toolkit.mixed naming an nvcc) is not about its failure
        named = set(_strings(ev)) | {f.title}
        hits = [rec for rec in records if rec["path"] in named and any(
            q and any(q in s for s in named) for q in (rec.get("what"), rec.get("last_line")))]
        parts = list(dict.fromkeys(rec["stderr_tail"] for rec in hits))
        path = hits[0]["path"] if hits else path
    return ("\n".join(parts) or None), path


def _said(text: str, matched: Optional[str]) -> str:
    """The line that matters, spaces collapsed: the matched one, else the first error-like line, else the last."""
    lines = [" ".join(l.split()) for l in ([matched] if matched else text.splitlines()) if l and l.strip()]
    import re

    errs = [l for l in lines if re.search(_ERRORISH, l)]
    return (errs[0] if errs else lines[-1] if lines else "")[:SAID_MAX]




def _provider_fix(missing: Dict[str, str]):
    """(evidence, fix, title words) for a missing module or library, or None when nothing knows who provides it."""
    import shlex

    from gpudoctor.probes.providers import pip_line, provider

    p = provider(**missing)
    if p is None:
        return None
    what = missing.get("module") or missing.get("library")
    dists = p["distributions"]
    kind = "module" if "module" in missing else "library"
    if p.get("shadowed"):
        owner = p["installed"][dists[0]]
        fix = Fix(f"{dists[0]} {owner['version']} is installed ({owner['file']}), but '{what.split('.')[0]}' resolves to "
                  f"{p['resolves_to']} first on this interpreter's path: rename or remove that, or take it off PYTHONPATH.",
                  (f"python -c \"import {what.split('.')[0]} as m; print(m.__path__ if hasattr(m, '__path__') else m.__file__)\"",
                   "echo \"PYTHONPATH=$PYTHONPATH\""))
        words = (f"'{what.split('.')[0]}' resolves to {p['resolves_to']}, which shadows the installed "
                 f"{', '.join(dists)}")
    elif p["installed"] and kind == "library" and os.path.isfile(p["installed"][dists[0]]["file"]):
        where = os.path.dirname(p["installed"][dists[0]]["file"])
        fix = Fix(f"{dists[0]} installed it in {where}, where the loader does not look: let it look there (or load it "
                  "the way its wheel's users do, through the package's own RPATH).",
                  (f"export LD_LIBRARY_PATH={shlex.quote(where)}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}",))
        words = f"library {what} is installed by {dists[0]} in {where}, off the loader's search path"
    elif p["installed"]:
        fix = Fix(f"{', '.join(dists)} provides it and is installed: reinstall it so its files are complete.",
                  (f"python -m pip install --force-reinstall --no-deps {dists[0]}",))
        words = f"{kind} {what} is provided by {dists[0]} (installed)"
    else:
        fix = Fix(f"Install the distribution that provides the {kind} {what}"
                  + (f" (also in: {', '.join(dists[1:])})" if len(dists) > 1 else "") + ".", (pip_line(dists),))
        words = f"{kind} {what} is provided by {dists[0]}, which is not installed"
    return p, fix, words


def _asked_fix(f: Finding, text: str, path: Optional[str], fixes) -> tuple:
    """Where the words say how to learn more and nothing reran the step that way, the fix says to."""
    import shlex

    from gpudoctor.process.more_detail import instruction

    asked = instruction(text)
    rerun = (f.evidence or {}).get("rerun")
    if asked is None or isinstance(rerun, dict) or any(f"{asked[0]}=" in c for fx in fixes for c in fx.commands):
        return ()
    setting = f"{asked[0]}={shlex.quote(asked[1])}"
    cmd = (f.evidence or {}).get("command")
    who = path.rsplit("/", 1)[-1] if path else "the tool"
    return (Fix(f"{who} says how to see more: run the failing step again with {asked[0]}={asked[1]}.",
                (f"{setting} {cmd}" if isinstance(cmd, str) and cmd else f"export {setting}   # then rerun the failing step",)),)


def _annotate_one(f: Finding, text: str, path: Optional[str], kb, lookup: bool = True) -> Finding:
    """``kb`` None: no time left to read the words with explain's knowledge (quote them only); ``lookup``:
    look up who provides a module or library an import error names."""
    from gpudoctor.probes.providers import missing_in

    ev = dict(f.evidence or {})
    ev.setdefault("stderr_tail", text)
    if kb is not None:
        from gpudoctor.explain.diagnose import confidence_label, diagnose_text

        diags = [d for d in diagnose_text(text, kb) if d.finding.severity.rank >= Severity.INFO.rank]
    else:
        diags = []
        ev["cause_not_read"] = ("the check's --timeout left no time to read these words with explain's knowledge: "
                                "paste the stderr_tail into `gpudoctor explain -`, or give the check a longer --timeout")
    best = diags[0] if diags else None
    matched = best.matches[0].line if best and best.matches else None
    said = _said(text, matched)
    title, detail, fixes, severity = f.title, f.detail, tuple(f.fixes), f.severity
    stated = ev.get("cause") if isinstance(ev.get("cause"), dict) else None  # a cause the rule itself named
    # the rule already named this cause (its id, or a cause it stated): keep its title and fixes
    known = best is not None and (best.finding.id == f.id or (stated is not None and stated.get("id") == best.finding.id))
    if stated is not None and best is not None and not known:  # explain reads it otherwise: evidence only
        ev["explain_cause"] = {"id": best.finding.id, "title": best.finding.title,
                               "confidence": confidence_label(best.score), "score": round(best.score, 3)}
        best = None
    if said:
        ev["said"] = said
    if said and said not in title and not known:
        title = f"{title}; {path.rsplit('/', 1)[-1] if path else 'it'} said: {said}"
    if best is not None:
        label = confidence_label(best.score)
        ev["cause"] = {"id": best.finding.id, "title": best.finding.title, "confidence": label,
                       "score": round(best.score, 3), "line": matched}
        meaning = f"{best.finding.title} [{best.finding.id}, {label} confidence]"
        if label == "high" and not known:
            title = f"{title} → {best.finding.title}"
            fixes = tuple(best.finding.fixes) + fixes
            if f.id in UNJUDGED and best.finding.severity.rank > severity.rank:
                # the fallback's warning meant "could not use it"; the tool's own words show what is broken
                severity = best.finding.severity
                ev["severity_from"] = f"the tool's own words ({best.finding.id}, {label} confidence)"
        elif label == "medium" and not known:
            fixes = fixes + tuple(best.finding.fixes)
        if label != "low" and not known:  # low confidence: evidence only (a guess is not a stated cause)
            detail = " ".join(x for x in (detail, f"Its own words mean: {meaning}.", best.finding.detail or "") if x)
    fixes = fixes + _asked_fix(f, text, path, fixes)
    missing = missing_in(text) if lookup else None
    found = _provider_fix(missing) if missing else None
    if found:
        ev["provided_by"], fix, words = found
        fixes = (fix,) + fixes
        title = f"{title} ({words})"
    return dataclasses.replace(f, title=title, detail=detail, evidence=ev, fixes=fixes, severity=severity)


def _import_error_only(f: Finding) -> Finding:
    """A finding without a tool's tail whose evidence quotes Python's import error (a rule that reported
    ``import_error``): name the distribution that provides the missing module."""
    from gpudoctor.probes.providers import missing_in

    missing = next((m for s in _strings(f.evidence or {}) for m in [missing_in(s)] if m), None)
    found = _provider_fix(missing) if missing else None
    if not found:
        return f
    ev = dict(f.evidence or {})
    ev["provided_by"], fix, words = found
    return dataclasses.replace(f, title=f"{f.title} ({words})", evidence=ev, fixes=(fix,) + tuple(f.fixes))


#: What loading the signatures and reading one finding's words take on a loaded machine (s): the reading is
#: skipped (the words are still quoted) when the check's --timeout does not leave that much.
KB_LOAD_S, PER_FINDING_S = 1.0, 0.2


def annotate_findings(findings: List[Finding], probes=None, kb=None, seconds: Optional[float] = None) -> List[Finding]:
    """``findings`` with every warn/fail one that has a tool's words read (see the module docstring); the
    same list object when none has (nothing imported, nothing loaded). ``seconds``: what is left of the
    check's --timeout; the signatures are loaded and read only while that lasts (the words are always quoted)."""
    import time

    deadline = time.monotonic() + seconds if seconds is not None else None
    records = None
    todo = []
    for i, f in enumerate(findings):
        if f.severity.rank < Severity.WARN.rank:
            continue
        if records is None:
            records = _records(probes)
        text, path = words_of(f, records)
        if text:
            todo.append((i, text, path))
        elif any(m in s for s in _strings(f.evidence or {}) for m in _IMPORT_MARKS):
            todo.append((i, None, None))
    if not todo:
        return findings
    if kb is None and any(text for _, text, _ in todo) and (deadline is None or deadline - time.monotonic() > KB_LOAD_S):
        from gpudoctor.explain.kb import load_kb

        kb = load_kb()
    out = list(findings)
    for i, text, path in todo:
        if deadline is not None and deadline - time.monotonic() <= PER_FINDING_S:  # quote the words, read nothing
            out[i] = _annotate_one(findings[i], text, path, None, lookup=False) if text else findings[i]
        else:
            out[i] = _annotate_one(findings[i], text, path, kb) if text else _import_error_only(findings[i])
    out.sort(key=lambda f: -f.severity.rank)  # stable: the check's order, worst first (a fallback may now fail)
    return out


#: Kept back from --timeout for rendering the report (s).
RENDER_S = 0.3


def annotate(report, timeout: Optional[float] = None) -> None:
    """Read the tool's words of a :class:`gpudoctor.check.Report`'s findings, in place, within what is left
    of the check's ``timeout`` (s; None: no limit)."""
    left = None if timeout is None else timeout - report.elapsed_s - RENDER_S
    report.findings = annotate_findings(report.findings, report.probes, seconds=left)
