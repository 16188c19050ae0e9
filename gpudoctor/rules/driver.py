"""Is a driver installed, loaded, and is its kernel module the same version as its user space?"""
from __future__ import annotations

from gpudoctor.findings import Finding, Fix, Severity
from gpudoctor.fixes import driver_install

DOC = "https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/index.html"


def driver_state(facts, ctx):
    drv = facts["driver"]
    if not facts.ok("driver"):
        return []
    nvml = drv.get("nvml") or {}
    reason = nvml.get("reason")
    km = drv.get("kernel_module")
    ev = {"nvml": nvml.get("error") or "ok", "libnvidia-ml": drv.get("libnvidia_ml_loaded"),
          "user_space_version": drv.get("user_space_version"),
          "kernel_module": (km or {}).get("version") or "not loaded (/proc/driver/nvidia/version absent)"}
    if nvml.get("status") == "ok":
        g = nvml.get("gpus") or []
        return [Finding("driver.ok", Severity.OK, "driver",
                        f"Driver {nvml.get('driver_version')} loaded (supports CUDA ≤ {nvml.get('cuda_driver_version')}), "
                        f"{len(g)} GPU{'s' if len(g) != 1 else ''}",
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
                        detail="NVML answered NVML_ERROR_DRIVER_NOT_LOADED; nvidia-smi fails with \"couldn't communicate "
                               "with the NVIDIA driver\" in this state.")]
    if reason == "no_permission":
        return [Finding("driver.no_permission", Severity.FAIL, "driver", "NVML: insufficient permissions to open the GPU devices",
                        evidence=dict(ev, dev_nodes=facts["platform"].get("dev_nodes")),
                        fixes=(Fix("Give your user access to /dev/nvidia* (usually group video/render) or fix the container's device cgroup.",
                                   ("ls -l /dev/nvidia*", "sudo usermod -aG video $USER  # then log in again")),))]
    if reason == "version_mismatch":
        return []  # driver_mismatch reports it with the two versions
    return [Finding("driver.nvml_error", Severity.FAIL, "driver", f"NVML failed: {nvml.get('error')}", evidence=ev,
                    fixes=(Fix("Read the kernel log for the driver's own error.", ("sudo dmesg | grep -iE 'nvidia|nvrm|xid' | tail -n 30",)),))]


def driver_mismatch(facts, ctx):
    """Kernel module and user-space library of different versions: NVML says 'Driver/library version mismatch'."""
    drv = facts["driver"]
    nvml = drv.get("nvml") or {}
    km = (drv.get("kernel_module") or {}).get("version")
    us = drv.get("user_space_version")
    if nvml.get("reason") != "version_mismatch" and not (km and us and km != us):
        return []
    return [Finding(
        "driver.version_mismatch", Severity.FAIL, "driver",
        f"Driver kernel module {km or '?'} does not match its user-space libraries {us or '?'}",
        evidence={"kernel_module": km, "libnvidia-ml": drv.get("libnvidia_ml_loaded"), "user_space_version": us,
                  "nvml": nvml.get("error") or "ok"},
        fixes=(Fix("The driver was upgraded but the old module is still loaded: reboot.", ("sudo reboot",)),
               Fix("Without a reboot: unload and reload the modules (stops everything using the GPU).",
                   ("sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia", "sudo modprobe nvidia", "nvidia-smi")),
               Fix("If it persists after a reboot, the packages themselves disagree: reinstall one driver branch.",
                   ("dpkg -l | grep -E 'nvidia-(driver|kernel|utils)|libnvidia-(ml|compute)'" if ctx.os.family == "debian"
                    else "rpm -qa | grep -i nvidia",))),
        doc=DOC,
        detail="Seen as 'Failed to initialize NVML: Driver/library version mismatch' from nvidia-smi.")]
