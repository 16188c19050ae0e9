"""Every CUDA toolkit (nvcc) on the machine, and what each one would really use.

``nvcc --dryrun`` prints the commands nvcc would run with the PATH it would run them
with (after its nvcc.profile). From it we read the host compiler and the version nvcc
detected for it (``--gnu_version=120200``), and which ``ptxas`` that PATH resolves to:
a toolkit picking another toolkit's ptxas is a real failure (Debian's nvcc 11.8 with
CUDA 13.0 on PATH: ``ptxas fatal : Value 'sm_52' is not defined for option 'gpu-name'``).
"""
from __future__ import annotations

import glob
import os
import re
import shutil
from concurrent.futures import ThreadPoolExecutor

from gpudoctor.formats import compilers as compilers_fmt

from gpudoctor.formats import nvcc as nvcc_fmt
from gpudoctor.formats.nvcc import parse_dryrun  # noqa: F401 - probes/tests use them here
from gpudoctor.probes import facts as typed
from gpudoctor.probes import facts_toolkit as ft
from gpudoctor.process import scratch
from gpudoctor.process.problems import read_text
from gpudoctor.process.subproc import run


def _differential():
    """The environment differential, imported on a failure only (a healthy check never pays its import)."""
    from gpudoctor.process import differential

    return differential


def nvcc_candidates(env) -> list:
    """[(path, found_via)] for every nvcc: PATH order first, then well-known roots; deduplicated by file."""
    found, seen = [], set()

    def add(path, via):
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            real = os.path.realpath(path)
            if real not in seen:
                seen.add(real)
                found.append((path, via))

    for d in env.get("PATH", "").split(os.pathsep):
        if d:
            add(os.path.join(d, "nvcc"), "PATH")
    for var in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"):
        if env.get(var):
            add(os.path.join(env[var], "bin", "nvcc"), var)
    for root in sorted(glob.glob("/usr/local/cuda*")) + sorted(glob.glob("/opt/cuda*")):
        add(os.path.join(root, "bin", "nvcc"), "well-known dir")
    add("/usr/bin/nvcc", "well-known dir")
    add("/usr/lib/nvidia-cuda-toolkit/bin/nvcc", "well-known dir")
    return found


def _include_dir(home: str, variables: dict):
    inc = variables.get("INCLUDES", "")
    m = re.search(r'-I"?([^"\s]+)', inc)
    cands = ([m.group(1)] if m else []) + [os.path.join(home, "include"), os.path.join(home, "targets", "x86_64-linux", "include")]
    if home.startswith("/usr/lib/nvidia-cuda-toolkit"):
        cands.append("/usr/include")  # Debian/Ubuntu packaging
    for c in cands:
        if os.path.lexists(os.path.join(c, "crt", "host_config.h")):  # unreadable ones are reported, not skipped
            return os.path.normpath(c)
    return None


def _host_version(path, kind, env, timeout, problems):
    """(what the host compiler nvcc will run says of its version, the command that asked): the version is None,
    with a problem, when it cannot say; it is validated by the caller (:class:`ft.HostCompiler`)."""
    if not path:
        return None, None
    if kind == "clang":
        res = run([path, "--version"], timeout=timeout, env=env)
        version = compilers_fmt.parse_clang_version(res.stdout) if res.ok else None
    else:
        res = run([path, "-dumpfullversion", "-dumpversion"], timeout=timeout, env=env)
        out = res.stdout.strip().splitlines()
        version = out[0].strip() if res.ok and out and out[0][:1].isdigit() else None
    if version is None:
        _note(problems, res.problem(unparsable="version"))
    return version, " ".join([os.path.basename(path), *res.argv[1:]])


def _ccbin(env):
    """The host compiler named by NVCC_CCBIN or -ccbin in NVCC_PREPEND_FLAGS/NVCC_APPEND_FLAGS, or None."""
    for var in ("NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS"):
        m = re.search(r"(?:-ccbin|--compiler-bindir)(?:=|\s+)(\S+)", env.get(var) or "")
        if m:
            return m.group(1).strip("'\"")
    return env.get("NVCC_CCBIN") or None


def _note(problems, rec) -> None:
    if rec is not None:
        problems.append(rec)


def _says_release(result) -> bool:
    parsed = nvcc_fmt.parse_nvcc_version(result.stdout) if result.ok else None
    return bool(parsed and parsed.get("release"))


def describe_nvcc(path: str, via: str, env, timeout: float) -> dict:
    """What one nvcc says of itself and would run (:class:`ft.Toolkit`'s dict). Every command or file that
    fails, and every implausible value a tool printed, is a record in ``facts["problems"]`` (see
    :mod:`gpudoctor.process.problems`); ``errors`` keeps the one-line summaries."""
    return _describe(path, via, env, timeout).to_dict()


