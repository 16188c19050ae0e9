"""Loader integrity: a library the dynamic loader picks (or a probe loads by path) that is no library at
all, is cut short, or is built for another class or machine; and the crashes and load errors it causes.

A crash is attributed to a damaged file when the crashed program loads it: the problem record names the
file itself (a child asked about that library), a worker task or tool the loader probe lists as loading
it (``loaded_by``), or the file is preloaded into every process. The finding's evidence names each
attributed command's path, so :func:`gpudoctor.rules.faults.unreported_problems` does not blame the
interpreter or the tool in a second finding.
"""
from __future__ import annotations

import os
import re
import shlex
from typing import Iterable, List, Set

from gpudoctor.findings import Finding, Fix, Severity
from gpudoctor.formats.elf_check import what_it_is
from gpudoctor.process import problems as P
from gpudoctor.rules.environment import WHERE_SET

_ATTRIBUTABLE = ("signal", "exit", "load_error", "unparsable", "cannot_run")
_WORKER = re.compile(r"gpudoctor\.process\.worker (\S+)")
_AREA = {"libcuda": "driver", "libnvidia-ml": "driver", "libcudnn": "cudnn", "libnvinfer": "tensorrt", "libnccl": "multigpu"}


def damaged(file: dict) -> bool:
    """A file that is not a whole shared library: not ELF, cut short, or a header that contradicts itself."""
    return bool(file) and (file.get("kind") != "elf" or bool(file.get("truncated")) or bool(file.get("error")))


def unloadable(file: dict) -> bool:
    """A damaged file the loader cannot use: everything but an ELF whose cut lies after its last segment
    (ld.so never reads section headers: that one loads, though linkers and debuggers reject it)."""
    return damaged(file) and not (file.get("kind") == "elf" and not file.get("segments_truncated") and not file.get("error"))


def damaged_paths(facts) -> Set[str]:
    """Paths and realpaths of every damaged library the loader probe found, for rules that must not judge
    what came out of them (a driver version read from a file that is a Git LFS pointer is garbage)."""
    lf = facts["loader"] or {}
    out: Set[str] = set()
    for e in list(lf.get("libraries") or []) + list(lf.get("copies") or []) + list(lf.get("preload") or []):
        if damaged(e.get("file") or {}):
            out.update({e["path"], e["realpath"]})
    return out


def damaged_loaded_by(facts, who: str) -> List[str]:
    """Paths of the unloadable files the loader probe says ``who`` ("worker nvml", "nvidia-smi") gets: its
    pick of a library it asks for, or a preloaded ELF. Rules built on ``who``'s failure defer to
    library.damaged, which attributes the failure to the file."""
    lf = facts["loader"] or {}
    out = [e["path"] for e in lf.get("libraries") or []
           if who in (e.get("loaded_by") or []) and unloadable(e.get("file") or {})]
    out += [e["path"] for e in lf.get("preload") or []
            if unloadable(e.get("file") or {}) and (e.get("file") or {}).get("kind") == "elf"]
    return out


def damaged_explains(facts, culprits) -> bool:
    """Do the environment culprits a differential narrowed (``[{var, entry?, value?}]``) only put damaged
    files in the loader's way (an LD_LIBRARY_PATH entry holding one, a damaged LD_PRELOAD file)? Then
    library.damaged already names the cause and its fix; environment.breaks_step would say it twice."""
    bad = damaged_paths(facts)
    if not culprits or not bad:
        return False
    dirs = {os.path.dirname(p) for p in bad}
    for c in culprits:
        values = [c["entry"]] if c.get("entry") is not None else (c.get("value") or "").replace(" ", ":").split(":")
        if not ((c.get("var") == "LD_LIBRARY_PATH" and dirs.intersection(values)) or
                (c.get("var") == "LD_PRELOAD" and bad.intersection(values))):
            return False
    return True


def _foreign(file: dict, process: dict) -> bool:
    return file.get("kind") == "elf" and not damaged(file) and file.get("elf_class") is not None and \
        (file.get("elf_class"), file.get("machine")) != (process.get("elf_class"), process.get("machine"))


