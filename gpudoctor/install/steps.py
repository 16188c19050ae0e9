"""Turn a :class:`~gpudoctor.install.solver.Plan` into install steps for its OS.

A step is a title, commands and comments; :mod:`gpudoctor.install.formats`
writes them as a shell script, a Dockerfile or a PowerShell script. Package
names come from the matrix (``os.json`` repo and driver package, cuDNN ``apt``
names, TensorRT/cuDNN ``pip`` names, torch ``index_url``), never from here.

The traps the steps avoid, with their sources:

* the ``cuda`` / ``cuda-drivers`` meta-packages (and old local .deb repos) pull
  in a driver and can replace a newer one: only ``cuda-toolkit-X-Y`` is
  installed when the driver is kept (CUDA Installation Guide for Linux, "Meta
  Packages");
* WSL: the Windows driver provides libcuda; installing a Linux driver inside
  WSL breaks it (CUDA on WSL User Guide, "Step 3: Set Up a Linux Development
  Environment");
* stale ``LD_LIBRARY_PATH``/``PATH`` entries of another CUDA: the environment
  lines drop every other ``/usr/local/cuda*`` entry before adding this one;
* a plan from the distribution's archive (``Plan.archive``: Debian's nvidia-cuda-toolkit) enables the
  archive's components in a sources file of its own and never adds NVIDIA's repository or cuda-keyring.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Tuple

from gpudoctor.install.solver import Plan

__all__ = ["Step", "linux_steps", "windows_steps", "toolkit_package", "cuda_home", "pip_requirements"]


@dataclass
class Step:
    """``root`` commands run as root (sh adds sudo), ``user`` ones as the user; ``notes`` become comments."""

    title: str
    root: List[str] = field(default_factory=list)
    user: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)


def toolkit_package(plan: Plan) -> str:
    if plan.archive is not None:
        return plan.archive.toolkit_package
    return f"cuda-toolkit-{plan.cuda.major}-{plan.cuda.minor}"


def cuda_home(plan: Plan) -> Optional[str]:
    """Where the toolkit lives; None for the archive's, which is spread over /usr (nvcc in /usr/bin)."""
    return None if plan.archive is not None else f"/usr/local/cuda-{plan.cuda.cuda}"


#: Debian's archive entry, deb822 (wiki.debian.org/SourcesList), in a file of its own with only the components
#: main lacks: the system's own entries are left as they are (a component listed twice only makes apt warn).
_ARCHIVE_SOURCES = "/etc/apt/sources.list.d/debian-{suite}-{tag}.sources"


def _archive_step(plan: Plan) -> Step:
    a = plan.archive
    assert a is not None
    lines = ["Types: deb", "URIs: http://deb.debian.org/debian", f"Suites: {a.suite} {a.suite}-updates",
             f"Components: {' '.join(a.components)}",
             "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg"]
    path = _ARCHIVE_SOURCES.format(suite=a.suite, tag="-".join(a.components))
    printf = "printf '%s\\n' " + " ".join(f"'{line}'" for line in lines)
    return Step(f"Debian's {' and '.join(a.components)} components", [
        f"sh -c \"{printf} > {path}\"",
        "apt-get update",
    ], notes=[f"{a.toolkit_package} is in {a.suite}'s non-free component; Debian 12's sources list "
              "main only by default. The entry goes in a file of its own; with contrib and non-free already "
              "enabled, apt warns that they are configured twice, which is harmless.",
              "Only Debian's archive: no NVIDIA repository, no cuda-keyring."])


def _cudnn_packages(plan: Plan, rpm: bool) -> List[str]:
    c = plan.cudnn
    assert c is not None
    names = [n.replace("{cuda_major}", str(plan.cuda.major)) for n in c.apt]
    if rpm:
        names = [n.replace("-dev", "-devel") for n in names]
    version = c.apt_versions.get(str(plan.cuda.major))
    if version and not rpm:
        names = [f"{n}={version}" for n in names]
    return names


