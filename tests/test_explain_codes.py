"""`explain` knows every code of NVIDIA's error enumerations, read from what is installed here.

The enumerations are read from the real headers and bindings on this machine (CUDA 13.0's cuda.h and
driver_types.h, Debian's nvml.h / cublas_api.h / nvrtc.h, the cuDNN and NCCL wheels' headers that
.ci/fetch-real-wheels unpacks, cuda-bindings, nvidia-ml-py): a code that NVIDIA adds and the KB does
not know fails here, with the command that fixes it.
"""
from __future__ import annotations

import glob
import json
from pathlib import Path

import pytest

from gpudoctor.explain import enumerations as en
from gpudoctor.explain.codekb import NOT_ENV
from gpudoctor.explain.diagnose import NOT_ENV_MAX, diagnose
from gpudoctor.explain.kb import load_kb
from gpudoctor.explain.libraries import describe
from gpudoctor.explain.scan import Scanner

ROOT = Path(__file__).resolve().parents[1]
KB = load_kb()
GENERATED = json.loads((ROOT / "gpudoctor/explain/kb/codes/generated.json").read_text())
CLASSES = json.loads((ROOT / "gpudoctor/explain/kb/codes/classes.json").read_text())["enums"]
WHEEL_HEADERS = sorted(glob.glob(str(ROOT / ".ci/cache/*/site-packages/nvidia/*/include")))
INSTALLED = en.read_all(WHEEL_HEADERS)


def _explain(text: str):
    sc = Scanner(KB)
    sc.feed(text.encode())
    sc.close()
    return diagnose(sc)


def _generated_codes():
    return [(e["enum"], c) for e in GENERATED["enums"] for c in e["codes"]]


# ----------------------------------------------------------------------------- every installed code is known


@pytest.mark.parametrize("spec", en.ENUMS, ids=lambda s: s.enum)
def test_every_installed_code_has_a_kb_entry(spec):
    found = INSTALLED[spec.enum]
    assert found, f"{spec.enum}: none of {spec.headers} (nor its bindings) is installed here: run .ci/fetch-real-wheels"
    known = {c["name"]: c for e in GENERATED["enums"] if e["enum"] == spec.enum for c in e["codes"]}
    missing = sorted(f"{c.name} = {c.value}" for c in found.values() if c.name not in known)
    assert not missing, (f"{spec.enum}: codes installed here that the KB does not know: {missing}; classify them in "
                         "gpudoctor/explain/kb/codes/classes.json and run scripts/gen_error_codes.py --fetch")
    wrong = sorted(f"{c.name}: header says {c.value}, KB says {known[c.name]['value']}" for c in found.values()
                   if known[c.name]["value"] != c.value)
    assert not wrong, wrong


def test_the_real_sources_were_read():
    """The figures come from the files, not from a list typed in: spot-check a few against the headers."""
    cu, rt, nvml = INSTALLED["CUresult"], INSTALLED["cudaError_t"], INSTALLED["nvmlReturn_t"]
    assert cu["CUDA_ERROR_STUB_LIBRARY"].value == 34 and "stub library" in cu["CUDA_ERROR_STUB_LIBRARY"].doc
    assert rt["cudaErrorNoKernelImageForDevice"].value == 209
    assert nvml["NVML_ERROR_LIB_RM_VERSION_MISMATCH"].value == 18
    assert INSTALLED["cudnnStatus_t"]["CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH"].value == 1002
    assert INSTALLED["ncclResult_t"]["ncclRemoteError"].value == 6
    assert INSTALLED["cufftResult"]["CUFFT_INTERNAL_ERROR"].value == 5
    assert INSTALLED["curandStatus_t"]["CURAND_STATUS_ARCH_MISMATCH"].value == 204
    # NVENC's statuses are implicit (no "= N" in nvEncodeAPI.h): counted from the enum's order
    nvenc = INSTALLED["NVENCSTATUS"]
    assert nvenc["NV_ENC_ERR_INVALID_VERSION"].value == 15 and "struct version" in nvenc["NV_ENC_ERR_INVALID_VERSION"].doc
    assert any("nvEncodeAPI.h" in s for s in nvenc["NV_ENC_ERR_INVALID_VERSION"].sources)
    assert any("cuda.h" in s for s in cu["CUDA_ERROR_NO_DEVICE"].sources)
    assert any(s.startswith("cuda-bindings") for s in cu["CUDA_ERROR_NO_DEVICE"].sources)


