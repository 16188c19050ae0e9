"""Is a driver installed, loaded, and is its kernel module the same version as its user space?"""
from __future__ import annotations

from gpudoctor.findings import Finding, Fix, Severity
from gpudoctor.rules.fixes import driver_install
from gpudoctor.rules.loader import damaged_loaded_by, damaged_paths

DOC = "https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/index.html"


def driver_state(facts, ctx):
    drv = facts["driver"]
    if not facts.ok("driver"):
        return []
    nvml = drv.get("nvml") or {}
    reason = nvml.get("reason")
    if reason not in (None, "binding_missing") and any(s["soname"] == "libnvidia-ml.so.1" for s in stub_picks(facts)):
        return []  # NVML answered from a stub: driver.stub_library explains it
    km = drv.get("kernel_module")
    damaged_pick = nvml.get("status") == "error" and reason != "binding_missing" and _nvml_file_damaged(facts, drv)
    if damaged_pick:
        # NVML never got past loading a file that is no library (library.damaged names it and how it got picked):
        # its error says nothing about the driver. Judge by the rest: the kernel module, an intact libnvidia-ml.
        if km:
            return []
        bad = damaged_paths(facts)
        intact = [c for c in drv.get("libnvidia_ml") or [] if c.get("path") not in bad and c.get("realpath") not in bad]
        reason = "driver_not_loaded" if intact else "library_not_found"
    ev = {"nvml": nvml.get("error") or "ok", "libnvidia-ml": drv.get("libnvidia_ml_loaded"),
          "user_space_version": drv.get("user_space_version"),
          "kernel_module": (km or {}).get("version") or "not loaded (/proc/driver/nvidia/version absent)"}
    smi = drv.get("nvidia_smi") or {}
    if nvml.get("status") == "error" and smi.get("failure_reason") and not damaged_pick:
        # nvidia-smi failing in its own words for the same driver state is evidence, not a separate fault
        # (after a damaged pick it failed on that file: library.damaged quotes it).
        ev.update(_smi_evidence(smi))
    if nvml.get("status") == "ok":
        g = nvml.get("gpus") or []
        typed = facts.driver().nvml
        gpus = f"{len(g)} GPU{'s' if len(g) != 1 else ''}"
        # NVML's CUDA version is libcuda's cuDriverGetVersion; either source will do. Absent = unknown or
        # rejected (probe.implausible_value says why): say which is missing, never print it.
        dcuda = typed.cuda_driver_version or facts.cuda().driver_cuda_version
        missing = dict(ev, nvml_driver_version=typed.driver_version, nvml_cuda_driver_version=typed.cuda_driver_version,
                       cuDriverGetVersion=facts.cuda().driver_cuda_version)
        if not typed.driver_version:
            return [Finding("driver.ok", Severity.INFO, "driver",
                            f"Driver loaded ({gpus}), but NVML's driver version answer was implausible: version checks skipped",
                            evidence=missing)]
        if not dcuda:
            return [Finding("driver.ok", Severity.INFO, "driver",
                            f"Driver {typed.driver_version} loaded ({gpus}), but the CUDA version it supports is unknown "
                            "(no plausible answer from NVML or cuDriverGetVersion): CUDA version checks skipped",
                            evidence=missing)]
        return [Finding("driver.ok", Severity.OK, "driver",
                        f"Driver {typed.driver_version} loaded (supports CUDA ≤ {dcuda}), {gpus}",
                        evidence=dict(ev, kernel_module_flavor=(km or {}).get("flavor")))]
    if reason == "binding_missing":
        return [Finding("library.not_found", Severity.WARN, "driver", "nvidia-ml-py is not installed: NVML facts unavailable",
                        evidence={"error": nvml.get("error")},
                        fixes=(Fix("Install NVIDIA's NVML bindings.", ("python -m pip install nvidia-ml-py",)),))]
    wsl = ctx.os.wsl
    if reason == "library_not_found" or (not drv.get("libnvidia_ml") and not km):
        return [Finding("driver.missing", Severity.FAIL, "driver",
                        "No NVIDIA driver found (no libnvidia-ml, no kernel module)",
                        evidence=ev, fixes=(driver_install(ctx.os),), doc=DOC,
                        detail="WSL 2 gets the driver from Windows (/usr/lib/wsl/lib)." if wsl else None)]
    if reason == "driver_not_loaded":
        if wsl:
            fixes = (driver_install(ctx.os),)
        elif ctx.os.container:
            fixes = (Fix("In a container the kernel module is the host's: on the host, load it (sudo modprobe nvidia; "
                         "nvidia-smi must work there), then start the container with the GPUs passed in.",
                         ("docker run --gpus all ...",)),
                     Fix("Driver libraries installed inside the image shadow the ones the NVIDIA Container Toolkit mounts "
                         "from the host; images should not carry them.",
                         ("dpkg -S libnvidia-ml.so.1 libcuda.so.1 2>/dev/null",)))
        else:
            fixes = (
                Fix("Load the kernel module and read why it fails, if it does.",
                    ("sudo modprobe nvidia", "sudo dmesg | grep -iE 'nvidia|nvrm' | tail -n 20")),
                Fix("If the module is missing for this kernel, rebuild it (DKMS) against the running kernel's headers.",
                    ("sudo apt-get install -y linux-headers-$(uname -r)" if ctx.os.family == "debian" else
                     "sudo dnf install -y kernel-devel-$(uname -r)", "sudo dkms autoinstall", "sudo reboot")),
                Fix("With Secure Boot on, an unsigned module is refused: enrol the DKMS key (MOK) or sign the module.",
                    ("mokutil --sb-state", "sudo mokutil --import /var/lib/dkms/mok.pub  # then reboot and enrol")),
            )
        return [Finding("driver.not_loaded", Severity.FAIL, "driver",
                        f"NVIDIA driver {drv.get('user_space_version') or ''} user space is installed but the kernel module is not loaded".replace("  ", " "),
                        evidence=dict(ev, dev_nodes=facts["platform"].get("dev_nodes") or "none"),
                        fixes=fixes, doc=DOC,
                        detail=("/proc/driver/nvidia/version is absent and an intact libnvidia-ml is installed." if damaged_pick
                                else "NVML answered NVML_ERROR_DRIVER_NOT_LOADED; nvidia-smi fails with \"couldn't "
                                     "communicate with the NVIDIA driver\" in this state."))]
    if reason == "no_permission":
        return [Finding("driver.no_permission", Severity.FAIL, "driver", "NVML: insufficient permissions to open the GPU devices",
                        evidence=dict(ev, dev_nodes=facts["platform"].get("dev_nodes")),
                        fixes=(Fix("Give your user access to /dev/nvidia* (usually group video/render) or fix the container's device cgroup.",
                                   ("ls -l /dev/nvidia*", "sudo usermod -aG video $USER  # then log in again")),))]
    if reason == "version_mismatch":
        return []  # driver_mismatch reports it with the two versions
    return [Finding("driver.nvml_error", Severity.FAIL, "driver", f"NVML failed: {nvml.get('error')}", evidence=ev,
                    fixes=(Fix("Read the kernel log for the driver's own error.", ("sudo dmesg | grep -iE 'nvidia|nvrm|xid' | tail -n 30",)),))]