def pip_requirements(plan: Plan) -> List[Tuple[str, Optional[str]]]:
    """(requirement, index URL or None) for the Python side of the plan, in install order."""
    reqs: List[Tuple[str, Optional[str]]] = []
    if plan.pip_only and plan.torch is None:
        # Without torch, the CUDA and cuDNN wheels are asked for directly (torch pins its own: never override them).
        sfx = plan.pip_suffix or ""
        reqs += [(f"nvidia-cuda-runtime{sfx}=={plan.cuda.cuda}.*", None), (f"nvidia-cuda-nvrtc{sfx}=={plan.cuda.cuda}.*", None)]
        if plan.cudnn is not None:
            reqs.append((f"nvidia-cudnn-cu{plan.cuda.major}=={plan.cudnn.cudnn}.*", None))
    if plan.torch is not None and plan.torch_build is not None:
        reqs.append((f"torch=={plan.torch.torch}.*", plan.torch_build.index_url))
    if plan.tensorrt is not None:
        cu = f"tensorrt-cu{plan.cuda.major}"
        name = cu if cu in plan.tensorrt.pip else (plan.tensorrt.pip[0] if plan.tensorrt.pip else None)
        if name:
            reqs.append((f"{name}=={plan.tensorrt.tensorrt}.*", None))
    return reqs


def _repo_step(plan: Plan) -> Step:
    os_ = plan.target.os
    if os_.family == "rhel":
        return Step("NVIDIA's CUDA repository", [
            f"dnf config-manager --add-repo {os_.keyring}",
            "dnf clean expire-cache",
        ], notes=["dnf config-manager comes with dnf-plugins-core."])
    return Step("NVIDIA's CUDA repository (cuda-keyring)", [
        "apt-get update",
        "apt-get install -y --no-install-recommends ca-certificates curl",
        f"curl -fsSL -o /tmp/cuda-keyring.deb {os_.keyring}",
        "dpkg -i /tmp/cuda-keyring.deb",
        "apt-get update",
    ])


def _driver_step(plan: Plan, docker: bool) -> Step:
    t = plan.target
    if docker or t.container:
        return Step("Driver", notes=["Never install a driver in an image or container: it comes from the host through the NVIDIA "
                                     f"Container Toolkit (run with --gpus all). The host needs driver {plan.driver_min} "
                                     "or newer."])
    if t.os.os == "wsl-ubuntu":
        return Step("Driver (Windows host)", user=["nvidia-smi"], notes=[
            "Under WSL the Windows driver provides libcuda: never install a Linux driver (nvidia-driver-*, cuda-drivers "
            "or the `cuda` meta-package) inside WSL.",
            f"On Windows, install NVIDIA driver {plan.driver_min} or newer "
            "(https://www.nvidia.com/Download/index.aspx), then run `wsl --shutdown`.",
        ])
    if plan.driver_branch is None:
        have = f"the installed driver {t.driver}" if t.driver else "the installed driver"
        notes = [f"Keeping {have}; CUDA {plan.cuda.cuda} needs {plan.driver_min} or newer."]
        if plan.archive is not None:
            notes.append(f"{plan.archive.toolkit_package} depends (through nvidia-cuda-dev) on libcuda1 (>= 520) or "
                         "another package providing libcuda.so.1: with a driver dpkg does not know (NVIDIA's .run "
                         f"installer), apt adds Debian's libcuda1 {plan.archive.driver_version} beside it, whose "
                         "version must match the loaded kernel module (/proc/driver/nvidia/version); --driver "
                         f"install plans Debian's {plan.archive.driver_package} instead.")
        elif not plan.pip_only:
            notes.append("Install only cuda-toolkit-X-Y: the `cuda` and `cuda-drivers` meta-packages (and older CUDA "
                         ".deb/.rpm local repos) pull in their own driver and can replace a newer one.")
        return Step("Driver (kept)", notes=notes)
    if plan.archive is not None:
        a = plan.archive
        return Step(f"Driver {plan.driver_branch} (Debian's {a.driver_package}, DKMS)", [
            "apt-get install -y linux-headers-\"$(uname -r)\"", f"apt-get install -y {a.driver_package}"], notes=[
            f"Debian's {a.driver_package} ({a.driver_version} in {a.suite} non-free); CUDA {plan.cuda.cuda} needs "
            f"driver {plan.driver_min} or newer.",
            "Secure Boot: if `mokutil --sb-state` says enabled, DKMS signs the module with a MOK key; enroll it at "
            "the next boot (blue MOK screen) or the module will not load.",
            "Reboot after this step, before using the GPU."])
    pkg = (t.os.driver_package or "nvidia-driver-{branch}").replace("{branch}", plan.driver_branch)
    notes = []
    if t.gpu is not None and int(t.gpu.sm[3:]) < 75 and "-open" in pkg:
        # NVIDIA's open kernel modules need Turing or newer; older GPUs need the proprietary flavour.
        pkg = pkg.replace("-open", "-dkms" if ":" in pkg else "")
        notes.append(f"{t.gpu.name} ({t.gpu.sm}) predates Turing: it needs the proprietary kernel modules, not -open.")
    if t.os.family == "rhel":
        root = ["dnf install -y kernel-devel-\"$(uname -r)\" kernel-headers-\"$(uname -r)\"",
                f"dnf module install -y {pkg}" if ":" in pkg else f"dnf install -y {pkg}"]
    else:
        root = ["apt-get install -y linux-headers-\"$(uname -r)\"", f"apt-get install -y {pkg}"]
    return Step(f"Driver {plan.driver_branch} (DKMS)", root, notes=notes + [
        f"CUDA {plan.cuda.cuda} needs driver {plan.driver_min} or newer.",
        "Secure Boot: if `mokutil --sb-state` says enabled, DKMS signs the module with a MOK key; enroll it at the "
        "next boot (blue MOK screen) or the module will not load.",
        "Reboot after this step, before using the GPU.",
    ])


