"""Frameworks: a CUDA build where a GPU is meant to be used, for a CUDA the driver runs,
with kernels (SASS or PTX) for the GPUs here."""
from __future__ import annotations

from gpudoctor.findings import Finding, Fix, Severity
from gpudoctor.rules._util import (driver_cuda, driver_verdict, driver_version, framework_cuda_builds, gpus,
                                   major_minor, os_name, sm)

TORCH_DOC = "https://pytorch.org/get-started/locally/"
# CUDA variants of PyTorch wheels (index-url suffixes), newest last (https://download.pytorch.org/whl/).
TORCH_CUDA_INDEXES = ("cu118", "cu121", "cu124", "cu126", "cu128", "cu129", "cu130")


def _torch_index_for(dcuda):
    """The newest PyTorch CUDA wheel variant that this driver's CUDA version runs."""
    mm = major_minor(dcuda)
    if not mm:
        return "cu130"
    best = None
    for tag in TORCH_CUDA_INDEXES:
        t = (int(tag[2:-1]), int(tag[-1]))
        if t <= mm or t[0] == mm[0]:  # same major runs via minor-version compatibility
            best = tag
    return best or TORCH_CUDA_INDEXES[0]


def _driver_present(facts):
    d = facts["driver"]  # given_version: a system judged from its files, for a host with that driver
    return (d.get("nvml") or {}).get("status") == "ok" or bool(d.get("libcuda")) or bool(d.get("given_version"))


def _driver_cuda_or_ceiling(facts, ctx):
    """The driver's own CUDA version, else the matrix's ceiling for its version, else None: never a rejected
    value printed as "CUDA ≤ None" (probe.implausible_value says why it is missing)."""
    dcuda, _ = driver_cuda(facts)
    if dcuda:
        return dcuda
    drv, _ = driver_version(facts)
    try:
        return ctx.matrix.max_cuda_for_driver(drv, os=os_name(ctx)) if ctx.matrix is not None and drv else None
    except Exception:  # noqa: BLE001 (a driver the matrix cannot place: say nothing rather than guess)
        return None


def cpu_build(facts, ctx):
    fw = facts["frameworks"]
    out = []
    torch = fw.get("torch")
    if torch and not torch.get("cuda") and not torch.get("hip") and _driver_present(facts):
        dcuda = _driver_cuda_or_ceiling(facts, ctx)
        idx = _torch_index_for(dcuda)
        visible = bool(gpus(facts))
        out.append(Finding(
            "framework.cpu_build", Severity.FAIL if visible else Severity.WARN, "frameworks",
            f"torch {torch.get('version')} is a CPU-only build, but an NVIDIA driver is installed",
            evidence={"torch": torch.get("path"), "torch.version.cuda": None, "driver_cuda": dcuda},
            fixes=(Fix("Install the CUDA build of PyTorch for this driver" + (f" (CUDA ≤ {dcuda})." if dcuda else "."),
                       ("python -m pip uninstall -y torch",
                        f"python -m pip install torch --index-url https://download.pytorch.org/whl/{idx}")),),
            doc=TORCH_DOC, detail="torch.cuda.is_available() returns False with this build."))
    tf = fw.get("tensorflow")
    if tf and tf.get("is_cuda_build") is False and _driver_present(facts):
        out.append(Finding("framework.cpu_build", Severity.WARN, "frameworks",
                           f"tensorflow {tf.get('version')} is a CPU-only build",
                           evidence={"tensorflow": tf.get("path")},
                           fixes=(Fix("Install TensorFlow with its CUDA extras.", ("python -m pip install 'tensorflow[and-cuda]'",)),)))
    ort = fw.get("onnxruntime")
    if ort and ort.get("distribution") == "onnxruntime" and _driver_present(facts):
        out.append(Finding("framework.cpu_build", Severity.INFO, "frameworks",
                           f"onnxruntime {ort.get('version')} is the CPU package (no CUDA execution provider)",
                           evidence={"distribution": ort.get("distribution")},
                           fixes=(Fix("For GPU inference install onnxruntime-gpu instead.",
                                      ("python -m pip uninstall -y onnxruntime", "python -m pip install onnxruntime-gpu")),)))
    return out