def test_classes_and_generated_data_agree():
    for enum, code in _generated_codes():
        cls = CLASSES[enum][code["name"]]
        want = cls[0] if isinstance(cls, list) else cls
        assert code["class"] == want, (enum, code["name"])
        assert code["sources"], (enum, code["name"])
    ids = {s.id for s in KB}
    for enum in CLASSES.values():
        for cls in enum.values():
            if isinstance(cls, list):
                assert cls[0] in ids and 0 < cls[1] <= 1, cls
            else:
                assert cls in ("program", "success"), cls


def test_messages_come_from_the_libraries():
    """cudaGetErrorString / nvmlErrorString / cublasGetStatusString / ncclGetErrorString answered."""
    msgs = {(e, c["name"]): c.get("message") for e, c in _generated_codes()}
    assert msgs[("cudaError_t", "cudaErrorStubLibrary")] == "CUDA driver is a stub library"
    assert msgs[("nvmlReturn_t", "NVML_ERROR_DRIVER_NOT_LOADED")] == "Driver Not Loaded"
    assert msgs[("cublasStatus_t", "CUBLAS_STATUS_ALLOC_FAILED")] == "the resource allocation failed"
    assert msgs[("ncclResult_t", "ncclUnhandledCudaError")].startswith("unhandled cuda error")


# ----------------------------------------------------------------------------- every code is recognised in a log


def _code_cases():
    for enum, code in _generated_codes():
        if code["class"] != "success":
            yield pytest.param(enum, code, id=f"{enum}.{code['name']}")


@pytest.mark.parametrize("enum,code", list(_code_cases()))
def test_each_code_name_in_a_log_gives_its_class(enum, code):
    ranked = _explain(f"some output\nRuntimeError: call failed with {code['name']}\nmore output\n")
    want = NOT_ENV if code["class"] == "program" else code["class"]
    assert ranked and ranked[0].finding.id == want, [(d.finding.id, d.score) for d in ranked]
    assert ranked[0].finding.evidence["code"] == f"{code['name']} ({code['value']})"
    if want == NOT_ENV:
        assert ranked[0].score <= NOT_ENV_MAX and ranked[0].finding.severity.value == "info"


def test_a_longer_name_is_not_read_as_its_prefix():
    # cudaErrorInvalidDevice (101, device.not_visible) is a prefix of cudaErrorInvalidDeviceFunction (98)
    ranked = _explain("CUDA error: cudaErrorInvalidDeviceFunction\n")
    assert ranked[0].finding.id == "arch.binary_missing"
    assert "device.not_visible" not in [d.finding.id for d in ranked]


@pytest.mark.parametrize("line,expected", [
    ("pynvml.NVMLError_DriverNotLoaded: Driver Not Loaded", "driver.not_loaded"),  # nvidia-ml-py's class name
    # the math libraries' statuses by name, as PyTorch and CuPy print them
    ("RuntimeError: cusolver error: CUSOLVER_STATUS_ALLOC_FAILED, when calling `cusolverDnCreate(handle)`", "cuda.out_of_memory"),
    ("cupy_backends.cuda.libs.curand.CURANDError: CURAND_STATUS_ARCH_MISMATCH", "arch.binary_missing"),
    ("RuntimeError: cuFFT error: CUFFT_ALLOC_FAILED", "cuda.out_of_memory"),
    # a message two libraries share ("insufficient resources": NVML's program error, cuSPARSE's memory) still
    # counts behind the one prefix it can follow
    ("Failed to initialize NVML: Insufficient Resources", "program.error"),
    # NVENC statuses by name, as OBS and GStreamer print them
    ("[jim-nvenc] nvEncOpenEncodeSessionEx failed: 15 (NV_ENC_ERR_INVALID_VERSION)", "driver.too_old"),
    ("nvenc: NvEncOpenEncodeSessionEx returned NV_ENC_ERR_NO_ENCODE_DEVICE", "device.not_visible"),
    ("Failed to initialize NVML: GPU access blocked by the operating system", "wsl.libcuda"),
    ("Failed to initialize NVML: Insufficient Permissions", "driver.no_permission"),
    ("RuntimeError: CUDA error: uncorrectable ECC error encountered", "gpu.health"),  # cudaGetErrorString
    ("amrex::Abort::0::CUDA error 2 in file AMReX_Arena.cpp line 344: out of memory", "cuda.out_of_memory"),
    ("numba.cuda.cudadrv.driver.LinkerError: [222] Call to cuLinkAddData results in UNKNOWN_CUDA_ERROR", "driver.ptx_too_new"),
    ("cudnn error: CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH", "cudnn.mismatch"),
    ("system has unsupported display driver / cuda driver combination", "driver.version_mismatch"),
])
def test_names_numbers_and_messages(line, expected):
    ranked = _explain(line + "\n")
    assert ranked and ranked[0].finding.id == expected, [(d.finding.id, d.score) for d in ranked]