def _env_lines(plan: Plan) -> List[str]:
    home = cuda_home(plan)
    if home is None:  # the archive's nvcc is /usr/bin/nvcc: only drop the CUDA that would shadow it
        return [
            "# Drop every /usr/local/cuda* entry from the search paths: its nvcc and libraries would shadow the ones "
            "this plan installs in /usr.",
            # grep exits 1 when nothing is left (an unset LD_LIBRARY_PATH): under `set -e -o pipefail` that ended the script.
            "strip_cuda() { printf '%s' \"$1\" | tr ':' '\\n' | { grep -v '^/usr/local/cuda' || true; } | paste -sd: -; }",
            "PATH=\"$(strip_cuda \"$PATH\")\"",
            "LD_LIBRARY_PATH=\"$(strip_cuda \"${LD_LIBRARY_PATH:-}\")\"",
            "export PATH LD_LIBRARY_PATH",
        ]
    return [
        "# Drop every other CUDA from the search paths (a stale one loads the wrong libraries), then add this one.",
        # grep exits 1 when nothing is left (an unset LD_LIBRARY_PATH): under `set -e -o pipefail` that ended the script.
        "strip_cuda() { printf '%s' \"$1\" | tr ':' '\\n' | { grep -v '^/usr/local/cuda' || true; } | paste -sd: -; }",
        "rest_path=\"$(strip_cuda \"$PATH\")\"",
        "rest_ld=\"$(strip_cuda \"${LD_LIBRARY_PATH:-}\")\"",
        f"export CUDA_HOME={home}",
        f"export PATH=\"{home}/bin${{rest_path:+:$rest_path}}\"",
        f"export LD_LIBRARY_PATH=\"{home}/lib64${{rest_ld:+:$rest_ld}}\"",
    ]


def _pip_notes(plan: Plan) -> List[str]:
    notes = []
    if plan.torch_build is not None:
        notes.append(f"torch +cu{plan.torch_build.cuda.replace('.', '')} wheels bundle their own CUDA runtime"
                     + (f" and cuDNN {plan.torch_build.cudnn}" if plan.torch_build.cudnn else "")
                     + ("; do not install other nvidia-* versions next to them." if plan.pip_only else
                        "; the system toolkit is for building your own code."))
    if plan.pip_only and plan.cuda.major >= 13:
        notes.append("CUDA 13 wheels have no -cu13 suffix (nvidia-cuda-runtime-cu13 is a 0.0.1 placeholder).")
    return notes


def _venv_step(plan: Plan, docker: bool, inst: str, rpm: bool) -> Optional[Step]:
    reqs = pip_requirements(plan)
    if not reqs:
        return None
    py = "/opt/venv" if docker else "\"$HOME/.venvs/cuda-" + plan.cuda.cuda + "\""
    user = [f"python3 -m venv {py}", f"{py}/bin/python -m pip install --upgrade pip"]
    for req, index in reqs:
        user.append(f"{py}/bin/python -m pip install '{req}'" + (f" --index-url {index}" if index else ""))
    return Step("Python packages (virtual environment)", [] if rpm else [f"{inst} python3-venv"], user, _pip_notes(plan))


