"""Command-line context in a log: the command the user ran says more than the error it printed.

The scanner also looks for lines that are *context*, not failures: a ``docker run``/``podman run``
line, an ``nvcc`` command line, a ``CUDA_VISIBLE_DEVICES=`` assignment, WSL markers. They never make
a diagnosis by themselves; :func:`apply` uses them as evidence and to pick between causes that the
error text alone cannot tell apart:

- "no GPU" symptoms (nvidia-smi missing, no driver found, no device, CUDA unavailable) under a
  ``docker run`` line that passes no GPU (no ``--gpus``, ``--runtime=nvidia``, ``--device
  nvidia.com/gpu``/``/dev/nvidia*``, CDI) mean the container was started without GPUs:
  ``container.no_gpu``, ahead of the symptom;
- "no driver" or "no device" inside a container (Docker's 12-hex hostname in a prompt, Compose
  starting containers) with no ``docker run`` line shown: the container was not given the GPU
  (``container.no_gpu``);
- the same symptoms in a Slurm job (``srun``/``#SBATCH`` lines) that asks for no GPU (``--gres=gpu``,
  ``--gpus``...): its cgroup hides the GPUs (``device.not_visible``);
- the same symptoms with ``CUDA_VISIBLE_DEVICES`` set to nothing (``""``, ``-1``, ``NoDevFiles``)
  mean the GPUs were hidden: ``device.not_visible``;
- the same symptoms on WSL (``microsoft-standard-WSL2``, ``/usr/lib/wsl``) point at WSL's libcuda:
  ``wsl.libcuda``;
- a program that runs ``nvidia-smi`` and then fails with "file not found" (``FileNotFoundError``,
  ``[WinError 2]``, "command not found") has no driver: ``driver.missing``;
- "Unsupported .version" under a driver JIT call (``cuLinkAddData``, ``cuModuleLoadData``) is the
  driver rejecting newer PTX (``driver.ptx_too_new``), not an offline ptxas of another toolkit;
- a library that fails to load while the loader searches ``LD_LIBRARY_PATH`` directories of a CUDA
  tree (an ``LD_DEBUG`` trace, an ``LD_LIBRARY_PATH=/opt/.../cuda/...`` line) is the stale-path case:
  ``env.ld_library_path``;
- a failed link or build in a log that names two CUDA toolkit versions (``/usr/local/cuda-12.4``
  paths, CMake's "CUDA compiler identification is NVIDIA 11.5") mixes toolkits: ``toolkit.mixed``;
- an ``nvcc`` command's ``-arch``/``-gencode``/``-ccbin``/``-allow-unsupported-compiler`` are shown
  as the evidence of an arch or host-compiler diagnosis (and ``-allow-unsupported-compiler`` makes
  a host-compiler diagnosis from errors in the C++ standard headers more certain).
"""
from __future__ import annotations

import re
from typing import Dict, List, Tuple

from gpudoctor.explain.facts import fact_signatures
from gpudoctor.explain.hints import HINT_MAX
from gpudoctor.explain.kb import CONTEXT_PREFIX, Signature, Variant
from gpudoctor.explain.ranking import raise_or_add

__all__ = ["CONTEXT_PREFIX", "context_signatures", "apply"]

_DOCKER_DOC = "https://docs.docker.com/reference/cli/docker/container/run/#gpus"
_NVCC_DOC = "https://docs.nvidia.com/cuda/cuda-compiler-driver-nvcc/index.html"
_ENV_DOC = "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#cuda-environment-variables"
_WSL_DOC = "https://docs.nvidia.com/cuda/wsl-user-guide/index.html"

