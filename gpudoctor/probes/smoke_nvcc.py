"""Smoke test: each toolkit's nvcc builds a small CUDA program for the device arch with the host
compiler it would use by default, and runs it when a GPU is visible. Facts only: the rules
explain a failure (compiler too new, arch unsupported, another toolkit's ptxas)."""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import time
from concurrent.futures import ThreadPoolExecutor

from gpudoctor.process import scratch
from gpudoctor.process.cache import Cache, file_identity
from gpudoctor.probes import toolkit as toolkit_probe
from gpudoctor.probes.driver import nvml_snapshot
from gpudoctor.probes.facts import Origin
from gpudoctor.probes.facts_smoke import NvccSmokeFacts
from gpudoctor.process.subproc import lean_context_env, run


def _differential():
    """The environment differential, imported on a failure only (a healthy check never pays its import)."""
    from gpudoctor.process import differential

    return differential

SOURCE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "smoke", "vector_add.cu")


#: Bump when the way the smoke binary is built changes (invalidates every cached build).
CACHE_FORMAT = 3
#: Kept beside a cached binary: every file its build read (``nvcc -M`` with the build's flags) and that file's
#: identity then. The key cannot hold them (they are known only from the build); a hit is used only when
#: every one is unchanged, so a header edited in place (its directory's mtime unchanged) is a rebuild.
READ_SET = "read-set.json"

#: Variables left out of the build's cache key; the key holds every other one (a list of those that
#: matter would miss one: CPLUS_INCLUDE_PATH, GCC_EXEC_PREFIX, COMPILER_PATH, a tool's own variable).
#: Each one here is read by no compiler for what it builds, only by shells, terminals and sessions:
IGNORED_ENV = {
    "PWD": "the build runs in its own temporary dir; gcc's getpwd() trusts $PWD only when it names that dir",
    "OLDPWD": "the shell's previous directory (cd -)",
    "SHLVL": "the shell's nesting depth",
    "_": "the shell's last command",
    "TERM": "diagnostics' colour only (gcc -fdiagnostics-color=auto); a binary is cached only after a clean build",
    "COLORTERM": "as TERM",
    "COLUMNS": "diagnostics' line width only",
    "LINES": "the terminal's height",
    "LS_COLORS": "ls(1)'s colours",
    "DISPLAY": "the X server",
    "WAYLAND_DISPLAY": "the Wayland compositor",
    "XAUTHORITY": "the X server's cookie file",
    "DBUS_SESSION_BUS_ADDRESS": "the desktop session's message bus",
    "XDG_SESSION_ID": "the login session's id",
    "XDG_CACHE_HOME": "where this cache lives (gpudoctor reads it; nvcc and gcc do not)",
    "MAIL": "the user's mailbox",
    "TMUX": "the tmux server of the terminal", "TMUX_PANE": "the tmux pane", "STY": "the screen session",
    "WINDOW": "the screen window", "GPG_TTY": "the terminal gpg-agent prompts on",
}
#: Prefixes of per-login session ids (SSH_CLIENT, SSH_CONNECTION, SSH_TTY, SSH_AUTH_SOCK): the ssh session, never read by a compiler.
IGNORED_PREFIXES = ("SSH_",)


def env_key(env) -> str:
    """SHA-256 of the environment less :data:`IGNORED_ENV` / :data:`IGNORED_PREFIXES` (a hash: values may be secrets)."""
    kept = {k: v for k, v in env.items() if k not in IGNORED_ENV and not k.startswith(IGNORED_PREFIXES)}
    return hashlib.sha256(json.dumps(kept, sort_keys=True).encode()).hexdigest()


def _identities(paths) -> dict:
    out = {}
    for p in paths:
        try:
            out[p] = file_identity(p)
        except OSError:
            out[p] = None
    return out


def _dir_files(d: str, suffix: str = "") -> list:
    try:
        return [os.path.join(d, n) for n in sorted(os.listdir(d)) if n.endswith(suffix)]
    except OSError:
        return []


def _mtimes(dirs) -> dict:
    out = {}
    for d in dirs:
        try:
            out[d] = os.stat(d).st_mtime_ns
        except OSError:
            out[d] = None
    return out


