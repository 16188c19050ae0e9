"""Toolkits: host compiler within nvcc's limits, no mixing of toolkits, GPU arch supported."""
from __future__ import annotations

import os

from gpudoctor.rules.differential import verified_cause
from gpudoctor.findings import Finding, Fix, Severity
from gpudoctor.rules.fixes import gxx_package, install
from gpudoctor.rules._util import gpus, in_use_toolkit, sm
from gpudoctor.rules.faults import inspect_fixes

COMPILER_DOC = "https://docs.nvidia.com/cuda/cuda-installation-guide-linux/index.html#host-compiler-support-policy"
ARCH_DOC = "https://docs.nvidia.com/cuda/cuda-compiler-driver-nvcc/index.html#gpu-feature-list"


def _label(t):
    return f"nvcc {t.get('release')} ({t.get('nvcc')})"


def _severity(facts, t):
    """Problems of the toolkit a build would use are failures; of other installed toolkits, warnings."""
    used = in_use_toolkit(facts)
    return Severity.FAIL if used is None or used.get("nvcc") == t.get("nvcc") else Severity.WARN


def compiler_unsupported(facts, ctx):
    out = []
    versioned = facts["compilers"].get("versioned") or []
    smoke = {b.get("nvcc"): b for b in facts["smoke_nvcc"].get("builds") or []}
    for t in facts["toolkit"].get("toolkits") or []:
        host = t.get("host_compiler") or {}
        hc = t.get("host_config") or {}
        seen = host.get("version_seen_by_nvcc")
        kind = host.get("kind")
        limit = hc.get("max_gcc") if kind == "gnu" else hc.get("max_clang") if kind == "clang" else None
        if not seen or limit is None:
            continue
        major = int(seen.split(".")[0])
        if major <= limit:
            out.append(Finding("compiler.ok", Severity.OK, "toolkit",
                               f"{_label(t)} accepts its host compiler {kind} {seen} (≤ {limit})",
                               evidence={"host_compiler": host.get("path"), "limit_from": hc.get("path")}))
            continue
        fixes = []
        if kind == "gnu":
            ok = [c for c in versioned if c["kind"] == "gnu" and c["major"] <= limit]
            best = max(ok, key=lambda c: c["major"]) if ok else None
            retry = (smoke.get(t.get("nvcc")) or {}).get("retry_with_ccbin")
            verified = " Verified: the smoke build succeeded with it." if retry and retry.get("compile_ok") else ""
            if best:
                fixes.append(Fix(
                    f"Use the installed g++-{best['major']} as nvcc's host compiler (per shell, or for CMake).{verified}",
                    _ccbin_commands(best["path"])))
            want = limit if not best else None
            if want:
                fixes.append(Fix(f"Install g++-{want} (the newest nvcc {t.get('release')} supports) and use it via -ccbin.",
                                 (install(ctx.os, gxx_package(ctx.os, want)),) + _ccbin_commands(f"/usr/bin/g++-{want}")))
        fixes.append(Fix("Or install a newer CUDA toolkit whose limit covers this compiler.", ()))
        fixes.append(Fix("Last resort: -allow-unsupported-compiler skips the check; the build may fail or, worse, "
                         "miscompile silently. Use only to try things out.",
                         ("nvcc -allow-unsupported-compiler ...",)))
        ccbin = host.get("ccbin_from_env")
        ignored = {"NVCC_CCBIN": f"{ccbin} is set, but this nvcc ran {host.get('command')} (it does not read NVCC_CCBIN)"} \
            if ccbin and host.get("command") != ccbin else {}
        out.append(Finding(
            "compiler.unsupported", _severity(facts, t), "toolkit",
            f"{_label(t)} rejects host compiler {kind} {seen} (supports ≤ {limit})",
            evidence={"nvcc": t.get("nvcc"), "release": t.get("release"), "host_compiler": host.get("path"),
                      "host_version_seen_by_nvcc": seen, "limit": f"{kind} ≤ {limit}", "limit_from": hc.get("path"),
                      **ignored},
            fixes=tuple(fixes), doc=COMPILER_DOC,
            detail=f"nvcc stops with '#error -- unsupported GNU version! gcc versions later than {limit} are not supported!'"
            if kind == "gnu" else "nvcc stops with '#error -- unsupported clang version!'"))
    return out


