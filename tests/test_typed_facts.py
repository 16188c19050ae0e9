"""Facts are typed and validated where they are parsed (issue 24 item 4): an implausible driver version, CUDA
version or compute capability is a probe error in the report (``probe.implausible_value``), never an input to
a version rule.

The NVML path is real end to end: the real NVML worker (nvidia-ml-py) loads a FAKE libnvidia-ml.so.1 built here
with gcc (no real NVML on this machine answers past nvmlInit), the driver probe parses it, and
``gpudoctor check --json`` runs in a subprocess. The CUDA path gets a FAKE worker answer (a real libcuda that
answers 0 cannot be had here) through the real cuda probe."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from gpudoctor.probes import cuda, cudnn, driver
from gpudoctor.probes import facts as typed
from tests.conftest import by_id, ctx, judge, need

VERSION_RULES = ("driver.version_mismatch", "driver.too_old", "framework.cuda_mismatch", "driver.minor_version_compat",
                 "driver.runtimes_ok", "driver.ptx_too_new", "arch.binary_missing", "arch.binary_ok")

FAKE_NVML_C = r"""
/* FAKE libnvidia-ml.so.1 for tests: a damaged NVML that initialises and answers garbage versions. */
#include <string.h>
typedef struct { unsigned long long total, free, used; } mem_t;
int nvmlInitWithFlags(unsigned f) { return 0; }
int nvmlInit_v2(void) { return 0; }
int nvmlShutdown(void) { return 0; }
const char *nvmlErrorString(int r) { return "FAKE error"; }
int nvmlSystemGetDriverVersion(char *b, unsigned n) { strncpy(b, "1", n); return 0; }
int nvmlSystemGetNVMLVersion(char *b, unsigned n) { strncpy(b, "13.1", n); return 0; }
int nvmlSystemGetCudaDriverVersion(int *v) { *v = 99990; return 0; }
int nvmlSystemGetCudaDriverVersion_v2(int *v) { *v = 99990; return 0; }
int nvmlDeviceGetCount_v2(unsigned *c) { *c = 1; return 0; }
int nvmlDeviceGetHandleByIndex_v2(unsigned i, void **h) { *h = (void *)0x1000; return 0; }
int nvmlDeviceGetName(void *h, char *b, unsigned n) { strncpy(b, "NVIDIA FAKE H100", n); return 0; }
int nvmlDeviceGetUUID(void *h, char *b, unsigned n) { strncpy(b, "GPU-0f0e0d0c-0b0a-0908-0706-050403020100", n); return 0; }
int nvmlDeviceGetCudaComputeCapability(void *h, int *ma, int *mi) { *ma = 99; *mi = 9; return 0; }
int nvmlDeviceGetMemoryInfo(void *h, mem_t *m) { m->total = 85ULL << 30; m->free = m->total; m->used = 0; return 0; }
/* No process on the GPU (pynvml's unversioned calls need these exact names). */
int nvmlDeviceGetComputeRunningProcesses_v3(void *h, unsigned *n, void *p) { *n = 0; return 0; }
int nvmlDeviceGetGraphicsRunningProcesses_v3(void *h, unsigned *n, void *p) { *n = 0; return 0; }
int nvmlDeviceGetMPSComputeRunningProcesses_v3(void *h, unsigned *n, void *p) { *n = 0; return 0; }
"""


# --- the validators -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("good", ["580.95.05", "535.183.01", "384.111", "540.4.0", "581.15"])
def test_nvidia_driver_versions_pass(good):
    assert typed.driver_version(good) == good


@pytest.mark.parametrize("bad", ["1", "", "0.0", "12.4", "1000.1.1", "580", "580.95.05.1", "580.95.x", None, 580])
def test_implausible_driver_versions_are_rejected(bad):
    with pytest.raises(typed.Implausible):
        typed.driver_version(bad)


def test_cuda_versions_and_compute_capabilities():
    assert typed.cuda_version(13000) == "13.0" and typed.cuda_version("12.2") == "12.2"
    assert typed.compute_capability((9, 0)) == "9.0" and typed.compute_capability("12.1") == "12.1"
    for bad in (0, "0.0", "21.0", 99990, 13005, "13", True):
        with pytest.raises(typed.Implausible):
            typed.cuda_version(bad)
    for bad in ("0.0", "99.9", (0, 0), "9.10", "sm_90"):
        with pytest.raises(typed.Implausible):
            typed.compute_capability(bad)


def test_a_rejected_value_is_a_problem_record_naming_its_source():
    origin = typed.Origin("/opt/x/libnvidia-ml.so.1", "the NVML worker")
    snap = typed.NvmlSnapshot.parse({"status": "ok", "driver_version": "1", "cuda_driver_version": "13.0",
                                     "nvml_version": "13.580.95.05", "gpus": [], "pairs": []}, origin)
    assert snap.driver_version is None and snap.cuda_driver_version == "13.0"
    (rec,) = snap.rejected
    assert rec["path"] == "/opt/x/libnvidia-ml.so.1" and rec["value"] == "1" and rec["call"] == "nvmlSystemGetDriverVersion"
    d = snap.to_dict()  # today's JSON shape, untyped keys kept
    assert d["pairs"] == [] and d["driver_version"] is None and d["problems"] == [rec]


# --- the real NVML worker on a FAKE damaged libnvidia-ml ------------------------------------------------------

@pytest.fixture(scope="module")
def fake_nvml_dir(tmp_path_factory):
    need(shutil.which("gcc") is not None, "gcc")
    d = tmp_path_factory.mktemp("FAKE_nvml")
    (d / "fake_nvml.c").write_text(FAKE_NVML_C)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(d / "libnvidia-ml.so.1"), str(d / "fake_nvml.c"),
                    "-Wl,-soname,libnvidia-ml.so.1"], check=True)
    return str(d)


def _env_with(fake_dir):
    return {"LD_LIBRARY_PATH": fake_dir}


def test_ground_truth_pynvml_reads_the_garbage_too(fake_nvml_dir):
    env = dict(os.environ, LD_LIBRARY_PATH=fake_nvml_dir)
    out = subprocess.run([sys.executable, "-c", "import pynvml; pynvml.nvmlInit(); print(pynvml.nvmlSystemGetDriverVersion())"],
                         env=env, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "1", out.stderr


def test_the_driver_probe_rejects_what_the_fake_nvml_says(fake_nvml_dir):
    facts = driver.probe(ctx(**_env_with(fake_nvml_dir)))
    nvml = facts["nvml"]
    assert nvml["status"] == "ok" and nvml["driver_version"] is None and nvml["cuda_driver_version"] is None
    assert nvml["nvml_version"] is None
    (gpu,) = nvml["gpus"]
    assert gpu["compute_capability"] is None and gpu["name"] == "NVIDIA FAKE H100"  # plausible values stay
    assert gpu["memory_total_mib"] == 85 * 1024
    rejected = {r["call"]: r for r in nvml["problems"] if r["kind"] == "implausible"}
    assert set(rejected) == {"nvmlSystemGetDriverVersion", "nvmlSystemGetCudaDriverVersion", "nvmlSystemGetNVMLVersion",
                             "nvmlDeviceGetCudaComputeCapability(GPU 0)"}
    assert rejected["nvmlSystemGetDriverVersion"]["path"] == os.path.join(fake_nvml_dir, "libnvidia-ml.so.1")
    assert rejected["nvmlDeviceGetCudaComputeCapability(GPU 0)"]["value"] == "99.9"
    # The fake's file name says only its soname: no user-space version "1" to compare with the kernel module.
    assert facts["user_space_version"] is None


def test_check_reports_a_probe_error_and_no_version_finding_on_the_garbage(fake_nvml_dir, tmp_path):
    out = tmp_path / "report.json"
    env = dict(os.environ, LD_LIBRARY_PATH=fake_nvml_dir, XDG_CACHE_HOME=str(tmp_path / "cache"))
    subprocess.run([sys.executable, "-m", "gpudoctor", "check", "--json", "--timeout", "60", "-o", str(out)],
                   env=env, capture_output=True, text=True, timeout=180)
    report = json.loads(out.read_text())
    (f,) = [f for f in report["findings"] if f["id"] == "probe.implausible_value"]  # one per file that answered
    rejected = {r["call"]: r["value"] for r in f["evidence"]["rejected"]}
    assert rejected["nvmlSystemGetDriverVersion"] == "1" and rejected["nvmlDeviceGetCudaComputeCapability(GPU 0)"] == "99.9"
    assert f["severity"] == "fail" and fake_nvml_dir in f["title"] and "'1'" in f["title"]
    assert any("LD_LIBRARY_PATH" in fx["summary"] for fx in f["fixes"])
    for g in report["findings"]:
        assert not (g["id"] in VERSION_RULES and ("Driver 1 " in g["title"] or "driver 1 " in g["title"]
                                                  or "99.9" in g["title"] or "sm_999" in g["title"])), g
    assert not [g for g in report["findings"] if g["id"] == "driver.version_mismatch"]
    assert not [g for g in report["findings"] if g["id"] == "tool.failed" and fake_nvml_dir in g["title"]]  # one finding, not two


# --- the real CUDA worker on a FAKE shim over the real libcuda (driver 535 user space here) -------------------

FAKE_LIBCUDA_C = r"""
/* FAKE damaged libcuda.so.1: cuDriverGetVersion answers 0, directly and through cuGetProcAddress (which
   cuda-python uses); every other entry point is the real driver's (DT_NEEDED on its absolute path). */