def loader_integrity(facts, ctx) -> List[Finding]:
    lf = facts["loader"]
    if not lf:
        return []
    process = lf.get("process") or {}
    out = _wrong_arch(lf, process, ctx) + _misnamed(lf, ctx)
    if not any(damaged(e.get("file") or {}) for key in ("preload", "libraries", "copies") for e in lf.get(key) or []):
        return out  # a healthy machine: the other probes' facts are never walked
    records = list(_records(facts))
    strings = list(_messages(facts))
    for e in lf.get("preload") or []:
        if damaged(e["file"]):
            out.append(_damaged(e, lf, records, strings, ctx, every_process=True))
    for e in lf.get("libraries") or []:
        if damaged(e["file"]) and e["via"] not in ("LD_PRELOAD", "/etc/ld.so.preload"):
            out.append(_damaged(e, lf, records, strings, ctx))
    for e in lf.get("copies") or []:
        if damaged(e["file"]):
            out.append(_damaged(e, lf, records, strings, ctx))
    return out


def _stem(soname: str) -> tuple:
    """("libcuda", "1") from "libcuda.so.1": the library and its interface version."""
    name, _, version = soname.partition(".so")
    return name, version.lstrip(".").split(".")[0]


def _misnamed(lf: dict, ctx) -> List[Finding]:
    """``library.misnamed``: the file the loader picks for a soname is a whole ELF library whose own DT_SONAME is
    another library or another major (a copy or symlink made by hand: libnvidia-ml.so.1 saved as libcuda.so.1, a
    CUDA 12 libcudart renamed libcudart.so.13). Programs load it and fail on missing symbols or versions."""
    out = []
    for e in lf.get("libraries") or []:
        f, asked = e.get("file") or {}, e.get("soname") or ""
        own = f.get("soname")
        if f.get("kind") != "elf" or damaged(f) or not own or not asked.count(".so.") or _stem(own) == _stem(asked):
            continue
        how = _how_picked(e) if "via" in e else f"found at {e['path']}"
        out.append(Finding(
            "library.misnamed", Severity.FAIL, _area(asked),
            f"{asked} {how} is {own} (its DT_SONAME), not {asked}",
            evidence={"path": e["path"], "realpath": e.get("realpath"), "asked_for": asked, "its_soname": own,
                      "via": e.get("via"), "entry": e.get("entry"), "loaded_by": e.get("loaded_by")},
            fixes=_fixes(e, lf, ctx),
            detail="A program that asks for this name gets another library: calls fail with missing symbols or "
                   "version errors that name neither file."))
    return out


def _records(facts) -> Iterable[dict]:
    """(probe, problem record) of every failed command or load in the other probes' facts."""
    for probe, probe_facts in facts.items():
        if probe == "loader":
            continue
        for rec in P.walk(probe_facts):
            if rec.get("kind") in _ATTRIBUTABLE:
                yield dict(rec, probe=probe)


def _messages(facts) -> Iterable[tuple]:
    """(probe, text) of every string in the other probes' facts: load errors quote the file they opened."""
    stack = [(p, f) for p, f in facts.items() if p != "loader"]
    while stack:
        probe, v = stack.pop()
        if isinstance(v, str):
            yield probe, v
        elif isinstance(v, dict):
            stack.extend((probe, x) for x in v.values())
        elif isinstance(v, (list, tuple)):
            stack.extend((probe, x) for x in v)


def _loads(rec: dict, e: dict, every_process: bool) -> bool:
    """Does the program of ``rec`` load the file of ``e``? (A preload ld.so ignores, one that is no ELF at all,
    is loaded by nothing; one cut inside its segments crashes every program.)"""
    if every_process:
        return unloadable(e["file"]) and e["file"].get("kind") == "elf" and rec["kind"] == "signal"
    if rec["path"] in (e["path"], e["realpath"]) or os.path.realpath(rec["path"]) == e["realpath"]:
        return True
    m = _WORKER.search(rec.get("command") or "")
    who = f"worker {m.group(1)}" if m else os.path.basename(rec["path"])
    if who in ("worker libversions", "worker stubcheck"):  # these load only the paths they are given
        return False
    return who in (e.get("loaded_by") or [])


