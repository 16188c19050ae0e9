"""The platform, environment, process_limits, loader and cudnn probes' facts are typed and validated where
parsed (issue 24 item 4): each type's ``to_dict()`` keeps the probe's JSON shape, and an implausible value (an
OS version with a NUL in it, a negative rlimit, cuDNN version 0) is left out of the facts and reported as
``probe.implausible_value`` naming what answered, never judged by another rule.

The shape tests run the real probes on this machine; the implausible values are fed to each type's parser as a
FAKE raw answer (a real OS, kernel or cuDNN that says such things cannot be made here)."""
from __future__ import annotations

import json
import os

import pytest

from gpudoctor.probes import facts as typed
from gpudoctor.probes import facts_system as fs
from gpudoctor.probes import cudnn, environment, loader, platform, process_limits
from tests.conftest import CACHE, by_id, ctx, judge, need


def _same(a, b):
    assert json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def _rejected(problems, call_part):
    return [p for p in problems if p.get("kind") == "implausible" and call_part in p.get("call", "")]


# --- platform -------------------------------------------------------------------------------------------------

def test_platform_shape_is_kept():
    out = platform.probe(ctx())
    assert set(out) >= {"system", "os", "kernel", "machine", "glibc", "python", "wsl", "container", "hypervisor",
                        "dev_nodes", "windows", "problems"}
    assert set(out["os"]) == {"id", "version_id", "pretty_name", "id_like"}
    _same(fs.PlatformFacts.parse(out, typed.Origin("/etc/os-release", "test")).to_dict(), out)


@pytest.mark.parametrize("good", ["12", "22.04", "9.4", "3.19.1", "20240101", "rolling"])
def test_plausible_os_versions_pass(good):
    assert fs.os_release_field(good) == good


@pytest.mark.parametrize("bad", ["", "12\x00\x00", "22.04 LTS", "x" * 65, None, 12])
def test_implausible_os_versions_are_rejected(bad):
    with pytest.raises(typed.Implausible):
        fs.os_release_field(bad)


def test_an_implausible_os_version_and_kernel_are_probe_errors_not_facts():
    raw = dict(platform.probe(ctx()))
    raw.update(os=dict(raw["os"], version_id="\x7fELF\x02\x01", id="debian"), kernel="", glibc="glibc 2.36")
    facts = fs.PlatformFacts.parse(raw, typed.Origin("/etc/os-release", "FAKE os-release")).to_dict()
    assert facts["os"]["version_id"] is None and facts["os"]["id"] == "debian" and facts["kernel"] is None
    assert _rejected(facts["problems"], "VERSION_ID") and _rejected(facts["problems"], "uname")
    found = by_id(judge({"platform": facts, "environment": {}}), "probe.implausible_value")
    assert found and "/etc/os-release" in " ".join(f.title for f in found)
    assert fs.kernel_release("6.1.0-27-amd64") and fs.libc_version("glibc 2.36")
    with pytest.raises(typed.Implausible):
        fs.libc_version("glibc")


# --- environment ----------------------------------------------------------------------------------------------

def test_environment_shape_is_kept(tmp_path):
    lib = tmp_path / "cuda-12.4" / "lib64"
    lib.mkdir(parents=True)
    out = environment.probe(ctx(LD_LIBRARY_PATH=f"{lib}:/usr/local/cuda/lib64", CUDA_HOME=str(tmp_path / "cuda-12.4")))
    assert "problems" not in out  # only a rejection adds it
    assert out["ld_library_path"][0] == {"index": 0, "path": str(lib), "exists": True, "cuda_version": "12.4"}
    assert out["var_cuda_versions"] == {"CUDA_HOME": "12.4"}
    _same(fs.EnvironmentFacts.parse(out, typed.Origin("environment", "test"), {}).to_dict(), out)


def test_a_directory_naming_a_cuda_that_cannot_exist_is_a_probe_error(tmp_path):
    bad = tmp_path / "cuda-99.9" / "lib64"
    bad.mkdir(parents=True)
    env = environment.probe(ctx(LD_LIBRARY_PATH=str(bad), CUDA_HOME=str(tmp_path / "cuda-31.0")))
    assert env["ld_library_path"][0]["cuda_version"] is None and env["var_cuda_versions"] == {}
    assert _rejected(env["problems"], "LD_LIBRARY_PATH") and _rejected(env["problems"], "CUDA_HOME")
    found = by_id(judge({"environment": env}), "probe.implausible_value")
    assert {f.evidence["path"] for f in found} == {str(bad), str(tmp_path / "cuda-31.0")}


# --- process_limits -------------------------------------------------------------------------------------------

def test_process_limits_shape_is_kept():
    out = process_limits.probe(ctx())
    assert set(out) == {"rlimits", "privileged", "uid", "status", "shm", "cgroup_memory", "gpu_processes", "gpus",
                        "problems"}
    assert all(set(v) == {"soft", "hard"} for v in out["rlimits"].values())
    _same(fs.ProcessLimitsFacts.parse(out, typed.Origin("getrlimit(2)", "test")).to_dict(), out)


