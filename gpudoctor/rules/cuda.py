"""Can this driver run the CUDA runtimes on this machine? (CUDA Toolkit release notes, Tables 2–3:
toolkit driver versions and minor-version compatibility.)"""
from __future__ import annotations

from gpudoctor.findings import Finding, Fix, Severity
from gpudoctor.rules.fixes import driver_install
from gpudoctor.rules._util import (driver_cuda, driver_verdict, driver_version, framework_cuda_builds, major_minor,
                                   os_name, v)

DOC = "https://docs.nvidia.com/deploy/cuda-compatibility/"


def runtimes(facts) -> list:
    """Every CUDA runtime something here would run with: (label, version)."""
    out = []
    c = facts.cuda()  # validated at parse: an implausible runtime version is None, never judged
    if c.runtime_version:
        out.append((f"cuda-python {c.api.raw.get('bindings_version')} (links cudart {c.runtime_version})", c.runtime_version))
    for lib in c.libcudart:
        if lib.get("version") and "." in lib["version"]:
            out.append((f"libcudart {lib['version']} ({lib.get('package') or lib['realpath']})", lib["version"]))
    for name, ver, cuda in framework_cuda_builds(facts):
        out.append((f"{name} {ver or ''} (built for CUDA {cuda})".replace("  ", " "), cuda))
    return out


def driver_vs_runtimes(facts, ctx):
    m = ctx.matrix
    drv, drv_src = driver_version(facts)
    dcuda, dcuda_src = driver_cuda(facts)
    if not drv or m is None:
        return []
    osname = os_name(ctx)
    too_old, compat = [], []
    for label, ver in runtimes(facts):
        mm = major_minor(ver)
        if not mm:
            continue
        verdict = driver_verdict(m, drv, ver, osname)
        if verdict == "unsupported":
            too_old.append((label, f"{mm[0]}.{mm[1]}"))
        elif verdict == "minor_version_compat":
            compat.append((label, f"{mm[0]}.{mm[1]}"))
    findings = []
    if too_old:
        majors = sorted({int(x.split(".")[0]) for _, x in too_old})
        needs = []
        for mj in majors:
            mc = m.minor_version_compat(mj)
            if mc:
                needs.append(f"CUDA {mj}.x needs driver ≥ {getattr(mc, 'min_driver_' + osname) or mc.min_driver_linux}")
        branch = None
        mc = m.minor_version_compat(majors[-1])
        if mc and (getattr(mc, "min_driver_" + osname) or mc.min_driver_linux):
            branch = (getattr(mc, "min_driver_" + osname) or mc.min_driver_linux).split(".")[0]
        max_cuda = m.max_cuda_for_driver(drv, os=osname)
        # The driver's own answer, else the matrix's ceiling for its version; never a rejected value (None).
        ceiling = f" (CUDA ≤ {dcuda or max_cuda})" if dcuda or max_cuda else ""
        api = facts["cuda"].get("api") or {}
        gdc = (api.get("cudaGetDeviceCount") or {}).get("result")
        pip_fix = []
        if max_cuda:
            mj = max_cuda.split(".")[0]
            pip_fix = [Fix(f"Or keep driver {drv} and use CUDA {max_cuda} or older components "
                           f"(this driver runs CUDA ≤ {dcuda or max_cuda}).",
                           (f"python -m pip install 'cuda-python=={mj}.*' 'nvidia-cuda-runtime-cu{mj}=={max_cuda}.*'",))]
        findings.append(Finding(
            "driver.too_old", Severity.FAIL, "cuda",
            f"Driver {drv}{ceiling} is too old for {', '.join(sorted({x for _, x in too_old}))} runtimes here",
            evidence={"driver": f"{drv} (from {drv_src})", "driver_cuda": _driver_cuda_evidence(dcuda, dcuda_src),
                      "needs_newer_driver": [l for l, _ in too_old], "requirement": needs,
                      **({"cudaGetDeviceCount": gdc} if gdc and gdc != "cudaSuccess" else {})},
            fixes=(driver_install(ctx.os, branch),) + tuple(pip_fix), doc=DOC,
            detail="Programs fail with 'CUDA driver version is insufficient for CUDA runtime version' "
                   "(cudaErrorInsufficientDriver). Minor-version compatibility does not reach across a major version."))
    if compat and dcuda:  # "newer than driver CUDA X" needs X: unknown or rejected, probe.implausible_value says why
        findings.append(Finding(
            "driver.minor_version_compat", Severity.INFO, "cuda",
            f"Runtimes newer than driver CUDA {dcuda} run via minor-version compatibility: {', '.join(sorted({x for _, x in compat}))}",
            evidence={"driver": drv, "driver_cuda": dcuda, "runtimes": [l for l, _ in compat]},
            detail="Works for code shipped as SASS; PTX from these newer toolchains cannot be JIT-compiled by this "
                   "driver, and APIs added after the driver's CUDA version return cudaErrorCallRequiresNewerDriver.",
            doc=DOC))
    if not findings and dcuda:
        findings.append(Finding("driver.runtimes_ok", Severity.OK, "cuda",
                                f"Driver {drv} supports every CUDA runtime found (driver CUDA {dcuda})",
                                evidence={"runtimes": [l for l, _ in runtimes(facts)]}))
    return findings


def _driver_cuda_evidence(dcuda, src) -> str:
    return f"{dcuda} (from {src})" if dcuda else "unknown (neither NVML nor cuDriverGetVersion gave a plausible answer)"


def ptx_too_new(facts, ctx):
    """PTX from a toolchain newer than the driver cannot be JIT-compiled:
    'the provided PTX was compiled with an unsupported toolchain' (CUDA_ERROR_UNSUPPORTED_PTX_VERSION)."""
    dcuda, src = driver_cuda(facts)
    dv = v(dcuda)
    if dv is None:
        return []
    newer = []
    for t in facts["toolkit"].get("toolkits") or []:
        if v(t.get("release")) and v(t["release"]) > dv:
            newer.append(f"nvcc {t['release']} ({t['nvcc']})")
    nv = facts["smoke_nvrtc"].get("nvrtc_version")
    if v(nv) and v(nv) > dv:
        newer.append(f"NVRTC {nv}")
    if not newer:
        return []
    drv, _ = driver_version(facts)
    return [Finding(
        "driver.ptx_too_new", Severity.WARN, "cuda",
        f"PTX from {', '.join(newer)} cannot be JIT-compiled by driver {drv} (CUDA {dcuda})",
        evidence={"driver_cuda": f"{dcuda} (from {src})", "newer_compilers": newer},
        fixes=(Fix("Build SASS for the GPU instead of PTX only (e.g. -gencode arch=compute_90,code=sm_90), or compile "
                   "with a toolkit no newer than the driver.", ()),
               driver_install(ctx.os)),
        doc=DOC,
        detail="Kernels shipped only as PTX from these compilers fail to load with 'the provided PTX was compiled "
               "with an unsupported toolchain'.")]
