"""Environment rules on real probes: stale LD_LIBRARY_PATH (the seed docs' example), CUDA_VISIBLE_DEVICES."""
from __future__ import annotations

import os

import pytest

from gpudoctor.findings import Severity
from gpudoctor.probes import environment
from tests.conftest import by_id, ctx, judge


def test_seed_docs_example_cuda_home_vs_stale_ld_library_path(tmp_path):
    """CUDA_HOME=/usr/local/cuda (13.0 here) with LD_LIBRARY_PATH=/usr/local/cuda-10.1/lib64 (gone),
    plus a real directory of another CUDA version."""
    other = tmp_path / "cuda-12.4" / "lib64"
    other.mkdir(parents=True)
    env = environment.probe(ctx(CUDA_HOME="/usr/local/cuda", LD_LIBRARY_PATH=f"/usr/local/cuda-10.1/lib64:{other}:/usr/lib"))
    if not os.path.realpath("/usr/local/cuda").endswith("13.0"):
        pytest.skip("/usr/local/cuda is not CUDA 13.0 here")
    (f,) = by_id(judge({"environment": env}), "env.ld_library_path")
    assert f.severity == Severity.FAIL
    assert "/usr/local/cuda-10.1/lib64" in f.title and "CUDA 12.4" in f.title
    assert f.fixes[0].commands[0] == "export LD_LIBRARY_PATH=/usr/lib"


FAKE_NVML = {"status": "ok", "driver_version": "580.159.04", "cuda_driver_version": "13.0",  # FAKE: one GPU
             "gpus": [{"index": 0, "name": "FAKE H100", "uuid": "GPU-23a74986-f221-396f-b53a-6b6bbca65897",
                       "compute_capability": "9.0"}]}


@pytest.mark.parametrize("value, expect", [
    ("", "hides every GPU"),
    ("-1", "hides every GPU"),
    ("1", "index 1 is out of range"),
    ("GPU-deadbeef", "matches no GPU"),
    ("0,foo,1", "'foo' is not an index or UUID"),
])
def test_cuda_visible_devices_hiding_gpus(value, expect):
    env = environment.probe(ctx(CUDA_VISIBLE_DEVICES=value))
    cuda = {"api": {"cuInit": {"result": "CUDA_SUCCESS"}, "devices": []}}
    (f,) = by_id(judge({"environment": env, "driver": {"nvml": FAKE_NVML}, "cuda": cuda}), "device.not_visible")
    assert expect in f.title
    assert "unset CUDA_VISIBLE_DEVICES" in f.fixes[0].commands


def test_uuid_prefix_is_accepted():
    env = environment.probe(ctx(CUDA_VISIBLE_DEVICES="GPU-23a74986"))
    cuda = {"api": {"cuInit": {"result": "CUDA_SUCCESS"}, "devices": [{"ordinal": 0, "compute_capability": "9.0"}]}}
    findings = judge({"environment": env, "driver": {"nvml": FAKE_NVML}, "cuda": cuda})
    assert not by_id(findings, "device.not_visible") and by_id(findings, "device.visible")