def _ccbin_commands(gxx: str) -> tuple:
    # NVCC_PREPEND_FLAGS works with every nvcc since 11.x; NVCC_CCBIN only with newer ones (11.8 ignores it).
    return (f"export NVCC_PREPEND_FLAGS='-ccbin {gxx}'", f"export CUDAHOSTCXX={gxx}   # CMake",
            f"nvcc -ccbin {gxx} ...   # or per command")


def mixed_toolkit(facts, ctx):
    """One toolkit's nvcc running another toolkit's ptxas, or CUDA_HOME naming another toolkit than PATH."""
    out = []
    for t in facts["toolkit"].get("toolkits") or []:
        ptx = t.get("ptxas") or {}
        if t.get("release") and ptx.get("release") and ptx["release"] != t["release"]:
            same = _own_ptxas_dir(t, facts)
            fixes = []
            if same:
                fixes.append(Fix(f"Put the toolkit's own ptxas first on PATH when using {_label(t)}.",
                                 (f"export PATH={same}:$PATH",)))
            fixes.append(Fix("Or keep only one CUDA toolkit's bin directory on PATH (and use that toolkit's nvcc).",
                             ("echo $PATH | tr ':' '\\n' | grep -n -iE 'cuda|nvidia'",)))
            out.append(Finding(
                "toolkit.mixed", _severity(facts, t), "toolkit",
                f"{_label(t)} would run ptxas {ptx['release']} from another toolkit ({ptx.get('path')})",
                evidence={"nvcc": t.get("nvcc"), "nvcc_release": t.get("release"), "ptxas": ptx.get("path"),
                          "ptxas_release": ptx.get("release"), "nvcc_home": t.get("home")},
                fixes=tuple(fixes), doc=ARCH_DOC,
                detail="Typical failure: \"ptxas fatal : Value 'sm_52' is not defined for option 'gpu-name'\" "
                       "(the newer ptxas dropped the older toolkit's default arch) or PTX ISA version errors."))
    home = facts["environment"].get("vars", {}).get("CUDA_HOME") or facts["environment"].get("vars", {}).get("CUDA_PATH")
    used = in_use_toolkit(facts)
    if home and used and used.get("home") and os.path.realpath(home) != used["home"]:
        other = next((t for t in facts["toolkit"].get("toolkits") or [] if t.get("home") == os.path.realpath(home)), None)
        if other is None or other.get("release") != used.get("release"):
            out.append(Finding(
                "toolkit.mixed", Severity.WARN, "toolkit",
                f"CUDA_HOME={home} is not the toolkit of the nvcc on PATH ({used.get('nvcc')}, {used.get('release')})",
                evidence={"CUDA_HOME": home, "CUDA_HOME_release": (other or {}).get("release"),
                          "nvcc_on_path": used.get("nvcc"), "nvcc_home": used.get("home")},
                fixes=(Fix("Make CUDA_HOME and PATH name the same toolkit.",
                            (f"export CUDA_HOME={used.get('home')}", f"export PATH={used.get('home')}/bin:$PATH")),),
                detail="Build systems (CMake, torch.utils.cpp_extension) take headers and libraries from CUDA_HOME "
                       "but compile with the nvcc on PATH."))
    return out


def _own_ptxas_dir(t, facts):
    """A directory whose ptxas has the same release as this nvcc (its bin dir, or /usr/bin for Debian's)."""
    for d in (os.path.join(t.get("home") or "", "bin"), "/usr/bin"):
        if os.path.isfile(os.path.join(d, "ptxas")):
            for other in facts["toolkit"].get("toolkits") or []:
                p = other.get("ptxas") or {}
                if p.get("realpath") == os.path.realpath(os.path.join(d, "ptxas")) and p.get("release") != t.get("release"):
                    break
            else:
                if d == "/usr/bin" and not (t.get("home") or "").startswith("/usr/lib/nvidia-cuda-toolkit"):
                    continue
                return d
    return None


