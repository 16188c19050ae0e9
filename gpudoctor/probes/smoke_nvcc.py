"""Smoke test: each toolkit's nvcc builds a small CUDA program for the device arch with the host
compiler it would use by default, and runs it when a GPU is visible. Facts only: the rules
explain a failure (compiler too new, arch unsupported, another toolkit's ptxas)."""
from __future__ import annotations

import os
import re
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

from gpudoctor.probes import toolkit as toolkit_probe
from gpudoctor.probes.driver import nvml_snapshot
from gpudoctor.subproc import run

SOURCE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "smoke", "vector_add.cu")


def _build_and_run(tk: dict, arch, gpu_present: bool, env, timeout: float, extra=()) -> dict:
    args = [tk["nvcc"], SOURCE, "-o", None] + (["-arch", arch] if arch else []) + list(extra)
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
        if not gpu_present:
            out["run"] = {"skipped": "no GPU visible to NVML"}
            return out
        t0 = time.perf_counter()
        r = run([exe], timeout=timeout, env=env, cwd=tmp)
        out["run"] = {"ok": r.ok and "GPUDOCTOR_SMOKE_OK" in r.stdout, "output": r.output[-2000:],
                      "returncode": r.returncode, "error": r.error, "seconds": round(time.perf_counter() - t0, 3)}
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
    """``{"builds": [{nvcc, release, arch, command, compile_ok, compile_output, run, retry_with_ccbin}]}``."""
    if not ctx.smoke:
        return {"skipped": "--no-smoke"}
    toolkits = toolkit_probe.shared(ctx)["toolkits"]
    nvml = nvml_snapshot(ctx)
    ccs = sorted({g["compute_capability"] for g in nvml.get("gpus", []) if g.get("compute_capability")})
    gpu_present = nvml.get("status") == "ok" and bool(ccs)

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
        build = _build_and_run(tk, arch, gpu_present, ctx.env, max(ctx.timeout, 60.0))
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
