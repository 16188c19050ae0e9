"""Which GPUs can CUDA see, and are they healthy (NVML)?"""
from __future__ import annotations

from gpudoctor.findings import Finding, Fix, Severity
from gpudoctor.rules.driver import stub_picks
from gpudoctor.rules.sharing import limit_explains

VIS_DOC = "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#cuda-environment-variables"
#: cuInit's answers that mean the driver gave this process no GPU (cuda.h: "no CUDA-capable devices were
#: detected", "invalid device ordinal"); any other error is not about visibility.
HIDDEN = ("CUDA_ERROR_NO_DEVICE", "CUDA_ERROR_INVALID_DEVICE")


def visibility(facts, ctx):
    """CUDA_VISIBLE_DEVICES and the CUDA driver API against what NVML sees."""
    nvml = facts["driver"].get("nvml") or {}
    if nvml.get("status") != "ok":
        return []  # no driver view to compare with: driver_state explains why
    if any(s["library"] == "libcuda" for s in stub_picks(facts)):
        return []  # CUDA runs on a stub libcuda: driver.stub_library explains why it sees no GPU
    ngpu = len(nvml.get("gpus") or [])
    uuids = [g.get("uuid") or "" for g in nvml.get("gpus") or []]
    cvd = facts["environment"].get("cuda_visible_devices") or {}
    api = facts["cuda"].get("api") or {}
    init = (api.get("cuInit") or {}).get("result")
    cuda_count = len(api.get("devices") or [])
    ev = {"nvml_gpus": ngpu, "CUDA_VISIBLE_DEVICES": cvd.get("raw") if cvd.get("set") else "unset",
          "cuInit": init, "cuda_devices": cuda_count if init == "CUDA_SUCCESS" else 0}
    problems = []
    kind = cvd.get("kind")
    if kind in ("empty", "none"):
        problems.append(f"CUDA_VISIBLE_DEVICES={cvd.get('raw')!r} hides every GPU")
    if cvd.get("invalid"):
        problems.append(f"entry {cvd['invalid'][0]!r} is not an index or UUID; CUDA ignores it and everything after it"
                        + (f" ({', '.join(cvd.get('ignored') or [])})" if cvd.get("ignored") else ""))
    for e in cvd.get("visible") or cvd.get("entries") or []:
        if e.isdigit() and int(e) >= ngpu:
            problems.append(f"index {e} is out of range (NVML sees {ngpu} GPU{'s' if ngpu != 1 else ''}: 0–{ngpu - 1}); "
                            "CUDA stops at the first invalid index")
        elif e.startswith("GPU-") and not any(u.startswith(e) for u in uuids):
            problems.append(f"UUID {e} matches no GPU here")
    if not problems and init == "CUDA_ERROR_SYSTEM_NOT_READY":
        return []  # nothing hides the GPUs: the NVSwitch fabric is down (nvlink.fabric_down says so)
    if not problems and ngpu and init is not None and init != "CUDA_SUCCESS":
        if limit_explains(facts):
            return []  # a resource limit of this process makes cuInit fail: process.* says which
        if init not in HIDDEN:
            return [_init_failed(init, ngpu, ev)]
        problems.append(f"NVML sees {ngpu} GPU(s) but cuInit returned {init}")
    if not problems and init == "CUDA_SUCCESS" and 0 < cuda_count < ngpu:
        return [_partly_hidden(facts, nvml, api, cvd, ev)]
    if not problems:
        if ngpu:
            return [Finding("device.visible", Severity.OK, "devices",
                            f"CUDA sees {cuda_count if init == 'CUDA_SUCCESS' else '?'} of {ngpu} GPU(s)", evidence=ev)]
        return []
    fixes = [Fix("Show all GPUs to CUDA (or list valid indices / UUIDs from `nvidia-smi -L`).",
                 ("nvidia-smi -L", "unset CUDA_VISIBLE_DEVICES"))]
    if facts["platform"].get("container", {}).get("is_container"):
        fixes.append(Fix("In a container, pass the GPUs in: `docker run --gpus all ...` (NVIDIA Container Toolkit).", ()))
    severity = Severity.FAIL if (init != "CUDA_SUCCESS" or cuda_count == 0) else Severity.WARN
    return [Finding("device.not_visible", severity, "devices", "GPUs hidden from CUDA: " + "; ".join(problems),
                    evidence=ev, fixes=tuple(fixes), doc=VIS_DOC)]