def toolkit_files(tk: dict) -> dict:
    """Identity of every toolkit file a build reads that can change: nvcc, nvcc.profile and the other tools
    of bin/ (cudafe++, ptxas, fatbinary, nvlink), nvvm/bin (cicc) and nvvm/libdevice, the static libraries
    linked in (libcudart_static.a), the ptxas nvcc would run (when another toolkit's), the include dir's mtime
    (a header added or replaced by rename changes it). Stats only (~60 files, well under a millisecond)."""
    home = tk.get("home") or os.path.dirname(os.path.dirname(os.path.realpath(tk["nvcc"])))
    files = [tk["nvcc"]] + _dir_files(os.path.join(home, "bin")) + _dir_files(os.path.join(home, "nvvm", "bin")) \
        + _dir_files(os.path.join(home, "nvvm", "libdevice"))
    for lib in ("lib64", "lib", os.path.join("targets", "x86_64-linux", "lib"), os.path.join("targets", "sbsa-linux", "lib")):
        files += _dir_files(os.path.join(home, lib), ".a")
    ptxas = (tk.get("ptxas") or {}).get("path")
    if ptxas:
        files.append(ptxas)
    inc = [d for d in (tk.get("include_dir"), os.path.join(home, "include")) if d]
    return {"files": _identities([f for f in dict.fromkeys(files) if os.path.isfile(f)]), "include_dirs": _mtimes(inc)}


def _parse_search_dirs(text: str) -> dict:
    out = {}
    for line in text.splitlines():
        name, _, rest = line.partition(": ")
        if name in ("programs", "libraries"):
            out[name] = [d for d in rest.lstrip("=").split(os.pathsep) if d]
    return out


def _parse_include_dirs(text: str) -> list:
    inside, out = False, []
    for line in text.splitlines():
        if line.startswith("#include") and "search starts here" in line:
            inside = True
        elif line.startswith("End of search list"):
            break
        elif inside and line.startswith(" "):
            out.append(line.strip().split(" (")[0])
    return out


#: The host compiler's own programs a build runs (gcc -E runs cc1, g++ cc1plus; then as; collect2 runs ld).
HOST_PROGRAMS = ("cc1", "cc1plus", "as", "collect2", "ld", "lto-wrapper")


def _host_lookup(host: str, env, timeout: float) -> dict:
    """Where the host compiler finds its programs and headers (``-print-search-dirs``, ``-E -v``): two
    commands, so the result is cached under the compiler's identity and the environment (:func:`host_files`)."""
    dirs = run([host, "-print-search-dirs"], timeout=timeout, env=env)
    inc = run([host, "-xc++", "-E", "-v", "-"], timeout=timeout, env=env, input_text="")
    if not dirs.ok or not inc.ok:
        return {}
    search = _parse_search_dirs(dirs.stdout)
    path = env.get("PATH", os.defpath)
    programs = {}
    for name in HOST_PROGRAMS:  # gcc looks in its program dirs first, then on PATH
        found = next((os.path.join(d, name) for d in search.get("programs", ()) if os.path.isfile(os.path.join(d, name))), None)
        programs[name] = found or shutil.which(name, path=path)
    return {"programs": programs, "include_dirs": _parse_include_dirs(inc.stderr),
            "library_dirs": [os.path.normpath(d) for d in search.get("libraries", ())]}


def host_files(host_path, env, cache: Cache = None, timeout: float = 10.0) -> dict:
    """Identity of the host compiler nvcc runs, of its internal programs (cc1plus, as, collect2, ld) and the
    mtimes of its include and library dirs. Finding those takes two commands: their answer is kept in the
    cache under the compiler's identity and :func:`env_key`, so a warm check only stats files."""
    if not host_path:
        return {}
    try:
        ident = file_identity(host_path)
    except OSError:
        return {"compiler": None}
    where = {"lookup": "host-programs", "format": CACHE_FORMAT, "compiler": ident, "env": env_key(env)}
    found = cache.get_json(where) if cache is not None else None
    if not isinstance(found, dict) or not found:
        found = _host_lookup(host_path, env, timeout)
        if found and cache is not None:
            cache.put_json(where, found)
    progs = {k: v for k, v in (found.get("programs") or {}).items() if v}
    return {"compiler": ident, "programs": _identities(sorted(set(progs.values()))), "found": bool(found),
            "include_dirs": _mtimes(found.get("include_dirs") or ()), "library_dirs": _mtimes(found.get("library_dirs") or ())}


