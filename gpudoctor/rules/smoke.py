"""Smoke tests: report them, and explain a failure by what it matches.

A failed step keeps its tool's last words in ``evidence["stderr_tail"]`` (bounded, secrets masked);
``gpudoctor check`` reads them with ``explain``'s knowledge to state the cause (:mod:`gpudoctor.explain.annotate`)."""
from __future__ import annotations

import os
import re

from gpudoctor.rules.differential import verified_cause
from gpudoctor.rules.sharing import limit_explains
from gpudoctor.findings import Finding, Fix, Severity
from gpudoctor.process.tail import tail
from gpudoctor.rules.loader import damaged_loaded_by

# Failure signatures in nvcc/ptxas/runtime output → (what it means, the finding id that explains it)
SIGNATURES = (
    (re.compile(r"unsupported (GNU|clang) version"), "the host compiler is newer than this nvcc allows", "compiler.unsupported"),
    (re.compile(r"Unsupported gpu architecture '(compute|sm)_\w+'|Value '(sm|compute)_\w+' is not defined for option 'gpu-architecture'"),
     "this nvcc cannot generate code for the arch", "arch.toolkit_unsupported"),
    (re.compile(r"Value '(sm|compute)_\w+' is not defined for option 'gpu-name'"), "nvcc ran ptxas from another toolkit", "toolkit.mixed"),
    (re.compile(r"Unsupported \.version|ptxas fatal.*PTX"), "ptxas is older than the PTX it was given (mixed toolkits)", "toolkit.mixed"),
    (re.compile(r"no kernel image is available"), "the binary has no code for this GPU", "arch.binary_missing"),
    (re.compile(r"driver version is insufficient|cudaErrorInsufficientDriver"), "the driver is older than the runtime", "driver.too_old"),
    (re.compile(r"unsupported toolchain|CUDA_ERROR_UNSUPPORTED_PTX_VERSION"), "PTX newer than the driver", "driver.ptx_too_new"),
    (re.compile(r"cannot open shared object file"), "a shared library is missing", "library.not_found"),
    (re.compile(r"no CUDA-capable device|cudaErrorNoDevice"), "no GPU visible", "device.not_visible"),
)


def explain(text: str):
    """(meaning, finding id) of the first known signature in ``text``, or (None, None)."""
    for rx, meaning, fid in SIGNATURES:
        if rx.search(text or ""):
            return meaning, fid
    return None, None


def _stated(meaning, fid) -> dict:
    """``{"cause": {...}}`` when this rule named the cause itself (the check's facts, e.g. another toolkit's
    ptxas, say more than the log line): explain's reading of the words then stays evidence only."""
    return {"cause": {"id": fid, "title": meaning, "by": "rule"}} if fid else {}


def _first_error_line(text: str) -> str:
    for line in (text or "").splitlines():
        if "error" in line.lower() or "fatal" in line.lower():
            return line.strip()[:200]
    return (text or "").strip().splitlines()[0][:200] if (text or "").strip() else ""