def _damaged(e: dict, lf: dict, records: List[dict], strings: List[tuple], ctx, every_process=False) -> Finding:
    f = e["file"]
    name = e.get("soname") or os.path.basename(e["path"])
    what = what_it_is(f)
    crashed = [dict({k: r[k] for k in ("probe", "path", "command", "kind", "what", "last_line") if r.get(k)},
                    **({"itself": True} if r["path"] in (e["path"], e["realpath"]) else {}))
               for r in records if _loads(r, e, every_process)]
    errors = sorted({f"{p}: {s[:300]}" for p, s in strings
                     if s not in (e["path"], e["realpath"]) and (e["path"] in s or e["realpath"] in s)})[:3]
    picked = "via" in e and "origin" not in e
    how = _how_picked(e) if picked else f"found in {e['origin']} ({os.path.dirname(e['path'])})"
    title = f"{name} {how} is {what}, not a library"
    # the workers (cuda.pathfinder) load a wheel's copy: this file breaks only what dlopens the name
    wheel = next((x["path"] for x in lf.get("libraries") or [] if picked and x.get("via") == "cuda.pathfinder"
                  and x.get("soname") == e.get("soname") and x["path"] != e["path"]), None)
    if crashed:
        title += f": {_crash_words(crashed)}"
    elif wheel:
        title += f": a dlopen of {name} by name gets it (cuda.pathfinder loads {wheel})"
    elif errors:  # the loader's own words, as a probe recorded them ("<path>: invalid ELF header")
        title += f": {_loader_said(errors[0].split(': ', 1)[-1], e)}"
    evidence = {"path": e["path"], "realpath": e["realpath"], "found": what, "kind": f.get("kind"),
                "size_bytes": f.get("size"),
                "expected_bytes": f.get("lfs_size") if f.get("kind") == "git_lfs_pointer" else f.get("needs_bytes"),
                "via": e.get("via") or e.get("origin"), "entry": e.get("entry"), "loader": e.get("loader"),
                "package": e.get("package"), "loaded_by": e.get("loaded_by"), "workers_load": wheel}
    if crashed:
        evidence["crashed"] = crashed
    if crashed or errors:  # the cause is stated: explain's reading of the tool's words stays evidence
        evidence["cause"] = {"id": "library.damaged", "title": f"{e['path']} is {what}", "confidence": "high"}
    if errors:
        evidence["errors"] = errors
    # ld.so prints an error for a preload it cannot open and goes on without it; a picked one stops the load.
    ignored_preload = every_process and f.get("kind") != "elf"
    # Only gpudoctor's own workers would load it, and none crashed or quoted it: they ran past it (their loader
    # found another copy first, e.g. through the loading library's DT_RPATH), so nothing here is shown to fail.
    loaders = e.get("loaded_by") or []
    ran_past = bool(loaders) and all(w.startswith("worker ") for w in loaders) and not errors
    severity = Severity.FAIL if crashed or (unloadable(f) and picked and not ignored_preload and not ran_past) \
        else Severity.WARN
    if ran_past and not crashed and picked:
        title += f" (gpudoctor's {', '.join(w[7:] for w in loaders)} step ran without loading it)"
    return Finding("library.damaged", severity, _area(name), title,
                   evidence={k: v for k, v in evidence.items() if v not in (None, [], "")},
                   fixes=_fixes(e, lf, ctx), detail=_detail(f, picked, every_process))


def _loader_said(text: str, e: dict) -> str:
    """'dlopen says "invalid ELF header"' from "<path>: invalid ELF header" (the words after the file's name)."""
    who = "ld.so says" if "ld.so" in text else "dlopen says"
    for p in (e["path"], e["realpath"]):
        if p in text:
            text = text.split(p, 1)[1].lstrip("'\": ")
            break
    return f"{who} {text.strip()[:120]!r}"


def _how_picked(e: dict) -> str:
    via = e["via"]
    if via == "LD_LIBRARY_PATH":
        return f"picked from LD_LIBRARY_PATH entry {e['entry']}"
    if via in ("LD_PRELOAD", "/etc/ld.so.preload"):
        return f"preloaded by {via} ({e['entry']})"
    if via in ("DT_RPATH", "DT_RUNPATH"):
        return f"picked from {e['entry']} (the {via} of {e.get('loader')})"
    if via == "ldconfig":
        return f"picked from the ldconfig cache ({e['path']})"
    return f"picked from {e['entry']} ({via})"


