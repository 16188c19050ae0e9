"""`gpudoctor inspect binary`: real binaries built with this machine's nvcc 13.0 and 11.8, a real CUDA
library wheel (nvidia-curand-cu12), cuobjdump as the reference listing, and bad input."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gpudoctor.cli import main
from gpudoctor.inspect.binary import GpuSpec, inspect_files
from gpudoctor.matrix import load_matrix
from tests.conftest import CACHE, need

M = load_matrix()
NVCC13 = Path("/usr/local/cuda/bin/nvcc")
NVCC118 = Path("/usr/lib/nvidia-cuda-toolkit/bin/nvcc")
CUOBJDUMP118 = Path("/usr/bin/cuobjdump")  # Debian nvidia-cuda-toolkit 11.8
ROOT = Path(__file__).resolve().parent.parent
SRC = "__global__ void k(float *x) { x[threadIdx.x] *= 2.0f; }\nint main() { return 0; }\n"


def _build(tmp_path, nvcc, name, *gencode, extra=(), env=None):
    need(nvcc.exists(), str(nvcc))
    src = tmp_path / "k.cu"
    src.write_text(SRC)
    out = tmp_path / name
    args = [str(nvcc), *extra]
    for arch, code in gencode:
        args += ["-gencode", f"arch={arch},code={code}"]
    res = subprocess.run(args + ["-o", str(out), str(src)], capture_output=True, text=True, timeout=300, env=env)
    assert res.returncode == 0, res.stderr
    return str(out)


@pytest.fixture(scope="module")
def built13(tmp_path_factory):
    d = tmp_path_factory.mktemp("b13")
    return {
        "sm80_ptx80": _build(d, NVCC13, "sm80_ptx80", ("compute_80", "sm_80"), ("compute_80", "compute_80")),
        "sm90a": _build(d, NVCC13, "sm90a", ("compute_90a", "sm_90a")),
    }


def test_listing_and_verdicts_for_a_real_cuda13_binary(built13):
    data = inspect_files(M, [built13["sm80_ptx80"]],
                         [GpuSpec("L4", "8.9"), GpuSpec("H100", "9.0"), GpuSpec("T4", "7.5")], driver_cuda="13.0")
    f = data["files"][0]
    assert f["sass"] == ["sm_80"] and f["ptx"] == [{"arch": "compute_80", "ptx_isa": "9.0"}]
    verdicts = {g["name"]: g["results"][0]["verdict"] for g in data["gpus"]}
    assert verdicts == {"L4": "sass", "H100": "ptx_jit", "T4": "none"}
    t4 = next(g for g in data["gpus"] if g["name"] == "T4")["results"][0]
    assert "no kernel image is available" in t4["reason"] and "sm_75" in t4["fix"]["summary"]
    assert not data["ok"]


def test_ptx_newer_than_the_driver_is_not_jit_able(built13):
    # PTX ISA 9.0 (CUDA 13.0) with a CUDA 12.2 driver: the real 535 user space on this machine is CUDA 12.2.
    data = inspect_files(M, [built13["sm80_ptx80"]], [GpuSpec("H100", "9.0")], driver_cuda="12.2")
    r = data["gpus"][0]["results"][0]
    assert r["verdict"] == "ptx_too_new" and "unsupported toolchain" in r["reason"] and not data["ok"]


def test_arch_specific_sass_only_runs_on_its_exact_cc(built13):
    data = inspect_files(M, [built13["sm90a"]], [GpuSpec("H100", "9.0"), GpuSpec("B200", "10.0")], "13.0")
    assert [g["results"][0]["verdict"] for g in data["gpus"]] == ["sass", "none"]


@pytest.mark.parametrize("gencode", [
    (("compute_52", "sm_52"), ("compute_61", "compute_61")),
    (("compute_70", "sm_70"), ("compute_80", "sm_80"), ("compute_86", "sm_86")),
])
def test_cuda118_listing_matches_cuobjdump(tmp_path, gencode):
    need(CUOBJDUMP118.exists(), str(CUOBJDUMP118))
    # /usr/bin first: otherwise nvcc 11.8 runs CUDA 13's ptxas from /usr/local (the real toolkit.mixed state)
    path = _build(tmp_path, NVCC118, "k118", *gencode, extra=("-ccbin", "g++-11"),
                  env=dict(os.environ, PATH="/usr/bin:/bin"))
    elf = subprocess.run([str(CUOBJDUMP118), "--list-elf", path], capture_output=True, text=True, timeout=60).stdout
    ptx = subprocess.run([str(CUOBJDUMP118), "--list-ptx", path], capture_output=True, text=True, timeout=60).stdout
    want_sass = sorted(set(re.findall(r"\.(sm_\d+)\.cubin", elf)))
    want_ptx = sorted(set("compute_" + n for n in re.findall(r"\.sm_(\d+)\.ptx", ptx)))
    f = inspect_files(M, [path], [])["files"][0]
    assert sorted(f["sass"]) == want_sass and sorted(p["arch"] for p in f["ptx"]) == want_ptx
    assert all(p["ptx_isa"] == "7.8" for p in f["ptx"])  # CUDA 11.8 emits PTX ISA 7.8


def _cli(args, env_extra=None):
    env = dict(os.environ, **(env_extra or {}))
    return subprocess.run([sys.executable, "-m", "gpudoctor", "inspect", "binary", *args], capture_output=True,
                          text=True, timeout=120, env=env, cwd=ROOT)


def test_package_real_curand_wheel():
    site = os.path.join(CACHE, "curand-cu12", "site-packages")
    need(os.path.isdir(site), ".ci/cache/curand-cu12 (run .ci/fetch-real-wheels)")
    env = {"PYTHONPATH": os.pathsep.join([site, str(ROOT)])}
    ok = _cli(["--package", "nvidia-curand-cu12", "--cc", "9.0", "--json"], env)
    assert ok.returncode == 0, ok.stderr
    data = json.loads(ok.stdout)
    sass = set().union(*(f.get("sass", []) for f in data["files"]))
    assert {"sm_50", "sm_80", "sm_90"} <= sass and data["files_with_cuda_code"] >= 1
    old = _cli(["--package", "nvidia-curand-cu12", "--cc", "3.5"], env)
    assert old.returncode == 1 and "no kernel image is available" in old.stdout
    assert "nvcc of CUDA 10.2 to 11.8 can target sm_35" in old.stdout


def test_package_without_cuda_code_says_so():
    out = _cli(["--package", "packaging", "--cc", "9.0"])
    assert out.returncode == 0 and "no cuda code" in out.stdout.lower()


@pytest.mark.parametrize("args,message", [
    (["--package", "no-such-dist-xyz"], "no installed Python distribution"),
    (["/etc/passwd", "--cc", "9.0"], "not an ELF, fatbin or cubin"),
    (["/nonexistent/lib.so", "--cc", "9.0"], "no such file"),
    (["--cc", "banana", "/etc/passwd"], "not a compute capability"),
    ([], "give FILE(s) or --package"),
])
def test_bad_input_exits_2(capsys, args, message):
    assert main(["inspect", "binary", *args]) == 2
    out, err = capsys.readouterr()
    assert out == "" and message in err


def test_truncated_binary_is_reported_not_raised(built13, tmp_path, capsys):
    data = Path(built13["sm80_ptx80"]).read_bytes()
    cut = tmp_path / "cut.so"
    cut.write_bytes(data[: len(data) // 3])
    rc = main(["inspect", "binary", str(cut), "--cc", "9.0"])
    out, err = capsys.readouterr()
    assert rc in (0, 1, 2) and "Traceback" not in out + err
    if rc == 2:
        assert err.startswith("gpudoctor: error:")


def test_cli_text_listing(built13, capsys):
    assert main(["inspect", "binary", built13["sm80_ptx80"], "--cc", "8.9"]) == 0
    out = capsys.readouterr().out
    assert "SASS: sm_80" in out and "compute_80(ISA 9.0)" in out and "✓ --cc 8.9" in out



def test_framework_probe_reads_a_real_wheels_kernels(monkeypatch):
    """The frameworks probe reads onnxruntime-gpu / JAX plugin kernels with the same package reader; the real
    curand wheel is the CUDA library available here (no onnxruntime-gpu or jax wheel can be used offline)."""
    site = os.path.join(CACHE, "curand-cu12", "site-packages")
    need(os.path.isdir(site), ".ci/cache/curand-cu12 (run .ci/fetch-real-wheels)")
    monkeypatch.syspath_prepend(site)
    import importlib

    importlib.invalidate_caches()
    from gpudoctor.probes.frameworks import _package_archs
    from gpudoctor.rules import frameworks as fw_rules

    archs = _package_archs("nvidia-curand-cu12")
    assert "sm_90" in archs["sass"] and archs["libraries"][0].endswith("libcurand.so.10")
    assert "error" in _package_archs("packaging")
    facts = {"frameworks": {"onnxruntime": {"version": "1.20.1", "archs": archs}},  # FAKE: curand's archs stand in
             "driver": {"nvml": {"status": "ok", "gpus": [
                 {"index": 0, "name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"},
                 {"index": 1, "name": "Tesla K80", "compute_capability": "3.7"}]}}}
    found = fw_rules.arch_binary_missing(facts, None)
    assert [f.id for f in found] == ["arch.binary_ok", "arch.binary_missing"]
    assert found[1].severity.value == "fail" and "onnxruntime 1.20.1 has no kernels for GPU 1" in found[1].title
