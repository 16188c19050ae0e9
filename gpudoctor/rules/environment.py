"""Environment variables pointing at the wrong place (stale LD_LIBRARY_PATH, CUDA_HOME)."""
from __future__ import annotations


from gpudoctor.findings import Finding, Fix, Severity
from gpudoctor.rules._util import in_use_toolkit

WHERE_SET = "grep -n LD_LIBRARY_PATH ~/.bashrc ~/.profile ~/.bash_profile ~/.zshrc /etc/environment /etc/profile.d/* 2>/dev/null"


def _cuda_in_use(facts):
    """(version, why): the PATH toolkit's release, else what CUDA_HOME names."""
    used = in_use_toolkit(facts)
    if used and used.get("release"):
        return used["release"], f"nvcc on PATH ({used.get('nvcc')})"
    env = facts["environment"]
    home_version = (env.get("var_cuda_versions") or {}).get("CUDA_HOME")
    if home_version:
        return home_version, f"CUDA_HOME={env.get('vars', {}).get('CUDA_HOME')}"
    return None, None


def ld_library_path(facts, ctx):
    entries = facts["environment"].get("ld_library_path") or []
    if not entries:
        return []
    in_use, why = _cuda_in_use(facts)
    stale, other = [], []
    for e in entries:
        if not e.get("exists"):
            stale.append(e["path"])
        elif in_use and e.get("cuda_version") and e["cuda_version"] != in_use:
            other.append(f"{e['path']} (CUDA {e['cuda_version']})")
    if not stale and not other:
        return []
    keep = [e["path"] for e in entries if e.get("exists") and not (in_use and e.get("cuda_version") and e["cuda_version"] != in_use)]
    problems = ([f"missing directories: {', '.join(stale)}"] if stale else []) + \
               ([f"directories of another CUDA than the one in use ({in_use}, from {why}): {', '.join(other)}"] if other else [])
    return [Finding(
        "env.ld_library_path", Severity.WARN if not other else Severity.FAIL, "environment",
        "LD_LIBRARY_PATH is stale: " + "; ".join(problems),
        evidence={"LD_LIBRARY_PATH": ":".join(e["path"] for e in entries), "cuda_in_use": in_use, "because": why},
        fixes=(Fix("Drop those entries (and fix the line that sets them).",
                   (f"export LD_LIBRARY_PATH={':'.join(keep)}" if keep else "unset LD_LIBRARY_PATH", WHERE_SET)),),
        detail="Libraries from LD_LIBRARY_PATH win over everything else: a stale CUDA directory there makes programs "
               "load the wrong libcudart/cuDNN ('version mismatch', 'undefined symbol', 'cannot open shared object file').")]


def cuda_home(facts, ctx):
    v = facts["environment"].get("vars", {})
    dirs = facts["environment"].get("var_dirs") or {}
    out = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if v.get(var) and dirs.get(var) is False:  # the probe looked in the judged system; unknown: not judged
            out.append(Finding("env.cuda_home", Severity.WARN, "environment", f"{var}={v[var]} does not exist",
                               evidence={var: v[var]},
                               fixes=(Fix(f"Point {var} at an installed toolkit, or unset it.", (f"unset {var}",)),)))
    return out
