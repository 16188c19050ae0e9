"""Policy requirements (``check --require``, gpudoctor.toml): each is one finding, met or unmet."""
from __future__ import annotations

from gpudoctor.findings import Finding, Fix, Severity


def requirements(facts, ctx):
    from gpudoctor.rules.requirements import actual_values

    out = []
    for req in getattr(ctx, "requirements", ()) or ():
        values, source = actual_values(facts, req.name)
        ok = req.check(values)
        shown = ", ".join(values) if values else "not found"
        out.append(Finding(
            "policy.met" if ok else "policy.unmet", Severity.OK if ok else Severity.FAIL, "policy",
            f"Requirement {req.text}: {'met' if ok else 'not met'} ({req.name} = {shown})",
            evidence={"requirement": req.text, "name": req.name, "spec": req.spec, "actual": values, "source": source},
            fixes=() if ok else (Fix(f"Bring {req.name} to {req.spec} (see `gpudoctor install` for a consistent stack), "
                                     "or relax the requirement.", ("gpudoctor install --json",)),)))
    return out
