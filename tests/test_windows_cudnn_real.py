"""`check --root C --os windows` on REAL cuDNN Windows DLLs: the small DLLs of the nvidia-cudnn-cu12 and -cu13
9.28.0.42 and nvidia-cudnn-cu12 8.9.7.29 win_amd64 wheels (single members fetched by .ci/fetch-real-wheels,
checked against the wheels' RECORD), laid into CUDA toolkit folders built from the real cudart and nvcc.exe as
tests/test_windows_root.py lays them out.

No real cuDNN DLL names its CUDA or zlibwapi.dll in an import table (it hands those names to LoadLibrary);
what a copy says of its CUDA without an installer folder is the PTX of the kernels in its DLLs
(cudnn_cnn64_9.dll: PTX ISA 8.8 from CUDA 12.9 in the cu12 wheel, 9.5 from CUDA 13.5 in the cu13 one)."""
from __future__ import annotations

import os

from gpudoctor.formats.pe import read_pe
from gpudoctor.matrix import load_matrix
from gpudoctor.rules.windows import _cuda_of_ptx_isa
from gpudoctor.windows.install import windows_facts
from gpudoctor.windows.pe_kernels import dll_names_in_rdata, ptx_isas
from tests.conftest import need
from tests.test_windows_root import CUDA13_INC, CUDART_130, NVCC_130, WIN, Root, _real, _toolkit
from tests.test_windows_rules import _check

CUDNN9_DLLS = ("cudnn64_9.dll", "cudnn_cnn64_9.dll", "cudnn_ext64_9.dll", "cudnn_engines_tensor_ir64_9.dll")


def _cudnn(wheel_dir: str, *names: str) -> str:
    """The wheel's ``nvidia\\cudnn`` folder in .ci/cache/win/<wheel_dir>; skips (fails in CI) without its files."""
    base = os.path.join(WIN, wheel_dir, "site-packages", "nvidia", "cudnn")
    need(all(os.path.isfile(os.path.join(base, "bin", n)) for n in names)
         and os.path.isfile(os.path.join(base, "include", "cudnn_version.h")),
         f"the real cuDNN DLLs of .ci/cache/win/{wheel_dir} (.ci/fetch-real-wheels)")
    return base


def _cuda130_with_cudnn(tmp_path, wheel_dir: str):
    """A CUDA 13.0 toolkit (real nvcc.exe 13.0.88, cudart 13.0.96, CUDA 13.0 headers) with a cuDNN zip's bin\\ and
    include\\ copied into its folders, on PATH and CUDA_PATH, as the cuDNN zip's README-less users do."""
    _real()
    cudnn = _cudnn(wheel_dir, *CUDNN9_DLLS)
    root = Root(tmp_path / "c")
    root.mkdir("C:\\Windows\\System32")
    v130 = _toolkit(root, "13.0", CUDA13_INC, nvcc=NVCC_130, cudart=CUDART_130)
    for name in CUDNN9_DLLS:
        root.copy(os.path.join(cudnn, "bin", name), f"{v130}\\bin\\{name}")
    root.copy(os.path.join(cudnn, "include", "cudnn_version.h"), f"{v130}\\include\\cudnn_version.h")
    env = {"PATH": f"{v130}\\bin;C:\\Windows\\system32;C:\\Windows", "CUDA_PATH": v130, "CUDA_PATH_V13_0": v130,
           "SystemRoot": "C:\\Windows"}
    return root, env, v130