def _crash_words(crashed: List[dict]) -> str:
    """"libcudart.so.13 fails to load: ... invalid ELF header" for a child asked about the file itself,
    "it made the nvml worker crash (python was killed by SIGBUS), nvidia-smi fail" for programs that load it."""
    itself = [c["what"][:160] for c in crashed if c.get("itself")][:1]
    others = []
    for c in [c for c in crashed if not c.get("itself")][:2]:
        m = _WORKER.search(c.get("command") or "")
        prog = f"the {m.group(1)} worker" if m else os.path.basename(c["path"])
        others.append(f"{prog} {'crash (' + c['what'] + ')' if c['kind'] == 'signal' else 'fail'}")
    more = len(crashed) - len(itself) - len(others)
    words = itself + ([f"it made {', '.join(others)}" + (f" and {more} more" if more > 0 else "")] if others else [])
    return "; ".join(words)


def _detail(f: dict, picked: bool, preload: bool) -> str:
    kind = f.get("kind")
    if kind == "elf" and not unloadable(f):
        return ("Its segments are whole, so programs load it, but the end of the file is missing (an interrupted "
                "download or copy): linkers and debuggers reject it.")
    parts = []
    if kind == "elf":
        parts.append("The loader maps the segments its header describes; touching a page past the end of the file "
                     "kills the program with SIGBUS (a crash in whatever loads it, not in that program).")
    elif kind == "git_lfs_pointer":
        parts.append("It is the small text pointer Git LFS leaves when the real content was never fetched.")
    if preload:
        parts.append("ld.so prints 'cannot be preloaded ... ignored' in every program and runs it without the library."
                     if kind != "elf" else "Every program on this machine loads it first.")
    elif picked and kind != "elf":
        parts.append("dlopen() stops at the first file of that name it can open, so programs fail with 'invalid ELF "
                     "header' or 'file too short' even where a good copy lies further down the search path.")
    elif not picked:
        parts.append("Programs that load this copy by path (or whose RPATH names its directory) fail.")
    return " ".join(parts)


def _area(name: str) -> str:
    stem = name.split(".so")[0]
    return next((a for family, a in _AREA.items() if stem == family or stem.startswith(family + "_")), "cuda")


def _fixes(e: dict, lf: dict, ctx) -> tuple:
    q = shlex.quote(e["path"])
    fixes = []
    via = e.get("via")
    if via == "LD_LIBRARY_PATH":
        keep = [d for d in lf.get("ld_library_path") or [] if d != e["entry"]]
        fixes.append(Fix(f"Take {e['entry']} out of LD_LIBRARY_PATH (and fix the line that sets it), so the "
                         "loader picks the next copy.",
                         (f"export LD_LIBRARY_PATH={shlex.quote(':'.join(keep))}" if keep else "unset LD_LIBRARY_PATH",
                          WHERE_SET)))
    elif via == "LD_PRELOAD":
        keep = [x for x in (lf.get("ld_preload") or "").replace(":", " ").split() if x != e["entry"]]
        fixes.append(Fix(f"Stop preloading {e['entry']}.", (f"export LD_PRELOAD={shlex.quote(' '.join(keep))}" if keep
                                                            else "unset LD_PRELOAD",
                                                            WHERE_SET.replace("LD_LIBRARY_PATH", "LD_PRELOAD"))))
    elif via == "/etc/ld.so.preload":
        fixes.append(Fix(f"Remove {e['entry']} from /etc/ld.so.preload (every process on this machine loads it).",
                         (f"{ctx.os.sudo}sed -i.bak '\\|^{e['entry']}$|d' /etc/ld.so.preload",)))
    fixes.append(_replace_fix(e, lf, ctx))
    fixes.append(Fix("See for yourself what the file is.", (f"ls -lL {q}", f"file -L {q}", f"head -c 200 {q} | od -c | head")))
    return tuple(fixes)


