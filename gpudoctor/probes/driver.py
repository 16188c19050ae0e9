"""Driver facts: NVML (via nvidia-ml-py), the kernel module version, the user-space libraries.

NVML failures are facts with their meaning: ``driver_not_loaded`` (user space present,
kernel module absent), ``version_mismatch`` (kernel module and libnvidia-ml differ),
``library_not_found`` (no libnvidia-ml at all), ``no_permission``, ...
"""
from __future__ import annotations

import os

from gpudoctor.formats import nvidia_driver as nvidia_driver_fmt

from gpudoctor.formats import nvidia_smi as nvidia_smi_fmt
from gpudoctor.probes import facts as typed
from gpudoctor.probes.libfind import index_for
from gpudoctor.probes._worker import run_worker
from gpudoctor.process.problems import read_text
from gpudoctor.process.subproc import run

# NVML return codes (nvml.h, NVML API Reference "nvmlReturn_t") mapped to what they mean for a user.


#: Sonames a program asks for (DT_NEEDED / dlopen) whose file must be the driver's, never a toolkit stub.
#: Unversioned names matter too: Numba and other loaders dlopen("libcuda.so").
STUB_CHECKED = ("libcuda.so.1", "libcuda.so", "libnvidia-ml.so.1", "libnvidia-ml.so")
#: The link-time stubs CUDA toolkits ship are tens of KB; the driver's libcuda is tens of MB, its NVML a few MB.
STUB_MAX_BYTES = 512 * 1024


def looks_like_stub(path: str) -> bool:
    """A toolkit link stub (``<cuda>/lib64/stubs/``, Debian's ``/usr/lib/x86_64-linux-gnu/stubs/``, conda's
    ``lib/stubs``): it lies in a ``stubs`` directory, or is far smaller than any driver library."""
    real = os.path.realpath(path)
    if "stubs" in path.split(os.sep)[:-1] or "stubs" in real.split(os.sep)[:-1]:
        return True
    try:
        return os.path.getsize(real) < STUB_MAX_BYTES
    except OSError:
        return False


def stub_libraries(ctx, idx) -> list:
    """Every checked soname whose loader pick is a stub, with why it is picked and the stub's own answer
    (a child calls cuInit / nvmlInit_v2 on it: a stub libcuda says CUDA_ERROR_STUB_LIBRARY)."""
    out = []
    for soname in STUB_CHECKED:
        trace = idx.loader_trace(soname)
        if not trace or not looks_like_stub(trace["path"]):
            continue
        out.append(dict(trace, library=soname.split(".so")[0], soname=soname,
                        realpath=os.path.realpath(trace["path"]), ld_so_conf=_ld_so_conf_naming(trace["entry"])
                        if trace["via"] == "ldconfig" else None))
    if out:
        answers = run_worker(ctx, "stubcheck", *sorted({s["realpath"] for s in out}))
        for s in out:
            s["answer"] = answers.get(s["realpath"]) or {"error": answers.get("worker_error", "no answer")}
    return out


def _ld_so_conf_naming(directory: str):
    """The /etc/ld.so.conf(.d) file that lists ``directory``, or None."""
    import glob

    for conf in ["/etc/ld.so.conf"] + sorted(glob.glob("/etc/ld.so.conf.d/*.conf")):
        text = read_text(conf) or ""
        if any(line.strip().rstrip("/") == directory.rstrip("/") for line in text.splitlines()):
            return conf
    return None