def _describe(path: str, via: str, env, timeout: float) -> "ft.Toolkit":
    problems: list = []
    facts = {"nvcc": path, "nvcc_realpath": os.path.realpath(path), "found_via": via, "errors": [], "problems": problems}
    # nvcc's three questions (version, dry run, GPU code list) are independent: asked at once.
    with scratch.scratch_dir("gpudoctor-") as tmp, ThreadPoolExecutor(max_workers=2) as pool:
        src = os.path.join(tmp, "probe.cu")
        with open(src, "w") as fh:
            fh.write("__global__ void k() {}\n")
        dry_f = pool.submit(run, [path, "--dryrun", "-c", src, "-o", os.path.join(tmp, "probe.o")],
                            timeout=timeout, env=env, cwd=tmp)
        codes_f = pool.submit(run, [path, "--list-gpu-code"], timeout=timeout, env=env)
        ver = run([path, "--version"], timeout=timeout, env=env)
        dry, codes = dry_f.result(), codes_f.result()
    parsed_version = nvcc_fmt.parse_nvcc_version(ver.stdout) if ver.ok else None
    if not parsed_version or not parsed_version.get("release"):
        rec = ver.problem(unparsable='CUDA release ("Cuda compilation tools, release X.Y")')
        _note(problems, rec)
        facts["errors"].append(rec["what"] if rec else "nvcc --version printed no release")
        if _differential().worth_rerunning(ver):  # did the environment make it fail? (never paid by a working nvcc)
            step = _differential().command_step([path, "--version"], timeout, passed=_says_release)
            facts["differential"] = _differential().explain_failure(step, env, label="nvcc --version", paths=[path],
                                                                 command=f"{path} --version")
        return ft.Toolkit(None, None, None, None, facts)
    facts.update(parsed_version)
    # Validated where parsed (gpudoctor.probes.facts_toolkit): "release 0.0" is a probe error, never a version.
    said = typed.Origin(path, "nvcc --version", problems)
    release = said.take(ft.nvcc_release, facts.get("release"), "nvcc --version (release)")
    parsed = parse_dryrun(dry.output)
    variables = parsed["vars"]
    here = variables.get("_HERE_")
    home = os.path.realpath(os.path.join(here, "..")) if here else os.path.dirname(os.path.dirname(os.path.realpath(path)))
    facts["home"] = home
    facts["home_from"] = "nvcc --dryrun" if here else "nvcc's path (the dry run did not say)"
    eff_path = variables.get("PATH", env.get("PATH", ""))
    host = parsed["host_command"]
    if host is None and not dry.ok:
        # The dry run itself runs the host compiler once (gcc -E, to learn its version): when it failed
        # before saying which, ask the compiler nvcc defaults to, so a hung gcc is named as the cause.
        host = _ccbin(env) or "gcc"
    host_path = shutil.which(host, path=eff_path) if host and not os.path.isabs(host) else host
    n_before = len(problems)
    # What the compiler nvcc will execute says of itself: the dry run's --gnu_version can differ
    # (Debian's nvcc runs a wrapper gcc that picks g++-11 while the dry run reports gcc 12).
    own_version, asked = _host_version(host_path, parsed["host_kind"], env, timeout, problems)
    facts["host_compiler"] = ft.HostCompiler.parse({
        "command": host,
        "path": host_path,
        "kind": parsed["host_kind"] or ("clang" if "clang" in os.path.basename(host or "") else "gnu" if host else None),
        "version_in_dryrun": parsed["host_version"],
        "ccbin_from_env": env.get("NVCC_CCBIN"),
        "extra_flags": {k: env[k] for k in ("NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS") if env.get(k)},
    }, own_version, asked, path)
    ptxas = parsed["ptxas_command"] or "ptxas"
    ptxas_path = ptxas if os.path.isabs(ptxas) else shutil.which(ptxas, path=eff_path)
    ptxas_facts = {"path": ptxas_path, "realpath": os.path.realpath(ptxas_path) if ptxas_path else None}
    if ptxas_path:
        pv = run([ptxas_path, "--version"], timeout=timeout, env=env)
        pver = nvcc_fmt.parse_nvcc_version(pv.stdout) if pv.ok else None
        ptxas_facts.update(pver or {})
        if not pver or not pver.get("release"):
            _note(problems, pv.problem(unparsable="ptxas release"))
    facts["ptxas"] = ft.Ptxas.parse(ptxas_facts, typed.Origin(ptxas_path, "ptxas --version", problems))
    if not dry.ok:
        if not parsed["host_command"]:
            facts["errors"].append(f"nvcc --dryrun failed: {dry.error or dry.output[-300:]}")
        if len(problems) == n_before or not host_path:  # else the host compiler's own failure is the cause
            _note(problems, dry.problem())
            if _differential().worth_rerunning(dry):  # nvcc answers its version but not this: its environment?
                step = _differential().command_step([path, "--dryrun", "-c", "probe.cu", "-o", "probe.o"], timeout,
                                                 in_temp_dir=True, files={"probe.cu": "__global__ void k() {}\n"})
                facts["differential"] = _differential().explain_failure(step, env, label="nvcc --dryrun", paths=[path],
                                                                     command=f"{path} --dryrun -c probe.cu")
    inc = _include_dir(home, variables)
    facts["include_dir"] = inc
    if inc:
        hc = os.path.join(inc, "crt", "host_config.h")
        facts["host_config"] = ft.HostConfig.parse(dict(nvcc_fmt.parse_host_config(read_text(hc, problems) or ""), path=hc),
                                                   typed.Origin(hc, f"read for {path}", problems))
    facts["gpu_codes"] = nvcc_fmt.parse_gpu_code_list(codes.stdout) if codes.ok else None
    if codes.timed_out or codes.signal_name:  # an nvcc too old for --list-gpu-code just exits 1: not a fault
        _note(problems, codes.problem())
    return ft.Toolkit(release, facts["host_compiler"], facts["ptxas"], facts.get("host_config"), facts)