def nvrtc_smoke(facts, ctx):
    s = facts["smoke_nvrtc"]
    if not s or s.get("skipped"):
        return [Finding("smoke.nvrtc", Severity.INFO, "smoke", f"NVRTC smoke test skipped ({s.get('skipped', 'not run')})")] if s else []
    if s.get("worker_error") or s.get("import_error"):
        if damaged_loaded_by(facts, "worker nvrtc-smoke"):
            return []  # it loads a file that is no library: library.damaged attributes the crash to that file
        said = s.get("worker_error") or s.get("import_error")
        return [Finding("smoke.nvrtc", Severity.FAIL, "smoke", f"NVRTC smoke test crashed: {said}",
                        evidence={"stderr_tail": tail(s.get("stderr_tail") or said)})]
    if s.get("nvrtc_error"):
        return []  # library.not_found reports it
    out = []
    for r in s.get("runs") or []:
        where = f"GPU {r['ordinal']}" if r.get("ordinal") is not None else "no GPU"
        label = f"NVRTC {s.get('nvrtc_version')} → {r['arch']} CUBIN ({where})"
        ev = {"compile_seconds": r.get("compile_seconds"), "cubin_bytes": r.get("cubin_bytes"),
              "fp16_header": s.get("fp16_header") or "none (inline PTX add.f16x2)"}
        if r.get("compile_result") != "NVRTC_SUCCESS":
            meaning, fid = explain(r.get("log", ""))
            out.append(Finding("smoke.nvrtc", Severity.FAIL, "smoke", f"{label}: compile failed ({r.get('compile_result')})",
                               evidence=dict(ev, log=r.get("log", "")[-800:], stderr_tail=tail(r.get("log"))),
                               detail=f"{meaning}: see {fid}." if fid else None))
            continue
        launch = r.get("launch") or {}
        compiled = ("CUBIN cached" if r.get("compile_cached")
                    else f"compiled in {r.get('compile_seconds') * 1000:.0f} ms")
        if launch.get("skipped"):
            out.append(Finding("smoke.nvrtc", Severity.INFO, "smoke",
                               f"{label}: {compiled}; launch skipped ({launch['skipped']})", evidence=ev))
        elif launch.get("error"):
            meaning, fid = explain(launch["error"])
            out.append(Finding("smoke.nvrtc", Severity.FAIL, "smoke", f"{label}: launch failed: {launch['error']}",
                               evidence=dict(ev, stderr_tail=tail(launch["error"])), detail=f"{meaning}: see {fid}." if fid else None))
        else:
            bad = {k: launch[k] for k in ("vadd", "hadd2") if (launch.get(k) or {}).get("mismatches")}
            if bad:
                out.append(Finding("smoke.nvrtc", Severity.FAIL, "smoke", f"{label}: wrong results from the GPU",
                                   evidence=dict(ev, **bad),
                                   fixes=(Fix("Wrong arithmetic on a healthy stack points at the hardware: check Xid errors and ECC.",
                                              ("sudo dmesg | grep -i xid", "nvidia-smi -q -d ECC")),)))
            else:
                n = (launch.get("vadd") or {}).get("elements", 0) + (launch.get("hadd2") or {}).get("elements", 0)
                out.append(Finding("smoke.nvrtc", Severity.OK, "smoke",
                                   f"{label}: vector add + __hadd2 correct on {n} elements "
                                   f"({compiled}, run {launch.get('run_seconds', 0) * 1000:.0f} ms)",
                                   evidence=ev))
    return out


def _host_compiler_failed(facts, build):
    """(meaning, id) when the toolkit's host compiler itself could not be asked: that, not the build log's
    wording (a fake or broken gcc can print anything), is the cause."""
    for t in facts["toolkit"].get("toolkits") or []:
        host = (t.get("host_compiler") or {}).get("path")
        if t.get("nvcc") == build.get("nvcc") and host and any(p["path"] == host for p in t.get("problems") or []):
            return f"its host compiler {host} could not be asked", "compiler.broken"
    return None


def _cause(env_cause: str, meaning, fid, compiler_said: bool = False) -> str:
    """The title's cause. A compiler's words say what was wrong with the build (a rejected host compiler, another
    toolkit's ptxas): kept, with the verified environment differential (a rerun that differed in one thing and
    passed) that says what put it there. A CUDA error code at run time only names the symptom as the runtime saw
    it ("driver version is insufficient" from a foreign libcuda.so.1): a verified environment cause replaces it,
    and the reading stays in the evidence (``cause``)."""
    if env_cause and fid and compiler_said:
        return f": {meaning} (see {fid}); {env_cause}"
    return f": {env_cause}" if env_cause else f": {meaning} (see {fid})" if fid else ""