def test_no_real_cudnn_dll_imports_its_cuda_or_zlib_and_the_kernels_ptx_says_the_cuda():
    """What the real files hold, which the facts rest on: the import tables name only cuDNN's own DLLs and
    KERNEL32; the cnn DLL's PTX is of CUDA 12.9 (cu12) or CUDA 13.5 (cu13); cuDNN 8's loader has no kernels."""
    cu12, cu13 = _cudnn("cudnn-cu12-9", *CUDNN9_DLLS), _cudnn("cudnn-cu13-9", *CUDNN9_DLLS)
    cu8 = _cudnn("cudnn-cu12-8", "cudnn64_8.dll")
    for base, names in ((cu12, CUDNN9_DLLS), (cu13, CUDNN9_DLLS), (cu8, ("cudnn64_8.dll",))):
        for name in names:
            imports = read_pe(os.path.join(base, "bin", name)).imports
            assert all(i.lower().startswith("cudnn") or i.lower() == "kernel32.dll" for i in imports), (name, imports)
    assert ptx_isas(os.path.join(cu12, "bin", "cudnn_cnn64_9.dll")) == ["8.8"]
    assert ptx_isas(os.path.join(cu13, "bin", "cudnn_cnn64_9.dll")) == ["9.5"]
    assert ptx_isas(os.path.join(cu12, "bin", "cudnn64_9.dll")) == []
    assert ptx_isas(os.path.join(cu8, "bin", "cudnn64_8.dll")) == []


def test_the_cuda_12_cudnn_copied_into_cuda_13_0_is_a_mismatch_resting_on_its_dll(tmp_path):
    root, env, v130 = _cuda130_with_cudnn(tmp_path, "cudnn-cu12-9")
    ids, code = _check(root, env, tmp_path, "--driver", "580.95.05")
    assert code == 1
    f = ids["windows.cudnn_cuda_mismatch"]
    assert f["severity"] == "fail"
    assert f["title"] == f"cuDNN in {v130}\\bin was built for CUDA 12, copied into the CUDA 13.0 toolkit"
    assert f["evidence"]["kernels"] == [{"dll": f"{v130}\\bin\\cudnn_cnn64_9.dll", "ptx_isa": "8.8", "cuda": "12.9"}]
    assert f["evidence"]["built_for_cuda"]["from_path"] is None and f["evidence"]["toolkit"] == v130
    # the small DLLs name no CUDA library for LoadLibrary (cudnn_adv64_9.dll, not fetched, names cublasLt64_12.dll)
    assert f["evidence"]["built_for_cuda"]["from_load_names"] == [] and "loads" not in f["evidence"]
    assert "windows.cudnn8_zlibwapi_missing" not in ids and "gpudoctor.rule_error" not in ids


def test_the_cuda_13_cudnn_in_cuda_13_0_is_no_mismatch(tmp_path):
    """Its PTX (ISA 9.5, CUDA 13.5) is newer than the matrix's releases: ISA 9.x is CUDA 13's, so it fits."""
    root, env, _v130 = _cuda130_with_cudnn(tmp_path, "cudnn-cu13-9")
    ids, _code = _check(root, env, tmp_path, "--driver", "580.95.05")
    assert "windows.cudnn_cuda_mismatch" not in ids, ids.get("windows.cudnn_cuda_mismatch")
    assert not [i for i in ids if i.startswith("windows.cudnn") or i == "gpudoctor.rule_error"], list(ids)
    # no finding because the PTX says CUDA 13, not because it says nothing
    copy = next(c for c in windows_facts(root.view(**env))["cudnn"] if c["in_toolkit"] == _v130)
    assert copy["built_for_cuda"]["from_kernels"] == [{"dll": f"{_v130}\\bin\\cudnn_cnn64_9.dll", "ptx_isa": ["9.5"]}]
    assert _cuda_of_ptx_isa(load_matrix(), "9.5") == "13" and _cuda_of_ptx_isa(load_matrix(), "8.8") == "12.9"


