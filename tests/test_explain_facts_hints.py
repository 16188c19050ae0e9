"""`explain` judges the versions a log states (facts) and, where no signature matches, says where the error
points (hints). Logs are real tools' output formats (nvidia-smi's header, nvcc/gcc --version, pip's version
tags, collect_env); no fakes."""
from __future__ import annotations

import pytest

from gpudoctor.explain.diagnose import diagnose, diagnose_text
from gpudoctor.explain.evaluate import CONFIDENT
from gpudoctor.explain.hints import HINT_MAX, HINTS
from gpudoctor.explain.kb import load_kb
from gpudoctor.explain.scan import TAIL, Scanner

KB = load_kb()
SMI_470 = "| NVIDIA-SMI 470.82.01    Driver Version: 470.82.01    CUDA Version: 11.4     |\n"
SMI_535 = "| NVIDIA-SMI 535.104.05   Driver Version: 535.104.05   CUDA Version: 12.2     |\n"


def _diags(text: str):
    return diagnose_text(text, KB)


def _ranked(text: str):
    return [(d.finding.id, d.score) for d in _diags(text)]


# ----------------------------------------------------------------------------- facts


def test_driver_too_old_for_the_wheels_cuda_is_judged_from_stated_versions():
    # R470 runs CUDA <= 11.4 natively and 11.x by minor-version compatibility, never 12.1 (release notes Tables 2, 3)
    d = _diags(SMI_470 + "PyTorch version: 2.1.0+cu121\n")
    assert d[0].finding.id == "driver.too_old"
    assert d[0].score < CONFIDENT  # facts alone: low confidence
    ev = d[0].finding.evidence
    assert "470.82.01" in ev["driver"] and "+cu121" in ev["built_for_cuda"] and ev["newest_cuda_this_driver_runs"] == "11.4"


def test_stated_versions_explain_a_no_gpu_symptom_with_medium_confidence():
    ranked = _ranked(SMI_470 + "torch 2.1.0+cu121\nUserWarning: CUDA initialization: Found no NVIDIA driver on your system.\n")
    assert ranked[0][0] == "driver.too_old" and ranked[0][1] >= CONFIDENT
    assert "driver.missing" in [i for i, _ in ranked[1:]]


def test_compatible_versions_and_ambiguous_ones_are_not_judged():
    assert _ranked(SMI_535 + "torch 2.1.0+cu121\nGPU 0: NVIDIA GeForce RTX 3090\n") == []
    # two different drivers in one log (before/after an upgrade): not judged
    assert _ranked("Driver Version: 470.82.01\nDriver Version: 535.104.05\ntorch 2.1.0+cu121\n") == []


def test_host_compiler_newer_than_the_toolkit_accepts():
    # crt/host_config.h of CUDA 11.8 accepts gcc <= 11
    d = _diags("$ nvcc --version\nCuda compilation tools, release 11.8, V11.8.89\n$ gcc --version\n"
               "gcc (Ubuntu 13.2.0-4ubuntu3) 13.2.0\nninja: build stopped: subcommand failed.\n")
    assert d[0].finding.id == "compiler.unsupported" and d[0].finding.evidence["newest_gcc_cuda_11.8_accepts"] == "11"
    assert _ranked("Cuda compilation tools, release 12.4, V12.4.131\ngcc (GCC) 11.4.0\n") == []


@pytest.mark.parametrize("gpu, build", [
    ("GPU 0: NVIDIA GeForce RTX 3090", "torch==1.7.1+cu102"),  # CUDA 10.2 cannot target sm_86
    ("GPU 0: NVIDIA GeForce GTX 1080", "torch 2.15.0+cu132"),  # the inspected wheel: SASS sm_75 and up, no PTX
    ("name: Tesla K80, pci bus id: 0000:00:04.0, compute capability: 3.7", "torch 2.4.0+cu121"),
])
def test_a_gpu_the_wheel_has_no_kernels_for(gpu, build):
    d = _diags(f"{gpu}\n{build}\n")
    assert d and d[0].finding.id == "arch.binary_missing", [x.finding.id for x in d]


def test_a_gpu_the_wheel_covers_is_not_judged():
    assert _ranked("GPU 0: NVIDIA H100 80GB HBM3\ntorch 2.4.0+cu121\n") == []