def nvcc_smoke(facts, ctx):
    s = facts["smoke_nvcc"]
    if not s or s.get("skipped"):
        return []
    out = []
    for b in s.get("builds") or []:
        if b.get("skipped"):
            if b.get("blocked_by"):  # never replaced by another toolkit's build in silence
                out.append(Finding("smoke.nvcc", Severity.WARN, "smoke",
                                   f"nvcc {b.get('release') or ''} ({b['nvcc']}): smoke build not run: {b['skipped']}".replace("  ", " "),
                                   evidence={"nvcc": b["nvcc"], "blocked_by": b["blocked_by"]},
                                   detail="The tool a build needs did not answer; see toolkit.broken / compiler.broken."))
            continue
        label = f"nvcc {b.get('release')} ({b.get('nvcc')}) → {b.get('arch')}"
        ev = {"nvcc": b.get("nvcc"), "command": b.get("command"), "compile_seconds": b.get("compile_seconds")}
        cached = b.get("cached")
        built = (f"build cached ({(cached.get('built') or '')[:16].replace('T', ' ')})".replace(" ()", "") if cached
                 else f"built in {b.get('compile_seconds')} s")
        if cached:
            ev["cached_build"] = cached.get("dir")
        if b.get("cache_stale"):  # a cached build was found but not used: why (a file its build read changed)
            ev["cache_stale"] = b["cache_stale"]
        if not b.get("compile_ok") and "budget (--timeout) ran out" in (b.get("compile_error") or ""):
            out.append(Finding("smoke.nvcc", Severity.WARN, "smoke", f"{label}: build did not finish: {b['compile_error']}",
                               evidence=dict(ev, nvcc=b.get("nvcc")),
                               fixes=(Fix("Give the check more time (a cold nvcc build can take tens of seconds).",
                                          ("gpudoctor check --timeout 120",)),)))
            continue
        if not b.get("compile_ok"):
            text = b.get("compile_output") or b.get("compile_error") or ""
            meaning, fid = _host_compiler_failed(facts, b) or explain(text)
            retry = b.get("retry_with_ccbin") or {}
            fixes = ()
            if retry.get("compile_ok"):
                fixes = (Fix(f"Verified: the same build succeeds with -ccbin {retry['ccbin']}.", (retry.get("command", ""),)),)
            env_cause = verified_cause(b.get("differential"), facts)
            out.append(Finding("smoke.nvcc", Severity.FAIL, "smoke",
                               f"{label}: build failed" + _cause(env_cause, meaning, fid, compiler_said=True),
                               evidence=dict(ev, first_error=_first_error_line(text), output=text[-1200:],
                                             stderr_tail=tail(text), **_stated(meaning, fid)),
                               fixes=fixes))
            continue
        run = b.get("run") or {}
        if run.get("skipped"):
            out.append(Finding("smoke.nvcc", Severity.INFO, "smoke",
                               f"{label}: {built}; run skipped ({run['skipped']})", evidence=ev))
        elif run.get("ok"):
            out.append(Finding("smoke.nvcc", Severity.OK, "smoke",
                               f"{label}: {built}, ran and verified in {run.get('seconds')} s",
                               evidence=ev))
        else:
            text = run.get("output") or run.get("error") or ""
            meaning, fid = explain(text)
            limit = None if fid else limit_explains(facts)  # this check's own CUDA steps failed under a process limit
            if limit and re.search(r"out of memory|MemoryAllocation|OUT_OF_MEMORY", text):
                meaning, fid = "a resource limit of this shell leaves CUDA no room (not the GPU's memory)", limit
            env_cause = verified_cause(run.get("differential"), facts)
            out.append(Finding("smoke.nvcc", Severity.FAIL, "smoke",
                               f"{label}: built, but the program failed" + _cause(env_cause, meaning, fid),
                               evidence=dict(ev, output=text[-800:], returncode=run.get("returncode"), stderr_tail=tail(text),
                                             **_stated(meaning, fid))))
    return out


TRT_DOC = "https://docs.nvidia.com/deeplearning/tensorrt/latest/installing-tensorrt/installing.html"
_TRT_LIB_MISSING = re.compile(r"(lib(?:nvinfer|nvonnxparser|nvinfer_plugin)[\w.]*\.so[\w.]*): cannot open shared object file")


def _trt_pins(s):
    """(cuda major of the wheels or None, TensorRT version) from the distributions the child saw."""
    dists = s.get("distributions") or {}
    cu = next((m.group(1) for d in dists for m in [re.match(r"tensorrt-cu(\d+)", d)] if m), None)
    ver = next((v for d, v in dists.items() if d.endswith("-bindings")), None) or dists.get(f"tensorrt-cu{cu}") \
        or dists.get("tensorrt") or s.get("version")
    return cu, ver


