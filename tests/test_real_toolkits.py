"""Real toolkits on this CPU machine: Debian's CUDA 11.8 beside CUDA 13.0, gcc 12 and g++-11."""
from __future__ import annotations

import os
import shutil

import pytest

from gpudoctor.findings import Severity
from gpudoctor.probes import compilers, environment, smoke_nvcc, toolkit
from tests.conftest import by_id, clean_path, ctx, judge, need


def _probe_all(c, nvml=None):
    if nvml is not None:
        c.memo("nvml", lambda: nvml)
    return {"toolkit": toolkit.probe(c), "compilers": compilers.probe(c), "smoke_nvcc": smoke_nvcc.probe(c),
            "environment": environment.probe(c)}


@pytest.fixture(scope="module")
def own_ptxas_state():
    """PATH without CUDA 13's bin, so nvcc 11.8 uses its own ptxas; the host compiler is named
    explicitly as g++-12, as CMake does (-ccbin /usr/bin/c++) — the real way gcc 12 meets nvcc 11.8
    (Debian's own wrapper gcc would otherwise pick g++-11; nvcc 11.8 ignores NVCC_CCBIN)."""
    need(os.path.isfile("/usr/bin/nvcc"), "Debian nvidia-cuda-toolkit (CUDA 11.8)")
    need(shutil.which("g++-11") is not None, "g++-11")
    need(shutil.which("g++-12") is not None, "g++-12")
    return _probe_all(ctx(PATH=clean_path(), NVCC_PREPEND_FLAGS="-ccbin g++-12", NVCC_CCBIN=None, CUDA_HOME=None))


def _tk(results, release):
    return next(t for t in results["toolkit"]["toolkits"] if t.get("release") == release)


def test_nvcc_118_rejects_gcc_12_and_accepts_ccbin_gxx11(own_ptxas_state):
    r = own_ptxas_state
    tk = _tk(r, "11.8")
    assert tk["host_config"]["max_gcc"] == 11
    assert tk["host_compiler"]["version_seen_by_nvcc"].startswith("12.")
    build = next(b for b in r["smoke_nvcc"]["builds"] if b.get("release") == "11.8")
    assert not build["compile_ok"]
    assert "unsupported GNU version" in build["compile_output"]
    retry = build["retry_with_ccbin"]
    assert retry["compile_ok"], retry["compile_output"]
    assert retry["ccbin"].endswith("g++-11")

    findings = judge(r)
    (f,) = [f for f in by_id(findings, "compiler.unsupported") if f.evidence["release"] == "11.8"]
    assert f.severity == Severity.FAIL  # the nvcc on this PATH
    assert "12.2" in f.title and "≤ 11" in f.title
    first = f.fixes[0]
    assert "g++-11" in first.summary and "Verified" in first.summary
    assert first.commands[0] == "export NVCC_PREPEND_FLAGS='-ccbin /usr/bin/g++-11'"
    assert "-allow-unsupported-compiler" in " ".join(f.fixes[-1].commands)
    smoke = [s for s in by_id(findings, "smoke.nvcc", Severity.FAIL) if "11.8" in s.title]
    assert smoke and "compiler.unsupported" in smoke[0].title


def test_debian_nvcc_118_default_host_compiler_is_its_g11_wrapper():
    """Without NVCC_CCBIN, Debian's nvcc runs its wrapper gcc, which picks g++-11: no finding then."""
    need(os.path.isfile("/usr/bin/nvcc"), "Debian nvidia-cuda-toolkit (CUDA 11.8)")
    need(shutil.which("g++-11") is not None, "g++-11")
    c = ctx(PATH=clean_path(), NVCC_CCBIN=None, CUDA_HOME=None)
    tk = next(t for t in toolkit.probe(c)["toolkits"] if t.get("release") == "11.8")
    assert tk["host_compiler"]["version_seen_by_nvcc"].startswith("11.")
    assert not [f for f in by_id(judge({"toolkit": toolkit.probe(c)}), "compiler.unsupported") if "11.8" in f.title]


