"""``environment.breaks_step``: a failed step that passes without part of the user's environment.

Reads every ``"differential"`` fact a probe attached to a failed step (any probe, any depth; see
:func:`gpudoctor.process.differential.explain_failure`), so a new caller (NCCL, a worker) needs no
rule of its own. A verified answer is a failure whose fix is the shell edit that was rerun and passed.
"""
from __future__ import annotations

import json
import shlex
from typing import Iterator, List

from gpudoctor.rules.loader import damaged_explains
from gpudoctor.findings import Finding, Fix, Severity

#: Report area of each probe's steps (the console groups findings by area).
AREA = {"smoke_nvcc": "smoke", "toolkit": "toolkit", "smoke_multigpu": "multigpu", "nccl": "multigpu"}


def _walk(value) -> Iterator[dict]:
    if isinstance(value, dict):
        for k, v in value.items():
            if k == "differential" and isinstance(v, dict) and "clean_base_passes" in v:
                yield v
            else:
                yield from _walk(v)
    elif isinstance(value, list):
        for v in value:
            yield from _walk(v)


def _grouped(facts) -> List[tuple]:
    """(probe, differential) pairs, one per step and answer: copies of one tool that fail the same way
    for the same variables (a wrapper and its target, two nvcc of one toolkit) are one finding naming every path."""
    groups: dict = {}
    for probe, probe_facts in facts.items():
        for d in _walk(probe_facts):
            key = (d.get("step"), json.dumps(d.get("culprits"), sort_keys=True), d.get("verified"), d.get("clean_base_passes"))
            if key in groups:
                merged = groups[key][1]
                merged["paths"] = list(dict.fromkeys(merged["paths"] + list(d.get("paths") or [])))
            else:
                groups[key] = (probe, dict(d, paths=list(d.get("paths") or [])))
    return list(groups.values())


def _shown(c: dict) -> str:
    """One culprit as a reader sees it; a secret-looking variable by name only."""
    if "entry" in c:
        return f"the {c['var']} entry {c['entry'] or '(empty: the current directory)'}"
    if c.get("secret"):
        return f"{c['var']} (value not shown)"
    return f"{c['var']}={c['value']}"


def verified_cause(differential, facts=None) -> str:
    """"fails only because of X=... (see environment.breaks_step)" for a verified differential, else ""
    (other rules' titles use it, so a tool is not blamed for what the environment did). With ``facts``, a
    cause that only puts a damaged file in the loader's way points at library.damaged, which says it."""
    if not isinstance(differential, dict) or not differential.get("verified") or not differential.get("culprits"):
        return ""
    see = "library.damaged" if facts is not None and damaged_explains(facts, differential["culprits"]) \
        else "environment.breaks_step"
    return f"fails only because of {', '.join(_shown(c) for c in differential['culprits'])} (see {see})"


def _cap(step: str) -> str:
    return "The" + step[3:] if step.startswith("the ") else step


def _commands(fix: dict) -> tuple:
    return tuple(f"unset {k}" for k in fix.get("unset") or ()) + tuple(
        f"export {k}={shlex.quote(v)}" for k, v in (fix.get("set") or {}).items())


def _where_set(fix: dict) -> tuple:
    names = list(fix.get("unset") or ()) + list(fix.get("set") or ())
    if not names:
        return ()
    rx = "|".join(names)
    return (Fix("Find where it is set, so the fix outlives this shell (shell start-up files, module files, a job script).",
                (f"grep -nE '{rx}' ~/.bashrc ~/.bash_profile ~/.profile ~/.zshrc /etc/environment /etc/profile.d/* 2>/dev/null",)),)


def environment_breaks_step(facts, ctx) -> List[Finding]:
    """One finding per failed step whose clean-base rerun passed: fail when the culprits are verified (the
    step passes in the user's environment without them), else warn with what was found and why it stopped."""
    out = []
    for probe, d in _grouped(facts):
        if not d.get("clean_base_passes"):
            continue  # fails in the clean base too (or said nothing): the environment is not shown to be the cause
        if damaged_explains(facts, d.get("culprits")):
            continue  # the culprits only put a damaged file in the loader's way: library.damaged says it once
        step = d.get("step") or "the step"
        paths = d.get("paths") or []
        where = f" ({paths[0]}" + (f" and {len(paths) - 1} other cop{'y' if len(paths) == 2 else 'ies'}" if len(paths) > 1 else "") + ")" if paths else ""
        culprits = d.get("culprits") or []
        ev = {"step": step, "path": paths[0] if paths else None, "paths": paths, "program": d.get("program"),
              "command": d.get("command"),
              "culprits": culprits, "verified": d.get("verified"), "reruns": d.get("reruns"),
              "seconds": d.get("seconds"), "clean_base": d.get("base"), "stopped": d.get("stopped")}
        ev = {k: v for k, v in ev.items() if v not in (None, [], "")}
        area = AREA.get(probe, probe)
        names = " and ".join(_shown(c) for c in culprits)
        base = d.get("base") or {}
        clean = "env -i " + " ".join(f'{k}="${k}"' for k in base.get("kept") or ()) + \
            f" PATH={base.get('PATH', '/usr/bin:/bin')} {d.get('command') or ''}".rstrip()
        detail = (f"gpudoctor reran {step} in a clean environment (PATH={base.get('PATH')}"
                  + (", " + ", ".join(base.get("kept")) + " kept" if base.get("kept") else "")
                  + f"), where it passed, then narrowed your environment's {d.get('deltas')} differences from it "
                  f"by delta debugging ({d.get('reruns')} reruns, {d.get('seconds')} s).")
        if culprits and d.get("verified"):
            out.append(Finding(
                "environment.breaks_step", Severity.FAIL, area,
                f"{_cap(step)}{where} succeeds without {names}: verified",
                evidence=ev, detail=detail + " Your environment with only that removed passes: this is the cause.",
                fixes=(Fix("Remove it from the environment (verified: the step then passes).", _commands(d.get("fix") or {})),)
                + _where_set(d.get("fix") or {})))
        elif culprits:
            what = ("removing it alone did not make it pass" if d.get("verified") is False
                    else f"not verified: {d.get('stopped') or 'the rerun said nothing'}")
            narrowed = "" if d.get("minimal", True) else f" (narrowed to {len(culprits)} differences; {d.get('stopped')})"
            out.append(Finding(
                "environment.breaks_step", Severity.WARN, area,
                f"{_cap(step)}{where} fails with {names}{narrowed}; {what}",
                evidence=ev, detail=detail,
                fixes=(Fix("Try it without them.", _commands(d.get("fix") or {})),
                       Fix("Or run it in the clean environment to compare.", (clean,)))))
        else:
            out.append(Finding(
                "environment.breaks_step", Severity.WARN, area,
                f"{_cap(step)}{where} passes in a clean environment; the variable that breaks it "
                f"was not found ({d.get('stopped') or 'no single difference brings the failure back'})",
                evidence=ev, detail=detail,
                fixes=(Fix("Run it in the clean environment, then add your variables back until it fails.", (clean,)),)))
    return out