def test_a_negative_rlimit_or_memory_use_is_a_probe_error_not_a_limit():
    raw = process_limits.probe(ctx())
    raw = dict(raw, rlimits=dict(raw["rlimits"], RLIMIT_NOFILE={"soft": -5, "hard": 1024},
                                 RLIMIT_MEMLOCK={"soft": 4096, "hard": 1024}),
               shm={"path": "/dev/shm", "size_bytes": -1, "free_bytes": 0},
               gpu_processes=[{"gpu": 0, "pid": 0, "used_mib": -3, "type": "compute", "found": False, "ours": False}])
    facts = fs.ProcessLimitsFacts.parse(raw, typed.Origin("getrlimit(2)", "FAKE answers")).to_dict()
    assert facts["rlimits"]["RLIMIT_NOFILE"] == {"soft": None, "hard": 1024}
    assert facts["rlimits"]["RLIMIT_MEMLOCK"] == {"soft": None, "hard": 1024}  # soft above hard: setrlimit refuses it
    assert facts["shm"]["size_bytes"] is None and facts["shm"]["free_bytes"] == 0
    assert facts["gpu_processes"][0]["pid"] is None and facts["gpu_processes"][0]["used_mib"] is None
    for call in ("RLIMIT_NOFILE", "RLIMIT_MEMLOCK", "statvfs", ".pid", "usedGpuMemory"):
        assert _rejected(facts["problems"], call), call
    found = by_id(judge({"process_limits": facts, "environment": {}}), "probe.implausible_value")
    assert {f.evidence["path"] for f in found} == {"getrlimit(2)", "/dev/shm", "libnvidia-ml.so.1"}


# --- loader ---------------------------------------------------------------------------------------------------

def test_loader_shape_is_kept():
    out = loader.probe(ctx())
    assert set(out) == {"process", "libraries", "unresolved", "copies", "preload", "ld_library_path", "ld_preload"}
    assert out["process"]["elf_class"] in (32, 64) and out["process"]["machine"]
    _same(fs.LoaderFacts.parse(out, typed.Origin(out["process"]["executable"], "test")).to_dict(), out)


def test_an_implausible_process_elf_class_is_a_probe_error_not_the_class_picks_are_judged_by():
    raw = dict(loader.probe(ctx()))
    exe, real = raw["process"]["executable"], (raw["process"]["elf_class"], raw["process"]["machine"])
    raw["process"] = dict(raw["process"], elf_class=7, machine="")
    facts = fs.LoaderFacts.parse(raw, typed.Origin(exe, "FAKE ELF header")).to_dict()
    # judged against the running interpreter instead, so no intact library reads as built for another machine
    assert (facts["process"]["elf_class"], facts["process"]["machine"]) == real
    assert _rejected(facts["problems"], "elf_class") and _rejected(facts["problems"], "machine")
    findings = judge({"loader": facts, "environment": {}})
    assert [f.evidence["path"] for f in by_id(findings, "probe.implausible_value")] == [exe]
    assert not by_id(findings, "library.wrong_arch")


# --- cudnn ----------------------------------------------------------------------------------------------------

def test_cudnn_shape_is_kept(monkeypatch):
    """The real nvidia-cudnn-cu12 wheel: its library (asked in the worker) and its header."""
    site = os.path.join(CACHE, "cudnn-cu12", "site-packages")
    need(os.path.isdir(site), ".ci/cache/cudnn-cu12")
    monkeypatch.syspath_prepend(site)
    out = cudnn.probe(ctx())
    assert set(out) == {"libraries", "headers", "loader_pick", "problems"}
    lib = next(x for x in out["libraries"] if x.get("package") == "nvidia-cudnn-cu12")
    assert {"path", "realpath", "origin", "version", "package", "api", "built_for_cuda_major", "built_for_cuda"} <= set(lib)
    assert all(set(h) == {"path", "version"} for h in out["headers"])


def test_implausible_cudnn_versions_are_probe_errors_not_versions(tmp_path):
    inc = tmp_path / "include"
    inc.mkdir()
    (inc / "cudnn_version.h").write_text(  # FAKE header: a major no cuDNN has
        "#define CUDNN_MAJOR 0\n#define CUDNN_MINOR 0\n#define CUDNN_PATCHLEVEL 0\n")
    out = cudnn.probe(ctx(CONDA_PREFIX=str(tmp_path)))
    (h,) = [x for x in out["headers"] if x["path"].startswith(str(tmp_path))]
    assert h["version"] is None and _rejected(out["problems"], "CUDNN_MAJOR")
    problems: list = []
    lib = fs.CudnnLibrary.parse({"path": "/x/libcudnn.so.9", "version": "9.1.0"},
                                {"cudnnGetVersion": 0, "cudnnGetCudartVersion": 99999},  # FAKE answers
                                typed.Origin("/x/libcudnn.so.9", "FAKE worker", problems), None).to_dict()
    assert lib["api_version"] is None and lib["built_for_cuda"] is None and lib["built_for_cuda_major"] is None
    assert _rejected(problems, "cudnnGetVersion") and _rejected(problems, "cudnnGetCudartVersion")
    facts = fs.CudnnFacts([], [], {}, problems).to_dict()
    assert by_id(judge({"cudnn": facts, "environment": {}}), "probe.implausible_value")
    assert fs.CudnnLibrary.parse({}, {"cudnnGetVersion": 90100, "cudnnGetCudartVersion": 12080},
                                 typed.Origin("/x", "test"), None).to_dict() == \
        {"api": {"cudnnGetVersion": 90100, "cudnnGetCudartVersion": 12080}, "api_version": "9.1.0",
         "built_for_cuda_major": 12, "built_for_cuda": "12.8"}