def test_pytorch_and_nvcc_of_different_cuda_majors_in_an_extension_build():
    d = _diags("Cuda compilation tools, release 12.1, V12.1.105\ntorch 2.0.1+cu117\nnvcc -O3 -c kernel.cu\n"
               "error: command '/usr/local/cuda/bin/nvcc' failed with exit code 1\n")
    assert d[0].finding.id == "framework.cuda_mismatch"
    # the same versions without a build in the log: no judgment
    assert "framework.cuda_mismatch" not in [i for i, _ in _ranked("Cuda compilation tools, release 12.1\ntorch 2.0.1+cu117\n")]


# ----------------------------------------------------------------------------- hints


@pytest.mark.parametrize("line, expected", [
    ("/usr/local/cuda-13.0/targets/x86_64-linux/include/cccl/cuda/std/__cccl/builtin.h(25): error: expected an expression",
     "toolkit.mixed"),
    ("libfoo.so: more undefined references to `cudaGraphExecUpdate' follow", "toolkit.mixed"),
    ("[TensorRT] ERROR: Failed to deserialize the engine from model.trt", "tensorrt.engine_mismatch"),
    ("panic: Update GPU drivers before running this build", "driver.too_old"),
    ("nvidia_uvm: module version mismatch with nvidia (550.54 vs 545.29)", "driver.version_mismatch"),
    ("nvidia-persistenced: open /dev/nvidiactl: no such device", "driver.not_loaded"),
    ("setup.py: CUDA_PATH points to C:\\cuda which does not exist", "env.cuda_home"),
    ("CMake Error: Could NOT find NVML (missing: NVML_LIBRARIES)", "driver.missing"),
    ("akmodsbuild: error: Failed build dependencies: gcc-c++ is needed by nvidia-kmod-3:590.48.01", "driver.not_loaded"),
    ("[h264_nvenc] The minimum required Nvidia driver for nvenc is 570.0 or newer", "driver.too_old"),
    ("INFO Number of GPUs: 0", "device.not_visible"),
    ("RuntimeError: This cuDF installation is missing the necessary PTX files that are <=50.", "arch.binary_missing"),
    ("nvidia kernel module missing falling back to nouveau", "driver.not_loaded"),
    ("RuntimeError: TCNN was not compiled with half-precision support.", "arch.half_unsupported"),
    ("Error: GPU driver 446.14 found. Minimum is 470.00, install the latest NVIDIA drivers.", "driver.too_old"),
    ("java.lang.UnsatisfiedLinkError: Error while loading native library \"JCudnn-10.2.0-linux-x86_64\"",
     "library.not_found"),
    ("[ERROR] CUDA driver not found, GPU rendering disabled", "driver.missing"),
    ("ERROR: Unable to locate a CUDA-capable device", "device.not_visible"),
    ("Unable to find any NVIDIA GPUs. Falling back to CPU.", "device.not_visible"),
    ("kernel mul_mat_q: no device code for CUDA arch 610", "arch.binary_missing"),
    ("[cuda] vram allocation failed (4096 MiB requested)", "cuda.out_of_memory"),
])
def test_an_unknown_message_gets_a_low_confidence_hint_of_where_it_points(line, expected):
    ranked = _ranked("some program output\n" + line + "\n")
    assert ranked and ranked[0][0] == expected, ranked
    assert ranked[0][1] <= HINT_MAX < CONFIDENT


def test_context_traces_a_hinted_symptom_to_its_cause_but_keeps_it_a_hint():
    # Docker names a container's host after its id, whoever the user is; inside it, no GPU was found
    ranked = _ranked("model-server@a8819511cfaa:~/logs$ more ts_log.log\nNumber of GPUs: 0\nNumber of CPUs: 8\n")
    assert ranked[0][0] == "container.no_gpu" and ranked[0][1] <= HINT_MAX


def test_host_header_errors_are_a_compiler_hint_only_in_a_cuda_build():
    line = "/usr/include/c++/12/bits/stl_vector.h:1125:7: error: no matching function for call to 'foo'\n"
    assert [i for i, _ in _ranked("g++ -c main.cpp\n" + line)] == []  # a plain C++ template error
    assert "compiler.unsupported" in [i for i, _ in _ranked("nvcc -c kernel.cu\n" + line)]