def _nvml_file_damaged(facts, drv: dict) -> bool:
    """Did the NVML worker load a file that is no library (an empty file, an HTML page, a cut ELF)? Then its
    failure says nothing about the driver (the kernel module may be loaded and a real copy cached)."""
    loaded = drv.get("libnvidia_ml_loaded")
    return bool(loaded and loaded in damaged_paths(facts)) or bool(damaged_loaded_by(facts, "worker nvml"))


def _smi_evidence(smi: dict) -> dict:
    return {"nvidia-smi": smi.get("path"), "nvidia-smi said": f"exit {smi.get('returncode')}: {smi.get('last_line')}"}


def driver_mismatch(facts, ctx):
    """Kernel module and user-space library of different versions: NVML says 'Driver/library version mismatch'."""
    drv = facts["driver"]
    nvml = drv.get("nvml") or {}
    typed = facts.driver()  # versions validated at parse: an implausible one is None here, never a mismatch
    km, us = typed.kernel_module_version, typed.user_space_version
    if nvml.get("reason") != "version_mismatch" and not (km and us and km != us):
        return []
    return [Finding(
        "driver.version_mismatch", Severity.FAIL, "driver",
        f"Driver kernel module {km or '?'} does not match its user-space libraries {us or '?'}",
        evidence={"kernel_module": km, "libnvidia-ml": drv.get("libnvidia_ml_loaded"), "user_space_version": us,
                  "nvml": nvml.get("error") or "ok",
                  **(_smi_evidence(drv.get("nvidia_smi") or {}) if (drv.get("nvidia_smi") or {}).get("failure_reason") else {})},
        fixes=(Fix("The driver was upgraded but the old module is still loaded: reboot.", ("sudo reboot",)),
               Fix("Without a reboot: unload and reload the modules (stops everything using the GPU).",
                   ("sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia", "sudo modprobe nvidia", "nvidia-smi")),
               Fix("If it persists after a reboot, the packages themselves disagree: reinstall one driver branch.",
                   ("dpkg -l | grep -E 'nvidia-(driver|kernel|utils)|libnvidia-(ml|compute)'" if ctx.os.family == "debian"
                    else "rpm -qa | grep -i nvidia",))),
        doc=DOC,
        detail="Seen as 'Failed to initialize NVML: Driver/library version mismatch' from nvidia-smi.")]