def cache_inputs(tk: dict, arch, env, cache: Cache = None, timeout: float = 10.0) -> dict:
    """What the smoke binary is a pure function of: the whole environment less :data:`IGNORED_ENV`
    (:func:`env_key`); every toolkit file a build reads (:func:`toolkit_files`); the host compiler, its
    programs and its header/library dirs (:func:`host_files`); the kernel source; the target arch. Any
    change is a new cache key, so a stale binary is never run."""
    host = dict(tk.get("host_compiler") or {})
    with open(SOURCE, "rb") as fh:
        source = hashlib.sha256(fh.read()).hexdigest()
    return {"format": CACHE_FORMAT, "release": tk.get("release"), "env": env_key(env), "toolkit": toolkit_files(tk),
            "host_compiler": dict(host_files(host.get("path"), env, cache, timeout), path=host.get("path"),
                                  version=host.get("version_seen_by_nvcc")),
            "source_sha256": source, "arch": arch}


def early_inputs(env) -> dict:
    """What a check knows before any probe ran: the nvcc and host compilers first on PATH (or named by
    NVCC_CCBIN), the environment (:func:`env_key`), the kernel source. A hint only: the cached binary it
    points at is started early (:func:`prestart`), and adopted only if the full :func:`cache_inputs`
    lead to the same entry."""
    path = env.get("PATH", os.defpath)
    ids = {}
    for tool in ("nvcc", "gcc", "g++", env.get("NVCC_CCBIN") or ""):
        found = shutil.which(tool, path=path) if tool else None
        try:
            ids[tool] = file_identity(found) if found else None
        except OSError:
            ids[tool] = None
    with open(SOURCE, "rb") as fh:
        source = hashlib.sha256(fh.read()).hexdigest()
    return {"format": CACHE_FORMAT, "tools": ids, "source_sha256": source, "env": env_key(env)}


def _first_on_path(nvcc: str, env) -> bool:
    found = shutil.which("nvcc", path=env.get("PATH", os.defpath))
    return bool(found) and os.path.realpath(found) == os.path.realpath(nvcc)


_early: dict = {}  # cache entry key -> (Started, temporary cwd)


def prestart(env, cache: Cache) -> None:
    """Start the cached smoke binary the last check with these early inputs ran, before the probes
    exist (CUDA context creation dominates a warm check). :func:`_build_and_run` adopts it when the
    full inputs match, else it is killed (:func:`discard_prestarted`)."""
    from gpudoctor.process import subproc

    key = cache.recall(early_inputs(env))
    hit = cache.get_by_key(key) if key else None
    if hit is None or hit["key"] in _early:
        return
    tmp = scratch.make("gpudoctor-smoke-run-")
    _early[hit["key"]] = (subproc.start([hit["files"]["smoke"]], env=subproc.lean_context_env(env), cwd=tmp), tmp)


def discard_prestarted() -> None:
    for started, tmp in list(_early.values()):
        started.kill()
        scratch.remove(tmp)
    _early.clear()


def _run_binary(exe: str, env, timeout: float, early_key: str = None, label: str = "smoke binary") -> dict:
    early = _early.pop(early_key, None) if early_key else None
    t0 = time.perf_counter()
    if early is not None:  # started at the beginning of the check: its time counts from then
        started, tmp = early
        r = started.wait(timeout)
        scratch.remove(tmp)
        seconds = r.seconds if getattr(r, "seconds", None) is not None else time.perf_counter() - t0
    else:
        with scratch.scratch_dir("gpudoctor-smoke-run-") as tmp:
            r = run([exe], timeout=timeout, env=lean_context_env(env), cwd=tmp)
        seconds = time.perf_counter() - t0
    out = {"ok": _smoke_ok(r), "output": r.output[-2000:],
           "returncode": r.returncode, "error": r.error, "seconds": round(seconds, 3)}
    if not out["ok"] and _differential().worth_rerunning(r):  # did the environment make it fail? (never on a pass)
        step = _differential().command_step([exe], _rerun_timeout(timeout, seconds), passed=_smoke_ok,
                                         in_temp_dir=True, env_for=lean_context_env)
        out["differential"] = _differential().explain_failure(step, env, label=label, paths=[exe], command=exe)
    return out


def _smoke_ok(r) -> bool:
    return r.ok and "GPUDOCTOR_SMOKE_OK" in r.stdout


def _rerun_timeout(timeout: float, seconds: float) -> float:
    """A rerun's timeout: a few times what the failed run took (a rerun that hangs says nothing), within ``timeout``."""
    return min(timeout, max(10.0, 4 * (seconds or 0)))