def arch_unsupported(facts, ctx):
    """A GPU whose SASS target the toolkit (or NVRTC) cannot generate."""
    out = []
    m = ctx.matrix
    for g in gpus(facts):
        cc = g["compute_capability"]
        target = sm(cc)
        for t in facts["toolkit"].get("toolkits") or []:
            codes = t.get("gpu_codes")
            accepted = (target in codes) if codes else (m.toolkit_accepts_sm(t.get("release"), target) if m and t.get("release") else None)
            if accepted is not False:
                continue
            fixes = []
            if m is not None:
                supporting = [r.cuda for r in m.cuda_releases() if target in (r.sms or ())]
                if supporting:
                    rng = supporting[0] if len(supporting) == 1 else f"{supporting[0]}–{supporting[-1]}"
                    fixes.append(Fix(f"Use a CUDA toolkit that generates {target}: CUDA {rng}.", ()))
            fixes.append(Fix(f"Or build PTX for an older arch that the driver JIT-compiles for {target} "
                             "(slower first start; not possible for arch-specific 'a' targets).", ()))
            out.append(Finding(
                "arch.toolkit_unsupported", _severity(facts, t), "toolkit",
                f"{_label(t)} cannot build for GPU {g.get('index')} ({g.get('name')}, {target})",
                evidence={"gpu": g.get("name"), "compute_capability": cc, "toolkit": t.get("nvcc"),
                          "toolkit_targets": f"{codes[0]}…{codes[-1]}" if codes else "from matrix"},
                fixes=tuple(fixes), doc=ARCH_DOC,
                detail=f"nvcc stops with \"nvcc fatal : Unsupported gpu architecture 'compute_{target[3:]}'\"."))
        nv = facts["smoke_nvrtc"]
        archs = nv.get("nvrtc_supported_archs")
        if archs and target not in archs:
            out.append(Finding(
                "arch.toolkit_unsupported", Severity.WARN, "toolkit",
                f"NVRTC {nv.get('nvrtc_version')} cannot compile for GPU {g.get('index')} ({target})",
                evidence={"nvrtc_supported": f"{archs[0]}…{archs[-1]}", "compute_capability": cc},
                fixes=(Fix("Install an NVRTC version that lists this arch (nvidia-cuda-nvrtc wheel of a matching CUDA).", ()),)))
    return out


def inventory(facts, ctx):
    """Several toolkits side by side is legal; say which one builds use."""
    tks = [t for t in facts["toolkit"].get("toolkits") or [] if t.get("release")]
    if not tks:
        if facts.ok("toolkit") and not facts["toolkit"].get("toolkits"):
            return [Finding("toolkit.none", Severity.INFO, "toolkit", "No CUDA toolkit (nvcc) found",
                            detail="Only needed to compile CUDA code; pip/conda frameworks bring their own runtime.")]
        return []
    used = in_use_toolkit(facts)
    if used is not None and not used.get("release"):  # the nvcc on PATH could not be asked: toolkit.broken
        return [Finding("toolkit.inventory", Severity.INFO, "toolkit",
                        f"Builds would run {used.get('nvcc')} (see toolkit.broken); other toolkits installed: "
                        + ", ".join(t["release"] + " (" + t["nvcc"] + ")" for t in tks),
                        evidence={t["nvcc"]: t.get("version") for t in tks})]
    title = (f"CUDA toolkit {used.get('release')} in use ({used.get('nvcc')})" if used else
             f"{len(tks)} CUDA toolkit(s) found, none on PATH")
    if len(tks) > 1:
        title += f"; also installed: {', '.join(t['release'] + ' (' + t['nvcc'] + ')' for t in tks if t is not used)}"
    return [Finding("toolkit.inventory", Severity.OK if used else Severity.INFO, "toolkit", title,
                    evidence={t["nvcc"]: t.get("version") for t in tks})]


def _working(facts):
    return [t for t in facts["toolkit"].get("toolkits") or [] if t.get("release")]