def linux_steps(plan: Plan, docker: bool = False) -> List[Step]:
    """Steps for a Debian/Ubuntu, RHEL or WSL-Ubuntu plan (``docker``: for an image, no driver, no sudo)."""
    os_ = plan.target.os
    rpm = os_.family == "rhel"
    inst = "dnf install -y" if rpm else "apt-get install -y --no-install-recommends"
    if plan.pip_only:
        venv = _venv_step(plan, docker, inst, rpm)
        # A driver installed by the plan comes from NVIDIA's repository (cuda-drivers-N, nvidia-driver-N-open):
        # the distribution's archive has no such package, so the repository is added first here too.
        installs_driver = (plan.driver_branch is not None and not docker and not plan.target.container
                           and os_.os != "wsl-ubuntu")
        return ([_repo_step(plan)] if installs_driver else []) + [_driver_step(plan, docker)] + ([venv] if venv else []) + [
            Step("Verify", user=["gpudoctor check"] if not docker else [])]
    if plan.archive is not None:
        a = plan.archive
        steps = [_archive_step(plan), _driver_step(plan, docker)]
        steps.append(Step(f"CUDA {plan.cuda.cuda} toolkit (Debian's {a.toolkit_package})",
                          [f"{inst} {' '.join(a.packages)}"], notes=[
            f"nvcc is {a.nvcc}; its profile picks g++-11 (nvcc {plan.cuda.cuda} accepts gcc <= {plan.cuda.max_gcc}). "
            f"{' and '.join(a.packages[2:])} are needed too: nvcc runs `gcc` from PATH to read the host compiler's "
            "properties first, and fails without it ('Failed to preprocess host compiler properties').",
            "--no-install-recommends leaves out the profilers and Nsight tools (and the driver's kernel module)."]))
    else:
        steps = [_repo_step(plan), _driver_step(plan, docker)]
        steps.append(Step(f"CUDA {plan.cuda.cuda} toolkit", [f"{inst} {toolkit_package(plan)}"], notes=[
            f"{toolkit_package(plan)} installs the compiler and libraries only, never a driver.",
            f"Host compiler: nvcc {plan.cuda.cuda} accepts gcc <= {plan.cuda.max_gcc} and clang <= {plan.cuda.max_clang}.",
        ]))
    if plan.cudnn is not None:
        steps.append(Step(f"cuDNN {plan.cudnn.cudnn} for CUDA {plan.cuda.major}",
                          [f"{inst} {' '.join(_cudnn_packages(plan, rpm))}"]))
    venv = _venv_step(plan, docker, inst, rpm)
    if venv is not None:
        steps.append(venv)
    if not docker:
        steps.append(Step("Environment (add to ~/.bashrc)", user=_env_lines(plan)))
    steps.append(Step("Verify", user=(["nvcc --version"] if docker else ["nvcc --version", "gpudoctor check"])))
    return steps