def _init_failed(init: str, ngpu: int, ev: dict) -> Finding:
    """cuInit failed with an error that is not about which GPUs the process sees (out of memory, operating
    system, not permitted...): say so, and leave its meaning to explain's reading of the error (annotate)."""
    return Finding("device.not_visible", Severity.FAIL, "devices",
                   f"CUDA cannot start although NVML sees {ngpu} GPU(s): cuInit returned {init} (not a visibility problem)",
                   evidence=dict(ev, stderr_tail=f"cuInit returned {init}"),
                   fixes=(Fix("Ask the driver API directly in this shell (same environment and limits), and read the "
                              "kernel log of the driver.",
                              ("python3 -c 'import ctypes; print(ctypes.CDLL(\"libcuda.so.1\").cuInit(0))'",
                               "sudo dmesg | grep -iE 'nvrm|xid' | tail")),),
                   doc="https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__TYPES.html")


def _partly_hidden(facts, nvml, api, cvd, ev) -> Finding:
    """CUDA runs on some of the GPUs NVML sees: which ones are missing (by UUID) and what hid them."""
    seen = {d.get("uuid") for d in api.get("devices") or []}
    hidden = [g for g in nvml.get("gpus") or [] if g.get("uuid") and g["uuid"] not in seen]
    shown = ", ".join(f"GPU {g.get('index')} ({g.get('name')}, {g.get('pci_bus_id')})" for g in hidden) or "?"
    jobs = facts["environment"].get("scheduler_vars") or {}
    ev = dict(ev, hidden=[g.get("uuid") for g in hidden], **({"scheduler": jobs} if jobs else {}))
    n, total = len(api.get("devices") or []), len(nvml.get("gpus") or [])
    if cvd.get("set"):
        title = f"CUDA_VISIBLE_DEVICES={cvd.get('raw')} hides {total - n} of {total} GPUs from CUDA: {shown}"
        fixes = (Fix("If this process should use every GPU, unset the variable (and find where it is set).",
                     ("unset CUDA_VISIBLE_DEVICES",
                      "grep -n CUDA_VISIBLE_DEVICES ~/.bashrc ~/.profile /etc/environment 2>/dev/null")),)
    else:
        title = f"CUDA sees {n} of the {total} GPUs NVML sees; missing: {shown}"
        fixes = (Fix("Compare what the driver and CUDA see; a GPU in MIG mode, an unhealthy GPU or a container "
                     "given only some /dev/nvidia* devices drops out of CUDA's list.", ("nvidia-smi -L", "nvidia-smi -q -d MIG")),)
    # A scheduler sets the variable to the job's GPUs on purpose: say so, do not warn.
    severity = Severity.OK if (jobs and cvd.get("set")) else Severity.WARN
    return Finding("device.partly_hidden", severity, "devices",
                   title + (" (set by the batch scheduler for this job)" if severity is Severity.OK else ""),
                   evidence=ev, fixes=() if severity is Severity.OK else fixes,
                   detail="Multi-GPU jobs, NCCL and the peer-copy smoke test use only the GPUs CUDA sees.", doc=VIS_DOC)


