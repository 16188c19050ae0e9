"""Fix commands for the detected OS: apt on Ubuntu/Debian, dnf on RHEL-likes, WSL's own rules,
PowerShell on Windows. Rules describe *what* to do; this module says *how* on this machine."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from gpudoctor.findings import Fix


@dataclass(frozen=True)
class OsFlavor:
    """``family``: debian | rhel | windows | other; ``wsl``: Linux under WSL 2; ``container``: inside one."""

    family: str
    id: str
    version: Optional[str]
    wsl: bool = False
    container: bool = False

    @classmethod
    def from_platform(cls, facts: dict) -> "OsFlavor":
        if not facts:
            return cls("other", "unknown", None)
        if facts.get("system") == "Windows":
            return cls("windows", "windows", None)
        osr = facts.get("os") or {}
        ids = f"{osr.get('id') or ''} {osr.get('id_like') or ''}".lower()
        family = "debian" if any(x in ids for x in ("debian", "ubuntu")) else \
            "rhel" if any(x in ids for x in ("rhel", "fedora", "centos", "rocky", "almalinux")) else "other"
        return cls(family, (osr.get("id") or "linux").lower(), osr.get("version_id"),
                   wsl=bool((facts.get("wsl") or {}).get("is_wsl")),
                   container=bool((facts.get("container") or {}).get("is_container")))

    @property
    def sudo(self) -> str:
        return "" if self.container else "sudo "


def install(os_: OsFlavor, debian: str, rhel: Optional[str] = None) -> str:
    """One package-manager line for this OS (the package names differ between families)."""
    if os_.family == "debian":
        return f"{os_.sudo}apt-get install -y {debian}"
    if os_.family == "rhel":
        return f"{os_.sudo}dnf install -y {rhel or debian}"
    return f"# install {debian} with your package manager"


def gxx_package(os_: OsFlavor, major: int) -> str:
    if os_.family == "rhel":
        return f"gcc-toolset-{major}"
    return f"g++-{major}"


def driver_install(os_: OsFlavor, branch: Optional[str] = None) -> Fix:
    """Install or upgrade the NVIDIA driver (``branch`` like "580": the minimum needed)."""
    want = f" (version {branch} or newer)" if branch else ""
    if os_.wsl:
        return Fix(f"Under WSL 2 the driver is the Windows one: install or upgrade the NVIDIA Windows driver{want} "
                   "on the host, then restart WSL. Never install a Linux driver inside WSL.",
                   ("# on Windows (PowerShell): download the driver from https://www.nvidia.com/Download/index.aspx",
                    "wsl --shutdown", "nvidia-smi   # inside WSL, afterwards"))
    if os_.family == "windows":
        return Fix(f"Install the NVIDIA driver{want} from https://www.nvidia.com/Download/index.aspx, then reboot.",
                   ("nvidia-smi",), shell="powershell")
    if os_.container:
        return Fix(f"The driver comes from the host: install or upgrade it there{want}; the container only needs "
                   "the NVIDIA Container Toolkit and `--gpus all`.", ())
    if os_.id == "ubuntu":
        pkg = f"nvidia-driver-{branch}" if branch else "nvidia-driver-580"
        return Fix(f"Install the NVIDIA driver{want} (Ubuntu's packaged driver), then reboot.",
                   ("sudo ubuntu-drivers list", f"sudo apt-get install -y {pkg}", "sudo reboot"))
    if os_.family == "debian":
        return Fix(f"Install the NVIDIA driver{want}: Debian's packages (contrib non-free) or NVIDIA's CUDA repository "
                   "(cuda-drivers), then reboot.",
                   ("sudo apt-get install -y linux-headers-$(uname -r)",
                    f"sudo apt-get install -y {'cuda-drivers-' + branch if branch else 'nvidia-driver'}", "sudo reboot"))
    if os_.family == "rhel":
        return Fix(f"Install the NVIDIA driver{want} from NVIDIA's CUDA repository, then reboot.",
                   (f"sudo dnf module install -y nvidia-driver:{branch or 'latest'}-dkms", "sudo reboot"))
    return Fix(f"Install the NVIDIA driver{want} from https://www.nvidia.com/Download/index.aspx.", ())
