"""Typed facts of the frameworks, tensorrt and nccl probes (issue 24 item 4): a framework's built-for CUDA, a
TensorRT version or an NCCL version that cannot be what it claims is a probe error (``probe.implausible_value``)
naming the file that said it, never an input to ``framework.cuda_mismatch`` or another version rule; plausible
facts keep the JSON shape the rules read.

Real probes throughout: a FAKE torch package and a FAKE tensorrt package on the import path (the probes read
them statically, as they read real ones), a FAKE libnccl.so.2 built here with gcc and asked by the real library
worker, the real ``gpudoctor.rules`` judging the facts."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from gpudoctor.probes import facts_frameworks as typed
from gpudoctor.probes import frameworks, nccl, tensorrt
from gpudoctor.rules._util import framework_cuda_builds
from tests.conftest import by_id, ctx, judge, need

#: Driver 535 (CUDA ≤ 12.2) as NVML answers it: a torch built for CUDA 13 is a real framework.cuda_mismatch.
DRIVER_535 = {"nvml": {"status": "ok", "driver_version": "535.183.01", "cuda_driver_version": "12.2", "gpus": []}}


# --- the validators -------------------------------------------------------------------------------------------

def test_validators_keep_plausible_values_as_given():
    assert typed.built_for_cuda("13.0") == "13.0" and typed.built_for_cuda("12.5.1") == "12.5.1"
    assert typed.package_version("2.9.0+cu130") == "2.9.0+cu130"
    assert typed.tensorrt_version("10.13.3.9") == "10.13.3.9" and typed.tensorrt_version("10.0.0b6") == "10.0.0b6"
    assert typed.tensorrt_version("8") == "8"  # libnvinfer.so.8's file name
    assert typed.nccl_version("2.28.3") == "2.28.3" and typed.nccl_file_version("2") == "2"
    assert typed.cuda_major(12) == 12


@pytest.mark.parametrize("check, bad", [
    (typed.built_for_cuda, "0.0"), (typed.built_for_cuda, "99.1"), (typed.built_for_cuda, "12.10"),
    (typed.built_for_cuda, "13"), (typed.built_for_cuda, 13.0), (typed.built_for_cuda, "12.x"),
    (typed.package_version, ""), (typed.package_version, "not a version"), (typed.package_version, None),
    (typed.tensorrt_version, "0.9.1"), (typed.tensorrt_version, "99.1.0"), (typed.tensorrt_version, "ten"),
    (typed.nccl_version, "9.99.99"), (typed.nccl_version, "0.0.0"), (typed.nccl_version, "2.28"),
    (typed.nccl_file_version, "3.0.1"), (typed.cuda_major, 99), (typed.cuda_major, 0),
])
def test_validators_reject_implausible_values(check, bad):
    with pytest.raises(typed.Implausible):
        check(bad)


# --- the frameworks probe on a FAKE torch ---------------------------------------------------------------------

def _fake_torch(root, cuda: str):
    pkg = root / "torch"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("raise ImportError('FAKE torch: read statically, never imported')\n")
    (pkg / "version.py").write_text(f"__version__ = '2.9.0+FAKE'\ncuda: Optional[str] = '{cuda}'\nhip = None\n")
    return pkg


def _frameworks_with_fake_torch(monkeypatch, tmp_path, cuda: str):
    pkg = _fake_torch(tmp_path / "FAKE_site", cuda)
    monkeypatch.syspath_prepend(str(tmp_path / "FAKE_site"))
    return pkg, frameworks.probe(ctx(XDG_CACHE_HOME=str(tmp_path / "cache")))


@pytest.mark.parametrize("cuda", ["0.0", "99.1"])
def test_a_fake_torch_built_for_an_implausible_cuda_is_a_probe_error(monkeypatch, tmp_path, cuda):
    pkg, facts = _frameworks_with_fake_torch(monkeypatch, tmp_path, cuda)
    torch = facts["torch"]
    assert torch["path"] == str(pkg) and torch["version"] == "2.9.0+FAKE" and torch["cuda"] is None
    (rec,) = [r for r in facts["problems"] if r["kind"] == "implausible"]
    assert rec["path"] == str(pkg / "version.py") and rec["value"] == cuda and rec["call"] == "torch/version.py cuda"
    assert framework_cuda_builds({"frameworks": facts}) == []
    findings = judge({"frameworks": facts, "driver": DRIVER_535, "cuda": {}})
    (f,) = by_id(findings, "probe.implausible_value")
    assert str(pkg / "version.py") in f.title and f.severity.value == "fail"
    assert not by_id(findings, "framework.cuda_mismatch")


def test_a_fake_torch_built_for_a_plausible_cuda_reaches_the_rule(monkeypatch, tmp_path):
    # The control: the same fake, saying 13.0, is judged against driver 535 (CUDA 12.2) as before.
    pkg, facts = _frameworks_with_fake_torch(monkeypatch, tmp_path, "13.0")
    assert list(facts["torch"]) == ["path", "version", "cuda", "hip", "cudnn_requirement", "nvidia_requirements", "archs"]
    assert facts["torch"]["cuda"] == "13.0" and not facts["problems"]
    findings = judge({"frameworks": facts, "driver": DRIVER_535, "cuda": {}})
    (f,) = by_id(findings, "framework.cuda_mismatch")
    assert "CUDA 13.0" in f.title and not by_id(findings, "probe.implausible_value")


def test_cupy_and_jax_majors_from_distribution_names_are_validated():
    origin = typed.Origin(None, "FAKE metadata")
    where = lambda n: f"/FAKE/{n}.dist-info"  # noqa: E731
    cupy = typed.CupyFacts.parse({"distributions": {"cupy-cuda12x": "13.6.0", "cupy-cuda99x": "13.6.0"},
                                  "cuda_majors": None}, origin, where)
    assert cupy.to_dict() == {"distributions": {"cupy-cuda12x": "13.6.0", "cupy-cuda99x": "13.6.0"}, "cuda_majors": [12]}
    (rec,) = origin.problems
    assert rec["path"] == "/FAKE/cupy-cuda99x.dist-info" and rec["value"] == "99"


# --- the tensorrt probe on a FAKE tensorrt package ------------------------------------------------------------

def test_a_fake_tensorrt_with_an_implausible_version_is_a_probe_error(monkeypatch, tmp_path):
    pkg = tmp_path / "FAKE_site" / "tensorrt"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("__version__ = '99.1.0'\n")
    monkeypatch.syspath_prepend(str(tmp_path / "FAKE_site"))
    env_path = os.pathsep.join([str(tmp_path / "FAKE_site")] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    facts = tensorrt.probe(ctx(PYTHONPATH=env_path, XDG_CACHE_HOME=str(tmp_path / "cache")))
    (mod,) = [m for m in facts["modules"] if m["name"] == "tensorrt"]
    assert mod["version"] is None and mod["path"] == str(pkg) and mod["import_ok"] is True
    assert list(mod) == ["name", "path", "version", "runtime", "can", "import_ok", "import_error"]
    (rec,) = [r for r in facts["problems"] if r["value"] == "99.1.0"]
    assert rec["path"] == str(pkg / "__init__.py") and rec["kind"] == "implausible"
    (f,) = by_id(judge({"tensorrt": facts}), "probe.implausible_value")
    assert str(pkg / "__init__.py") in f.title


def test_tensorrt_distributions_are_validated_and_their_cuda_major_known():
    origin = typed.Origin(None, "FAKE metadata")
    raw = {"modules": None, "distributions": {"tensorrt-cu12": "10.13.3.9", "tensorrt-cu12-libs": "0.0.1",
                                              "tensorrt-cu99-bindings": "10.13.3.9", "tensorrt-llm": "0.21.0"},
           "libnvinfer": [], "libnvinfer_loaded": {}, "trtexec": None}
    facts = typed.TensorRTFacts.parse(raw, [], origin, lambda n: f"/FAKE/{n}.dist-info")
    # tensorrt-llm is not TensorRT: its 0.x is only a package version; a cu99 wheel is left out.
    assert facts.distributions == {"tensorrt-cu12": "10.13.3.9", "tensorrt-cu12-libs": None, "tensorrt-llm": "0.21.0"}
    assert facts.cuda_majors == [12]
    assert {(r["path"], r["value"]) for r in facts.problems} == {("/FAKE/tensorrt-cu12-libs.dist-info", "0.0.1"),
                                                                  ("/FAKE/tensorrt-cu99-bindings.dist-info", "99")}
    assert list(facts.to_dict()) == ["modules", "distributions", "libnvinfer", "libnvinfer_loaded", "trtexec", "problems"]


# --- the nccl probe: a FAKE libnccl asked by the real library worker, and the real wheel -----------------------

FAKE_NCCL_C = r"""
/* FAKE libnccl.so.2 for tests: a damaged NCCL whose ncclGetVersion succeeds with a version NCCL never had. */
int ncclGetVersion(int *v) { *v = VERSION; return 0; }
"""


def _nccl_facts(tmp_path, code: int):
    need(shutil.which("gcc") is not None, "gcc")
    d = tmp_path / "FAKE_nccl"
    d.mkdir()
    (d / "fake_nccl.c").write_text(FAKE_NCCL_C)
    lib = d / "libnccl.so.2"
    subprocess.run(["gcc", "-shared", "-fPIC", f"-DVERSION={code}", "-o", str(lib), str(d / "fake_nccl.c"),
                    "-Wl,-soname,libnccl.so.2"], check=True)
    return lib, nccl.probe(ctx(LD_LIBRARY_PATH=str(d), XDG_CACHE_HOME=str(tmp_path / "cache")))


@pytest.mark.parametrize("code, said", [(99999, "9.99.99"), (0, "0")])
def test_a_fake_nccl_with_an_implausible_version_is_a_probe_error(tmp_path, code, said):
    lib, facts = _nccl_facts(tmp_path, code)
    (copy,) = [l for l in facts["libraries"] if l["realpath"] == str(lib)]
    assert copy["api"]["ncclGetVersion"] == code  # the raw answer stays as evidence
    assert copy["api_version"] is None and copy["version"] == "2"  # the file name's claim is plausible
    (rec,) = [r for r in facts["problems"] if r["kind"] == "implausible"]
    assert rec["path"] == str(lib) and rec["call"] == "ncclGetVersion" and rec["value"] == said
    (f,) = by_id(judge({"nccl": facts}), "probe.implausible_value")
    assert str(lib) in f.title and f.severity.value == "fail"


def test_a_fake_nccl_with_a_plausible_version_keeps_todays_shape(tmp_path):
    lib, facts = _nccl_facts(tmp_path, 22803)  # nccl.h: NCCL_VERSION(2, 28, 3)
    (copy,) = [l for l in facts["libraries"] if l["realpath"] == str(lib)]
    assert copy["api_version"] == "2.28.3" and not [r for r in facts["problems"] if r["kind"] == "implausible"]
    assert list(facts) == ["libraries", "loader_pick", "vars", "infiniband_devices", "net_interfaces", "shm", "problems"]
    assert list(copy)[-2:] == ["api", "api_version"]


def test_tensorflows_windows_dll_suffix_is_a_cuda_version_not_an_implausible_value():
    """TensorFlow <= 2.10 on Windows: build_info's cuda_version is the cudart DLL's suffix ('64_112' for
    cudart64_112.dll, CUDA 11.2): a real value, read as 11.2, never reported as implausible."""
    from gpudoctor.probes.facts_frameworks import built_for_cuda

    assert built_for_cuda("64_112") == "11.2" and built_for_cuda("64_101") == "10.1" and built_for_cuda("64_80") == "8.0"
