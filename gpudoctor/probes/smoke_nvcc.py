"""Smoke test: each toolkit's nvcc builds a small CUDA program for the device arch with the host
compiler it would use by default, and runs it when a GPU is visible. Facts only: the rules
explain a failure (compiler too new, arch unsupported, another toolkit's ptxas)."""
from __future__ import annotations

import hashlib
import os
import re
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

from gpudoctor.process.cache import Cache, file_identity
from gpudoctor.probes import toolkit as toolkit_probe
from gpudoctor.probes.driver import nvml_snapshot
from gpudoctor.process.subproc import lean_context_env, run

SOURCE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "smoke", "vector_add.cu")


#: Bump when the way the smoke binary is built changes (invalidates every cached build).
CACHE_FORMAT = 1


def cache_inputs(tk: dict, arch, env) -> dict:
    """What the smoke binary is a pure function of: the nvcc (file identity), the host compiler it
    runs (path, version, file identity), the NVCC_* variables that add flags or pick the compiler,
    the kernel source, the target arch. Any change is a new cache key, so a stale binary is never run."""
    host = dict(tk.get("host_compiler") or {})
    try:
        host_id = file_identity(host["path"]) if host.get("path") else None
    except OSError:
        host_id = None
    with open(SOURCE, "rb") as fh:
        source = hashlib.sha256(fh.read()).hexdigest()
    return {"format": CACHE_FORMAT, "nvcc": file_identity(tk["nvcc"]), "release": tk.get("release"),
            "host_compiler": {"path": host.get("path"), "version": host.get("version"), "file": host_id},
            "nvcc_env": {k: env.get(k) for k in ("NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS", "NVCC_CCBIN") if env.get(k)},
            "source_sha256": source, "arch": arch}


def early_inputs(env) -> dict:
    """What a check knows before any probe ran: the nvcc and host compilers first on PATH (or named by
    NVCC_CCBIN / -ccbin), the NVCC_* variables, the kernel source. A hint only: the cached binary it
    points at is started early (:func:`prestart`), and adopted only if the full :func:`cache_inputs`
    lead to the same entry."""
    import shutil

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
    return {"format": CACHE_FORMAT, "tools": ids, "source_sha256": source,
            "nvcc_env": {k: env.get(k) for k in ("NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS", "NVCC_CCBIN") if env.get(k)}}


def _first_on_path(nvcc: str, env) -> bool:
    import shutil

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
    tmp = tempfile.mkdtemp(prefix="gpudoctor-smoke-run-")
    _early[hit["key"]] = (subproc.start([hit["files"]["smoke"]], env=subproc.lean_context_env(env), cwd=tmp), tmp)


def discard_prestarted() -> None:
    import shutil

    for started, tmp in list(_early.values()):
        started.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    _early.clear()


def _run_binary(exe: str, env, timeout: float, early_key: str = None) -> dict:
    import shutil

    early = _early.pop(early_key, None) if early_key else None
    t0 = time.perf_counter()
    if early is not None:  # started at the beginning of the check: its time counts from then
        started, tmp = early
        r = started.wait(timeout)
        shutil.rmtree(tmp, ignore_errors=True)
        seconds = r.seconds if getattr(r, "seconds", None) is not None else time.perf_counter() - t0
    else:
        with tempfile.TemporaryDirectory(prefix="gpudoctor-smoke-run-") as tmp:
            r = run([exe], timeout=timeout, env=lean_context_env(env), cwd=tmp)
        seconds = time.perf_counter() - t0
    return {"ok": r.ok and "GPUDOCTOR_SMOKE_OK" in r.stdout, "output": r.output[-2000:],
            "returncode": r.returncode, "error": r.error, "seconds": round(seconds, 3)}


def _build_and_run(tk: dict, arch, gpu_present: bool, env, timeout: float, extra=(), cache: Cache = None) -> dict:
    args = [tk["nvcc"], SOURCE, "-o", None] + (["-arch", arch] if arch else []) + list(extra)
    inputs = cache_inputs(tk, arch, env) if cache is not None and not extra else None
    hit = cache.get_files(inputs) if inputs is not None else None
    if hit is not None:  # built before from the same inputs: only the driver/GPU path is tested again
        shown = [("vector_add.cu" if a == SOURCE else "smoke" if a is None else a) for a in args]
        out = {"command": " ".join(shown), "compile_ok": True, "compile_seconds": 0.0, "compile_output": "",
               "compile_error": None, "cached": {"dir": hit["dir"], "built": hit.get("created")}}
        out["run"] = (_run_binary(hit["files"]["smoke"], env, timeout, early_key=hit["key"]) if gpu_present
                      else {"skipped": "no GPU visible to NVML"})
        return out
    with tempfile.TemporaryDirectory(prefix="gpudoctor-smoke-") as tmp:
        exe = os.path.join(tmp, "smoke")
        args[3] = exe
        t0 = time.perf_counter()
        res = run(args, timeout=timeout, env=env, cwd=tmp)
        shown = [("vector_add.cu" if a == SOURCE else "smoke" if a == exe else a) for a in args]
        out = {"command": " ".join(shown),
               "compile_ok": res.ok, "compile_seconds": round(time.perf_counter() - t0, 3),
               "compile_output": res.output[-3000:], "compile_error": res.error}
        if not res.ok:
            return out
        if inputs is not None and cache.enabled:
            stored = cache.put_files(inputs, {"smoke": exe})
            out["cache_stored"] = stored or f"not stored (cannot write {cache.dir})"
            if stored and _first_on_path(tk["nvcc"], env):
                cache.remember(early_inputs(env), cache.key(inputs))
        if not gpu_present:
            out["run"] = {"skipped": "no GPU visible to NVML"}
            return out
        out["run"] = _run_binary(exe, env, timeout)
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
    return {"builds": builds, "device_ccs": ccs}