_RULES = (  # (kind, literal, regex on the line)
    ("container_run", "docker run", r"\bdocker run\b"),
    ("container_run", "podman run", r"\bpodman run\b"),
    ("container_run", "nvidia-docker run", r"\bnvidia-docker run\b"),
    # Singularity/Apptainer give a container the GPU only with --nv (or --nvccli)
    *(("container_run", f"{tool} {verb}", rf"\b{tool} {verb}\b")
      for tool in ("singularity", "apptainer") for verb in ("exec", "run", "shell")),
    # Signs that the program ran inside a container (the GPU options themselves are not in the log):
    # Docker's default hostname is the container's 12-hex id, Compose prints the containers it starts
    # (v1: "Creating x ... done", v2: " ✔ Container x  Started"; literals specific to those lines).
    ("in_container", "@", r"(?:^|\s)[a-z_][\w.-]*@[0-9a-f]{12}:"),  # any user: root@3f2a..., model-server@a881...
    ("in_container", " ... done", r"^\s*creating \S+ \.\.\. done"),
    ("in_container", "  started", r"^\W*container \S+\s+started\s*$"),
    ("in_container", "docker-compose ", r"\bdocker-compose\b[^\n]{0,80}?\s(?:up|run)\b"),
    ("in_container", "docker compose ", r"\bdocker compose\b[^\n]{0,80}?\s(?:up|run)\b"),  # flags may come first
    # Compose prefixes each container's output with its name and index, padded: "web_1  | ..." (v1),
    # "web-1  | ..." (v2). The literal leaves out the bar: one more distinct byte among the literals
    # doubles the scanner's automaton (see scan.py); the anchored regex costs nothing on other lines.
    *(("in_container", f"{sep}1 ", r"^[a-z0-9][\w.-]{0,60}[-_]\d{1,3} {1,40}\| ") for sep in "_-"),
    # An image build: its RUN steps never get a GPU (docker build has no --gpus), shown by the command
    # or by the builder's step lines (classic "Step 3/7 : RUN ...", BuildKit "#8 [4/6] RUN ...")
    ("in_container", "docker build", r"\bdocker (?:buildx )?build\b"),  # the literal is in "docker buildx build" too
    ("in_container", " : run ", r"^step \d{1,3}/\d{1,3} : run "),
    ("in_container", "] run ", r"^#\d{1,4} \[[^\]\n]{0,40}\d{1,3}/\d{1,3}\] run "),
    ("in_container", "--container-image", r"--container-image[= ]"),  # Slurm's Pyxis plugin (enroot)
    # A Slurm job sees only the GPUs it asked for (--gres=gpu, --gpus...): cgroups hide the others
    ("slurm_job", "srun ", r"(?:^|[\s$>;&|(])srun\s"),
    ("slurm_job", "#sbatch", r"^\s*#sbatch\s"),
    ("nvcc", "nvcc ", r"(?:^|[\s/'\"$>])nvcc(?:\.exe)?\s+-"),
    ("visible", "cuda_visible_devices", r"cuda_visible_devices\s*[=:]"),
    ("wsl", "microsoft-standard", r"microsoft-standard"),
    ("wsl", "/usr/lib/wsl", r"/usr/lib/wsl"),
    ("wsl", "wsl2", r"\bwsl2?\b"),
    ("wsl", "wsl", r"\bwsl\b"),
    ("wsl", "-microsoft", r"\d-microsoft\b"),  # WSL 1 kernels: 4.4.0-19041-Microsoft
    # WSL mounts Windows drives at /mnt/<letter> (also after a prompt's "user@host:")
    ("wsl", "/mnt/c/", r"(?:^|[\s\"'=(:])/mnt/[a-z]/"),
    ("wsl", "/mnt/d/", r"(?:^|[\s\"'=(:])/mnt/[a-z]/"),
    ("nvidia_smi_call", "nvidia-smi", r"[\"']nvidia-smi[\"']|\bnvidia-smi\b"),
    ("not_found", "filenotfounderror", r"filenotfounderror: \[(?:winerror|errno) 2\][^'\n]*$"),
    ("not_found", "command not found", r"command not found"),
    # runc / Docker when the command the container runs does not exist in it
    ("not_found", "executable file not found", r"executable file not found in \$?path"),
    ("not_found", "exec user process caused", r"exec user process caused:? \W*no such file or directory"),
    ("driver_jit", "culink", r"culink\w*"),
    ("driver_jit", "cumoduleload", r"cumoduleload\w*"),
    ("driver_jit", "linkererror", r"linkererror"),
    ("toolkit_version", "/cuda-", r"/cuda-\d+\.\d+\b"),
    ("toolkit_version", "compiler identification is nvidia", r"compiler identification is nvidia \d+\.\d+"),
    ("toolkit_version", "cuda compilation tools, release", r"cuda compilation tools, release \d+\.\d+"),
    ("ld_library_path", "(ld_library_path)", r"search path=[^\n]*(?:cuda|cudnn|hpc_sdk|nvidia)[^\n]*\(ld_library_path\)"),
    ("ld_library_path", "ld_library_path=", r"ld_library_path=[^\s]*(?:cuda|cudnn|hpc_sdk|tensorrt)"),
    ("build_error", "ld returned 1 exit status", r"ld returned 1 exit status"),
    ("build_error", "final link failed", r"final link failed"),
    ("build_error", "compiler identification source file", r"compiler identification source file[^\n]*failed|compilercudacompilerid\.cu\W*failed"),
    ("toolkit_version", "/usr/lib/nvidia-cuda-toolkit", r"/usr/lib/nvidia-cuda-toolkit"),
    ("toolkit_version", "/usr/local/cuda/bin", r"/usr/local/cuda/bin"),
    ("build_error", "undefined reference to", r"undefined reference to `_?_?cuda"),
)
_GPU_FLAG = re.compile(r"--gpus|--runtime[= ]nvidia|nvidia\.com/gpu|--device[= ]\S*nvidia|nvidia_visible_devices|--nv\b|--nvccli|"
                       r"\bnvidia-docker\b|--device[= ]\S*gpu", re.I)