def cuda_mismatch(facts, ctx):
    """Framework built for a CUDA major that this driver cannot run."""
    m = ctx.matrix
    drv, _ = driver_version(facts)
    if m is None or not drv:
        return []
    dcuda = _driver_cuda_or_ceiling(facts, ctx)
    ceiling = f" (CUDA ≤ {dcuda})" if dcuda else ""
    out = []
    for name, ver, cuda in framework_cuda_builds(facts):
        if driver_verdict(m, drv, cuda, os_name(ctx)) == "unsupported":
            fixes = [Fix(f"Upgrade the driver to run CUDA {cuda} builds (see driver.too_old), or install the "
                         f"{name} build for this driver{ceiling}.", ())]
            if name == "torch":
                fixes.append(Fix("PyTorch for this driver:", (
                    f"python -m pip install --force-reinstall torch --index-url https://download.pytorch.org/whl/{_torch_index_for(dcuda)}",)))
            out.append(Finding("framework.cuda_mismatch", Severity.FAIL, "frameworks",
                               f"{name} {ver or ''} is built for CUDA {cuda}, which driver {drv}{ceiling} cannot run".replace("  ", " "),
                               evidence={"framework": name, "built_for_cuda": cuda, "driver": drv, "driver_cuda": dcuda},
                               fixes=tuple(fixes)))
    return out


def arch_binary_missing(facts, ctx):
    """No SASS for the GPU and no PTX it can JIT: 'no kernel image is available for execution on the device'.

    Judged for every framework whose kernels were read (torch, onnxruntime-gpu, the JAX CUDA plugin from their
    libraries' fatbinaries; TensorFlow from its declared build arch list)."""
    try:
        from gpudoctor.formats import fatbin
    except ImportError:
        return []
    out = []
    for name, fw in (facts["frameworks"] or {}).items():
        archs = (fw or {}).get("archs") if isinstance(fw, dict) else None
        if not isinstance(archs, dict) or not (archs.get("sass") or archs.get("ptx")):
            continue
        ver = fw.get("version") or ""
        for g in gpus(facts):
            out.append(_arch_finding(fatbin, name, ver, archs, g))
    return out


def _arch_finding(fatbin, name, ver, archs, g):
    cc = g["compute_capability"]
    cov = fatbin.coverage((tuple(archs.get("sass") or ()), tuple(archs.get("ptx") or ())), cc)
    ev = {"framework": name, "gpu": g.get("name"), "compute_capability": cc, "sass": archs.get("sass"),
          "ptx": archs.get("ptx"), "library": archs.get("path")}
    where = f"GPU {g.get('index')} ({g.get('name')}, {sm(cc)})"
    if cov.verdict == "none":
        fixes = [Fix(f"Install a {name} build whose arch list includes {sm(cc)} (newer GPUs need newer CUDA variants, "
                     "e.g. cu128+ for Blackwell; older GPUs need older ones). `gpudoctor matrix gpu` lists the torch "
                     "wheels with SASS for it.", ())]
        if name == "torch":
            fixes.append(Fix("Or build from source for it.", (f"export TORCH_CUDA_ARCH_LIST=\"{cc}\"",)))
        return Finding("arch.binary_missing", Severity.FAIL, "frameworks",
                       f"{name} {ver} has no kernels for {where}".replace("  ", " "), evidence=ev, fixes=tuple(fixes),
                       detail="Kernels fail with 'CUDA error: no kernel image is available for execution on the device'.")
    if cov.verdict == "ptx_jit":
        return Finding("arch.binary_missing", Severity.INFO, "frameworks",
                       f"{name} runs on {where} only through PTX JIT: slow first start", evidence=dict(ev, reason=cov.reason))
    return Finding("arch.binary_ok", Severity.OK, "frameworks",
                   f"{name} {ver} has native kernels for {where}".replace("  ", " "), evidence=dict(ev, reason=cov.reason))
