"""``probe.implausible_value``: a library, tool or kernel file answered a value that cannot be what it claims
(driver version "1", CUDA version "0.0", compute capability "99.9"). The probe left it out of the facts
(:mod:`gpudoctor.probes.facts`), so no version rule judged it; this says which file answered and how to see it."""
from __future__ import annotations

import os
import shlex

from gpudoctor.findings import Finding, Fix, Severity
from gpudoctor.process import problems as P
from gpudoctor.rules.faults import AREA

#: How to ask the same thing by hand, by the prefix of the call that answered.
ASK_BY_HAND = (
    ("nvml", "nvidia-smi --query-gpu=driver_version,name,uuid,compute_cap,memory.total --format=csv"),
    ("nvidia-smi", "nvidia-smi --query-gpu=driver_version --format=csv,noheader"),
    ("NVRM", "cat /proc/driver/nvidia/version"),
    ("cu", "python3 -c 'from cuda.bindings import driver as d; print(d.cuDriverGetVersion())'"),
)


def implausible_values(facts, ctx):
    """One FAIL per file that answered implausible values (every value it gave that a probe rejected)."""
    groups: dict = {}
    ld_path = [e for e in (facts["environment"].get("ld_library_path") or []) if isinstance(e, dict)]
    for probe, probe_facts in facts.items():
        for rec in P.walk(probe_facts):
            if rec["kind"] != "implausible":
                continue
            area, recs = groups.setdefault((rec["path"], rec.get("via")), (AREA.get(probe, probe), {}))
            recs.setdefault((rec.get("call"), rec.get("value")), rec)
    return [_finding(list(recs.values()), area, ld_path, ctx) for area, recs in groups.values()]


def _finding(recs: list, area: str, ld_path: list, ctx) -> Finding:
    path, via = recs[0]["path"], recs[0].get("via")
    fixes = []
    if os.path.isabs(path):
        q = shlex.quote(path)
        owner = (f"dpkg -S {shlex.quote(os.path.realpath(path))}" if ctx.os.family == "debian" else
                 f"rpm -qf {shlex.quote(os.path.realpath(path))}" if ctx.os.family == "rhel" else None)
        fixes.append(Fix("See which file answered and which package owns it: a truncated, damaged or foreign copy "
                         "answers garbage; reinstall the owner, or remove a copy no package owns.",
                         tuple(["ls -lL " + q, "file -L " + q] + ([owner] if owner else []))))
        entry = os.path.dirname(path)
        if any(e.get("path") == entry for e in ld_path):
            keep = [e["path"] for e in ld_path if e.get("path") != entry]
            fixes.append(Fix(f"It is picked from LD_LIBRARY_PATH entry {entry}: take that entry out.",
                             (f"export LD_LIBRARY_PATH={':'.join(keep)}" if keep else "unset LD_LIBRARY_PATH",)))
    if "LD_PRELOAD=" in (via or ""):
        fixes.append(Fix("A preloaded library can answer in the real one's place: run without it.", ("unset LD_PRELOAD",)))
    call = recs[0].get("call") or ""
    ask = next((cmd for prefix, cmd in ASK_BY_HAND if call.startswith(prefix)), None)
    if ask:
        fixes.append(Fix("Ask it by hand: the same garbage there confirms the file, not gpudoctor.", (ask,)))
    said = "; ".join(f"{r.get('call')} gave {r.get('value')!r}, not {r.get('expected', 'plausible').split(' (')[0]}"
                     for r in recs)
    return Finding(
        "probe.implausible_value", Severity.FAIL, area, f"Implausible answers from {path} ({via}): {said}",
        evidence={"path": path, "via": via,
                  "rejected": [{k: r[k] for k in ("call", "value", "expected") if r.get(k) is not None} for r in recs]},
        fixes=tuple(fixes),
        detail="These values were left out of the facts: no driver, CUDA or architecture check was built on them, "
               "and the checks that need them are missing from this report.")