def test_a_program_error_never_outranks_an_environment_cause():
    ranked = _explain("CUDA error: an illegal memory access was encountered\n"
                      "CUDA driver version is insufficient for CUDA runtime version\n")
    assert [d.finding.id for d in ranked][:2] == ["driver.too_old", NOT_ENV]


# ----------------------------------------------------------------------------- the C enum parser


def test_parse_c_enum_reads_docs_aliases_attributes_and_implicit_values():
    text = """
    typedef enum thing_enum {
        /** leading doc of A */
        T_A = 0,
        T_B = 0x10, /**< trailing doc of B @since 9.0 */
        T_C,          //!< trailing doc of C
        T_OLD MY_DEPRECATED = T_B, /**< @deprecated alias */
        T_D = 2 /* plain comment */ ,
        T_E = (1 << 3) | 1
    } thing_t;
    enum __device_builtin__ other { O_X = 5 };
    """
    codes = {c.name: c for c in en.parse_c_enum(text, "thing_t")}
    assert {k: c.value for k, c in codes.items()} == {"T_A": 0, "T_B": 16, "T_C": 17, "T_OLD": 16, "T_D": 2, "T_E": 9}
    assert codes["T_A"].doc == "leading doc of A" and codes["T_B"].doc == "trailing doc of B"
    assert codes["T_C"].doc == "trailing doc of C"
    assert [c.value for c in en.parse_c_enum(text, "x", tag="other")] == [5]
    assert en.parse_c_enum(text, "missing_t") == []


def test_pynvml_class_names_follow_nvidia_ml_py():
    import pynvml

    for name in ("NVML_ERROR_DRIVER_NOT_LOADED", "NVML_ERROR_LIB_RM_VERSION_MISMATCH", "NVML_ERROR_GPU_IS_LOST"):
        assert hasattr(pynvml, en.pynvml_class_name(name)), name


# ----------------------------------------------------------------------------- library names -> package


@pytest.mark.parametrize("lib,component,cuda,install", [
    ("libcudart.so.11.0", "the CUDA runtime", "11", "nvidia-cuda-runtime-cu11"),
    ("libcublasLt.so.12", "cuBLASLt (cuBLAS)", "12", "nvidia-cublas-cu12"),
    ("libcufft.so.11", "cuFFT", "12", "nvidia-cufft-cu12"),  # cuFFT 11 ships with CUDA 12
    ("libnvrtc.so.13", "NVRTC", "13", "'nvidia-cuda-nvrtc==13.*'"),
    ("cudart64_110.dll", "the CUDA runtime", "11", "nvidia-cuda-runtime-cu11"),
    ("cublas64_12.dll", "cuBLAS", "12", "nvidia-cublas-cu12"),
    ("libcudnn_cnn_infer.so.8", "cuDNN", None, "'nvidia-cudnn-cu12==8.*'"),
    ("cudnn64_9.dll", "cuDNN", None, "'nvidia-cudnn-cu12==9.*'"),
    ("nvinfer_builder_resource_10.dll", "TensorRT", None, "'tensorrt==10.*'"),
    ("libcuda.so.1", "the NVIDIA driver (libcuda)", None, "ubuntu-drivers"),
])
def test_library_names_say_component_cuda_major_and_package(lib, component, cuda, install):
    d = describe(lib)
    assert d["component"] == component and d.get("cuda_major") == cuda and install in d["install"], d


def test_unknown_library_names_claim_nothing():
    assert describe("libfoo.so.1") == {} and describe("kernel32.dll") == {}


def test_a_loader_error_fix_names_the_package():
    d = _explain("OSError: libcublasLt.so.12: cannot open shared object file: No such file or directory\n")[0]
    assert d.finding.id == "library.not_found" and "(cuBLASLt (cuBLAS), CUDA 12)" in d.finding.title
    assert "python -m pip install nvidia-cublas-cu12" in [c for f in d.finding.fixes for c in f.commands]
