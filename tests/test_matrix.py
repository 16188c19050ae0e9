"""Tests for gpudoctor.matrix and the shipped compat_matrix/*.json data."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # running the tests from a bare source tree
    sys.path.insert(0, str(ROOT))

from packaging.version import Version  # noqa: E402

from gpudoctor.matrix import FILES, Matrix, MatrixError, load_matrix, sm_of  # noqa: E402

DATA = ROOT / "compat_matrix"
NVCC = Path("/usr/local/cuda/bin/nvcc")
HOST_CONFIG = Path("/usr/local/cuda/include/crt/host_config.h")


@pytest.fixture(scope="module")
def m() -> Matrix:
    return load_matrix()


def _plain(sms):
    return [s for s in sms if s[-1].isdigit()]


def _smnum(sm: str) -> int:
    return int(re.match(r"sm_(\d+)", sm).group(1))


# ----------------------------------------------------------------------------- loading


def test_shipped_matrix_loads(m):
    assert m.schema_version == 1
    assert m.data_version == "2026-11-23"
    assert load_matrix() is m  # cached
    assert isinstance(load_matrix(DATA), Matrix)  # explicit directory, uncached
    for name in FILES:
        doc = json.loads((DATA / name).read_text(encoding="utf-8"))
        assert doc["schema_version"] == 1 and doc["data_version"] == "2026-11-23" and doc["description"]


def test_every_row_sourced_and_unconfirmed_names_real_fields():
    for name in FILES:
        doc = json.loads((DATA / name).read_text(encoding="utf-8"))
        tables = [v for v in doc.values() if isinstance(v, list) and v and isinstance(v[0], dict)]
        assert tables, name
        for rows in tables:
            for row in rows:
                src = row["source"]
                src = [src] if isinstance(src, str) else src
                assert src and all(s.startswith(("https://", "http://", "file://")) for s in src), (name, row)
                for field in row.get("unconfirmed", []):
                    assert field in row and field not in ("source", "unconfirmed", "notes"), (name, row)


def test_sources_are_nvidia_or_local_or_listed(m):
    srcs = m.sources()
    assert any("docs.nvidia.com/cuda" in s for s in srcs)
    assert "https://developer.nvidia.com/cuda-gpus" in srcs


# ----------------------------------------------------------------------------- consistency


def test_cuda_releases_sorted_and_driver_non_decreasing(m):
    rels = m.cuda_releases()
    versions = [Version(r.cuda) for r in rels]
    assert versions == sorted(versions) and len(set(versions)) == len(versions)
    linux = [Version(r.min_driver_linux) for r in rels]
    assert linux == sorted(linux), "toolkit driver must not decrease across releases"
    win = [Version(r.min_driver_windows) for r in rels if r.min_driver_windows]
    assert win == sorted(win)
    expected = ["10.2"] + ["11.%d" % i for i in range(9)] + ["12.%d" % i for i in (0, 1, 2, 3, 4, 5, 6, 8, 9)] + ["13.0"]
    have = [r.cuda for r in rels]
    assert have[: len(expected)] == expected


def test_sm_ranges(m):
    for r in m.cuda_releases():
        assert r.min_sm in r.sms and r.max_sm in r.sms, r.cuda
        assert _smnum(r.min_sm) <= _smnum(r.max_sm)
        plain = _plain(r.sms)
        assert _smnum(r.min_sm) == min(map(_smnum, plain)) and _smnum(r.max_sm) == max(map(_smnum, plain))
        for s in r.sms:  # an 'a'/'f' variant implies its plain target
            assert re.sub(r"[af]$", "", s) in r.sms, (r.cuda, s)


def test_known_anchors(m):
    r118, r120, r130 = m.cuda_release("11.8"), m.cuda_release("12.0"), m.cuda_release("13.0")
    assert (r118.min_sm, r118.max_sm, r118.max_gcc) == ("sm_35", "sm_90", 11)
    assert "sm_90a" not in r118.sms
    assert r120.min_sm == "sm_50" and "sm_35" not in r120.sms and "sm_37" not in r120.sms
    assert (r130.min_sm, r130.max_sm, r130.max_gcc) == ("sm_75", "sm_121", 15)
    assert not {"sm_50", "sm_60", "sm_70"} & set(r130.sms)


def test_minor_version_compat_rows(m):
    assert [m.minor_version_compat(k).min_driver_linux for k in (11, 12, 13)] == ["450.80.02", "525.60.13", "580"]
    assert m.minor_version_compat(10) is None
    for r in m.cuda_releases():  # the major's floor is never above a release's toolkit driver ...
        mvc = m.minor_version_compat(r.major)
        if r.major == 10:  # minor version compatibility starts with CUDA 11
            assert mvc is None
            continue
        if r.cuda == "11.0":  # ... except 11.0, which shipped with an older driver (Table 2 footnote)
            assert Version(r.min_driver_linux) < Version(mvc.min_driver_linux)
            continue
        assert mvc is not None and Version(mvc.min_driver_linux) <= Version(r.min_driver_linux)


def test_cudnn_and_tensorrt_rows(m):
    cudnn = [r.cudnn for r in m.cudnn_releases()]
    assert cudnn[:11] == ["7.6"] + ["8.%d" % i for i in range(10)] and "9.0" in cudnn and "9.10" in cudnn
    trt = [r.tensorrt for r in m.tensorrt_releases()]
    assert trt[:9] == ["7.0", "7.1", "7.2", "8.0", "8.2", "8.4", "8.5", "8.6", "10.0"]
    for rows in (m.cudnn_releases(), m.tensorrt_releases()):
        for r in rows:
            for v in (r.cuda_min, r.cuda_max):
                if v is not None:
                    assert int(v.split(".")[0]) in r.cuda_majors


# ----------------------------------------------------------------------------- real local facts


def _nvcc_list(nvcc: Path):
    out = subprocess.run([str(nvcc), "--list-gpu-code"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return sorted(out.stdout.split(), key=_smnum)


def _nvcc_release(nvcc: Path) -> str:
    out = subprocess.run([str(nvcc), "--version"], capture_output=True, text=True, timeout=60).stdout
    return re.search(r"release (\d+\.\d+)", out).group(1)


@pytest.mark.skipif(not NVCC.exists(), reason="no /usr/local/cuda/bin/nvcc")
def test_local_nvcc_targets_match(m):
    release = _nvcc_release(NVCC)
    rel = m.cuda_release(release)
    assert rel is not None, f"local CUDA {release} missing from the matrix"
    assert sorted(_plain(rel.sms), key=_smnum) == _nvcc_list(NVCC)


@pytest.mark.skipif(not NVCC.exists(), reason="no /usr/local/cuda/bin/nvcc")
def test_local_nvcc_accepts_arch_specific_variants(m, tmp_path):
    rel = m.cuda_release(_nvcc_release(NVCC))
    src = tmp_path / "k.cu"
    src.write_text("__global__ void k(){}\n")

    def accepts(sm: str) -> bool:
        cmd = [str(NVCC), "--dryrun", f"-arch={sm}", "-c", str(src), "-o", str(tmp_path / "k.o")]
        return subprocess.run(cmd, capture_output=True, timeout=60).returncode == 0

    suffixed = [s for s in rel.sms if not s[-1].isdigit()]
    for sm in suffixed:
        assert accepts(sm), sm
    assert not accepts("sm_30")  # the probe does reject
    assert m.toolkit_accepts_sm(rel.cuda, "sm_30") is False


@pytest.mark.skipif(not HOST_CONFIG.exists(), reason="no /usr/local/cuda/include/crt/host_config.h")
def test_local_host_config_max_gcc(m):
    text = HOST_CONFIG.read_text(errors="replace")
    gcc = int(re.search(r"#if\s+__GNUC__\s*>\s*(\d+)", text).group(1))
    release = _nvcc_release(NVCC) if NVCC.exists() else "13.0"
    assert m.cuda_release(release).max_gcc == gcc
    clang = re.search(r"\(__clang_major__\s*>=\s*(\d+)\)\s*\|\|\s*\(__clang_major__\s*<\s*3\)", text)
    if clang:
        assert m.cuda_release(release).max_clang == int(clang.group(1)) - 1


DEBIAN_NVCC = Path("/usr/lib/nvidia-cuda-toolkit/bin/nvcc")
DEBIAN_HOST_CONFIG = Path("/usr/include/crt/host_config.h")


@pytest.mark.skipif(not (DEBIAN_NVCC.exists() and DEBIAN_HOST_CONFIG.exists()), reason="no Debian CUDA toolkit")
def test_debian_toolkit_matches(m):
    release = _nvcc_release(DEBIAN_NVCC)
    rel = m.cuda_release(release)
    assert sorted(_plain(rel.sms), key=_smnum) == _nvcc_list(DEBIAN_NVCC)
    gcc = int(re.search(r"#if\s+__GNUC__\s*>\s*(\d+)", DEBIAN_HOST_CONFIG.read_text(errors="replace")).group(1))
    assert rel.max_gcc == gcc


# ----------------------------------------------------------------------------- corrupt copies


def _copy(tmp_path: Path) -> Path:
    d = tmp_path / "m"
    shutil.copytree(DATA, d)
    return d


def _edit(d: Path, name: str, fn) -> None:
    doc = json.loads((d / name).read_text(encoding="utf-8"))
    fn(doc)
    (d / name).write_text(json.dumps(doc), encoding="utf-8")


def test_copy_loads(tmp_path):
    assert load_matrix(_copy(tmp_path)).cuda_release("12.4").min_driver_linux == "550.54.14"


def test_truncated_json(tmp_path):
    d = _copy(tmp_path)
    text = (d / "cudnn.json").read_text(encoding="utf-8")
    (d / "cudnn.json").write_text(text[: len(text) // 2], encoding="utf-8")
    with pytest.raises(MatrixError, match=r"^cudnn\.json: invalid JSON") as ei:
        load_matrix(d)
    assert ei.value.file == "cudnn.json"


def test_missing_file(tmp_path):
    d = _copy(tmp_path)
    (d / "gpus.json").unlink()
    with pytest.raises(MatrixError, match=r"^gpus\.json: file is missing"):
        load_matrix(d)


def test_missing_source(tmp_path):
    d = _copy(tmp_path)
    _edit(d, "tensorrt.json", lambda doc: doc["releases"][2].pop("source"))
    with pytest.raises(MatrixError, match=r"^tensorrt\.json: releases\[2\]: missing field 'source'"):
        load_matrix(d)


def test_empty_source(tmp_path):
    d = _copy(tmp_path)
    _edit(d, "cuda.json", lambda doc: doc["releases"][0].__setitem__("source", []))
    with pytest.raises(MatrixError, match=r"^cuda\.json: releases\[0\]: field 'source'"):
        load_matrix(d)


def test_wrong_schema_version(tmp_path):
    d = _copy(tmp_path)
    _edit(d, "gpus.json", lambda doc: doc.__setitem__("schema_version", 2))
    with pytest.raises(MatrixError, match=r"^gpus\.json: schema_version must be 1"):
        load_matrix(d)


def test_bad_data_version(tmp_path):
    d = _copy(tmp_path)
    _edit(d, "cudnn.json", lambda doc: doc.__setitem__("data_version", "2026-13-40"))
    with pytest.raises(MatrixError, match=r"^cudnn\.json: data_version"):
        load_matrix(d)


def test_duplicate_release(tmp_path):
    d = _copy(tmp_path)

    def dup(doc):
        doc["releases"].insert(6, dict(doc["releases"][6]))

    _edit(d, "cuda.json", dup)
    with pytest.raises(MatrixError, match=r"^cuda\.json: releases\[7\]: duplicate cuda '11\.5'"):
        load_matrix(d)


def test_unsorted_release(tmp_path):
    d = _copy(tmp_path)
    _edit(d, "cudnn.json", lambda doc: doc["releases"].reverse())
    with pytest.raises(MatrixError, match=r"^cudnn\.json: releases\[1\]: .*out of order"):
        load_matrix(d)


def test_unconfirmed_names_unknown_field(tmp_path):
    d = _copy(tmp_path)
    _edit(d, "cuda.json", lambda doc: doc["releases"][3].__setitem__("unconfirmed", ["max_icc"]))
    with pytest.raises(MatrixError, match=r"^cuda\.json: releases\[3\]: field 'unconfirmed' names 'max_icc'"):
        load_matrix(d)


def test_bad_version_and_type(tmp_path):
    d = _copy(tmp_path)
    _edit(d, "cuda.json", lambda doc: doc["releases"][1].__setitem__("min_driver_linux", "r455"))
    with pytest.raises(MatrixError, match=r"^cuda\.json: releases\[1\]: field 'min_driver_linux'"):
        load_matrix(d)
    d2 = _copy(tmp_path / "b")
    _edit(d2, "cuda.json", lambda doc: doc["releases"][1].__setitem__("max_gcc", "10"))
    with pytest.raises(MatrixError, match=r"^cuda\.json: releases\[1\]: field 'max_gcc'"):
        load_matrix(d2)


def test_min_sm_not_in_sms(tmp_path):
    d = _copy(tmp_path)
    _edit(d, "cuda.json", lambda doc: doc["releases"][1].__setitem__("min_sm", "sm_30"))
    with pytest.raises(MatrixError, match=r"^cuda\.json: releases\[1\] \(cuda 11\.0\): field 'min_sm'"):
        load_matrix(d)


def test_gpu_pattern_must_match_example(tmp_path):
    d = _copy(tmp_path)
    _edit(d, "gpus.json", lambda doc: doc["gpus"][0].__setitem__("example", "Nothing"))
    with pytest.raises(MatrixError, match=r"^gpus\.json: gpus\[0\]: field 'pattern'"):
        load_matrix(d)


# ----------------------------------------------------------------------------- queries


def test_driver_queries(m):
    assert m.max_cuda_for_driver("535.104.05") == "12.2"
    assert m.max_cuda_for_driver("535.54.03") == "12.2"
    assert m.max_cuda_for_driver("535.54.02") == "12.1"
    assert m.max_cuda_for_driver("440.33") == "10.2"
    assert m.max_cuda_for_driver("418.39") is None
    assert m.max_cuda_for_driver("garbage") is None
    assert m.max_cuda_for_driver("536.25", os="windows") == "12.2"
    assert m.driver_supports("535.104.05", "12.4") == "minor_version_compat"
    assert m.driver_supports("535.104.05", "13.0") == "unsupported"
    assert m.driver_supports("580.95.05", "13.0") == "native"
    assert m.driver_supports("550.54.14", "12.4") == "native"
    assert m.driver_supports("450.80.02", "11.8") == "minor_version_compat"
    assert m.driver_supports("450.51.06", "11.8") == "unsupported"
    assert m.driver_supports("580.95.05", "10.2") == "native"
    assert m.driver_supports("418.39", "10.2") == "unsupported"  # no minor version compatibility before 11
    assert m.driver_supports("580.95.05", "10.1") == "unknown"
    assert m.driver_supports("nonsense", "12.4") == "unknown"
    assert m.driver_supports("596.00", "13.1", os="windows") == "unknown"  # Table 3 gives N/A
    assert m.driver_supports("570.00", "13.1", os="windows") == "unsupported"
    with pytest.raises(ValueError):
        m.driver_supports("580.95.05", "13.0", os="macos")


def test_cuda_release_normalisation(m):
    assert m.cuda_release("12.4.1").cuda == "12.4"
    assert m.cuda_release(12040).cuda == "12.4"
    assert m.cuda_release("V12.4.131").cuda == "12.4"
    assert m.cuda_release(13000).min_driver_linux == "580.65.06"
    assert m.cuda_release("12.7") is None
    assert m.cuda_release("12") is None
    assert m.cuda_release("x") is None
    assert m.cuda_release(None) is None


def test_cudnn_tensorrt_lookup(m):
    r = m.cudnn_release("9.10.2")
    assert r.cudnn == "9.10" and r.exact and r.cuda_max == "12.9"
    assert m.cudnn_release(8906).cudnn == "8.9"
    assert m.cudnn_release(91000).cudnn == "9.10"
    newest9 = m.cudnn_releases()[-1]
    far = m.cudnn_release("9.99.0")
    assert far.cudnn == newest9.cudnn and far.exact is False
    assert m.cudnn_release("7.6.5").cudnn == "7.6"
    assert m.cudnn_release("6.0") is None
    t = m.tensorrt_release("10.3.0.26")
    assert t.tensorrt == "10.3" and t.exact
    assert m.tensorrt_release(100300).tensorrt == "10.3"
    assert m.tensorrt_release(8601).tensorrt == "8.6"
    near = m.tensorrt_release("8.9")
    assert near.tensorrt == "8.6" and near.exact is False
    assert m.tensorrt_release("7.2").tensorrt == "7.2"
    assert m.tensorrt_release("6.0") is None


GPU_NAMES = {
    "NVIDIA H100 80GB HBM3": "9.0",
    "NVIDIA H100 PCIe": "9.0",
    "NVIDIA H200": "9.0",
    "NVIDIA GH200 480GB": "9.0",
    "NVIDIA A10": "8.6",
    "NVIDIA A10G": "8.6",
    "NVIDIA A100-SXM4-80GB": "8.0",
    "NVIDIA A100 80GB PCIe": "8.0",
    "NVIDIA A30": "8.0",
    "NVIDIA GeForce RTX 5090": "12.0",
    "NVIDIA GeForce RTX 4090": "8.9",
    "NVIDIA GeForce RTX 4090 D": "8.9",
    "NVIDIA GeForce RTX 3090": "8.6",
    "NVIDIA GeForce RTX 2080 Ti": "7.5",
    "NVIDIA RTX 6000 Ada Generation": "8.9",
    "Quadro RTX 6000": "7.5",
    "NVIDIA RTX A6000": "8.6",
    "NVIDIA RTX PRO 6000 Blackwell Workstation Edition": "12.0",
    "NVIDIA L4": "8.9",
    "NVIDIA L40S": "8.9",
    "NVIDIA B200": "10.0",
    "NVIDIA GB200": "10.0",
    "Tesla V100-SXM2-16GB": "7.0",
    "Tesla T4": "7.5",
    "Tesla P100-PCIE-16GB": "6.0",
    "Tesla P4": "6.1",
    "Tesla P40": "6.1",
    "Tesla K80": "3.7",
    "NVIDIA GeForce GTX TITAN X": "5.2",
    "NVIDIA TITAN X (Pascal)": "6.1",
    "Orin (nvgpu)": "8.7",
}


@pytest.mark.parametrize("name,cc", sorted(GPU_NAMES.items()))
def test_gpu_by_name(m, name, cc):
    g = m.gpu_by_name(name)
    assert g is not None and g.cc == cc, (name, g)
    assert m.family(g.cc) == g.family


def test_gpu_patterns_unambiguous(m):
    """Order-independent: every pattern that matches a known name agrees on the CC."""
    names = set(GPU_NAMES) | {g.example for g in m.gpus()}
    for name in names:
        ccs = {g.cc for g in m.gpus() if re.search(g.pattern, name, re.IGNORECASE)}
        assert len(ccs) == 1, (name, ccs)


def test_gpu_misc(m):
    assert m.gpu_by_name("Matrox G200") is None
    assert m.gpu_by_name("") is None
    assert m.family("9.0") == "Hopper" and m.family("10.7") == "Rubin" and m.family("10.0") == "Blackwell"
    assert m.family("3.5") == "Kepler" and m.family("6.1") == "Pascal" and m.family("7.2") == "Volta"
    assert m.family("99.0") is None and m.family("x") is None


def test_sm_helpers(m):
    assert sm_of("9.0") == "sm_90" and sm_of("12.1") == "sm_121" and sm_of("10.0") == "sm_100"
    with pytest.raises(ValueError):
        sm_of("sm_90")
    assert m.toolkit_accepts_sm("12.4", "sm_90a") is True
    assert m.toolkit_accepts_sm("11.8", "sm_90a") is False
    assert m.toolkit_accepts_sm("13.0", "7.0") is False
    assert m.toolkit_accepts_sm("13.0", "compute_120") is True
    assert m.toolkit_accepts_sm("12.7", "sm_90") is None
    assert m.toolkit_accepts_sm("12.4", "bogus") is None


def test_ptx_isa_matches_cuda_python_table(m):
    """cuda-python (a real dependency) ships NVIDIA's PTX ISA -> CUDA table; the matrix must agree."""
    from cuda.bindings.utils import get_minimal_required_cuda_ver_from_ptx_ver as needs

    for r in m.cuda_releases():
        if "ptx_isa" in r.unconfirmed:
            continue
        first = needs(r.ptx_isa)  # 12050 for "8.5"
        first_text = f"{first // 1000}.{first % 1000 // 10}"
        # 12.6 added no PTX ISA: it emits 12.5's 8.5.
        assert first_text == ("12.5" if r.cuda == "12.6" else r.cuda), (r.cuda, r.ptx_isa)
    assert m.cuda_for_ptx_isa("7.8") == "11.8" and m.cuda_for_ptx_isa("9.0") == "13.0"
    assert m.cuda_for_ptx_isa("99.0") is None and m.cuda_for_ptx_isa("x.y") is None


@pytest.mark.parametrize("nvcc", [NVCC, DEBIAN_NVCC], ids=["cuda13", "cuda118"])
def test_local_nvcc_emits_the_matrix_ptx_isa(m, nvcc, tmp_path):
    if not nvcc.exists():
        pytest.skip(f"{nvcc} is not installed (.ci/install-real-parts installs it)")
    src = tmp_path / "k.cu"
    src.write_text("__global__ void k(float *x) { x[0] = 1.0f; }\n")
    out = subprocess.run([str(nvcc), "-ptx", str(src), "-o", str(tmp_path / "k.ptx")], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    isa = re.search(r"^\.version (\d+\.\d+)", (tmp_path / "k.ptx").read_text(), re.M).group(1)
    assert m.cuda_release(_nvcc_release(nvcc)).ptx_isa == isa