_HIDDEN = re.compile(r"cuda_visible_devices\s*[=:]\s*(?:(?:\"\"|''|-1|none|nodevfiles|void)(?=[\s;,)]|$)|(?=[\s;]|$))", re.I)
_NO_GPU_SYMPTOMS = ("driver.missing", "driver.not_loaded", "device.not_visible", "framework.cpu_build", "container.no_gpu")
_SLURM_GPU = re.compile(r"--gres[= ]\S*gpu|--gpus|--gpus-per-\w+|--gpu-bind|(?:^|\s)-G\s*\d", re.I)
_NO_DRIVER_SYMPTOMS = ("driver.missing", "driver.not_loaded", "device.not_visible")
_WSL_SYMPTOMS = ("driver.missing", "driver.not_loaded", "device.not_visible", "driver.no_permission", "library.not_found",
                 "driver.stub_library")


def context_signatures() -> List[Signature]:
    sigs = []
    for kind, literal, regex in _RULES:
        doc = {"container_run": _DOCKER_DOC, "visible": _ENV_DOC, "wsl": _WSL_DOC}.get(kind, _NVCC_DOC)
        var = Variant(f"{kind}: {literal.strip()}", literal.split()[0].encode() if kind == "container_run" else literal.encode(),
                      literal.encode(), re.compile(regex, re.I), 1.0, doc)
        sigs.append(Signature(CONTEXT_PREFIX + kind, "context", "info", kind, "command-line context", doc, (), (var,)))
    return sigs + fact_signatures()


def _nvcc_flags(line: str) -> Dict[str, str]:
    flags: Dict[str, str] = {}
    archs = re.findall(r"(?:-arch|--gpu-architecture|-code|--gpu-code)[= ]\s*([\w,]+)|arch=(compute_\w+),code=\[?([\w,]+)", line)
    found = sorted({a for tup in archs for part in tup for a in part.split(",") if a})
    if found:
        flags["nvcc_arch"] = ",".join(found)
    m = re.search(r"(?:-ccbin|--compiler-bindir)[= ]\s*(\S+)", line)
    if m:
        flags["nvcc_ccbin"] = m.group(1)
    if re.search(r"-?-allow-unsupported-compiler", line):
        flags["nvcc_allow_unsupported_compiler"] = "yes"
    return flags


def _toolkit_versions(lines: List[Tuple[int, str]]) -> Dict[str, int]:
    """Distinct CUDA toolkit versions (major.minor) named in context lines -> first line naming each."""
    out: Dict[str, int] = {}
    for n, t in lines:
        for v in re.findall(r"(?:/cuda-|identification is nvidia |compilation tools, release )(\d+\.\d+)", t, re.I):
            out.setdefault(v, n)
        # Distro toolkit beside NVIDIA's: two toolkits even when no version is printed.
        for root in re.findall(r"/usr/lib/nvidia-cuda-toolkit|/usr/local/cuda(?=/bin)", t, re.I):
            out.setdefault(root, n)
    return out