def _replace_fix(e: dict, lf: dict, ctx) -> Fix:
    real = e["realpath"]
    if e["file"].get("kind") == "git_lfs_pointer" and e.get("git_root"):
        rel = os.path.relpath(real, e["git_root"])
        return Fix("Fetch the real file from Git LFS.",
                   (f"git -C {shlex.quote(e['git_root'])} lfs pull --include {shlex.quote(rel)}",))
    if e["file"].get("kind") == "git_lfs_pointer":
        return Fix("Git LFS never fetched this file: run `git lfs pull` in the repository it was copied from and copy "
                   "the real file here, or delete it.", ("git lfs install && git lfs pull",))
    if e.get("package"):
        python = (lf.get("process") or {}).get("executable") or "python"
        spec = f"{e['package']}=={e['package_version']}" if e.get("package_version") else e["package"]
        return Fix(f"Reinstall {e['package']}, which owns this file.",
                   (f"{shlex.quote(python)} -m pip install --force-reinstall --no-deps {shlex.quote(spec)}",))
    qr = shlex.quote(real)
    if ctx.os.family == "debian":
        return Fix("Reinstall the package that owns this file (dpkg -S finds it; a file no package owns was copied by "
                   "hand: delete it or copy the real library over it).",
                   (f"dpkg -S {qr}", f"{ctx.os.sudo}apt-get install --reinstall \"$(dpkg -S {qr} | cut -d: -f1)\""))
    if ctx.os.family == "rhel":
        return Fix("Reinstall the package that owns this file (rpm -qf finds it; a file no package owns was copied by "
                   "hand: delete it or copy the real library over it).", (f"rpm -qf {qr}", f"{ctx.os.sudo}dnf reinstall \"$(rpm -qf {qr})\""))
    return Fix("Replace the file with the real library (or delete it).", (f"rm {qr}",))


def _wrong_arch(lf: dict, process: dict, ctx) -> List[Finding]:
    """Files of another ELF class or machine: skipped by the loader (a warning), or all it found (a failure)."""
    out = []
    proc = f"{process.get('elf_class')}-bit {process.get('machine')}"
    seen = set()
    for u in lf.get("unresolved") or []:
        s = u["skipped"][0]
        seen.update(os.path.realpath(x["path"]) for x in u["skipped"])
        # fails a program only where it is asked for by name (libcuda.so.1, libnvidia-ml.so.1); a library also
        # loaded by path (a wheel's NCCL, cuDNN) is found there
        out.append(Finding(
            "library.wrong_arch", Severity.FAIL if u.get("by_name") else Severity.WARN, _area(u["soname"]),
            f"{u['soname']}: the only file the loader finds, {s['path']} ({s['via']}), is a {s['elf_class']}-bit "
            f"{s['machine']} library; this is a {proc} process",
            evidence={"soname": u["soname"], "skipped": u["skipped"], "process": proc, "loaded_by": u.get("loaded_by")},
            fixes=(Fix("Install the library built for this machine (or take the foreign one's directory out of the "
                       "search path).", (f"file -L {shlex.quote(s['path'])}",)),),
            detail="dlopen() passes over libraries of another class or machine and fails with 'wrong ELF class' "
                   "when nothing else is found."))
    for e in lf.get("libraries") or []:
        for s in e.get("skipped") or []:
            seen.add(os.path.realpath(s["path"]))
            out.append(Finding(
                "library.wrong_arch", Severity.WARN, _area(e["soname"]),
                f"{s['path']} ({s['via']} entry {s['entry']}) is a {s['elf_class']}-bit {s['machine']} {e['soname']}: "
                f"the loader passes over it and picks {e['path']}",
                evidence={"path": s["path"], "via": s["via"], "entry": s["entry"], "picked": e["path"], "process": proc},
                fixes=(Fix("Take the foreign library out of the search path (a program that needs exactly that "
                           "directory gets the wrong copy or none).", (f"file -L {shlex.quote(s['path'])}",)),)))
    for p in lf.get("preload") or []:
        if _foreign(p["file"], process):
            out.append(Finding(
                "library.wrong_arch", Severity.WARN, _area(os.path.basename(p["path"])),
                f"{p['path']} ({p['via']}) is {what_it_is(p['file'])}: ld.so ignores it in this {proc} process",
                evidence={"path": p["path"], "via": p["via"], "entry": p["entry"], "process": proc},
                fixes=_fixes(dict(p, file=p["file"]), lf, ctx)[:1]))
    for c in lf.get("copies") or []:
        if _foreign(c["file"], process) and c["realpath"] not in seen:
            out.append(Finding(
                "library.wrong_arch", Severity.WARN, _area(os.path.basename(c["path"])),
                f"{c['path']} ({c['origin']}) is {what_it_is(c['file'])}; this is a {proc} process",
                evidence={"path": c["path"], "origin": c["origin"], "package": c.get("package"), "process": proc},
                fixes=(_replace_fix(c, lf, ctx),)))
    return out
