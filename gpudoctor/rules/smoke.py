"""Smoke tests: report them, and explain a failure by what it matches."""
from __future__ import annotations

import re

from gpudoctor.findings import Finding, Fix, Severity

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
        return [Finding("smoke.nvrtc", Severity.FAIL, "smoke", f"NVRTC smoke test crashed: {s.get('worker_error') or s.get('import_error')}",
                        evidence={"stderr": s.get("stderr_tail")})]
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
                               evidence=dict(ev, log=r.get("log", "")[-800:]),
                               detail=f"{meaning}: see {fid}." if fid else None))
            continue
        launch = r.get("launch") or {}
        if launch.get("skipped"):
            out.append(Finding("smoke.nvrtc", Severity.INFO, "smoke",
                               f"{label}: compiled in {r.get('compile_seconds') * 1000:.0f} ms; launch skipped ({launch['skipped']})",
                               evidence=ev))
        elif launch.get("error"):
            meaning, fid = explain(launch["error"])
            out.append(Finding("smoke.nvrtc", Severity.FAIL, "smoke", f"{label}: launch failed: {launch['error']}",
                               evidence=ev, detail=f"{meaning}: see {fid}." if fid else None))
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
                                   f"(compile {r.get('compile_seconds') * 1000:.0f} ms, run {launch.get('run_seconds', 0) * 1000:.0f} ms)",
                                   evidence=ev))
    return out


def nvcc_smoke(facts, ctx):
    s = facts["smoke_nvcc"]
    if not s or s.get("skipped"):
        return []
    out = []
    for b in s.get("builds") or []:
        if b.get("skipped"):
            continue
        label = f"nvcc {b.get('release')} ({b.get('nvcc')}) → {b.get('arch')}"
        ev = {"command": b.get("command"), "compile_seconds": b.get("compile_seconds")}
        if not b.get("compile_ok"):
            text = b.get("compile_output") or b.get("compile_error") or ""
            meaning, fid = explain(text)
            retry = b.get("retry_with_ccbin") or {}
            fixes = ()
            if retry.get("compile_ok"):
                fixes = (Fix(f"Verified: the same build succeeds with -ccbin {retry['ccbin']}.", (retry.get("command", ""),)),)
            out.append(Finding("smoke.nvcc", Severity.FAIL, "smoke",
                               f"{label}: build failed" + (f": {meaning} (see {fid})" if fid else ""),
                               evidence=dict(ev, first_error=_first_error_line(text), output=text[-1200:]),
                               fixes=fixes))
            continue
        run = b.get("run") or {}
        if run.get("skipped"):
            out.append(Finding("smoke.nvcc", Severity.INFO, "smoke",
                               f"{label}: built in {b.get('compile_seconds')} s; run skipped ({run['skipped']})", evidence=ev))
        elif run.get("ok"):
            out.append(Finding("smoke.nvcc", Severity.OK, "smoke",
                               f"{label}: built in {b.get('compile_seconds')} s, ran and verified in {run.get('seconds')} s",
                               evidence=ev))
        else:
            text = run.get("output") or run.get("error") or ""
            meaning, fid = explain(text)
            out.append(Finding("smoke.nvcc", Severity.FAIL, "smoke",
                               f"{label}: built, but the program failed" + (f": {meaning} (see {fid})" if fid else ""),
                               evidence=dict(ev, output=text[-800:], returncode=run.get("returncode"))))
    return out
