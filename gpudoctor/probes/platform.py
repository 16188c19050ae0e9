"""Platform facts: OS, kernel, glibc, Python, WSL and container markers. Never judges."""
from __future__ import annotations

import glob
import os
import platform as _platform
import sys

from gpudoctor.formats import container as container_fmt

from gpudoctor.formats import os_release as os_release_fmt
from gpudoctor.probes.facts import Origin
from gpudoctor.probes.facts_system import PlatformFacts
from gpudoctor.process.problems import read_text


def _read(path: str, problems: list, limit: int = 65536) -> str:
    return read_text(path, problems, limit) or ""


def _hypervisor_flag(cpuinfo: str):
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            return "hypervisor" in line.split(":", 1)[-1].split()
    return None  # no x86 flags line (Arm): unknown


def probe(ctx) -> dict:
    """Return ``{"system", "os": {id, version_id, pretty_name, id_like}, "kernel", "machine",
    "glibc", "python": {version, executable}, "wsl": {is_wsl, kernel_marker, libcuda_dir},
    "container": {is_container, markers, nvidia_visible_devices, nvidia_driver_capabilities,
    nvidia_require_cuda}, "hypervisor": bool|None (a VM), "dev_nodes": [...], "windows": {...} or None,
    "problems": [...]}``; OS ID/VERSION_ID, kernel and glibc validated (:class:`~gpudoctor.probes.facts_system.PlatformFacts`)."""
    problems: list = []
    system = _platform.system()
    osr = os_release_fmt.parse_os_release(_read("/etc/os-release", problems)) if system == "Linux" else {}
    kernel = _platform.release()
    glibc = None
    try:
        glibc = os.confstr("CS_GNU_LIBC_VERSION")
    except (AttributeError, ValueError, OSError):
        pass
    proc_version = _read("/proc/version", problems)
    wsl_marker = "microsoft" in (kernel + proc_version).lower() or "wsl" in kernel.lower()
    cgroup = _read("/proc/1/cgroup", problems)
    markers = [m for m, present in (
        ("/.dockerenv", os.path.exists("/.dockerenv")),
        ("/run/.containerenv", os.path.exists("/run/.containerenv")),
        ("cgroup:docker", "docker" in cgroup),
        ("cgroup:kubepods", "kubepods" in cgroup),
        ("cgroup:containerd", "containerd" in cgroup),
        ("env:container", bool(ctx.env.get("container"))),
    ) if present]
    require = ctx.env.get("NVIDIA_REQUIRE_CUDA")
    facts = {
        "system": system,
        "os": {
            "id": osr.get("ID") or system.lower(),
            "version_id": osr.get("VERSION_ID"),
            "pretty_name": osr.get("PRETTY_NAME") or f"{system} {_platform.version()}",
            "id_like": osr.get("ID_LIKE"),
        },
        "kernel": kernel,
        "machine": _platform.machine(),
        "glibc": glibc,
        "python": {"version": _platform.python_version(), "executable": sys.executable},
        "wsl": {
            "is_wsl": wsl_marker,
            "libcuda_dir": "/usr/lib/wsl/lib" if os.path.exists("/usr/lib/wsl/lib/libcuda.so") else None,
        },
        "container": {
            "is_container": bool(markers),
            "markers": markers,
            "nvidia_visible_devices": ctx.env.get("NVIDIA_VISIBLE_DEVICES"),
            "nvidia_driver_capabilities": ctx.env.get("NVIDIA_DRIVER_CAPABILITIES"),
            "nvidia_require_cuda": container_fmt.parse_nvidia_require_cuda(require) if require else None,
        },
        # x86 CPUs under a hypervisor report the "hypervisor" flag (CPUID leaf 1, ECX bit 31)
        "hypervisor": _hypervisor_flag(_read("/proc/cpuinfo", problems)) if system == "Linux" else None,
        "dev_nodes": sorted(glob.glob("/dev/nvidia*")) + (["/dev/dxg"] if os.path.exists("/dev/dxg") else []),
        "windows": None,
        "problems": problems,
    }
    if system == "Windows":
        sysroot = ctx.env.get("SystemRoot", r"C:\Windows")
        facts["windows"] = {
            "cuda_path": ctx.env.get("CUDA_PATH"),
            "nvcuda_dll": os.path.exists(os.path.join(sysroot, "System32", "nvcuda.dll")),
            "nvml_dll": os.path.exists(os.path.join(sysroot, "System32", "nvml.dll")),
        }
    return PlatformFacts.parse(facts, Origin("/etc/os-release", "the platform probe")).to_dict()