#include <dlfcn.h>
#include <string.h>
static void *real(void) { static void *h; if (!h) h = dlopen(REAL, RTLD_NOW | RTLD_GLOBAL); return h; }
int cuDriverGetVersion(int *v) { *v = 0; return 0; }
typedef int (*gpa_t)(const char *, void **, int, unsigned long long, int *);
int cuGetProcAddress_v2(const char *s, void **p, int ver, unsigned long long fl, int *st) {
  if (!strcmp(s, "cuDriverGetVersion")) { *p = (void *)cuDriverGetVersion; if (st) *st = 0; return 0; }
  return ((gpa_t)dlsym(real(), "cuGetProcAddress_v2"))(s, p, ver, fl, st);
}
"""


@pytest.fixture(scope="module")
def fake_libcuda_dir(tmp_path_factory):
    import glob

    need(shutil.which("gcc") is not None, "gcc")
    real = sorted(glob.glob("/usr/lib/x86_64-linux-gnu/nvidia/current/libcuda.so.5*") +
                  glob.glob("/usr/lib/x86_64-linux-gnu/libcuda.so.5*"))
    need(bool(real), "a real libcuda (driver user space)")
    real = os.path.realpath(real[0])
    d = tmp_path_factory.mktemp("FAKE_libcuda")
    (d / "empty.c").write_text("")
    (d / "fake_cuda.c").write_text(FAKE_LIBCUDA_C)
    # A helper whose soname is the real file's absolute path: the shim's DT_NEEDED then loads the real libcuda.
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(d / "libFAKEreal.so"), str(d / "empty.c"), f"-Wl,-soname,{real}"],
                   check=True)
    (d / "lib").mkdir()
    subprocess.run(["gcc", "-shared", "-fPIC", f'-DREAL="{real}"', "-o", str(d / "lib" / "libcuda.so.1"),
                    str(d / "fake_cuda.c"), "-Wl,-soname,libcuda.so.1", "-Wl,--no-as-needed", f"-L{d}", "-lFAKEreal",
                    "-ldl"], check=True)
    return str(d / "lib")


def test_the_real_cuda_worker_on_a_libcuda_that_answers_0(fake_libcuda_dir):
    env = dict(os.environ, LD_LIBRARY_PATH=fake_libcuda_dir)
    truth = subprocess.run([sys.executable, "-c", "from cuda.bindings import driver as d; print(d.cuDriverGetVersion()[1])"],
                           env=env, capture_output=True, text=True, timeout=60)
    need(truth.returncode == 0, "cuda-python")
    assert truth.stdout.strip() == "0", truth.stderr  # ground truth: cuda-python itself reads 0
    facts = cuda.probe(ctx(LD_LIBRARY_PATH=fake_libcuda_dir))
    assert facts["api"]["cuDriverGetVersion"] == {"result": "CUDA_SUCCESS", "value": 0}
    assert facts["driver_cuda_version"] is None
    (rec,) = [r for r in facts["problems"] if r["call"] == "cuDriverGetVersion"]
    assert rec["kind"] == "implausible" and rec["path"] == os.path.join(fake_libcuda_dir, "libcuda.so.1")
    findings = judge({"cuda": facts, "driver": {}})
    (f,) = by_id(findings, "probe.implausible_value")
    assert fake_libcuda_dir in f.title and "cuDriverGetVersion gave '0'" in f.title
    assert not [g for g in findings if g.id in VERSION_RULES and "CUDA 0.0" in g.title]


# --- the cuda probe on a FAKE worker answer -------------------------------------------------------------------

def _fake_cuda_answer(driver_int, cc):
    """FAKE: what the CUDA worker prints, with the values a damaged libcuda would give."""
    return {"bindings_version": "13.4.4", "cuDriverGetVersion": {"result": "CUDA_SUCCESS", "value": driver_int},
            "cuInit": {"result": "CUDA_SUCCESS", "seconds": 0.1}, "device_count": 1,
            "devices": [{"ordinal": 0, "name": "NVIDIA H100 80GB HBM3", "compute_capability": cc,
                         "memory_total_mib": 81079, "uuid": "GPU-0f0e0d0c-0b0a-0908-0706-050403020100"}],
            "cudaRuntimeGetVersion": {"result": "cudaSuccess", "value": 13000},
            "cudaGetDeviceCount": {"result": "cudaSuccess", "value": 1}}


def test_the_cuda_probe_rejects_cuda_0_0_and_cc_0_0(monkeypatch):
    monkeypatch.setattr(cuda, "run_worker", lambda c, task, *a, **k: _fake_cuda_answer(0, "0.0"))
    facts = cuda.probe(ctx())
    assert facts["driver_cuda_version"] is None and facts["runtime_version"] == "13.0"
    assert facts["api"]["devices"][0]["compute_capability"] is None
    assert facts["api"]["devices"][0]["name"] == "NVIDIA H100 80GB HBM3"
    assert facts["api"]["cuDriverGetVersion"] == {"result": "CUDA_SUCCESS", "value": 0}  # the raw answer stays as evidence
    calls = {r["call"]: r["value"] for r in facts["problems"]}
    assert calls == {"cuDriverGetVersion": "0", "cuDeviceGetAttribute(COMPUTE_CAPABILITY, 0)": "0.0"}
    findings = judge({"cuda": facts, "driver": {}})
    (f,) = by_id(findings, "probe.implausible_value")
    assert {r["call"] for r in f.evidence["rejected"]} == set(calls)
    assert not [f for f in findings if f.id in VERSION_RULES]


def test_a_plausible_cuda_answer_passes_unchanged(monkeypatch):
    monkeypatch.setattr(cuda, "run_worker", lambda c, task, *a, **k: _fake_cuda_answer(13000, "9.0"))
    facts = cuda.probe(ctx())
    assert facts["driver_cuda_version"] == "13.0" and facts["api"]["devices"][0]["compute_capability"] == "9.0"
    assert "problems" not in facts


# --- cuDNN: a FAKE libcudnn.so.9 that answers 0, asked by the real library-version worker ------------------------

FAKE_CUDNN_C = r"""
/* FAKE damaged libcudnn: cudnnGetVersion() = 0, cudnnGetCudartVersion() = 99990 ("99.99"). */
#include <stddef.h>
size_t cudnnGetVersion(void) { return 0; }
size_t cudnnGetCudartVersion(void) { return 99990; }
"""


def test_the_cudnn_probe_rejects_what_a_fake_libcudnn_says(tmp_path):
    need(shutil.which("gcc") is not None, "gcc")
    (tmp_path / "fake_cudnn.c").write_text(FAKE_CUDNN_C)
    lib = tmp_path / "lib"
    lib.mkdir()
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib / "libcudnn.so.9.1.0"), str(tmp_path / "fake_cudnn.c"),
                    "-Wl,-soname,libcudnn.so.9"], check=True)
    os.symlink("libcudnn.so.9.1.0", lib / "libcudnn.so.9")
    facts = cudnn.probe(ctx(LD_LIBRARY_PATH=str(lib)))
    (copy,) = [c for c in facts["libraries"] if c["realpath"] == str(lib / "libcudnn.so.9.1.0")]
    assert copy["api"] == {"cudnnGetVersion": 0, "cudnnGetCudartVersion": 99990}  # the raw answers stay as evidence
    assert "api_version" in copy and copy["api_version"] is None
    assert copy["built_for_cuda"] is None and copy["built_for_cuda_major"] is None
    rejected = {r["call"]: r["value"] for r in facts["problems"] if r["kind"] == "implausible"
                and r["path"] == copy["realpath"]}
    assert rejected == {"cudnnGetVersion": "0", "cudnnGetCudartVersion": "99990"}
    (f,) = [f for f in by_id(judge({"cudnn": facts}), "probe.implausible_value") if copy["realpath"] in f.title]
    assert f.severity.value == "fail"


# --- the toolkit: a FAKE nvcc that says "release 0.0" --------------------------------------------------------

def test_a_toolkit_release_0_0_is_a_probe_error(tmp_path):
    from gpudoctor.probes import toolkit

    nvcc = tmp_path / "bin" / "nvcc"
    nvcc.parent.mkdir()
    nvcc.write_text("#!/bin/sh\n# FAKE nvcc: a wrapper that answers a release no CUDA has\n"
                    "echo 'Cuda compilation tools, release 0.0, V0.0.0'\necho 'Build cuda_0.0.r0.0/compiler.0_0'\n")
    nvcc.chmod(0o755)
    facts = toolkit.describe_nvcc(str(nvcc), "PATH", dict(os.environ, PATH=f"{nvcc.parent}:/usr/bin:/bin"), 20.0)
    assert facts["release"] is None and facts["version"] == "0.0.0"  # the raw text stays; the release is not judged
    (rec,) = [r for r in facts["problems"] if r["kind"] == "implausible"]
    assert rec["path"] == str(nvcc) and rec["value"] == "0.0"
    findings = judge({"toolkit": {"toolkits": [facts], "on_path": str(nvcc)}})
    (f,) = by_id(findings, "probe.implausible_value")
    assert str(nvcc) in f.title
    assert not [g for g in findings if g.id == "gpudoctor.rule_error"]


# --- rules on a rejected driver CUDA version (the 2 x H200 run: a FAKE libcuda shim answering 0) ------------------

def test_no_rule_builds_a_sentence_on_a_rejected_driver_cuda_version():
    """The GPU run's state: NVML gives driver 580.159.04 but no CUDA version (NVML's is libcuda's answer, 0 from
    the shim), cuDriverGetVersion's 0 was rejected, cuda-python links cudart 13.3. It had printed "Runtimes newer
    than driver CUDA None run via minor-version compatibility"."""
    origin = typed.Origin("/tmp/FAKE/libcuda.so.1", "the CUDA worker, cuda-python")
    api = typed.CudaApi.parse(dict(_fake_cuda_answer(0, "9.0"), bindings_version="13.3.1",
                                   cudaRuntimeGetVersion={"result": "cudaSuccess", "value": 13030}), origin)
    cuda_facts = typed.CudaFacts(api, [], {}, origin.problems).to_dict()
    assert cuda_facts["driver_cuda_version"] is None and cuda_facts["runtime_version"] == "13.3"
    gpu = {"index": 0, "name": "NVIDIA H200", "uuid": "GPU-6f9204ec-f06d-055c-36f7-58bf755febfe",
           "compute_capability": "9.0", "memory_total_mib": 143771}
    drv = {"nvml": {"status": "ok", "driver_version": "580.159.04", "cuda_driver_version": None,
                    "nvml_version": "13.580.159.04", "gpus": [gpu]},
           "kernel_module": {"version": "580.159.04"}, "user_space_version": "580.159.04"}
    findings = judge({"driver": drv, "cuda": cuda_facts})
    assert by_id(findings, "probe.implausible_value")
    for f in findings:
        assert "None" not in f.title and "0.0" not in f.title, f
        assert "None (from" not in json.dumps(f.evidence, default=str), f
    assert not by_id(findings, "driver.minor_version_compat") and not by_id(findings, "driver.runtimes_ok")
    (ok,) = by_id(findings, "driver.ok")
    assert "580.159.04" in ok.title and "CUDA version it supports is unknown" in ok.title
    # The same facts with a plausible cuDriverGetVersion: the driver's CUDA comes from it, and the sentence is built.
    cuda_facts.update(driver_cuda_version="13.0")
    findings = judge({"driver": drv, "cuda": cuda_facts})
    (ok,) = by_id(findings, "driver.ok")
    assert ok.title.startswith("Driver 580.159.04 loaded (supports CUDA ≤ 13.0)")
    (mvc,) = by_id(findings, "driver.minor_version_compat")
    assert "driver CUDA 13.0" in mvc.title and "13.3" in mvc.title