def toolkit_broken(facts, ctx):
    """An nvcc (or the ptxas / file it relies on) that could not be asked: timed out, killed by a signal,
    exited non-zero, printed no version, unreadable host_config.h. The copy first on PATH (what a build
    runs) is a failure, never replaced by another copy in silence; other copies are warnings."""
    out = []
    on_path = facts["toolkit"].get("on_path")
    others = {t["nvcc"]: t.get("release") for t in _working(facts)}
    for t in facts["toolkit"].get("toolkits") or []:
        host = (t.get("host_compiler") or {}).get("path")
        for rec in t.get("problems") or []:
            if rec["path"] == host:
                continue  # compiler_broken explains it
            first = on_path and t.get("nvcc") == on_path
            where = "first on PATH" if first else f"found via {t.get('found_via')}"
            ptxas = (t.get("ptxas") or {}).get("path")
            env_cause = verified_cause(t.get("differential"), facts)
            if rec["path"] == t.get("nvcc") and env_cause:  # nvcc is fine: the environment broke it
                title = f"nvcc {where} ({t['nvcc']}) {env_cause}"
            elif rec["path"] == t.get("nvcc"):
                title = f"nvcc {where} ({t['nvcc']}) could not be asked: {rec['what']}"
            elif rec["path"] == ptxas:
                title = f"{_label(t)} would run ptxas {ptxas}, which failed: {rec['what']}"
            else:
                title = f"{_label(t)}: {rec['what']}"
            ev = {"path": rec["path"], "what": rec["what"], "command": rec.get("command"), "last_line": rec.get("last_line"),
                  "nvcc": t.get("nvcc"), "first_on_path": on_path,
                  "other_toolkits": {k: v for k, v in others.items() if k != t.get("nvcc")} or "none"}
            fixes = inspect_fixes(rec, ctx.os.family)
            good = [o for o in _working(facts) if o.get("nvcc") != t.get("nvcc") and not o.get("problems") and o.get("home")]
            if first and good:
                fixes += (Fix(f"Or put a working toolkit first on PATH (CUDA {good[0].get('release')}).",
                              (f"export PATH={good[0]['home']}/bin:$PATH", "hash -r; nvcc --version")),)
            out.append(Finding(
                "toolkit.broken", Severity.FAIL if first or not on_path else _severity(facts, t), "toolkit", title,
                evidence={k: v for k, v in ev.items() if v is not None}, fixes=fixes,
                detail="Builds that run this nvcc fail or hang the same way; gpudoctor did not test another copy in its "
                       "place." if first else None))
    return out


def ptxas_on_path_broken(facts, ctx):
    """The ptxas first on PATH (what JAX/XLA and Triton run) could not be asked, though no nvcc here runs it."""
    p = facts["toolkit"].get("ptxas_on_path") or {}
    out = []
    for rec in p.get("problems") or []:
        out.append(Finding(
            "toolkit.broken", Severity.WARN, "toolkit", f"ptxas first on PATH ({rec['path']}) could not be asked: {rec['what']}",
            evidence={k: v for k, v in {"path": rec["path"], "what": rec["what"], "command": rec.get("command"),
                                        "last_line": rec.get("last_line")}.items() if v},
            fixes=inspect_fixes(rec, ctx.os.family),
            detail="No nvcc here runs it, but JAX/XLA and Triton compile PTX with the ptxas they find on PATH: "
                   "their GPU compiles fail or hang the same way."))
    return out


def compiler_broken(facts, ctx):
    """A host compiler (gcc/g++ first on PATH, or the one an nvcc would run) that could not be asked."""
    out, seen = [], set()
    used_hosts = {}
    for t in facts["toolkit"].get("toolkits") or []:
        host = (t.get("host_compiler") or {}).get("path")
        for rec in t.get("problems") or []:
            if host and rec["path"] == host:
                used_hosts.setdefault(host, (rec, []))[1].append(t)
    for name, c in (facts["compilers"].get("default") or {}).items():
        for rec in c.get("problems") or []:
            used_hosts.setdefault(rec["path"], (rec, []))
    for path, (rec, toolkits) in used_hosts.items():
        if path in seen:
            continue
        seen.add(path)
        on_path = facts["toolkit"].get("on_path")
        toolkits = sorted(toolkits, key=lambda t: t.get("nvcc") != on_path)  # the one builds use first
        by = _label(toolkits[0]) + (f" and {len(toolkits) - 1} other toolkit(s)" if len(toolkits) > 1 else "") if toolkits else ""
        title = (f"Host compiler {path} that {by} would run could not be asked: {rec['what']}" if toolkits
                 else f"Compiler {path} (first on PATH) could not be asked: {rec['what']}")
        gnu = os.path.basename(path).startswith(("gcc", "g++", "c++", "cc"))
        out.append(Finding(
            "compiler.broken", Severity.FAIL if toolkits or gnu else Severity.WARN, "toolkit", title,
            evidence={k: v for k, v in {"path": path, "what": rec["what"], "command": rec.get("command"),
                                        "last_line": rec.get("last_line"),
                                        "used_by": [t.get("nvcc") for t in toolkits] or None}.items() if v},
            fixes=inspect_fixes(rec, ctx.os.family) + (
                Fix("Or give nvcc a working host compiler explicitly.",
                    ("export NVCC_PREPEND_FLAGS='-ccbin /usr/bin/g++'", "export CUDAHOSTCXX=/usr/bin/g++   # CMake")),),
            detail="nvcc runs the host compiler for every .cu file: builds fail or hang the same way."))
    return out