def test_nvcc_130_accepts_gcc_12(own_ptxas_state):
    tk = _tk(own_ptxas_state, "13.0")
    assert tk["host_config"]["max_gcc"] >= 12
    ok = [f for f in by_id(judge(own_ptxas_state), "compiler.ok") if "13.0" in f.title]
    assert ok


@pytest.fixture(scope="module")
def side_by_side_state():
    """CUDA 13.0's ptxas ahead of Debian's on PATH (/usr/local/bin wrapper or /usr/local/cuda/bin)."""
    need(os.path.isfile("/usr/bin/nvcc"), "Debian nvidia-cuda-toolkit (CUDA 11.8)")
    need(os.path.isfile("/usr/local/cuda/bin/ptxas"), "CUDA 13.0 at /usr/local/cuda")
    path = "/usr/local/cuda/bin:" + clean_path()
    return _probe_all(ctx(PATH=path, NVCC_CCBIN=None, CUDA_HOME=None))


def test_cuda_118_and_130_side_by_side_is_reported_as_mixed(side_by_side_state):
    r = side_by_side_state
    tk = _tk(r, "11.8")
    assert tk["ptxas"]["release"] == "13.0"
    findings = judge(r)
    mixed = [f for f in by_id(findings, "toolkit.mixed") if f.evidence.get("nvcc_release") == "11.8"]
    assert mixed and mixed[0].evidence["ptxas_release"] == "13.0"
    # the fix puts the toolkit's own ptxas first; that ptxas really is 11.8
    assert mixed[0].fixes[0].commands == ("export PATH=/usr/bin:$PATH",)
    smoke = [s for s in by_id(findings, "smoke.nvcc", Severity.FAIL) if "11.8" in s.title]
    assert smoke and "toolkit.mixed" in smoke[0].title
    assert "sm_52" in smoke[0].evidence["first_error"]
    inv = by_id(findings, "toolkit.inventory")
    assert inv and "13.0" in inv[0].title and "11.8" in inv[0].title


def test_sm100_is_rejected_by_cuda_118_for_real():
    need(os.path.isfile("/usr/bin/nvcc"), "Debian nvidia-cuda-toolkit (CUDA 11.8)")
    need(shutil.which("g++-11") is not None, "g++-11")
    # FAKE: no Blackwell GPU can exist here; NVML's answer is injected, the compilers are real.
    fake_nvml = {"status": "ok", "driver_version": "580.95.05", "cuda_driver_version": "13.0",
                 "gpus": [{"index": 0, "name": "FAKE NVIDIA B200", "compute_capability": "10.0"}]}
    r = _probe_all(ctx(PATH=clean_path(), NVCC_PREPEND_FLAGS="-ccbin g++-11", CUDA_HOME=None), nvml=fake_nvml)
    r["driver"] = {"nvml": fake_nvml}
    build = next(b for b in r["smoke_nvcc"]["builds"] if b.get("release") == "11.8")
    assert build["arch"] == "sm_100"
    assert "Value 'sm_100' is not defined for option 'gpu-architecture'" in build["compile_output"]
    findings = judge(r)
    arch = [f for f in by_id(findings, "arch.toolkit_unsupported") if "11.8" in f.title]
    assert arch and arch[0].severity == Severity.FAIL
    assert "12.8" in arch[0].fixes[0].summary  # first CUDA that generates sm_100, from the matrix
    smoke = [s for s in by_id(findings, "smoke.nvcc", Severity.FAIL) if "11.8" in s.title]
    assert smoke and "arch.toolkit_unsupported" in smoke[0].title
    # CUDA 13.0 builds for sm_100 without complaint
    b13 = next(b for b in r["smoke_nvcc"]["builds"] if b.get("release") == "13.0")
    assert b13["compile_ok"], b13["compile_output"]