def nvidia_smi(ctx) -> dict:
    """What ``nvidia-smi`` (first on PATH) answers: ``{"path", "driver_versions", "gpus", "problems"}``,
    or ``{"path": None}`` when there is none."""
    import shutil

    path = shutil.which("nvidia-smi", path=ctx.env.get("PATH", ""))
    if not path:
        return {"path": None}
    res = run([path, "--query-gpu=driver_version,name", "--format=csv,noheader"], timeout=ctx.timeout, env=ctx.env)
    rows = nvidia_smi_fmt.parse_smi_query_csv(res.stdout) if res.ok else []
    rec = res.problem(unparsable="GPU rows (driver_version, name)") if not rows else None
    return {"path": path, "driver_versions": sorted({r[0] for r in rows}), "gpus": [r[1] for r in rows],
            "returncode": res.returncode, "last_line": res.last_line() if not res.ok else None,
            # nvidia-smi's own words for a driver failure ("couldn't communicate with the NVIDIA driver", ...)
            "failure_reason": nvidia_smi_fmt.parse_nvidia_smi_error(res.output) if not res.ok else None,
            "problems": [rec] if rec else []}


SYS_PCI_DEVICES = "/sys/bus/pci/devices"
#: PCI class codes of GPUs (PCI Code and ID Assignment): 0x0300 VGA controller, 0x0302 3D controller.
#: NVSwitches (0x0680, "bridge") and the GPUs' audio functions (0x0403) are not GPUs.
GPU_CLASSES = (0x0300, 0x0302)


#: NVSwitches are PCI bridges of class 0x0680 ("other bridge") on HGX/DGX baseboards.
NVSWITCH_CLASS = 0x0680


def pci_nvidia(root: str = SYS_PCI_DEVICES) -> dict:
    """NVIDIA PCI functions (vendor 0x10de) in sysfs, read in one pass: ``{"gpus": [...], "nvswitches": [...]}``,
    each ``{"bus_id": "0000:17:00.0", "driver": "nvidia" | "vfio-pci" | None}`` (None: no driver bound);
    empty where sysfs has no PCI bus (WSL, some containers)."""
    out: dict = {"gpus": [], "nvswitches": []}
    try:
        entries = sorted(os.listdir(root))
    except OSError:
        return out
    for bus_id in entries:
        d = os.path.join(root, bus_id)
        try:
            with open(os.path.join(d, "vendor")) as fh:
                vendor = int(fh.read().strip(), 16)
            with open(os.path.join(d, "class")) as fh:
                cls = int(fh.read().strip(), 16) >> 8
        except (OSError, ValueError):
            continue
        kind = "gpus" if cls in GPU_CLASSES else "nvswitches" if cls == NVSWITCH_CLASS else None
        if vendor != 0x10DE or kind is None:
            continue
        link = os.path.join(d, "driver")
        out[kind].append({"bus_id": bus_id.lower(),
                          "driver": os.path.basename(os.readlink(link)) if os.path.islink(link) else None})
    return out


def pci_gpus(root: str = SYS_PCI_DEVICES) -> list:
    """NVIDIA GPUs on the PCI bus, whatever driver holds them (:func:`pci_nvidia`)."""
    return pci_nvidia(root)["gpus"]


def pci_nvswitches(root: str = SYS_PCI_DEVICES) -> list:
    """NVSwitches on the PCI bus (:func:`pci_nvidia`): an NVSwitch system needs the fabric manager."""
    return pci_nvidia(root)["nvswitches"]


def nvml_snapshot(ctx) -> dict:
    """NVML's view, computed once per run in a child process (:func:`gpudoctor.process.worker.task_nvml`:
    nvidia-ml-py's import and a hung driver call stay out of this process): ``{"status":
    "ok"|"error"|"unavailable", "error", "error_code", "reason", "driver_version", "cuda_driver_version",
    "nvml_version", "gpus"}``; a child that crashed or hung is ``status: error, reason: worker_failed``
    with its problem record."""
    def ask():
        res = run_worker(ctx, "nvml")
        if "worker_error" in res:
            return {"status": "error", "error": f"NVML query failed: {res['worker_error']}", "reason": "worker_failed",
                    "gpus": [], "problems": res.get("problems", []),
                    **({"differential": res["differential"]} if res.get("differential") else {})}
        return typed.NvmlSnapshot.parse(res, nvml_origin(ctx)).to_dict()

    return ctx.memo("nvml", ask)


