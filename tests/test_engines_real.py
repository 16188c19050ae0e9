"""Every real file in ../shared/engines (public repositories; SOURCES.jsonl says where each comes from
and what its repository states about the TensorRT that built it), read where it lies: no copies are
kept in the project. Skipped when ../shared/engines is not there."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpudoctor.formats.engine_plan import PlanFormatError, read_plan_header
from gpudoctor.explain.diagnose import diagnose
from gpudoctor.explain.kb import load_kb
from gpudoctor.explain.scan import Scanner
from gpudoctor.formats.engine_plan import header_facts
from gpudoctor.rules.engine_verdict import engine_verdict

SHARED = Path(__file__).resolve().parents[2] / "shared" / "engines"
pytestmark = pytest.mark.skipif(not SHARED.is_dir(), reason=f"{SHARED} (the real engine files) is not here")

# file -> (layout, version or release line). Exact where the repository states the version
# (TensorRT-8.5.1.7 tree, TensorRT-7.1.3.4 tree, TensorRT-10.15.1.29 trtexec, "[TensorRT v8601]" output).
EXPECTED = {
    "Mycoearthdome--camera--model.engine": ("trt8.6+", "10.15.1.29"),
    "NVIDIA--trt-samples-for-hackathon-cn--model-Dim1.plan": ("trt8.6+", "10.0.1.6"),
    "nttrung2406--COVID19_disease_detection--model.trt": ("trt8.6+", "10.3.0.26"),
    "onjackay--model-deploy-tutorial--mnist.engine": ("trt8.6+", "10.0.1.6"),
    "smile2game--nvidia-game--model.plan": ("trt8.6+", "8.6.1.6"),
    "ybwerneck--inference_TensorRT--model.trt": ("trt8.6+", "8.6.1.6"),
    "kalfazed--tensorrt_starter--example.engine": ("trt8.0-8.5", "8.5"),
    "kalfazed--tensorrt_starter--mnist.engine": ("trt8.0-8.5", "8.5"),
    "lcxywfe--debug_attach--test.engine": ("trt8.0-8.5", "8.4"),
    "guorbit--processing-pipeline--model.engine": ("trt8.0-8.5", "8.0-8.2"),
    "bleedingfight--cuda--model.plan": ("trt7", "7.1"),
    "swc-17--PPO_HIL--model.trt": ("trt7", "7.1"),
    "NVIDIA--trt-samples-for-hackathon-cn--engine-int8-3-2.trt": ("trt7", "7.x or older (serialization version 89), exact release unknown"),
    "SEAME-pt--Team06_ADS_Autonomous-Lane-Detection--model.engine": ("trt-ptrt", "7.x-8.5 ('ptrt' plan of an unrecognised variant), exact release unknown"),
    "zhucheng725--TX2-tensorRT5.0-python--lenet5.engine": ("trt-pre7", "6 or older (no magic tag)"),
}
NOT_PLANS = {
    "KwakHomin--FL--model.engine": ("Git LFS pointer", "git lfs install && git lfs pull"),
    "sergeev917--jetson-nano-jetpack4.6-repro--model.engine": ("Git LFS pointer", "git lfs install && git lfs pull"),
    "Victor0118--Information_Retrieval_Project--test.engine": ("Python pickle", "not a TensorRT engine"),
}


def test_every_file_is_accounted_for():
    files = {p.name for p in SHARED.iterdir() if not p.name.endswith((".jsonl", ".md"))}
    assert files == set(EXPECTED) | set(NOT_PLANS)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_layout_and_version(name):
    h = read_plan_header(SHARED / name)
    assert (h.layout, h.trt_version_text) == EXPECTED[name]
    assert "?" not in (h.trt_version_text or "")


@pytest.mark.parametrize("name", sorted(NOT_PLANS))
def test_non_plans_are_named_with_their_fix(name):
    with pytest.raises(PlanFormatError) as err:
        read_plan_header(SHARED / name)
    kind, fix = NOT_PLANS[name]
    assert f"looks like: {kind}" in str(err.value) and fix in str(err.value)


def _installed(version, module="tensorrt"):
    return {"modules": [{"name": module, "import_ok": True, "version": version, "path": "/site-packages"}]}


def _runtime_answers():
    out = {}
    for line in (SHARED / "trt-11.4-runtime-deserialize.jsonl").read_text().splitlines():
        d = json.loads(line)
        out.setdefault(d["file"], []).append(d)
    return out


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_verdict_agrees_with_tensorrt_11_4_which_refused_every_file(name):
    """The real lean and dispatch runtimes (11.4.0.106) deserialized each file on the H100: all refused."""
    answers = _runtime_answers()[name]
    assert answers and not any(a["loaded"] for a in answers)
    h = read_plan_header(SHARED / name)
    v = engine_verdict(header_facts(h), _installed("11.4.0.106", "tensorrt_lean"), [])
    # never "loads": older than 8.6 is refused outright; 8.6+ only if built version-compatible, which these
    # were not (the header does not record it, TensorRT's refusal shows it)
    want = "only_if_version_compatible" if h.layout == "trt8.6+" else "version_mismatch"
    assert v["verdict"] == want, v["reasons"]
    assert any("trtexec" in c for f in v["fixes"] for c in f["commands"])


@pytest.mark.parametrize("name,runtime,verdict", [
    ("kalfazed--tensorrt_starter--example.engine", "8.5.1.7", "loads"),   # the tree that built it
    ("kalfazed--tensorrt_starter--example.engine", "8.4.3.1", "version_mismatch"),
    ("bleedingfight--cuda--model.plan", "7.1.3.4", "loads"),
    ("bleedingfight--cuda--model.plan", "8.5.1.7", "version_mismatch"),
    ("smile2game--nvidia-game--model.plan", "8.6.1.6", "loads"),
    ("smile2game--nvidia-game--model.plan", "8.5.1.7", "version_mismatch"),  # an older runtime: never
    ("onjackay--model-deploy-tutorial--mnist.engine", "10.3.0.26", "only_if_version_compatible"),
])
def test_verdict_against_a_given_tensorrt(name, runtime, verdict):
    v = engine_verdict(header_facts(read_plan_header(SHARED / name)), _installed(runtime), [])
    assert v["verdict"] == verdict, v["reasons"]


def test_old_plans_name_the_release_to_run_them_unchanged():
    v = engine_verdict(header_facts(read_plan_header(SHARED / "lcxywfe--debug_attach--test.engine")), {}, [])
    assert v["verdict"] == "no_tensorrt"
    cmds = [c for f in v["fixes"] for c in f["commands"]]
    assert "python -m pip install 'tensorrt==8.4.*'   # x86-64, to run the plan unchanged" in cmds
    assert any("JetPack 5.0.2" in c for c in cmds)


def test_explain_knows_every_message_tensorrt_11_4_printed():
    kb = load_kb()
    for answers in _runtime_answers().values():
        for a in answers:
            text = "\n".join(a["log"])
            sc = Scanner(kb)
            sc.feed(text.encode())
            sc.close()
            ranked = [d.finding.id for d in diagnose(sc)]
            assert ranked and ranked[0].startswith("tensorrt.engine_"), (a["file"], a["runtime"], ranked, text[-200:])


def test_check_engine_asks_the_real_lean_runtime_and_shows_its_answer():
    """TensorRT 11.4's lean runtime (real wheels) is asked in a child; on this GPU-less machine it cannot start,
    which is said in TensorRT's own words, never crashed on (a Runtime that failed to start segfaults when
    destroyed: the child leaves without destroying it). On the H100 it answers (docs/examples/h100-engines-trt11.4.txt)."""
    import os
    import subprocess
    import sys

    from tests.conftest import CACHE, need

    site = os.path.join(CACHE, "trt-lean", "site-packages")
    need(os.path.isdir(os.path.join(site, "tensorrt_lean_bindings")), ".ci/cache/trt-lean")
    plan = SHARED / "kalfazed--tensorrt_starter--example.engine"
    out = subprocess.run([sys.executable, "-m", "gpudoctor", "check", "--no-smoke", "--json", "--engine", str(plan)],
                         capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=site), timeout=300,
                         cwd=str(Path(__file__).resolve().parents[1]))
    data = json.loads(out.stdout)
    (entry,) = data["probes"]["engine"]["facts"]["engines"]
    answer = entry["runtime_answer"]
    assert answer["module"] == "tensorrt_lean_bindings" and answer["version"].startswith("11.4")
    assert "worker_error" not in answer  # no crash
    (f,) = [f for f in data["findings"] if f["id"] == "tensorrt.engine_mismatch"]
    assert "TensorRT 11.4.0.106 (tensorrt_lean_bindings) itself:" in f["title"]
    if "loaded" in answer:  # a machine with a GPU: TensorRT's refusal agrees with the header's verdict
        assert answer["loaded"] is False and "magicTag" in f["title"]
    else:
        assert "the runtime did not start" in f["title"]
    assert not [x for x in data["findings"] if x["id"] == "tensorrt.engine_unknown"]  # no disagreement
