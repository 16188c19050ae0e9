"""Issue 24, item 1: a failed tool's own words reach the finding and are read with explain's knowledge;
a real runtime's refusal decides the severity; a tool that says how to learn more is rerun that way;
an import error names the distribution that provides the missing module.

Real components: nvcc and nvidia-smi as installed here (nvidia-smi fails for real: driver 535 user space
without its kernel module), the TensorRT 11.4 runtime's recorded refusals of real plans
(../shared/engines), the real wheels' metadata (.venv, .ci/cache)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpudoctor.explain.annotate import annotate_findings
from gpudoctor.findings import Finding, Severity
from gpudoctor.process.more_detail import detail_env, instruction
from gpudoctor.process.subproc import run
from gpudoctor.process.tail import TAIL_BYTES, tail
from gpudoctor.rules.faults import finding_for
from tests.conftest import CACHE, ROOT, need

NVCC = "/usr/local/cuda/bin/nvcc"
SHARED = Path(ROOT).parent / "shared" / "engines"


# --- the tail ------------------------------------------------------------------------------------------

def test_tail_keeps_the_last_lines_within_its_bounds_and_masks_secrets():
    text = "\n".join(f"line {i}" for i in range(100)) + "\nHF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123 export failed\n"
    t = tail(text)
    assert t.splitlines()[-1] == "HF_TOKEN=<redacted> export failed" and "hf_abc" not in t
    assert len(t.splitlines()) == 20 and t.splitlines()[0] == "line 81"
    long = tail("x" * 10_000)
    assert len(long.encode()) <= TAIL_BYTES and long.startswith("…")
    assert tail("") is None and tail("\n \n") is None


def test_a_real_failed_command_keeps_its_stderr_tail_in_its_problem_record_and_finding(tmp_path):
    need(os.path.isfile(NVCC), NVCC)
    src = tmp_path / "k.cu"
    src.write_text("__global__ void k() {}\n")
    env = dict(os.environ, NVCC_APPEND_FLAGS="--no-such-flag-gd")
    rec = run([NVCC, "--dryrun", "-c", str(src)], env=env, timeout=30).problem()
    assert rec["kind"] == "exit" and "Unknown option '--no-such-flag-gd'" in rec["stderr_tail"]
    f = finding_for(rec, "toolkit", "debian")
    assert f.evidence["stderr_tail"] == rec["stderr_tail"]
    (read,) = annotate_findings([f], {})
    # what nvcc said is in the title, not only "exited with code 1"
    assert "nvcc said: nvcc fatal : Unknown option '--no-such-flag-gd'" in read.title
    assert read.evidence["said"].startswith("nvcc fatal") and read.id == f.id


def test_real_nvidia_smi_failure_becomes_the_findings_cause_with_explains_fix():
    smi = shutil.which("nvidia-smi")
    need(bool(smi), "nvidia-smi (driver 535 user space)")
    res = run([smi], timeout=30)
    if res.ok:
        pytest.skip("nvidia-smi works here: this test needs the GPU-less CI machine")
    rec = res.problem()
    f = finding_for(rec, "driver", "debian")
    (read,) = annotate_findings([f], {"driver": {"problems": [rec]}})
    cause = read.evidence["cause"]
    assert cause["id"] == "driver.not_loaded" and cause["confidence"] == "high"
    assert read.title.endswith("→ " + cause["title"])
    assert "modprobe" in json.dumps([fx.to_dict() for fx in read.fixes[:2]])  # explain's fix comes first
    assert read.fixes[-1] == f.fixes[-1]  # the rule's own fixes are kept
    # the fallback's warning ("could not use it") becomes a failure: the words show a driver that is not there
    assert f.severity == Severity.WARN and read.severity == Severity.FAIL and "severity_from" in read.evidence


def test_a_rule_that_names_a_problem_record_gets_the_records_words():
    """toolkit.broken-style findings quote the record's path and what failed; the words come from the record."""
    rec = {"path": "/opt/x/bin/tool", "kind": "exit", "what": "tool exited with code 1",
           "stderr_tail": "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."}
    f = Finding("toolkit.broken", Severity.WARN, "toolkit", "tool (/opt/x/bin/tool) could not be asked: tool exited with code 1",
                evidence={"path": "/opt/x/bin/tool", "what": "tool exited with code 1"})
    other = Finding("toolkit.mixed", Severity.WARN, "toolkit", "it mentions /opt/x/bin/tool only",
                    evidence={"nvcc": "/opt/x/bin/tool"})
    a, b = annotate_findings([f, other], {"toolkit": {"problems": [rec]}})
    assert a.evidence["cause"]["id"] == "driver.not_loaded" and a.evidence["stderr_tail"] == rec["stderr_tail"]
    assert b is other  # naming the tool is not being about its failure


