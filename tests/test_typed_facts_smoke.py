"""Typed facts of the smoke and engine probes (issue 24 item 4): NVRTC's version, its archs, a device's compute
capability, a plan header's TensorRT version or an nvcc release that cannot be what it claims is a probe error
(``probe.implausible_value``), never an input to an arch, smoke or version rule; plausible facts keep the JSON
shape the rules read (``to_dict()`` of a parse is the answer parsed).

The real probes and rules throughout; the one fake is a FAKE NVRTC worker answer (this machine has no GPU,
so a device's compute capability can only come from a fake)."""
from __future__ import annotations

import pytest

from gpudoctor.probes import facts_smoke as typed
from gpudoctor.probes import smoke_nvrtc
from gpudoctor.probes.facts import Implausible, Origin
from tests.conftest import by_id, ctx, judge

#: Driver 535 (CUDA 12.2) with one H100 as NVML answers it.
DRIVER_535 = {"nvml": {"status": "ok", "driver_version": "535.183.01", "cuda_driver_version": "12.2",
                       "gpus": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"}]}}


def _run(ordinal, arch, result="NVRTC_SUCCESS"):
    return {"ordinal": ordinal, "arch": arch, "compile_result": result, "compile_seconds": 0.01, "log": "",
            "cubin_bytes": 4456, "compile_cached": False,
            "launch": {"vadd": {"elements": 1024, "mismatches": 0}, "hadd2": {"elements": 1024, "mismatches": 0},
                       "run_seconds": 0.001}}


def _nvrtc_answer(version="13.0", archs=("sm_75", "sm_90", "sm_100", "sm_121"), runs=None):
    return {"bindings_version": "13.0.0", "nvrtc_version": version, "nvrtc_supported_archs": list(archs),
            "fp16_header": "/usr/local/cuda/include/cuda_fp16.h", "cuInit": "CUDA_SUCCESS",
            "runs": runs if runs is not None else [_run(0, "sm_90")]}


def test_arch_validator():
    assert typed.sm_arch("sm_90") == "sm_90" and typed.sm_arch("sm_121") == "sm_121" and typed.sm_arch("sm_90a") == "sm_90a"
    for bad in ("sm_NoneNone", "sm_999", "sm_", "compute_90", 90, None, "sm_05"):
        if bad is not None:
            with pytest.raises(Implausible):
                typed.sm_arch(bad)


@pytest.mark.parametrize("parse, raw", [
    (lambda raw, o: typed.NvrtcSmokeFacts.parse(raw, o, o), _nvrtc_answer()),
    (lambda raw, o: typed.NvrtcSmokeFacts.parse(raw, o, o), {"bindings_version": "13.0.0", "nvrtc_error": "not found"}),
    (lambda raw, o: typed.NvrtcSmokeFacts.parse(raw, o, o), {"skipped": "--no-smoke"}),
    (typed.EngineFacts.parse, {"engines": [
        {"path": "/x.plan", "header": {"trt_version": [10, 13, 3, 9], "trt_version_text": "10.13.3.9", "layout": "trt8.6+",
                                       "compute_capability": "8.6", "fields": []}, "runtime_answer": {"loaded": True}},
        {"path": "/y.trt", "header": {"trt_version": None, "trt_version_text": "7.x or older", "compute_capability": None}},
        {"path": "/z", "error": "not a plan", "reason": "not_an_engine"}]}),
    (typed.EngineFacts.parse, {"engines": []}),
    (typed.TensorRTSmokeFacts.parse, {"ok": True, "version": "10.13.3.9", "max_abs_error": 0.0}),
    (typed.TensorRTSmokeFacts.parse, {"skipped": "TensorRT is not installed", "absent": True, "searched": ["tensorrt"]}),
    (typed.MultiGpuSmokeFacts.parse, {"device_count": 8, "p2p": [], "nccl": {"ok": True}, "nccl_library": "/l/libnccl.so.2"}),
    (typed.MultiGpuSmokeFacts.parse, {"skipped": "1 GPU on this node", "device_count": 1}),
    (typed.NvccSmokeFacts.parse, {"builds": [{"arch": "sm_90", "nvcc": "/usr/local/cuda/bin/nvcc", "release": "13.0",
                                              "compile_ok": True, "run": {"ok": True}}], "device_ccs": ["9.0"]}),
    (typed.NvccSmokeFacts.parse, {"skipped": "no nvcc"}),
])
def test_each_type_keeps_todays_shape(parse, raw):
    import json

    out = parse(raw, Origin("/FAKE/lib", "FAKE")).to_dict()
    assert json.dumps(out) == json.dumps(raw)  # same keys, same order, same values


def _fake_nvrtc_probe(monkeypatch, answer):
    def FAKE_run_worker(_ctx, task, *args, timeout=None):
        assert task == "nvrtc-smoke"
        return answer
    monkeypatch.setattr(smoke_nvrtc, "run_worker", FAKE_run_worker)
    return smoke_nvrtc.probe(ctx())


def test_an_implausible_nvrtc_version_is_a_probe_error_not_a_ptx_finding(monkeypatch):
    facts = _fake_nvrtc_probe(monkeypatch, _nvrtc_answer(version="99.9"))
    assert facts["nvrtc_version"] is None and list(facts)[:6] == list(_nvrtc_answer())
    (rec,) = [r for r in facts["problems"] if r["kind"] == "implausible"]
    assert rec["call"] == "nvrtcVersion" and rec["value"] == "99.9" and "libnvrtc" in rec["path"]
    findings = judge({"smoke_nvrtc": facts, "driver": DRIVER_535, "cuda": {}})
    (f,) = by_id(findings, "probe.implausible_value")
    assert "nvrtcVersion gave '99.9'" in f.title and f.severity.value == "fail"
    assert not by_id(findings, "driver.ptx_too_new")
    # The control: NVRTC 13.0 against driver CUDA 12.2 is a real driver.ptx_too_new.
    control = _fake_nvrtc_probe(monkeypatch, _nvrtc_answer(version="13.0"))
    assert "problems" not in control
    findings = judge({"smoke_nvrtc": control, "driver": DRIVER_535, "cuda": {}})
    assert by_id(findings, "driver.ptx_too_new") and not by_id(findings, "probe.implausible_value")


def test_an_implausible_compute_capability_is_a_probe_error_with_no_arch_or_smoke_finding(monkeypatch):
    # A damaged libcuda answered 99.9 for GPU 0: the worker compiled for "sm_999" and NVRTC refused it.
    bad_run = dict(_run(0, "sm_999", "NVRTC_ERROR_INVALID_OPTION"), log="nvrtc: error: invalid value for --gpu-architecture (-arch)",
                   launch={"skipped": "compile failed"}, cubin_bytes=0)
    facts = _fake_nvrtc_probe(monkeypatch, _nvrtc_answer(archs=("sm_75", "sm_90", "sm_999"), runs=[bad_run, _run(1, "sm_90")]))
    assert [r["arch"] for r in facts["runs"]] == ["sm_90"] and facts["nvrtc_supported_archs"] == ["sm_75", "sm_90"]
    recs = {r["call"]: r for r in facts["problems"] if r["kind"] == "implausible"}
    assert set(recs) == {"cuDeviceGetAttribute(COMPUTE_CAPABILITY, 0)", "nvrtcGetSupportedArchs"}
    assert "libcuda" in recs["cuDeviceGetAttribute(COMPUTE_CAPABILITY, 0)"]["path"]
    findings = judge({"smoke_nvrtc": facts, "driver": DRIVER_535, "cuda": {}})
    assert by_id(findings, "probe.implausible_value")
    assert not [f for f in findings if f.id.startswith("arch.")]
    smoke = by_id(findings, "smoke.nvrtc")
    assert [f.severity.value for f in smoke] == ["ok"] and "sm_90" in smoke[0].title  # GPU 1 only


def test_an_implausible_plan_header_version_is_a_probe_error_not_a_verdict():
    header = {"trt_version": [99, 1, 0, 0], "trt_version_text": "99.1.0.0", "layout": "trt8.6+", "size": 4096,
              "magic": "ftrt", "version_is_partial": False, "plan_offset": 0, "release_line": None,
              "version_compatible": False, "lean": False, "hardware_compatibility": None, "compute_capability": "99.9",
              "fields": []}
    facts = typed.EngineFacts.parse({"engines": [{"path": "/FAKE/model.plan", "header": header}]},
                                    Origin(None, "the plan header (check --engine)")).to_dict()
    got = facts["engines"][0]["header"]
    assert got["trt_version"] is None and got["trt_version_text"] is None and got["compute_capability"] is None
    assert list(got) == list(header)
    assert {r["value"] for r in facts["problems"]} == {"99.1.0.0", "99.9"}
    assert all(r["path"] == "/FAKE/model.plan" for r in facts["problems"])
    findings = judge({"engine": facts, "driver": DRIVER_535, "cuda": {}})
    (f,) = by_id(findings, "probe.implausible_value")
    assert "/FAKE/model.plan" in f.title
    assert not [x for x in findings if x.id.startswith("tensorrt.engine") and "99" in x.title]


def test_an_implausible_tensorrt_version_from_the_fake_tensorrt_worker_is_a_probe_error():
    import os

    from gpudoctor.probes import smoke_tensorrt
    from tests.conftest import ROOT

    fake = os.path.join(ROOT, "tests", "fakes", "fake_tensorrt")
    facts = smoke_tensorrt.probe(ctx(PYTHONPATH=fake, FAKE_TENSORRT_VERSION="99.1.0"))
    assert facts["version"] is None
    recs = [r for r in facts["problems"] if r["kind"] == "implausible"]
    assert recs and {r["value"] for r in recs} == {"99.1.0"} and recs[0]["path"].startswith(fake)
    (f,) = by_id(judge({"smoke_tensorrt": facts}), "probe.implausible_value")
    assert "99.1.0" in f.title


def test_multigpu_answer_keeps_its_shape_and_an_implausible_nccl_code_is_a_probe_error():
    import json

    answer = {"device_count": 2, "self_test": False, "copies": [{"src": 0, "dst": 1, "ok": True}],
              "nccl": {"ok": True, "version_code": 22803, "init_seconds": 0.5}, "nccl_library": "/FAKE/libnccl.so.2"}
    out = typed.MultiGpuSmokeFacts.parse(answer, Origin("/FAKE/libcuda.so.1", "FAKE")).to_dict()
    assert json.dumps(out) == json.dumps(answer)
    bad = dict(answer, device_count=-3, nccl=dict(answer["nccl"], version_code=990101))
    out = typed.MultiGpuSmokeFacts.parse(bad, Origin("/FAKE/libcuda.so.1", "FAKE")).to_dict()
    assert out["device_count"] is None and out["nccl"]["version_code"] is None and list(out)[:-1] == list(answer)
    recs = {r["call"]: r["path"] for r in out["problems"]}
    assert recs == {"cudaGetDeviceCount": "/FAKE/libcuda.so.1", "ncclGetVersion": "/FAKE/libnccl.so.2"}
    assert by_id(judge({"smoke_multigpu": out}), "probe.implausible_value")