STUB_DOC = "https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__TYPES.html"
WHERE_SET = "grep -n LD_LIBRARY_PATH ~/.bashrc ~/.profile ~/.bash_profile ~/.zshrc /etc/environment /etc/profile.d/* 2>/dev/null"


def stub_picks(facts) -> list:
    """The driver probe's stub picks that the stub itself confirmed (or that lie in a ``stubs`` dir when
    it could not be asked): ``[{soname, path, via, entry, answer, ...}]``."""
    out = []
    for s in facts["driver"].get("stub_libraries") or []:
        answer = s.get("answer") or {}
        if answer.get("stub") or (answer.get("result") is None and "/stubs/" in f"{s.get('path')}{s.get('realpath')}"):
            out.append(s)
    return out


def stub_library(facts, ctx):
    """``driver.stub_library``: the libcuda / libnvidia-ml the dynamic loader picks is a CUDA toolkit link stub.
    cuda.h: CUDA_ERROR_STUB_LIBRARY = 34, "the CUDA driver that the application has loaded is a stub library"."""
    picks = stub_picks(facts)
    if not picks:
        return []
    env_entries = [e["path"] for e in facts["environment"].get("ld_library_path") or []]
    bad_dirs = {s["entry"] for s in picks if s.get("via") == "LD_LIBRARY_PATH"}
    keep = [e for e in env_entries if e not in bad_dirs]
    out = []
    for s in picks:
        nvml = s.get("library") == "libnvidia-ml"
        answer = s.get("answer") or {}
        said = (f"{answer['call']} returned {answer['result']}" + (f" ({answer['result_name']})" if answer.get("result_name") else "")
                if answer.get("call") else answer.get("error") or answer.get("load_error") or "not asked")
        effect = ("NVML calls fail as if no driver were loaded (nvidia-smi, pynvml, DCGM)" if nvml else
                  "programs get CUDA_ERROR_STUB_LIBRARY ('CUDA driver is a stub library') instead of the driver")
        via = f"LD_LIBRARY_PATH entry {s['entry']}" if s.get("via") == "LD_LIBRARY_PATH" else \
            f"the ldconfig cache ({s.get('ld_so_conf') or 'a directory in /etc/ld.so.conf.d'})" if s.get("via") == "ldconfig" \
            else f"{s.get('via')} ({s.get('entry')})"
        fixes = []
        if s.get("via") == "LD_LIBRARY_PATH":
            fixes.append(Fix("Drop the stubs directory from LD_LIBRARY_PATH (and from the line that sets it).",
                             (f"export LD_LIBRARY_PATH={':'.join(keep)}" if keep else "unset LD_LIBRARY_PATH", WHERE_SET)))
        elif s.get("via") == "ldconfig":
            conf = s.get("ld_so_conf")
            fixes.append(Fix("Take the stubs directory out of the loader's configuration and rebuild its cache.",
                             ((f"{ctx.os.sudo}sed -i '\\#^{s['entry']}/*$#d' {conf}" if conf else
                               "grep -rn stubs /etc/ld.so.conf /etc/ld.so.conf.d/"), f"{ctx.os.sudo}ldconfig",
                              f"ldconfig -p | grep {s['soname']}")))
        fixes.append(Fix("Stubs are for linking only: give their directory to the linker, never to the loader.",
                         (f"export LIBRARY_PATH={s['entry']}${{LIBRARY_PATH:+:$LIBRARY_PATH}}   # or -L{s['entry']} -l{s['library'][3:]}",)))
        if ctx.os.container:
            fixes.append(Fix("In a container the real driver libraries come from the host: start it with the GPUs.",
                             ("docker run --gpus all ...",)))
        out.append(Finding(
            "driver.stub_library", Severity.WARN if s["soname"] == "libnvidia-ml.so" else Severity.FAIL, "driver",
            f"The loader picks the CUDA toolkit's stub {s['path']} for {s['soname']} (from {via}): {effect}",
            evidence={"soname": s["soname"], "path": s["path"], "realpath": s.get("realpath"), "via": s.get("via"),
                      "entry": s.get("entry"), "ld_so_conf": s.get("ld_so_conf"), "stub_answer": said,
                      "LD_LIBRARY_PATH": ":".join(env_entries) or "unset"},
            fixes=tuple(fixes), doc=STUB_DOC,
            detail="cuda.h: CUDA_ERROR_STUB_LIBRARY (34) 'indicates that the CUDA driver that the application has loaded "
                   "is a stub library'; cuda-python may instead say 'Failed to get cuGetProcAddress_v2'."))
    return out
