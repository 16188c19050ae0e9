"""`gpudoctor matrix cuda|driver|gpu`: the CLI (gpudoctor.cli.main) and gpudoctor.matrix.lookup directly.

Expectations that depend on frameworks.json are computed from the matrix (``m.torch_releases()``)
with gpudoctor.formats.fatbin.coverage, the project's own SASS/PTX compatibility rules, never hard-coded.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gpudoctor.matrix import lookup
from gpudoctor.cli import main
from gpudoctor.formats.fatbin import coverage
from gpudoctor.matrix import load_matrix

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "compat_matrix"


@pytest.fixture(scope="module")
def m():
    return load_matrix()


def run(capsys, *argv):
    rc = main(["matrix", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def run_json(capsys, *argv):
    rc, out, err = run(capsys, *argv, "--json")
    assert rc == 0, err
    assert err == ""
    return json.loads(out)


def _newest(m, major):
    return [r.cuda for r in m.cuda_releases() if r.major == major][-1]


def _torch_expectation(m, cc):
    """Torch build tags split by what a device of ``cc`` runs: SASS, PTX JIT only, nothing."""
    want = {"sass": [], "ptx_jit": [], "none": []}
    for t in m.torch_releases():
        for b in t.builds:
            tag = f"{t.torch}+cu{b.cuda.replace('.', '')}"
            want[coverage({"sass": list(b.sass), "ptx": list(b.ptx)}, cc).verdict].append(tag)
    return want


# ============================================================================ cuda


def test_cuda_12_4_text(capsys):
    rc, out, err = run(capsys, "cuda", "12.4")
    assert rc == 0 and err == ""
    assert "cuda: 12.4" in out
    assert "native linux: 550.54.14" in out
    assert "native windows: 551.61" in out
    assert "gcc max: 13" in out
    assert "min: sm_50" in out and "max: sm_90" in out
    assert "arch specific: sm_90a" in out
    assert "sm_89" in out


def test_cuda_12_4_json(capsys, m):
    data = run_json(capsys, "cuda", "12.4")
    for key in ("cuda", "latest_update", "driver", "host_compilers", "gpu_targets", "oses", "cudnn", "tensorrt",
                "torch", "tensorflow", "unconfirmed", "sources"):
        assert key in data, key
    rel = m.cuda_release("12.4")
    assert data["cuda"] == "12.4"
    assert data["driver"]["native_linux"] == "550.54.14"
    assert data["driver"]["native_windows"] == "551.61"
    assert data["driver"]["minor_version_compat_linux"] == m.minor_version_compat(12).min_driver_linux
    assert data["host_compilers"]["gcc_max"] == 13 == rel.max_gcc
    assert data["gpu_targets"]["min"] == "sm_50" and data["gpu_targets"]["max"] == "sm_90"
    assert data["gpu_targets"]["all"] == list(rel.sms)
    assert data["gpu_targets"]["arch_specific"] == ["sm_90a"]
    assert data["sources"] and all(s.startswith(("https://", "http://", "file://")) for s in data["sources"])
    # torch builds made with exactly CUDA 12.4, from the frameworks data
    want = [f"{t.torch}+cu124" for t in m.torch_releases() for b in t.builds if b.cuda == "12.4"]
    assert data["torch"] == want
    # every listed OS publishes 12.4
    for oid in data["oses"]:
        o = m.os_info(oid)
        assert o is not None
    assert "ubuntu-22.04" in data["oses"]


def test_cuda_query_normalises_update_version(capsys):
    data = run_json(capsys, "cuda", "12.4.1")
    assert data["cuda"] == "12.4"


def test_cuda_answer_direct_13_0(m):
    data = lookup.cuda_answer(m, "13.0")
    assert data["driver"]["native_linux"] == "580.65.06"
    assert data["driver"]["native_windows"] is None
    assert "sm_75" == data["gpu_targets"]["min"]
    assert "sm_100f" in data["gpu_targets"]["arch_specific"]
    for line in data["cudnn"]:
        assert 13 in m.cudnn_release(line).cuda_majors


# ============================================================================ driver


def test_driver_535(capsys, m):
    data = run_json(capsys, "driver", "535.104.05")
    assert data["newest_cuda_native"] == "12.2"
    assert data["newest_cuda_minor_version_compat"] == _newest(m, 12)
    assert data["branch"] == "535"
    assert data["runs"]["12.2"] == "native"
    assert data["runs"]["12.3"] == "minor_version_compat"
    assert data["runs"]["13.0"] == "unsupported"
    assert set(data["runs"]) == {r.cuda for r in m.cuda_releases()}


def test_driver_535_text(capsys, m):
    rc, out, err = run(capsys, "driver", "535.104.05")
    assert rc == 0 and err == ""
    assert "newest cuda native: 12.2" in out
    assert f"newest cuda minor version compat: {_newest(m, 12)}" in out


def test_driver_580_runs_13_0_natively(capsys, m):
    data = run_json(capsys, "driver", "580.65.06")
    assert data["newest_cuda_native"] == "13.0"
    assert data["runs"]["13.0"] == "native"
    assert data["newest_cuda_minor_version_compat"] == _newest(m, 13)


def test_driver_os_windows_uses_windows_drivers(capsys):
    # 550.54.14 is the Linux driver of CUDA 12.4; on Windows 12.4 needs 551.61, so only 12.3 runs natively.
    linux = run_json(capsys, "driver", "550.54.14")
    win = run_json(capsys, "driver", "550.54.14", "--os", "windows")
    assert linux["newest_cuda_native"] == "12.4"
    assert win["newest_cuda_native"] == "12.3"
    assert win["query"]["os"] == "windows"
    assert win["runs"]["12.4"] == "minor_version_compat"
    assert run_json(capsys, "driver", "551.61", "--os", "windows")["newest_cuda_native"] == "12.4"


def test_driver_answer_direct_matches_matrix(m):
    for drv in ("450.80.02", "525.60.13", "560.35.05", "595.45.04"):
        data = lookup.driver_answer(m, drv)
        assert data["newest_cuda_native"] == m.max_cuda_for_driver(drv)
        for rel in m.cuda_releases():
            assert data["runs"][rel.cuda] == m.driver_supports(drv, rel.cuda)


def test_driver_too_old_is_an_answer_not_an_error(capsys):
    data = run_json(capsys, "driver", "400.00")
    assert data["newest_cuda_native"] is None
    assert set(data["runs"].values()) == {"unsupported"}


# ============================================================================ gpu


def test_gpu_rtx_4090(capsys, m):
    data = run_json(capsys, "gpu", "RTX 4090")
    assert data["compute_capability"] == "8.9"
    assert data["sm"] == "sm_89"
    assert data["family"] == "Ada Lovelace"
    assert data["cuda"]["oldest"] == "11.8"
    assert data["cuda"]["newest"] == m.cuda_releases()[-1].cuda
    assert data["arch_specific_targets"] == []
    want = _torch_expectation(m, "8.9")
    assert data["torch"]["sass"] == want["sass"]
    assert data["torch"]["ptx_jit_only"] == want["ptx_jit"]
    assert data["torch"]["no_kernel_image"] == want["none"]


def test_gpu_rtx_4090_text(capsys):
    rc, out, err = run(capsys, "gpu", "RTX 4090")
    assert rc == 0 and err == ""
    assert "compute capability: 8.9" in out
    assert "sm: sm_89" in out
    assert "oldest: 11.8" in out


def test_gpu_h100(capsys, m):
    data = run_json(capsys, "gpu", "NVIDIA H100 80GB HBM3")
    assert data["compute_capability"] == "9.0"
    assert data["sm"] == "sm_90"
    assert data["family"] == "Hopper"
    assert data["segment"] == "data-center"
    assert data["arch_specific_targets"] == ["sm_90a"]
    assert data["cuda"]["oldest"] == "11.8"
    want = _torch_expectation(m, "9.0")
    assert data["torch"]["sass"] == want["sass"]
    assert data["torch"]["ptx_jit_only"] == want["ptx_jit"]
    assert data["torch"]["no_kernel_image"] == want["none"]


def _matrix_with_torch(tmp_path, builds):
    """A copy of the shipped matrix whose torch table is one release with the given builds."""
    d = tmp_path / "matrix"
    shutil.copytree(DATA, d)
    fw = json.loads((d / "frameworks.json").read_text(encoding="utf-8"))
    fw["torch"] = [{
        "torch": "2.9", "python": ["3.12"], "default_cuda": builds[0]["cuda"],
        "builds": builds, "source": "https://pytorch.org/get-started/previous-versions/", "unconfirmed": [],
    }]
    (d / "frameworks.json").write_text(json.dumps(fw), encoding="utf-8")
    return d


def _build(cuda, sass, ptx):
    return {"cuda": cuda, "index_url": f"https://download.pytorch.org/whl/cu{cuda.replace('.', '')}",
            "cudnn": None, "sass": sass, "ptx": ptx}


def test_gpu_torch_sass_counts_binary_compatible_cubins(tmp_path):
    # sm_86 SASS runs on a CC 8.9 device (same major, higher minor: CUDA binary compatibility);
    # PyTorch's cu118 wheels have sm_86 but no sm_89 and do run on an RTX 4090.
    d = _matrix_with_torch(tmp_path, [_build("11.8", ["sm_80", "sm_86", "sm_90"], [])])
    m2 = load_matrix(d)
    data = lookup.gpu_answer(m2, "RTX 4090")
    assert data["torch"]["sass"] == ["2.9+cu118"], data["torch"]


def test_gpu_torch_arch_specific_ptx_is_not_forward_compatible(tmp_path):
    # compute_90a PTX JIT-compiles only for CC 9.0 exactly; it gives a CC 12.0 GPU nothing.
    d = _matrix_with_torch(tmp_path, [_build("12.8", ["sm_90a"], ["compute_90a"])])
    m2 = load_matrix(d)
    data = lookup.gpu_answer(m2, "NVIDIA GeForce RTX 5090")
    assert data["torch"]["no_kernel_image"] == ["2.9+cu128"], data["torch"]


def test_gpu_torch_arch_specific_sass_runs_on_its_exact_cc(tmp_path):
    # sm_90a SASS is a cubin for CC 9.0: an H100 runs it natively (no PTX JIT).
    d = _matrix_with_torch(tmp_path, [_build("12.8", ["sm_90a"], ["compute_90a"])])
    h100 = lookup.gpu_answer(load_matrix(d), "NVIDIA H100 80GB HBM3")
    assert h100["torch"]["sass"] == ["2.9+cu128"], h100["torch"]


def test_gpu_torch_plain_ptx_jits_forward(tmp_path, capsys):
    d = _matrix_with_torch(tmp_path, [_build("12.4", ["sm_80", "sm_90"], ["compute_90"])])
    rc, out, err = run(capsys, "gpu", "NVIDIA GeForce RTX 5090", "--json", "--matrix", str(d))
    assert rc == 0, err
    assert json.loads(out)["torch"]["ptx_jit_only"] == ["2.9+cu124"]


def test_gpu_answer_every_example_roundtrips(m):
    for g in m.gpus():
        data = lookup.gpu_answer(m, g.example)
        assert data["compute_capability"] == g.cc, g.example


# ============================================================================ errors


@pytest.mark.parametrize("argv, needle", [
    (("cuda", "12.7"), "12.7"),
    (("driver", "banana"), "banana"),
    (("gpu", "RTX 9999"), "RTX 9999"),
])
@pytest.mark.parametrize("as_json", [False, True])
def test_unknown_values_exit_2_with_message(capsys, argv, needle, as_json):
    rc, out, err = run(capsys, *argv, *(["--json"] if as_json else []))
    assert rc == 2
    assert out == ""
    assert err.startswith("gpudoctor: error: ")
    assert needle in err
    assert "Traceback" not in err


def test_unknown_cuda_lists_known_releases(capsys, m):
    rc, out, err = run(capsys, "cuda", "12.7")
    assert rc == 2 and out == ""
    assert "not in the matrix" in err
    assert "12.6" in err and "12.8" in err


def test_lookup_failed_direct(m):
    with pytest.raises(lookup.LookupFailed):
        lookup.cuda_answer(m, "12.7")
    with pytest.raises(lookup.LookupFailed):
        lookup.driver_answer(m, "banana")
    with pytest.raises(lookup.LookupFailed):
        lookup.gpu_answer(m, "RTX 9999")


def test_bad_os_choice_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["matrix", "driver", "550.54.14", "--os", "macos"])
    assert exc.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and "--os" in err