def test_the_real_cudnn_8_without_zlibwapi_fails_and_with_it_beside_passes(tmp_path):
    _real()
    cu8 = _cudnn("cudnn-cu12-8", "cudnn64_8.dll")
    root = Root(tmp_path / "c")
    root.mkdir("C:\\Windows\\System32")
    v130 = _toolkit(root, "13.0", CUDA13_INC, nvcc=NVCC_130, cudart=CUDART_130)
    root.copy(os.path.join(cu8, "bin", "cudnn64_8.dll"), "C:\\tools\\cudnn8\\bin\\cudnn64_8.dll")
    root.copy(os.path.join(cu8, "include", "cudnn_version.h"), "C:\\tools\\cudnn8\\include\\cudnn_version.h")
    env = {"PATH": f"{v130}\\bin;C:\\tools\\cudnn8\\bin;C:\\Windows\\system32;C:\\Windows", "CUDA_PATH": v130,
           "SystemRoot": "C:\\Windows"}
    ids, code = _check(root, env, tmp_path, "--driver", "580.95.05")
    assert code == 1
    f = ids["windows.cudnn8_zlibwapi_missing"]
    assert f["title"] == "cuDNN 8 in C:\\tools\\cudnn8\\bin needs zlibwapi.dll, which no directory of the DLL search order holds"
    assert f["evidence"]["dir"] == "C:\\tools\\cudnn8\\bin"
    assert "windows.cudnn_cuda_mismatch" not in ids  # not in a toolkit
    # zlibwapi.dll in System32 (a FAKE: the search order is judged, the file is never loaded) ends it
    root.write("C:\\Windows\\System32\\zlibwapi.dll", b"FAKE")
    ids, _code = _check(root, env, tmp_path, "--driver", "580.95.05")
    assert "windows.cudnn8_zlibwapi_missing" not in ids


def test_the_dll_names_a_real_dll_hands_to_loadlibrary_are_read_from_its_rdata():
    """NVRTC 12.9 loads its builtins by name at run time (no import table entry): the name is in its .rdata; a
    DLL's own name (cudart64_12.dll's) is not one it loads; the small cuDNN DLLs name only cuDNN's own."""
    nvrtc = os.path.join(WIN, "nvrtc-cu12", "site-packages", "nvidia", "cuda_nvrtc", "bin", "nvrtc64_120_0.dll")
    cudart = os.path.join(WIN, "cudart-cu12", "site-packages", "nvidia", "cuda_runtime", "bin", "cudart64_12.dll")
    need(os.path.isfile(nvrtc) and os.path.isfile(cudart), "the real NVRTC 12.9 and cudart 12.4 DLLs (.ci/fetch-real-wheels)")
    assert "nvrtc-builtins64_129.dll" not in read_pe(nvrtc).imports
    assert dll_names_in_rdata(nvrtc) == ["nvrtc-builtins64_129.dll"]
    assert dll_names_in_rdata(cudart) == []
    cu12 = _cudnn("cudnn-cu12-9", *CUDNN9_DLLS)
    assert dll_names_in_rdata(os.path.join(cu12, "bin", "cudnn_cnn64_9.dll")) == ["cudnn_graph64_9.dll", "cudnn_ops64_9.dll"]


def test_a_cudnn_whose_dll_names_cublaslt_64_12_for_loadlibrary_is_a_mismatch_in_cuda_13(tmp_path):
    """The real cu13 layout's facts with FAKE_load_names put in: what cudnn_adv64_9.dll of the cu12 wheel (229 MB,
    not fetched) names in its .rdata. The load names alone make the finding, and are its evidence."""
    from gpudoctor.rules import Facts, RuleContext
    from gpudoctor.rules.fixes import OsFlavor
    from gpudoctor.rules.windows import cudnn_for_another_cuda

    root, env, v130 = _cuda130_with_cudnn(tmp_path, "cudnn-cu13-9")
    facts = windows_facts(root.view(**env))
    copy = next(c for c in facts["cudnn"] if c["in_toolkit"] == v130)
    ctx = RuleContext(load_matrix(), OsFlavor.from_platform({"system": "Windows"}))
    assert not cudnn_for_another_cuda(Facts({"windows": facts}), ctx)
    FAKE_load_names = [{"dll": f"{v130}\\bin\\cudnn_adv64_9.dll", "names": ["cublasLt64_12.dll"], "cuda_majors": ["12"]}]
    copy["built_for_cuda"]["from_kernels"] = []
    copy["built_for_cuda"]["from_load_names"] = FAKE_load_names
    [f] = cudnn_for_another_cuda(Facts({"windows": facts}), ctx)
    assert f.title == f"cuDNN in {v130}\\bin was built for CUDA 12, copied into the CUDA 13.0 toolkit"
    assert f.evidence["loads"] == FAKE_load_names and "kernels" not in f.evidence