def nvml_origin(ctx) -> "typed.Origin":
    """Where NVML's answers come from: the libnvidia-ml.so.1 the loader picks for the worker (looked up only
    when a value is rejected), and the worker, with LD_PRELOAD when one is set (it can answer instead)."""
    pre = ctx.env.get("LD_PRELOAD")
    return typed.Origin(lambda: index_for(ctx).loader_pick("libnvidia-ml.so.1") or "libnvidia-ml.so.1",
                        "the NVML worker, nvidia-ml-py" + (f", LD_PRELOAD={pre}" if pre else ""))


def probe(ctx) -> dict:
    """``{"nvml": nvml_snapshot, "kernel_module": {version, flavor}|None, "libnvidia_ml": [...copies],
    "libnvidia_ml_loaded": path, "libcuda": [...copies], "libcuda_loaded": path, "user_space_version",
    "stub_libraries": [{soname, path, via, entry, answer, ...}], "pci_gpus": [{bus_id, driver}], "pci_nvswitches": [{bus_id, driver}],
    "nvidia_smi": {...}, "problems": [...]}``."""
    from concurrent.futures import ThreadPoolExecutor

    problems: list = []
    with ThreadPoolExecutor(max_workers=1) as pool:
        smi = pool.submit(nvidia_smi, ctx)  # a process start: overlap it with NVML and the library scan
        idx = index_for(ctx)
        facts = _facts(ctx, idx, problems)
        facts["nvidia_smi"] = smi.result()
    facts["problems"] = problems + idx.problems
    return _validated(facts)


def _validated(facts: dict) -> dict:
    """The facts through :class:`gpudoctor.probes.facts.DriverFacts`: the kernel module's and nvidia-smi's
    versions kept only when plausible, a rejected one recorded as an ``implausible`` problem."""
    d = typed.DriverFacts.from_dict(facts)
    proc = typed.Origin(PROC_VERSION, "the kernel module (/proc/driver/nvidia/version)", d.problems)
    if d.kernel_module and d.kernel_module.get("version"):
        d.kernel_module = dict(d.kernel_module, version=proc.take(typed.driver_version, d.kernel_module["version"],
                                                                  "NVRM version line"))
    smi = facts.get("nvidia_smi") or {}
    said = typed.Origin(smi.get("path") or "nvidia-smi", "nvidia-smi --query-gpu=driver_version", d.problems)
    d.smi_driver_versions = [x for x in (said.take(typed.driver_version, v, "nvidia-smi driver_version")
                                         for v in d.smi_driver_versions) if x]
    return d.to_dict()


PROC_VERSION = "/proc/driver/nvidia/version"


def _facts(ctx, idx, problems) -> dict:
    proc = read_text(PROC_VERSION, problems)
    nvml_pick = idx.loader_pick("libnvidia-ml.so.1")
    cuda_pick = idx.loader_pick("libcuda.so.1")
    # A file named only by its soname (libnvidia-ml.so.1) says no driver version: unknown, not "1".
    user_space = typed.soname_driver_version(
        nvidia_driver_fmt.version_from_soname(os.path.basename(os.path.realpath(nvml_pick)))) if nvml_pick else None
    pci = pci_nvidia()  # one pass over sysfs for GPUs and NVSwitches
    return {
        "nvml": nvml_snapshot(ctx),
        "kernel_module": nvidia_driver_fmt.parse_proc_driver_version(proc) if proc else None,
        "libnvidia_ml": _copies(idx, "libnvidia-ml"),
        "libnvidia_ml_loaded": nvml_pick,
        "libcuda": _copies(idx, "libcuda"),
        "libcuda_loaded": cuda_pick,
        "user_space_version": user_space,
        "stub_libraries": stub_libraries(ctx, idx),
        "pci_gpus": pci["gpus"],
        "pci_nvswitches": pci["nvswitches"],
    }


def _copies(idx, stem: str) -> list:
    """Every copy of a driver library; ``version`` only when its file name carries a driver version."""
    return [dict(c.to_dict(), version=typed.soname_driver_version(c.version)) for c in idx.copies(stem)]