def apply(diags: list, ctx: Dict[str, List[Tuple[int, str]]], make) -> list:
    """Adjust ranked diagnoses with the context lines found (kind -> [(line_no, text)]).

    ``make(sig_id, score, evidence)`` builds a diagnosis of another class when the context shows it is
    the cause (it returns None when the KB has no such class). Returns the list, re-sorted.
    """
    by_id = {d.finding.id: d for d in diags}

    def promote(sig_id: str, evidence: Dict[str, object], over: float) -> None:
        # context never makes a weak hint (gpudoctor.explain.hints) confident: it stays a hint
        score = min(max(over + 0.05, 0.8), 0.97) if over > HINT_MAX else min(over + 0.02, HINT_MAX)
        raise_or_add(diags, by_id, make, sig_id, score, evidence)

    # First: a program that ran nvidia-smi and found no such program has no driver (a symptom the
    # container rules below may still trace to a container started without the GPU).
    if ctx.get("nvidia_smi_call") and ctx.get("not_found") and "driver.missing" not in by_id:
        (n1, t1), (n2, t2) = ctx["nvidia_smi_call"][0], ctx["not_found"][0]
        promote("driver.missing", {"command": f"line {n1}: {t1[:200]}", "error": f"line {n2}: {t2[:200]}",
                                   "why": "a program ran nvidia-smi and the system found no such program"}, 0.8)
    symptom = [d for d in diags if d.finding.id in _NO_GPU_SYMPTOMS]
    top = max((d.score for d in symptom), default=0.0)
    runs = ctx.get("container_run", [])
    no_gpu_runs = [(n, t) for n, t in runs if not _GPU_FLAG.search(t)]
    if symptom and no_gpu_runs:
        n, t = no_gpu_runs[0]
        promote("container.no_gpu", {"container_command": f"line {n}: {t}",
                                     "why": "the container was started without --gpus (or another GPU option)"}, top)
    inside = ctx.get("in_container", [])
    driver_symptom = [d for d in diags if d.finding.id in _NO_DRIVER_SYMPTOMS]
    if driver_symptom and inside and not runs:
        # Inside a container the driver comes from the host through the NVIDIA Container Toolkit: a
        # container that finds no driver or device was not given the GPU.
        n, t = inside[0]
        promote("container.no_gpu", {"container": f"line {n}: {t[:200]}",
                                     "why": "the program ran in a container that finds no NVIDIA driver or GPU"},
                max(d.score for d in driver_symptom))
    jobs = ctx.get("slurm_job", [])
    if symptom and jobs and not runs and not any(_SLURM_GPU.search(t) for _, t in jobs):
        n, t = jobs[0]
        promote("device.not_visible", {"slurm_job": f"line {n}: {t[:200]}",
                                       "why": "the Slurm job requested no GPU (no --gres=gpu or --gpus), so its cgroup hides them"}, top)
    hidden = [(n, t) for n, t in ctx.get("visible", []) if _HIDDEN.search(t)]
    if symptom and hidden and not no_gpu_runs:
        n, t = hidden[0]
        promote("device.not_visible", {"cuda_visible_devices": f"line {n}: {t}",
                                       "why": "CUDA_VISIBLE_DEVICES is set to no GPU"}, top)
    elif "device.not_visible" in by_id and ctx.get("visible"):
        n, t = ctx["visible"][0]
        by_id["device.not_visible"].finding.evidence.setdefault("cuda_visible_devices", f"line {n}: {t}")
    wsl_symptom = [d for d in diags if d.finding.id in _WSL_SYMPTOMS]
    if ctx.get("wsl") and wsl_symptom and not no_gpu_runs:
        n, t = ctx["wsl"][0]
        promote("wsl.libcuda", {"wsl": f"line {n}: {t}"}, max(d.score for d in wsl_symptom))
    mixed = by_id.get("toolkit.mixed")
    if ctx.get("driver_jit") and mixed and any("unsupported .version" in m.line.lower() for m in mixed.matches):
        n, t = ctx["driver_jit"][0]
        promote("driver.ptx_too_new", {"jit_call": f"line {n}: {t[:200]}",
                                       "why": "the driver's JIT (cuLink*/cuModuleLoad*), not an offline ptxas, rejected the PTX"},
                mixed.score)
    lib_failure = [d for d in diags if d.finding.id in ("library.not_found", "cudnn.mismatch", "framework.cpu_build")]
    if ctx.get("ld_library_path") and lib_failure and "env.ld_library_path" not in by_id:
        n, t = ctx["ld_library_path"][0]
        promote("env.ld_library_path", {"ld_library_path": f"line {n}: {t[:300]}",
                                        "why": "the loader searched LD_LIBRARY_PATH's CUDA directories for the library that failed"},
                max(d.score for d in lib_failure))
    versions = _toolkit_versions(ctx.get("toolkit_version", []))
    if len(versions) > 1 and ctx.get("build_error"):
        n, t = ctx["build_error"][0]
        promote("toolkit.mixed", {"cuda_versions_in_log": ", ".join(f"{v} (line {ln})" for v, ln in versions.items()),
                                  "build_error": f"line {n}: {t[:200]}"}, 0.75)
    nvcc = ctx.get("nvcc", [])
    if nvcc:
        n, t = nvcc[0]
        flags = _nvcc_flags(t)
        for sig_id in ("arch.toolkit_unsupported", "arch.half_unsupported", "arch.binary_missing", "compiler.unsupported",
                       "toolkit.mixed"):
            if sig_id in by_id:
                by_id[sig_id].finding.evidence.update({"nvcc_command": f"line {n}: {t[:300]}", **flags})
        if "compiler.unsupported" in by_id and flags.get("nvcc_allow_unsupported_compiler"):
            d = by_id["compiler.unsupported"]
            d.score = min(max(d.score + 0.05, 0.85), 0.97)
    diags.sort(key=lambda d: (-d.score, min((m.line_no for m in d.matches), default=0)))
    return diags