def gpu_health(facts, ctx):
    """Per-GPU NVML health: PCIe link width, pending retired pages / row remaps, uncorrected ECC, lost GPUs."""
    nvml = facts["driver"].get("nvml") or {}
    out = []
    for g in nvml.get("gpus") or []:
        label = f"GPU {g.get('index')} ({g.get('name') or '?'})"
        if g.get("error"):
            out.append(Finding("gpu.health", Severity.FAIL, "devices", f"{label}: NVML error {g['error']}",
                               evidence={"gpu": g.get("index"), "error": g["error"]},
                               fixes=(Fix("Read the kernel log for Xid errors; a lost GPU needs a reset or a reboot.",
                                          ("sudo dmesg | grep -i xid | tail -n 20", "sudo reboot")),)))
            continue
        issues, sev = [], Severity.OK
        wc, wm = g.get("pcie_width_current"), g.get("pcie_width_max")
        if wc and wm and wc < wm:
            issues.append(f"PCIe link x{wc} of x{wm}")
            sev = Severity.WARN
        if g.get("retired_pages_pending"):
            issues.append("retired pages pending (takes effect at the next GPU reset)")
            sev = Severity.WARN
        rr = g.get("remapped_rows") or {}
        if rr.get("failure"):
            issues.append("row remapping failed")
            sev = Severity.FAIL
        elif rr.get("pending"):
            issues.append("row remap pending (reset the GPU)")
            sev = max(sev, Severity.WARN, key=lambda s: s.rank)
        if g.get("ecc_uncorrected_volatile"):
            issues.append(f"{g['ecc_uncorrected_volatile']} uncorrected ECC errors since the last reset")
            sev = max(sev, Severity.WARN, key=lambda s: s.rank)
        if g.get("mig_mode_pending") is not None and g.get("mig_mode_pending") != g.get("mig_mode_current"):
            issues.append("MIG mode change pending (reset the GPU)")
            sev = max(sev, Severity.INFO, key=lambda s: s.rank)
        ev = {k: g.get(k) for k in ("name", "uuid", "compute_capability", "memory_total_mib", "pcie_gen_current",
                                   "pcie_gen_max", "pcie_width_current", "pcie_width_max", "ecc_mode_current",
                                   "mig_mode_current", "persistence_mode", "retired_pages_pending", "remapped_rows")}
        if not issues:
            link = f"PCIe Gen{g.get('pcie_gen_current')} x{wc}" if wc else "PCIe link unknown"
            out.append(Finding("gpu.health", Severity.OK, "devices",
                               # None: NVML's answer was implausible and left out (probe.implausible_value)
                               f"{label}: compute capability {g.get('compute_capability') or '?'}, "
                               f"{g.get('memory_total_mib') or '?'} MiB, {link}, ECC {'on' if g.get('ecc_mode_current') else 'off'}",
                               evidence=ev))
        else:
            out.append(Finding("gpu.health", sev, "devices", f"{label}: " + "; ".join(issues), evidence=ev,
                               fixes=(Fix("Check the link and error counters; reseat the card or move it to an x16 slot "
                                          "for a narrow link; reset the GPU (no processes on it) for pending retirements.",
                                          ("nvidia-smi -q -d PCI,ECC,PAGE_RETIREMENT,ROW_REMAPPER",
                                           "sudo nvidia-smi --gpu-reset -i %s  # only when idle" % g.get("index"))),)))
    return out


#: NVML's driver models on Windows (nvmlDriverModel_t; https://nvidia.github.io/cuda-python/latest/...
#: cuda.bindings.nvml.DriverModel): WDDM treats the GPU as a display device, WDM (TCC, deprecated) as a
#: generic compute device, MCDM as a Microsoft compute device.
DRIVER_MODEL_DOC = "https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceQueries.html"


def driver_model(facts, ctx):
    """Windows: each GPU's driver model (``driver_model_current`` / ``_pending``, NVML's nvmlDeviceGetDriverModel,
    as ``nvidia-smi -q`` shows them). A pending change "takes effect after the next reboot" (NVML's
    nvmlDeviceSetDriverModel): until then the GPU runs the current one. TCC is deprecated; MCDM is preferred when
    no display is attached (NVML's nvmlDeviceGetDriverModel_v2)."""
    out = []
    for g in (facts["driver"].get("nvml") or {}).get("gpus") or []:
        now, later = g.get("driver_model_current"), g.get("driver_model_pending")
        if not now:
            continue
        label = f"GPU {g.get('index')} ({g.get('name') or '?'})"
        ev = {"driver_model_current": now, "driver_model_pending": later, "source": "NVML nvmlDeviceGetDriverModel"}
        if later and later != now:
            out.append(Finding("gpu.driver_model_pending", Severity.WARN, "devices",
                               f"{label} runs the {now} driver model; {later} takes effect only after a reboot",
                               evidence=ev, doc=DRIVER_MODEL_DOC,
                               fixes=(Fix("Restart Windows for the driver model change to take effect.",
                                          ("shutdown /r /t 0",)),)))
        elif now == "TCC":
            out.append(Finding("gpu.driver_model", Severity.INFO, "devices",
                               f"{label} runs the TCC (WDM) driver model, which NVIDIA deprecates; MCDM is preferred "
                               "for a GPU without a display", evidence=ev, doc=DRIVER_MODEL_DOC))
        else:
            out.append(Finding("gpu.driver_model", Severity.OK, "devices", f"{label} runs the {now} driver model",
                               evidence=ev, doc=DRIVER_MODEL_DOC,
                               detail="Under WDDM the GPU is also a display device: Windows' TDR watchdog resets it "
                                      "when one kernel runs longer than its timeout." if now == "WDDM" else None))
    return out