def probe(ctx) -> dict:
    """See :func:`shared`."""
    return shared(ctx)


def _probe(ctx) -> dict:
    """:class:`ft.ToolkitFacts`'s dict: ``{"toolkits": [describe_nvcc(...)], "on_path": nvcc path or None,
    "ptxas_on_path"}``; ``toolkits[0]`` is the PATH's."""
    cands = nvcc_candidates(ctx.env)
    with ThreadPoolExecutor(max_workers=max(1, len(cands))) as pool:
        typed_tks = list(pool.map(lambda c: _describe(c[0], c[1], ctx.env, ctx.timeout), cands))
    by_dict = [(t.to_dict(), t) for t in typed_tks]
    toolkits = [d for d, _ in by_dict]
    # A wrapper script (/usr/local/bin/nvcc → exec cuda-13.0/bin/nvcc) and its target are one toolkit.
    unique, homes = [], set()
    for t in toolkits:
        key = t.get("home") or t["nvcc_realpath"]
        if t.get("home") and not t.get("home_from", "").startswith("nvcc --dryrun"):
            # No dry run to say where a wrapper leads (its host compiler failed): one build string, one toolkit.
            key = ("build", t.get("release"), t.get("version"), t.get("build"))
        if key in homes:
            continue
        homes.add(key)
        unique.append(t)
    on_path = shutil.which("nvcc", path=ctx.env.get("PATH", ""))
    kept = [t for d, t in by_dict if any(d is u for u in unique)]
    return ft.ToolkitFacts(kept, on_path, _typed_ptxas_on_path(ctx, unique)).to_dict()


def _ptxas_on_path(ctx, toolkits):
    """The ptxas first on PATH when no nvcc here runs it: JAX/XLA and Triton compile PTX with the ptxas they
    find on PATH, so a hanging or foreign one breaks them even when every nvcc is fine. None when there is none;
    else :class:`ft.Ptxas`'s dict ``{release, version, build, path, problems}``."""
    p = _typed_ptxas_on_path(ctx, toolkits)
    return p.to_dict() if p else None


def _typed_ptxas_on_path(ctx, toolkits):
    path = shutil.which("ptxas", path=ctx.env.get("PATH", ""))
    if not path or os.path.realpath(path) in {(t.get("ptxas") or {}).get("realpath") for t in toolkits}:
        return None
    res = run([path, "--version"], timeout=ctx.timeout, env=ctx.env)
    ver = nvcc_fmt.parse_nvcc_version(res.stdout) if res.ok else None
    rec = res.problem(unparsable="ptxas release") if not (ver and ver.get("release")) else None
    problems = [rec] if rec else []
    return ft.Ptxas.parse(dict(ver or {}, path=path, problems=problems), typed.Origin(path, "ptxas --version", problems))


def shared(ctx) -> dict:
    """The toolkit facts of this run, computed once (the smoke test and the probe share them)."""
    return ctx.memo("toolkits", lambda: _probe(ctx))


def older_gxx(env, max_major: int):
    """The newest installed ``g++-N`` on PATH with N ≤ ``max_major``, or None."""
    best = None
    for d in env.get("PATH", "").split(os.pathsep):
        for p in glob.glob(os.path.join(d, "g++-[0-9]*")):
            m = re.match(r"g\+\+-(\d+)$", os.path.basename(p))
            if m and int(m.group(1)) <= max_major and os.access(p, os.X_OK):
                if best is None or int(m.group(1)) > best[0]:
                    best = (int(m.group(1)), p)
    return best[1] if best else None