def _read_set(args, env, timeout: float, cwd: str):
    """``({path: file_identity or None}, None)``: every file the build ``args`` reads, as ``nvcc -M`` with the
    same flags lists them (the source and each header the preprocessor found); ``(None, why)`` when nvcc
    cannot say (then the build is not cached: a cache it could not verify would be a guess)."""
    from gpudoctor.formats.make_deps import MakeDepsError, parse_make_deps

    flags = [a for i, a in enumerate(args) if i >= 2 and a != "-o" and args[i - 1] != "-o"]
    res = run([args[0], args[1], "-M"] + flags, timeout=timeout, env=env, cwd=cwd)
    if not res.ok:
        return None, f"nvcc -M did not list them: {res.error or 'exit status %s' % res.returncode}"
    try:
        deps = parse_make_deps(res.stdout)
    except MakeDepsError as exc:
        return None, f"nvcc -M did not list them: {exc}"
    return _identities([os.path.join(cwd, d) for d in deps]), None


def _read_set_changed(hit: dict):
    """Why a cached build is stale: the first file its build read that is not as it was then (changed, gone),
    or an unreadable list; None when every one is unchanged. Stats only (~200 files)."""
    try:
        with open(hit["files"][READ_SET], encoding="utf-8") as fh:
            deps = json.load(fh)
    except (OSError, ValueError, KeyError):
        return "the list of files its build read is missing or unreadable"
    if not isinstance(deps, dict) or not deps:
        return "the list of files its build read is empty"
    for path, then in deps.items():
        try:
            now = file_identity(path)
        except OSError:
            now = None
        if now != then:
            return f"{path} {'is gone' if now is None else 'appeared' if then is None else 'changed'} since that build"
    return None


def _build_and_run(tk: dict, arch, gpu_present: bool, env, timeout: float, extra=(), cache: Cache = None) -> dict:
    args = [tk["nvcc"], SOURCE, "-o", None] + (["-arch", arch] if arch else []) + list(extra)
    inputs = cache_inputs(tk, arch, env, cache, min(timeout, 10.0)) if cache is not None and not extra else None
    what = f"the nvcc {tk.get('release') or ''} smoke".replace("  ", " ")
    hit = cache.get_files(inputs) if inputs is not None else None
    stale = _read_set_changed(hit) if hit is not None else None
    if stale:
        hit = None
    if hit is not None:  # built before from the same inputs, which read the same files: only the driver/GPU path is tested again
        shown = [("vector_add.cu" if a == SOURCE else "smoke" if a is None else a) for a in args]
        out = {"command": " ".join(shown), "compile_ok": True, "compile_seconds": 0.0, "compile_output": "",
               "compile_error": None, "cached": {"dir": hit["dir"], "built": hit.get("created")}}
        out["run"] = (_run_binary(hit["files"]["smoke"], env, timeout, early_key=hit["key"], label=f"{what} binary's run") if gpu_present
                      else {"skipped": "no GPU visible to NVML"})
        return out
    with scratch.scratch_dir("gpudoctor-smoke-") as tmp, ThreadPoolExecutor(max_workers=1) as pool:
        exe = os.path.join(tmp, "smoke")
        args[3] = exe
        # what the build reads, listed while it builds (a cold build only: a cached one is verified by stats)
        read_set = pool.submit(_read_set, args, env, min(timeout, 60.0), tmp) if inputs is not None and cache.enabled else None
        t0 = time.perf_counter()
        res = run(args, timeout=timeout, env=env, cwd=tmp)
        shown = [("vector_add.cu" if a == SOURCE else "smoke" if a == exe else a) for a in args]
        out = {"command": " ".join(shown),
               "compile_ok": res.ok, "compile_seconds": round(time.perf_counter() - t0, 3),
               "compile_output": res.output[-3000:], "compile_error": res.error}
        if stale:
            out["cache_stale"] = stale
        if not res.ok:
            if not extra and _differential().worth_rerunning(res):  # did the environment make it fail?
                rel = [("smoke" if a == exe else a) for a in args]  # each rerun writes ./smoke in its own dir
                step = _differential().command_step(rel, _rerun_timeout(timeout, res.seconds), in_temp_dir=True)
                out["differential"] = _differential().explain_failure(step, env, label=f"{what} build",
                                                                   paths=[tk["nvcc"]], command=out["command"])
            return out
        if read_set is not None:
            deps, why = read_set.result()
            stored = None
            if deps:
                listed = os.path.join(tmp, READ_SET)
                with open(listed, "w", encoding="utf-8") as fh:
                    json.dump(deps, fh)
                stored = cache.put_files(inputs, {"smoke": exe, READ_SET: listed})
            out["cache_stored"] = stored or f"not stored ({why or f'cannot write {cache.dir}'})"
            if stored and _first_on_path(tk["nvcc"], env):
                cache.remember(early_inputs(env), cache.key(inputs))
        if not gpu_present:
            out["run"] = {"skipped": "no GPU visible to NVML"}
            return out
        out["run"] = _run_binary(exe, env, timeout, label=f"{what} binary's run")
        return out