def windows_steps(plan: Plan) -> List[Step]:
    """PowerShell steps: driver, Visual Studio, CUDA installer, cuDNN zip, pip packages, PATH, verify."""
    c = plan.cuda
    ver = c.latest_update or f"{c.cuda}.0"
    steps: List[Step] = []
    if plan.target.driver_action == "install":
        steps.append(Step("Driver", notes=[f"Install NVIDIA driver {plan.driver_min} or newer from "
                                           "https://www.nvidia.com/Download/index.aspx and reboot."]))
    else:
        steps.append(Step("Driver (kept)", user=["nvidia-smi"], notes=[
            f"CUDA {c.cuda} needs driver {plan.driver_min} or newer" + ("." if plan.pip_only else
                                                                        "; the CUDA installer below leaves the driver "
                                                                        "alone (its Display.Driver component is not "
                                                                        "selected).")]))
    if plan.pip_only:
        reqs = pip_requirements(plan)
        steps.append(Step("Python packages", user=[
            f"py -m pip install '{req}'" + (f" --index-url {index}" if index else "") for req, index in reqs],
            notes=_pip_notes(plan)))
        steps.append(Step("Verify", user=["gpudoctor check"]))
        return steps
    if c.msvc:
        vs = c.msvc[-1]
        steps.append(Step(f"Visual Studio {vs} C++ build tools (CUDA {c.cuda} supports {', '.join(c.msvc)})", user=[
            f"winget install --id Microsoft.VisualStudio.{vs}.BuildTools --exact --override "
            "'--add Microsoft.VisualStudio.Workload.VCTools --includeRecommended --passive --wait'"]))
    url = f"https://developer.download.nvidia.com/compute/cuda/{ver}/network_installers/cuda_{ver}_windows_network.exe"
    parts = " ".join(f"{p}_{c.cuda}" for p in ("nvcc", "cudart", "cublas", "cublas_dev", "nvrtc", "nvrtc_dev",
                                                "visual_studio_integration"))
    steps.append(Step(f"CUDA {c.cuda} toolkit", user=[
        f"$installer = Join-Path $env:TEMP 'cuda_{ver}_windows_network.exe'",
        f"Invoke-WebRequest -Uri '{url}' -OutFile $installer",
        f"Start-Process -FilePath $installer -ArgumentList '-s {parts}' -Wait",
    ], notes=["-s installs silently; listing components keeps the installer from touching the driver.",
              f"Alternative: winget install --id Nvidia.CUDA --version {c.cuda} (the winget package runs NVIDIA's "
              "installer with its default components, which can include the display driver)."]))
    cuda_path = f"C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v{c.cuda}"
    if plan.cudnn is not None and plan.cudnn.latest:
        # The newest patch may exist for one CUDA major only (9.28.1 is CUDA 13 only); the repo version says which.
        apt = plan.cudnn.apt_versions.get(str(c.major), "")
        build = apt.split("-")[0] if apt else plan.cudnn.latest
        zipname = f"cudnn-windows-x86_64-{build}_cuda{c.major}-archive"
        dest = f"C:\\Program Files\\NVIDIA\\CUDNN\\v{plan.cudnn.cudnn}"
        steps.append(Step(f"cuDNN {plan.cudnn.cudnn}", user=[
            f"# Download {zipname}.zip from https://developer.nvidia.com/cudnn-archive",
            f"Expand-Archive -Path \"$env:USERPROFILE\\Downloads\\{zipname}.zip\" -DestinationPath '{dest}' -Force",
            f"$cudnnBin = '{dest}\\{zipname}\\bin'",
        ], notes=["The zip's bin folder must be on PATH (set below) so that cudnn64_*.dll is found."]))
    if plan.tensorrt is not None and plan.tensorrt.latest:
        trt = f"C:\\Program Files\\NVIDIA\\TensorRT-{plan.tensorrt.latest}"
        steps.append(Step(f"TensorRT {plan.tensorrt.tensorrt} (C++ libraries)", user=[
            f"# Download the TensorRT {plan.tensorrt.latest} zip for CUDA {c.major}.x from https://developer.nvidia.com/tensorrt",
            f"$trtZip = Get-ChildItem \"$env:USERPROFILE\\Downloads\\TensorRT-{plan.tensorrt.latest}*.zip\" | Select-Object -First 1",
            "Expand-Archive -Path $trtZip.FullName -DestinationPath 'C:\\Program Files\\NVIDIA' -Force",
            f"$trtLib = '{trt}\\lib'",
        ], notes=["The zip's lib folder (nvinfer*.dll) goes on PATH below; the Python bindings come from pip."]))
    reqs = pip_requirements(plan)
    if reqs:
        steps.append(Step("Python packages", user=[
            f"py -m pip install '{req}'" + (f" --index-url {index}" if index else "") for req, index in reqs]))
    env = [f"$cuda = '{cuda_path}'",
           "[Environment]::SetEnvironmentVariable('CUDA_PATH', $cuda, 'Machine')",
           "# Keep one CUDA on PATH: drop other toolkits' and cuDNN's folders, then add this one.",
           "$rest = ([Environment]::GetEnvironmentVariable('Path', 'Machine') -split ';') | "
           "Where-Object { $_ -and $_ -notlike '*NVIDIA GPU Computing Toolkit\\CUDA\\*' -and $_ -notlike '*NVIDIA\\CUDNN\\*' "
           "-and $_ -notlike '*NVIDIA\\TensorRT-*' }",
           "$new = @(\"$cuda\\bin\", \"$cuda\\libnvvp\")"]
    if plan.cudnn is not None:
        env.append("$new += $cudnnBin")
    if plan.tensorrt is not None and plan.tensorrt.latest:
        env.append("$new += $trtLib")
    env.append("[Environment]::SetEnvironmentVariable('Path', (($new + $rest) -join ';'), 'Machine')")
    steps.append(Step("Environment (machine PATH; needs an elevated PowerShell)", user=env))
    steps.append(Step("Verify (in a new terminal)", user=["nvcc --version", "gpudoctor check"]))
    return steps