def test_too_old_names_the_matrix_ceiling_when_the_driver_cuda_version_is_unknown():
    """Driver 535 (NVML) with its CUDA version unknown, a CUDA 13 runtime: still too old (the verdict needs only the
    driver version), and the ceiling printed is the matrix's for 535, never None."""
    drv = {"nvml": {"status": "ok", "driver_version": "535.183.01", "cuda_driver_version": None, "gpus": []},
           "kernel_module": {"version": "535.183.01"}, "user_space_version": "535.183.01"}
    cuda_facts = {"driver_cuda_version": None, "runtime_version": "13.0", "api": {"bindings_version": "13.0.0"},
                  "libcudart": [], "libcudart_loaded": {}}
    (f,) = by_id(judge({"driver": drv, "cuda": cuda_facts}), "driver.too_old")
    assert "None" not in f.title and "CUDA ≤ 12." in f.title, f.title
    assert f.evidence["driver_cuda"].startswith("unknown")


def test_framework_findings_never_print_a_rejected_driver_cuda_version():
    """Driver 535 with its CUDA version unknown, a torch built for CUDA 13 and one CPU-only torch: the framework
    findings name the matrix's ceiling for 535 (CUDA 12.x) and its PyTorch index, never "CUDA ≤ None"."""
    drv = {"nvml": {"status": "ok", "driver_version": "535.183.01", "cuda_driver_version": None, "gpus": []},
           "kernel_module": {"version": "535.183.01"}, "user_space_version": "535.183.01"}
    for torch in ({"version": "2.11.0+cu130", "cuda": "13.0"}, {"version": "2.11.0+cpu", "cuda": None}):
        findings = judge({"driver": drv, "frameworks": {"torch": dict(torch, path="/x/torch")}})
        ours = [f for f in findings if f.id.startswith("framework.")]
        assert ours, [(f.id, f.title) for f in findings]
        for f in ours:
            text = f.title + json.dumps([x.to_dict() for x in f.fixes], ensure_ascii=False)
            assert "None" not in text, text
        assert any("CUDA ≤ 12." in f.title + json.dumps([x.to_dict() for x in f.fixes], ensure_ascii=False) for f in ours), ours