def test_a_healthy_check_loads_no_signatures():
    code = ("import sys; from gpudoctor.explain.annotate import annotate_findings; from gpudoctor.findings import Finding, Severity;"
            "fs=[Finding('a', Severity.OK, 'x', 't'), Finding('b', Severity.WARN, 'x', 't', evidence={'k': 'v'})];"
            "assert annotate_findings(fs, {'p': {'problems': []}}) is fs;"
            "print(sorted(m for m in sys.modules if m.startswith('gpudoctor.explain.') and m != 'gpudoctor.explain.annotate'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


# --- asking for more detail ----------------------------------------------------------------------------

@pytest.mark.parametrize("text,want", [
    ("ncclCommInitAll: ncclResult_t 5 (invalid usage (run with NCCL_DEBUG=WARN for details))", ("NCCL_DEBUG", "WARN")),
    ("For debugging consider passing CUDA_LAUNCH_BLOCKING=1.", ("CUDA_LAUNCH_BLOCKING", "1")),
    ("Set TF_CPP_MIN_LOG_LEVEL=0 to see more", ("TF_CPP_MIN_LOG_LEVEL", "0")),
    ("nothing to ask here: exit code 1", None),
    ("run with path=/tmp", None),  # not a variable written in capitals
    ("try LD_PRELOAD=libx.so or set PATH=/x", None),  # never a variable that chooses what code runs
])
def test_the_instruction_is_read_from_the_sentence(text, want):
    assert instruction(text) == want


def test_a_real_libraries_own_instruction_is_read():
    """PyTorch's libtorch_cpu.so (real CPU wheel) says 'please set PYTORCH_JIT_ENABLE_LARGE_SOURCE_LOCATION=1'."""
    lib = os.path.join(CACHE, "torch-cpu", "site-packages", "torch", "lib", "libtorch_cpu.so")
    need(os.path.isfile(lib), lib)
    with open(lib, "rb") as fh:
        data = fh.read()
    at = data.find(b"please set PYTORCH_JIT_ENABLE_LARGE_SOURCE_LOCATION=1")
    assert at > 0
    assert instruction(data[at - 80: at + 60].decode("latin-1")) == ("PYTORCH_JIT_ENABLE_LARGE_SOURCE_LOCATION", "1")


def test_no_rerun_when_the_step_already_ran_that_way():
    msg = "invalid usage (run with NCCL_DEBUG=WARN for details)"
    assert detail_env({"NCCL_DEBUG": "WARN"}, msg) is None
    env, setting = detail_env({"NCCL_DEBUG": "VERSION"}, msg)
    assert setting == "NCCL_DEBUG=WARN" and env["NCCL_DEBUG"] == "WARN"


def test_nccl_failure_is_rerun_once_in_a_real_child_the_way_it_asks(monkeypatch):
    from gpudoctor.process import multigpu_smoke

    monkeypatch.delenv("NCCL_DEBUG", raising=False)
    nccl = {"library": "/nonexistent/libnccl.so.2", "ok": False,
            "error": "ncclCommInitAll: ncclResult_t 5 (invalid usage (run with NCCL_DEBUG=WARN for details))"}
    multigpu_smoke._rerun_for_detail(["--nccl", nccl["library"]], nccl, 0.1)
    rerun = nccl["rerun"]
    assert rerun["setting"] == "NCCL_DEBUG=WARN" and rerun["command"].startswith("NCCL_DEBUG=WARN python -m gpudoctor")
    # a run that already had NCCL_DEBUG=WARN (gpudoctor sets it when the user did not) is not rerun
    again = dict(nccl, ran_with={"NCCL_DEBUG": "WARN"})
    again.pop("rerun")
    multigpu_smoke._rerun_for_detail(["--nccl", nccl["library"]], again, 0.1)
    assert "rerun" not in again


def test_the_nccl_finding_quotes_what_the_rerun_said():
    from gpudoctor.explain.annotate import annotate_findings as read
    from gpudoctor.rules.multigpu import _nccl_smoke

    # facts in the shape the child returns (recorded NCCL 2.27 WARN line format)
    n = {"library": "/usr/lib/libnccl.so.2", "devices": [0, 1], "ok": False,
         "error": "ncclCommInitAll: ncclResult_t 5 (invalid usage (run with NCCL_DEBUG=WARN for details))",
         "rerun": {"setting": "NCCL_DEBUG=WARN", "command": "NCCL_DEBUG=WARN python -m ...",
                   "stderr_tail": "h100:123:123 [0] NCCL INFO cudaDriverVersion 13000\n"
                                  "h100:123:123 [0] misc/param.cc:40 NCCL WARN Invalid value bogus for NCCL_P2P_LEVEL"}}
    (f,) = _nccl_smoke({"nccl": n})
    assert f.severity == Severity.FAIL
    assert "rerun with NCCL_DEBUG=WARN, NCCL said: Invalid value bogus for NCCL_P2P_LEVEL" in f.title
    assert "NCCL WARN Invalid value" in f.evidence["rerun"]["stderr_tail"]
    (g,) = read([f], {})
    assert "ncclResult_t 5" in g.evidence["stderr_tail"]


# --- a real runtime's refusal decides --------------------------------------------------------------------

def _engine_facts(plan: Path, answer):
    from gpudoctor.formats.engine_plan import header_facts, read_plan_header

    entry = {"path": str(plan), "header": header_facts(read_plan_header(plan))}
    if answer is not None:
        entry["runtime_answer"] = answer
    trt = {"modules": [{"name": "tensorrt_lean", "import_ok": True, "version": "11.4.0.106", "path": "/sp"}]}
    return {"engine": {"engines": [entry]}, "tensorrt": trt, "driver": {"nvml": {"gpus": []}}}


def _recorded_refusal(name: str) -> dict:
    """TensorRT 11.4's lean runtime's own answer for a real plan, recorded on the H100."""
    for line in (SHARED / "trt-11.4-runtime-deserialize.jsonl").read_text().splitlines():
        d = json.loads(line)
        if d["file"] == name and d["runtime"] == "tensorrt_lean":
            msgs = [l.split(": ", 1) for l in d["log"]]
            return {"module": "tensorrt_lean", "version": d["runtime_version"], "loaded": d["loaded"],
                    "messages": [[sev.split(".")[-1], text] for sev, text in msgs]}
    raise AssertionError(name)


def test_the_lean_runtimes_refusal_of_a_10x_plan_is_a_failure_not_a_warning():
    from gpudoctor.rules.engine import engine_plans

    name = "onjackay--model-deploy-tutorial--mnist.engine"  # TensorRT 10.0.1.6, not version-compatible
    if not (SHARED / name).is_file():  # as tests/test_engines_real.py: the engines live beside the checkout
        pytest.skip(f"{SHARED} (the real engine files) is not here")
    (header_only,) = engine_plans(_engine_facts(SHARED / name, None), None)
    assert header_only.severity == Severity.WARN  # the header alone cannot tell
    answer = _recorded_refusal(name)
    assert answer["loaded"] is False
    (judged,) = engine_plans(_engine_facts(SHARED / name, answer), None)
    assert judged.severity == Severity.FAIL and judged.id == "tensorrt.engine_mismatch"
    assert "refused it" in judged.title and "deserializeCudaEngine" in judged.evidence["stderr_tail"]
    (read,) = annotate_findings([judged], {})
    assert read.evidence["cause"]["id"].startswith("tensorrt.engine_")


def test_a_runtime_that_could_not_start_leaves_the_verdict_to_the_header():
    from gpudoctor.rules.engine import engine_plans

    name = "onjackay--model-deploy-tutorial--mnist.engine"
    if not (SHARED / name).is_file():
        pytest.skip(f"{SHARED} (the real engine files) is not here")
    answer = {"module": "tensorrt_lean", "version": "11.4.0.106",
              "error": "the runtime did not start: CUDA initialization failure with error: 100", "messages": []}
    (f,) = engine_plans(_engine_facts(SHARED / name, answer), None)
    assert f.severity == Severity.WARN


# --- which distribution provides a missing module -----------------------------------------------------

def _provider_in_child(tmp_path, code: str, pythonpath: str = "") -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (pythonpath, ROOT) if p)
    out = subprocess.run([sys.executable, "-c", "import json; from gpudoctor.probes.providers import *; " + code],
                         capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_a_missing_gpu_module_names_its_distribution_from_the_real_wheels(tmp_path):
    p = _provider_in_child(tmp_path, "print(json.dumps(provider(module='tensorrt')))")
    if p["installed"]:
        pytest.skip("tensorrt is installed here")
    assert p["distributions"] == ["tensorrt-cu13"] and p["source"] == "wheel RECORD table"
    lib = _provider_in_child(tmp_path, "print(json.dumps(provider(library='libnvinfer_lean.so.11')))")
    assert lib["distributions"] == ["tensorrt-lean-cu13-libs"]
    f = Finding("smoke.tensorrt", Severity.FAIL, "smoke", "TensorRT smoke test crashed",
                evidence={"stderr_tail": "ModuleNotFoundError: No module named 'tensorrt'"})
    (read,) = annotate_findings([f], {})
    assert read.fixes[0].commands == ("python -m pip install tensorrt-cu13",)
    assert "provided by tensorrt-cu13, which is not installed" in read.title


def test_an_installed_module_shadowed_on_the_path_is_named_with_the_path(tmp_path):
    need(_provider_in_child(tmp_path, "import importlib.metadata as m; print(json.dumps('cuda' in m.packages_distributions()))"),
         "cuda-python in this environment")
    shadow = tmp_path / "shadow"
    (shadow / "cuda").mkdir(parents=True)
    (shadow / "cuda" / "__init__.py").write_text("")
    p = _provider_in_child(tmp_path, "print(json.dumps(provider(module='cuda.bindings')))", str(shadow))
    assert p["shadowed"] and p["resolves_to"] == str(shadow / "cuda" / "__init__.py")
    assert "cuda-bindings" in p["distributions"]
    clean = _provider_in_child(tmp_path, "print(json.dumps(provider(module='cuda.bindings')))")
    assert not clean.get("shadowed")


def test_the_table_generator_reads_real_wheel_metadata():
    site = os.path.join(CACHE, "trt-lean", "site-packages")
    need(os.path.isdir(site), site)
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    try:
        import gen_module_providers
    finally:
        sys.path.pop(0)
    t = gen_module_providers.build([site])
    assert t["modules"]["tensorrt_lean_bindings"] == ["tensorrt-lean-cu13-bindings"]
    assert t["libraries"]["libnvinfer_lean.so.11"] == ["tensorrt-lean-cu13-libs"]
    from gpudoctor.probes.providers_table import LIBRARIES, MODULES

    assert all(MODULES.get(k) == v for k, v in t["modules"].items())  # the shipped table agrees
    assert all(LIBRARIES.get(k) == v for k, v in t["libraries"].items())


def test_no_time_left_in_the_timeout_quotes_the_words_without_loading_the_signatures():
    code = ("import sys; from gpudoctor.explain.annotate import annotate_findings; from gpudoctor.findings import Finding, Severity;"
            "f = Finding('tool.failed', Severity.WARN, 'x', 'nvidia-smi exited with code 9', evidence={'path': '/usr/bin/nvidia-smi', "
            "'stderr_tail': \"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\"});"
            "(g,) = annotate_findings([f], {}, seconds=0.0);"
            "assert 'cause' not in g.evidence and 'cause_not_read' in g.evidence, g.evidence;"
            "assert g.title.endswith(\"nvidia-smi said: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\"), g.title;"
            "print('gpudoctor.explain.kb' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_a_library_a_wheel_installed_off_the_loaders_path_is_named_with_its_directory(tmp_path):
    """The real nvidia-cuda-nvrtc wheel in this venv: its libnvrtc.so.13 lives in site-packages/nvidia/cu13/lib."""
    p = _provider_in_child(tmp_path, "print(json.dumps(provider(library='libnvrtc.so.13')))")
    need(bool(p and p["installed"]), "nvidia-cuda-nvrtc installed in this environment")
    f = Finding("library.not_found", Severity.FAIL, "cuda", "NVRTC not found",
                evidence={"stderr_tail": "OSError: libnvrtc.so.13: cannot open shared object file: No such file or directory"})
    (read,) = annotate_findings([f], {})
    where = os.path.dirname(p["installed"]["nvidia-cuda-nvrtc"]["file"])
    assert read.fixes[0].commands == (f"export LD_LIBRARY_PATH={where}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}",)
    assert "off the loader's search path" in read.title


def test_words_that_ask_for_a_setting_nobody_reran_with_become_a_fix():
    f = Finding("smoke.nvcc", Severity.FAIL, "smoke", "built, but the program failed",
                evidence={"nvcc": "/usr/local/cuda/bin/nvcc", "command": "./smoke",
                          "stderr_tail": "CUDA kernel errors might be asynchronously reported at some other API call, so the "
                                         "stacktrace below might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1"})
    (read,) = annotate_findings([f], {})
    assert ("CUDA_LAUNCH_BLOCKING=1 ./smoke",) in [fx.commands for fx in read.fixes]


def test_a_problem_records_words_never_hold_a_secret():
    from gpudoctor.process.problems import record

    said = "login failed for GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789"
    rec = record("/usr/bin/tool", "exit", "tool exited with code 1", last_line=said, stderr_tail="x\n" + said)
    assert "ghp_" not in json.dumps(rec) and rec["last_line"].endswith("GITHUB_TOKEN=<redacted>")


def test_check_shows_what_nvcc_said_in_its_json_report(tmp_path):
    """End to end through the CLI: the real nvcc refuses a flag an environment variable adds."""
    need(os.path.isfile(NVCC), NVCC)
    env = dict(os.environ, PYTHONPATH=ROOT, NVCC_APPEND_FLAGS="--no-such-flag-gd", NO_COLOR="1",
               PATH=f"{os.path.dirname(NVCC)}:{os.environ.get('PATH', '')}")
    out = subprocess.run([sys.executable, "-m", "gpudoctor", "check", "--json", "--no-smoke", "--timeout", "30"],
                         capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=120)
    report = json.loads(out.stdout)
    said = [f for f in report["findings"] if "Unknown option '--no-such-flag-gd'" in f["title"]]
    assert said, [f["title"] for f in report["findings"]]
    assert all("--no-such-flag-gd" in f["evidence"]["stderr_tail"] for f in said)
