"""Command-line context: the command in a log picks between causes the error text cannot separate."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpudoctor.explain.diagnose import diagnose_text
from gpudoctor.explain.kb import load_kb

KB = load_kb()


def _ranked(text: str):
    return diagnose_text(text, KB)


def _ids(text: str):
    return [d.finding.id for d in _ranked(text)]


INSIDE = "root@1f2e:/# nvidia-smi\nbash: nvidia-smi: command not found\n"


def test_docker_run_without_gpus_means_the_container_has_no_gpu():
    ranked = _ranked("$ docker run -it --rm pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime bash\n" + INSIDE)
    assert ranked[0].finding.id == "container.no_gpu" and ranked[0].score >= 0.85
    assert "docker run -it" in ranked[0].finding.evidence["container_command"]
    assert "driver.missing" in [d.finding.id for d in ranked]  # the symptom stays, ranked below


@pytest.mark.parametrize("prefix", ["api_1  | ", "api-1  | ", "inference-server_1 | "])
def test_compose_output_prefixes_mark_a_container(prefix):
    # Compose prefixes each container's output with its padded name and index (v1 "_1", v2 "-1")
    log = "".join(prefix + line + "\n" for line in (
        "Traceback (most recent call last):",
        "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a "
        "driver from http://www.nvidia.com/Download/index.aspx"))
    assert _ranked(log)[0].finding.id == "container.no_gpu"
    # the same lines outside Compose, and a table row that merely has a bar, stay a missing driver
    assert _ranked(log.replace(prefix, ""))[0].finding.id == "driver.missing"
    assert _ranked(log.replace(prefix, "| 1  | "))[0].finding.id == "driver.missing"


@pytest.mark.parametrize("build_line", ["$ docker build -t app .", "Step 5/9 : RUN python -c 'import torch'",
                                        "#8 [4/6] RUN python -c 'import torch'", "#12 [stage-1 4/6] RUN python3 setup.py install"])
def test_an_image_build_has_no_gpu(build_line):
    # docker build has no --gpus: a RUN step that needs the driver finds none (classic and BuildKit step lines)
    err = "ImportError: libcuda.so.1: cannot open shared object file: No such file or directory"
    ranked = _ranked(build_line + "\n" + err + "\n")
    assert ranked[0].finding.id == "container.no_gpu", [(d.finding.id, d.score) for d in ranked]
    assert _ranked(err + "\n")[0].finding.id == "driver.missing"


def test_docker_run_with_gpus_keeps_the_symptom():
    ids = _ids("$ docker run --gpus all -it --rm nvcr.io/nvidia/pytorch:24.01-py3 bash\n" + INSIDE)
    assert ids[0] == "driver.missing" and "container.no_gpu" not in ids


def test_the_symptom_alone_is_not_a_container_problem():
    assert _ids(INSIDE)[0] == "driver.missing"


def test_empty_cuda_visible_devices_hides_the_gpus():
    ranked = _ranked('export CUDA_VISIBLE_DEVICES=""\npython train.py\nRuntimeError: No CUDA GPUs are available\n')
    top = ranked[0]
    assert top.finding.id == "device.not_visible" and top.score >= 0.9
    assert "CUDA_VISIBLE_DEVICES" in top.finding.evidence["cuda_visible_devices"]


def test_a_set_cuda_visible_devices_is_only_evidence():
    ranked = _ranked("CUDA_VISIBLE_DEVICES=3 python train.py\nRuntimeError: CUDA error: invalid device ordinal\n")
    assert ranked[0].finding.id == "device.not_visible"
    assert "CUDA_VISIBLE_DEVICES=3" in ranked[0].finding.evidence["cuda_visible_devices"]


def test_wsl_marker_points_at_wsl_libcuda():
    text = ("Linux DESKTOP-1 5.15.153.1-microsoft-standard-WSL2 #1 SMP x86_64 GNU/Linux\n"
            "CUDA Error CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected while calling init (cuInit)\n")
    assert _ids(text)[0] == "wsl.libcuda"
    assert _ids(text.split("\n", 1)[1])[0] == "device.not_visible"


def test_nvcc_flags_are_evidence():
    text = ("nvcc -O3 -ccbin g++-13 -allow-unsupported-compiler -gencode arch=compute_80,code=sm_80 -c k.cu\n"
            "/usr/include/c++/13/bits/stl_algobase.h(2082): error: identifier \"__is_array\" is undefined\n")
    top = _ranked(text)[0]
    assert top.finding.id == "compiler.unsupported"
    ev = top.finding.evidence
    assert ev["nvcc_ccbin"] == "g++-13" and ev["nvcc_allow_unsupported_compiler"] == "yes" and "sm_80" in ev["nvcc_arch"]


def test_a_script_that_runs_nvidia_smi_and_finds_nothing_has_no_driver():
    text = ('  File "gpus.py", line 64, in getGPUs\n    p = Popen(["nvidia-smi","--query-gpu=index"], stdout=PIPE)\n'
            "FileNotFoundError: [WinError 2] The system cannot find the file specified\n")
    assert _ids(text)[0] == "driver.missing"
    assert "driver.missing" not in _ids("FileNotFoundError: [Errno 2] No such file or directory\n")


def test_unsupported_ptx_version_from_the_driver_jit_is_the_driver():
    ptxas = "ptxas application ptx input, line 9; fatal   : Unsupported .version 8.1; current version is '8.0'\n"
    assert _ids(ptxas)[0] == "toolkit.mixed"  # an offline ptxas of another toolkit
    assert _ids("LinkerError: Call to cuLinkAddData results in UNKNOWN_CUDA_ERROR\n" + ptxas)[0] == "driver.ptx_too_new"


def test_two_toolkit_versions_in_a_failed_build_are_mixed_toolkits():
    text = ("-- The CUDA compiler identification is NVIDIA 11.5.119\n"
            "/usr/bin/ld: hidden symbol `__cudaLaunchKernel' in /usr/local/cuda-12.4/lib64/libcudart_static.a\n"
            "collect2: error: ld returned 1 exit status\n")
    ranked = _ranked(text)
    assert ranked[0].finding.id == "toolkit.mixed"
    assert "11.5" in ranked[0].finding.evidence["cuda_versions_in_log"]
    assert "toolkit.mixed" not in _ids(text.replace("12.4", "11.5"))


# ----------------------------------------------------------------------------- real failures on the H100

_DATA = Path(__file__).resolve().parent / "data"
LIVE = [dict(c, machine=m) for m in ("h100", "h200")
        for c in json.loads((_DATA / f"explain-{m}" / "cases.json").read_text())["cases"]]


@pytest.mark.parametrize("case", LIVE, ids=lambda c: f"{c['machine']}-{c['name']}")
def test_real_failures_made_on_the_lent_gpus(case):
    """What PyTorch, CuPy, JAX, cuda-python, nvcc, NVRTC and the loader really printed on the H100 and H200."""
    ranked = _ranked(case["log"])
    if case["expected"] == "none":
        assert not [d for d in ranked if d.score >= 0.75 and d.finding.id != "program.error"]
        assert ranked and ranked[0].finding.id == "program.error"
    else:
        assert ranked and ranked[0].finding.id == case["expected"], [(d.finding.id, d.score) for d in ranked]