def _blocker(tk: dict):
    """A problem with a tool every build of ``tk`` runs (its ptxas, its host compiler) that did not answer at all."""
    needed = {(tk.get("ptxas") or {}).get("path"), (tk.get("host_compiler") or {}).get("path")} - {None}
    return next((p for p in tk.get("problems") or []
                 if p["path"] in needed and p["kind"] in ("timeout", "signal", "not_found", "cannot_run")), None)


def _without_ccbin(env) -> dict:
    """``env`` minus host-compiler choices (NVCC_CCBIN, -ccbin in NVCC_*_FLAGS), so a retry's -ccbin wins."""
    out = {k: v for k, v in env.items() if k != "NVCC_CCBIN"}
    for var in ("NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS"):
        if var in out:
            out[var] = re.sub(r"(-ccbin|--compiler-bindir)(=|\s+)\S+", "", out[var]).strip()
    return out


def probe(ctx) -> dict:
    """``{"builds": [{nvcc, release, arch, command, compile_ok, compile_output, run, retry_with_ccbin,
    cached | cache_stored}]}``. A build whose inputs (:func:`cache_inputs`) match a verified cache
    entry is not rebuilt: the cached binary runs (``cached``: where, when it was built)."""
    if not ctx.smoke:
        return {"skipped": "--no-smoke"}
    toolkits = toolkit_probe.shared(ctx)["toolkits"]
    nvml = nvml_snapshot(ctx)
    ccs = sorted({g["compute_capability"] for g in nvml.get("gpus", []) if g.get("compute_capability")})
    gpu_present = nvml.get("status") == "ok" and bool(ccs)
    cache = Cache("smoke-nvcc", enabled=getattr(ctx, "cache", True), env=ctx.env)

    def one(tk):
        if not tk.get("release"):
            rec = next((p for p in tk.get("problems") or [] if p["path"] == tk["nvcc"]), None)
            return {"nvcc": tk["nvcc"], "blocked_by": tk["nvcc"],
                    "skipped": rec["what"] if rec else "nvcc did not report a version"}
        blocker = _blocker(tk)
        if blocker:  # a build would hang or fail on the same tool: say so instead of building
            return {"nvcc": tk["nvcc"], "release": tk["release"], "blocked_by": blocker["path"],
                    "skipped": f"{os.path.basename(blocker['path'])} ({blocker['path']}) could not be asked: {blocker['what']}"}
        arch = f"sm_{ccs[0].replace('.', '')}" if ccs else None
        build = _build_and_run(tk, arch, gpu_present, ctx.env, max(ctx.timeout, 60.0), cache=cache)
        build.update({"nvcc": tk["nvcc"], "release": tk["release"], "arch": arch or "nvcc default"})
        # When the default host compiler is rejected, prove the fix: retry with a supported g++ if installed.
        max_gcc = (tk.get("host_config") or {}).get("max_gcc")
        if not build["compile_ok"] and "unsupported GNU version" in build["compile_output"] and max_gcc:
            alt = toolkit_probe.older_gxx(ctx.env, max_gcc)
            if alt:
                retry = _build_and_run(tk, arch, gpu_present, _without_ccbin(ctx.env), max(ctx.timeout, 60.0),
                                       extra=("-ccbin", alt))
                build["retry_with_ccbin"] = dict(retry, ccbin=alt)
        return build

    with ThreadPoolExecutor(max_workers=max(1, len(toolkits))) as pool:
        builds = list(pool.map(one, toolkits))
    # Typed where returned (probes/facts_smoke.NvccSmokeFacts): releases and capabilities are checked again.
    return NvccSmokeFacts.parse({"builds": builds, "device_ccs": ccs}, Origin(None, "the nvcc smoke probe")).to_dict()