def _trt_reinstall(s) -> Fix:
    cu, ver = _trt_pins(s)
    pkg = f"tensorrt-cu{cu}" if cu else "tensorrt"
    return Fix("Reinstall TensorRT so that bindings and libraries come from one release.",
               (f"python -m pip install --force-reinstall '{pkg}=={ver}'" if ver else f"python -m pip install --force-reinstall {pkg}",))


def _trt_replay(s):
    """A trtexec line that replays the kept plan outside Python, when there is one."""
    if not s.get("plan_file"):
        return ()
    return (Fix("Replay the engine gpudoctor built with trtexec (ships with TensorRT's tar/deb packages; "
                "--verbose shows the failing layer).", (f"trtexec --loadEngine={s['plan_file']} --verbose",)),)


def tensorrt_smoke(facts, ctx):
    """``smoke.tensorrt``: build → serialize → deserialize → run → verify a tiny TensorRT engine."""
    s = facts["smoke_tensorrt"]
    if not s:
        return []
    if s.get("worker_error"):
        return [Finding("smoke.tensorrt", Severity.FAIL, "smoke", f"TensorRT smoke test crashed: {s['worker_error']}",
                        evidence={"stderr_tail": tail(s.get("stderr_tail") or s["worker_error"])},
                        detail="The child process that imported TensorRT died or hung; gpudoctor itself was unaffected.",
                        fixes=(Fix("Reproduce the import and a builder outside gpudoctor.",
                                   ("python -c 'import tensorrt as trt; print(trt.__version__); "
                                    "print(trt.Builder(trt.Logger(trt.Logger.VERBOSE)))'",)),
                               Fix("Look for GPU errors from the kernel driver.", ("sudo dmesg | grep -i xid",))),
                        doc=TRT_DOC)]
    if s.get("trt_import_error"):
        err = s["trt_import_error"]
        cu, ver = _trt_pins(s)
        ev = {"module": s.get("module"), "path": s.get("module_path"), "import_error": err,
              "distributions": s.get("distributions") or {}, "stderr_tail": tail(err)}
        missing = _TRT_LIB_MISSING.search(err)
        if missing:
            so = os.path.join(s.get("module_path") or ".", "tensorrt*.so")
            libs = f"tensorrt-cu{cu}-libs=={ver}" if cu and ver else "tensorrt-libs"
            return [Finding("smoke.tensorrt", Severity.FAIL, "smoke",
                            f"TensorRT smoke test cannot run: {s.get('module')} {ver or ''} is installed, but {missing.group(1)} "
                            "is missing".replace("  ", " "),
                            evidence=ev, detail="The Python bindings are installed without TensorRT's libraries (libnvinfer & co).",
                            fixes=(Fix("Install the TensorRT libraries of the same version as the bindings.",
                                       (f"python -m pip install '{libs}'",)),
                                   Fix("Or install the complete TensorRT package (bindings and libraries together).",
                                       (f"python -m pip install 'tensorrt-cu{cu or 13}=={ver}'" if ver else "python -m pip install tensorrt",)),
                                   Fix("List every library the bindings still cannot find.", (f"ldd {so} | grep 'not found'",))),
                            doc=TRT_DOC)]
        return [Finding("smoke.tensorrt", Severity.FAIL, "smoke",
                        f"TensorRT smoke test cannot run: {s.get('module')} fails to import: {err[:160]}",
                        evidence=ev, fixes=(_trt_reinstall(s),), doc=TRT_DOC)]
    label = f"TensorRT {s.get('version')}" if s.get("version") else "TensorRT"
    if s.get("skipped"):
        if s.get("absent"):
            return [Finding("smoke.tensorrt", Severity.INFO, "smoke", "TensorRT smoke test skipped (TensorRT is not installed)",
                            evidence={"python": s.get("python"), "modules_searched": s.get("searched")})]
        if s.get("runtime_only"):
            return [Finding("smoke.tensorrt", Severity.INFO, "smoke", f"TensorRT smoke test skipped: {s['skipped']}",
                            evidence={"python": s.get("python"), "module": s.get("runtime_only")},
                            detail="The lean runtime deserializes and runs version-compatible plans (built with "
                                   "--versionCompatible by the same or an older release); the dispatch runtime only "
                                   "plans that embed their lean runtime. Building needs the full TensorRT.",
                            fixes=(Fix("To build engines here, install the full TensorRT (builder and runtime).",
                                       ("python -m pip install tensorrt-cu13",)),))]
        if s.get("version") is None:
            return [Finding("smoke.tensorrt", Severity.INFO, "smoke", f"TensorRT smoke test skipped ({s['skipped']})")]
        fixes = (Fix("Install cuda-python, which the smoke test uses for device memory.",
                     ("python -m pip install cuda-python",)),) if s.get("device_error") else ()
        return [Finding("smoke.tensorrt", Severity.INFO, "smoke",
                        f"{label} imports ({s.get('module')}); engine build skipped: {s['skipped']}",
                        evidence={k: v for k, v in (("module", s.get("module_path")), ("libnvinfer", s.get("libnvinfer"))) if v},
                        fixes=fixes)]
    dev = s.get("device") or {}
    where = f"GPU {dev.get('ordinal', 0)}" + (f" ({dev['name']})" if dev.get("name") else "")
    build = s.get("build") or {}
    engine = s.get("engine") or {}
    ev = {"api": s.get("api"), "network": s.get("network"), "build_seconds": build.get("seconds"),
          "plan_bytes": build.get("plan_bytes"), "engine_tensorrt_version": engine.get("tensorrt_version"),
          "engine_version_source": engine.get("version_source"), "libnvinfer": s.get("libnvinfer")}
    if s.get("error"):
        e = s["error"]
        stage = {"build": "engine build", "deserialize": "deserialization", "run": "inference run",
                 "device": "device setup", "logger": "logger setup"}.get(e.get("stage"), e.get("stage") or "smoke test")
        meaning, fid = explain(e.get("message", "") + "\n" + "\n".join(s.get("log") or []))
        fixes = _trt_replay(s) + (_trt_reinstall(s), Fix("Look for GPU errors from the kernel driver.", ("sudo dmesg | grep -i xid",)))
        return [Finding("smoke.tensorrt", Severity.FAIL, "smoke", f"{label} on {where}: {stage} failed: {e.get('message')}"[:300],
                        evidence=dict(ev, stage=e.get("stage"), error=e.get("message"), log=(s.get("log") or [])[-8:],
                                      plan_file=s.get("plan_file"),
                                      stderr_tail=tail("\n".join((s.get("log") or []) + [e.get("message") or ""]))),
                        detail=f"{meaning}: see {fid}." if fid else None, fixes=fixes, doc=TRT_DOC)]
    run = s.get("run") or {}
    if run.get("mismatches"):
        return [Finding("smoke.tensorrt", Severity.FAIL, "smoke",
                        f"{label} on {where}: wrong results ({run['mismatches']} of {run.get('elements')} elements)",
                        evidence=dict(ev, first_mismatch=run.get("first_mismatch"), plan_file=s.get("plan_file")),
                        fixes=_trt_replay(s) + (Fix("Wrong arithmetic on a healthy stack points at the hardware: check Xid errors and ECC.",
                                                    ("sudo dmesg | grep -i xid", "nvidia-smi -q -d ECC")),),
                        doc=TRT_DOC)]
    if not run:
        return [Finding("smoke.tensorrt", Severity.WARN, "smoke", f"{label}: smoke test returned no result", evidence=ev)]
    return [Finding("smoke.tensorrt", Severity.OK, "smoke",
                    f"{label} on {where}: built in {build.get('seconds', 0):.2f} s (engine TensorRT {engine.get('tensorrt_version')}, "
                    f"{(build.get('plan_bytes') or 0) / 1024:.0f} KiB plan), serialized, deserialized, ran "
                    f"{run.get('elements')} elements correctly in {run.get('seconds', 0) * 1000:.1f} ms",
                    evidence=ev)]