def test_a_signature_always_outranks_a_hint():
    ranked = _ranked("RuntimeError: CUDA error: out of memory\n[TensorRT] ERROR: Failed to deserialize the engine\n")
    assert ranked[0][0] == "cuda.out_of_memory" and all(s <= HINT_MAX for i, s in ranked[1:] if i == "tensorrt.engine_mismatch")
    assert min(v.weight for s in KB for v in s.variants) > HINT_MAX


def test_hints_read_only_the_logs_tail():
    line = b"[TensorRT] ERROR: Failed to deserialize the engine from model.trt\n"
    sc = Scanner(KB)
    sc.feed(line + b"x" * 80 + b"\n")
    sc.feed((b"y" * 100 + b"\n") * (2 * TAIL // 100))
    sc.close()
    assert len(sc.tail) == TAIL
    assert "tensorrt.engine_mismatch" not in [d.finding.id for d in diagnose(sc)]


def test_every_hint_names_a_class_of_the_kb_and_cites_an_nvidia_or_tool_doc():
    ids = {s.id for s in KB}
    for fid, why, shape, need, doc in HINTS:
        assert fid in ids and why and doc.startswith("https://")


def test_the_report_shows_what_a_hint_or_a_judgment_rests_on(tmp_path, capsys, monkeypatch):
    from gpudoctor.cli import main

    monkeypatch.setenv("NO_COLOR", "1")
    hint = tmp_path / "hint.log"
    hint.write_text("starting server\nINFO Number of GPUs: 0\n")
    main(["explain", str(hint)])
    out = capsys.readouterr().out
    assert "low confidence" in out and "hint (no known signature matched): no CUDA device found" in out
    assert "line 2: INFO Number of GPUs: 0" in out
    facts = tmp_path / "facts.log"
    facts.write_text(SMI_470 + "torch 2.1.0+cu121\n")
    main(["explain", str(facts)])
    out = capsys.readouterr().out
    assert "[driver.too_old] — low confidence" in out
    assert "stated: line 1: | NVIDIA-SMI 470.82.01" in out and "stated: line 2: torch 2.1.0+cu121" in out
    assert "newest cuda this driver runs: 11.4" in out


def test_tensorflow_and_the_cuda_installed_beside_it_from_its_issue_template():
    # TensorFlow 2.5 was built with CUDA 11.2 (tested build configurations): it cannot load CUDA 10.1's libraries
    d = _diags("- TensorFlow version (use command below): 2.5.0\n- CUDA/cuDNN version: 10.1 / 7.6\n")
    assert d[0].finding.id == "library.not_found" and d[0].score < CONFIDENT
    assert "built with CUDA 11.2" in d[0].finding.evidence["why"]
    assert _ranked("- TensorFlow version (use command below): 2.5.0\n- CUDA/cuDNN version: 11.2 / 8.1\n") == []


def test_a_toolkits_programs_on_a_driver_too_old_for_it_only_with_a_symptom():
    facts = SMI_470 + "Cuda compilation tools, release 12.2, V12.2.140\n"
    assert _ranked(facts) == []  # a build machine may well run no CUDA program
    ranked = _ranked(facts + "cudaGetDeviceCount returned 100\n-> no CUDA-capable device is detected\n")
    assert ranked[0][0] == "driver.too_old" and ranked[0][1] >= CONFIDENT


@pytest.mark.parametrize("stated", ["torch                     2.1.0+cpu", "Successfully installed torch-2.1.0+cpu",
                                    "conda install pytorch torchvision cpuonly -c pytorch", "torchvision==0.16.0+cpu"])
def test_a_cpu_only_build_named_in_the_log(stated):
    d = _diags(stated + "\n")
    assert d[0].finding.id == "framework.cpu_build" and d[0].score < CONFIDENT
    # beside a no-GPU symptom it is the cause, with confidence
    ranked = _ranked(stated + "\nRuntimeError: Found no NVIDIA driver on your system.\n")
    assert ranked[0][0] == "framework.cpu_build" and ranked[0][1] >= CONFIDENT
    assert _ranked("torch 2.1.0+cu121\nRuntimeError: Found no NVIDIA driver on your system.\n")[0][0] == "driver.missing"


def test_a_gpu_name_is_read_from_nvidia_smis_table_without_the_next_column():
    from gpudoctor.explain.facts import read_facts

    row = "|   0  NVIDIA GeForce GTX 1080        Off |   00000000:01:00.0  On |                  N/A |"
    sc = Scanner(KB)
    sc.feed((row + "\n").encode())
    sc.close()
    ctx = {}
    for m in sc.matches:
        ctx.setdefault(m.signature.id[len("context."):], []).append((m.line_no, m.line))
    assert {v for v, *_ in read_facts(ctx)["gpu"]} == {"NVIDIA GeForce GTX 1080"}
    assert _diags(row + "\ntorch 2.15.0+cu132\n")[0].finding.id == "arch.binary_missing"  # sm_61: no SASS, no PTX


def test_tensorrt_and_a_gpu_outside_its_supported_range():
    # TensorRT support matrix: 8.4 covers sm_35..sm_87; an RTX 4080 is sm_89
    d = _diags("**TensorRT Version**: 8.4.1.5\n**NVIDIA GPU**: RTX 4080\n**CUDA Version**: 11.7\n")
    assert d[0].finding.id == "arch.toolkit_unsupported" and "sm_35 to sm_87" in d[0].finding.evidence["why"]
    assert _ranked("**TensorRT Version**: 8.6.1\n**NVIDIA GPU**: RTX 4080\n") == []


def test_hint_patterns_stay_linear_on_any_line():
    # hints read whatever a log ends with: an "a.*?b" pattern is quadratic on a long line full of a's
    # (a crafted 64 KiB tail once took 12 s); a shape is separate patterns that must all be present
    for fid, why, shape, need, doc in HINTS:
        for alternative in shape:
            for p in alternative:
                assert ".*" not in p.pattern and "\\S*" not in p.pattern and "\\S+?" not in p.pattern, (fid, p.pattern)


def test_a_bare_cpu_version_tag_beside_a_build_mismatch_is_the_cpu_build():
    # xFormers names the torch it found only by version: "(you have 2.0.1+cpu)". A CPU wheel matches no
    # CUDA, so the CPU build is the cause, not the CUDA mismatch xFormers reports.
    log = ("WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\n"
           "    PyTorch 2.0.1+cu118 with CUDA 1108 (you have 2.0.1+cpu)\n"
           "    Python  3.10.11 (you have 3.10.11)\n")
    ranked = _diags(log)
    assert ranked[0].finding.id == "framework.cpu_build", [(d.finding.id, d.score) for d in ranked]
    # the same warning with a CUDA torch stays a CUDA mismatch
    ranked = _diags(log.replace("(you have 2.0.1+cpu)", "(you have 2.0.1+cu117)"))
    assert ranked[0].finding.id == "framework.cuda_mismatch", [(d.finding.id, d.score) for d in ranked]


def test_a_cpu_tag_inside_another_token_is_not_a_cpu_build():
    # (the "+cpu" hint may still point there, at hint confidence: not a stated fact)
    from gpudoctor.explain.facts import FACTS_ONLY

    for line in ("model-1.2.3+cpu-export.onnx saved", "commit 0.4.1+cpuinfo", "build_2.1.0+cpu_compat_check passed"):
        assert not any(d.finding.id == "framework.cpu_build" and d.score >= FACTS_ONLY for d in _diags(line + "\n")), line


def test_real_loader_errors_for_an_empty_or_foreign_cuda_library(tmp_path):
    # glibc's own messages, made here: an empty library (a 0-byte placeholder, as Jetson containers mount
    # when the host lacks the package) and a file that is not ELF (a download error page saved as the .so)
    import ctypes

    empty, foreign = tmp_path / "libnvinfer.so.8", tmp_path / "libcublasLt.so.12"
    empty.write_bytes(b"")
    foreign.write_text("<html><body>404 Not Found</body></html>\n" * 4)
    for path, lib in ((empty, "libnvinfer.so.8"), (foreign, "libcublasLt.so.12")):
        with pytest.raises(OSError) as err:
            ctypes.CDLL(str(path))
        ranked = _diags(f"Traceback (most recent call last):\nOSError: {err.value}\n")
        assert ranked[0].finding.id == "library.not_found", (str(err.value), [d.finding.id for d in ranked])
        assert lib in ranked[0].finding.title
