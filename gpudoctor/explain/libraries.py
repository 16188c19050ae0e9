"""What a CUDA library's file name says: which component ships it, which CUDA major it implies, and
the package that installs it. Used to fill the fix of a loader error (``libcublasLt.so.12: cannot
open shared object file``, ``cudart64_110.dll not found``) for any library, not only those seen in
reports.

Sources: the sonames in NVIDIA's pip wheels (``nvidia-<lib>-cu11/-cu12``: e.g. nvidia-cufft-cu12 ships
``libcufft.so.11``; CUDA 13 wheels drop the ``-cuNN`` suffix and version as 13.x) and the Windows
DLL names of the CUDA toolkit (``cudart64_110.dll`` = CUDA 11.0, ``cudart64_12.dll`` = CUDA 12).
"""
from __future__ import annotations

import re
from typing import Dict, Optional

__all__ = ["describe"]

# stem (lower case) -> (component, {library major: CUDA major} or None when the major is the CUDA
# major itself, pip package stem ("" = not on pip)). Majors not listed imply no single CUDA major.
_TABLE = {
    "cudart": ("the CUDA runtime", None, "nvidia-cuda-runtime"),
    "cublas": ("cuBLAS", None, "nvidia-cublas"),
    "cublaslt": ("cuBLASLt (cuBLAS)", None, "nvidia-cublas"),
    "cufft": ("cuFFT", {"11": "12", "12": "13"}, "nvidia-cufft"),
    "cufftw": ("cuFFTW (cuFFT)", {"11": "12", "12": "13"}, "nvidia-cufft"),
    "curand": ("cuRAND", {}, "nvidia-curand"),
    "cusparse": ("cuSPARSE", {"11": "11", "12": "12"}, "nvidia-cusparse"),
    "cusolver": ("cuSOLVER", {"10": "10"}, "nvidia-cusolver"),
    "nvrtc": ("NVRTC", None, "nvidia-cuda-nvrtc"),
    "nvrtc-builtins": ("NVRTC builtins", None, "nvidia-cuda-nvrtc"),
    "nvjitlink": ("nvJitLink", None, "nvidia-nvjitlink"),
    "cupti": ("CUPTI", None, "nvidia-cuda-cupti"),
    "nvtoolsext": ("NVTX", {}, "nvidia-nvtx"),
    "npp": ("NPP", None, "nvidia-npp"),
    "nvjpeg": ("nvJPEG", None, "nvidia-nvjpeg"),
    "cudnn": ("cuDNN", {}, "nvidia-cudnn"),
    "nccl": ("NCCL", {}, "nvidia-nccl"),
    "nvinfer": ("TensorRT", {}, "tensorrt"),
    "nvonnxparser": ("TensorRT's ONNX parser", {}, "tensorrt"),
    "nvparsers": ("TensorRT's parsers", {}, "tensorrt"),
    "cuda": ("the NVIDIA driver (libcuda)", {}, ""),
    "nvcuda": ("the NVIDIA driver (nvcuda.dll)", {}, ""),
    "nvidia-ml": ("the NVIDIA driver (NVML)", {}, ""),
    "nvml": ("the NVIDIA driver (NVML)", {}, ""),
    "nvidia-ptxjitcompiler": ("the NVIDIA driver's PTX JIT compiler", {}, ""),
    # the driver's video libraries, which FFmpeg/HandBrake/OBS dlopen (nv-codec-headers' dynlink_loader.h)
    "nvidia-encode": ("the NVIDIA driver (NVENC)", {}, ""),
    "nvencodeapi": ("the NVIDIA driver (NVENC)", {}, ""),
    "nvcuvid": ("the NVIDIA driver (NVDEC)", {}, ""),
    "zlibwapi": ("zlib (needed by cuDNN 8 on Windows)", {}, ""),
}
_LINUX = re.compile(r"^lib(?P<stem>[a-z][a-z0-9_+-]*?)(?:_(?:cnn|ops|adv|graph|engines|heuristic|infer|train|precompiled|runtime_compiled|plugin|lean|dispatch|builder_resource|static)\w*)?\.so(?:\.(?P<major>\d+)(?:\.(?P<minor>\d+))?)?")
_WINDOWS = re.compile(r"^(?P<stem>[a-z][a-z_]*?)(?:_(?:cnn|ops|adv|graph|engines|heuristic|infer|train|plugin|lean|dispatch|builder_resource)\w*?)?(?:64)?_?(?P<digits>\d+)?(?:_\d+)?\.dll$")


def _cuda_major_from_dll(stem: str, digits: str) -> Optional[str]:
    # cudart64_110 -> 11.0, cudart64_12 -> 12, nvrtc64_112_0 -> 11.2, cublas64_11 -> 11
    if stem in ("cudart", "nvrtc") and len(digits) == 3:
        return digits[:2]
    if stem in ("cudart", "nvrtc", "cublas", "cublaslt", "cupti", "nvjitlink") and digits:
        return digits[:2] if len(digits) >= 2 else digits
    return None


def describe(lib: str) -> Dict[str, str]:
    """Template variables for a library file name (``lib``, as a log prints it).

    Returns a dict with, where known: ``component`` ("cuBLAS"), ``lib_major`` ("12"),
    ``cuda_major`` ("12"), ``install`` (a pasteable command) and ``component_suffix`` (" (cuBLAS,
    CUDA 12)") for titles. Unknown libraries give ``{}``.
    """
    name = lib.strip().strip("'\"").rsplit("/", 1)[-1].rsplit("\\", 1)[-1].lower()
    m = _LINUX.match(name)
    digits = ""
    if m:
        stem, major = m.group("stem"), m.group("major") or ""
    else:
        w = _WINDOWS.match(name)
        if not w:
            return {}
        stem, digits = w.group("stem"), w.group("digits") or ""
        major = digits
    if stem not in _TABLE and stem.rstrip("0123456789") in _TABLE:
        stem = stem.rstrip("0123456789")
    if stem not in _TABLE:
        return {}
    component, majors, pip = _TABLE[stem]
    if m:
        cuda = major if majors is None else (majors or {}).get(major)
    else:
        cuda = _cuda_major_from_dll(stem, digits)
        if majors is not None and stem not in ("cudart", "nvrtc", "cublas", "cublaslt", "cupti", "nvjitlink"):
            major = digits
            cuda = (majors or {}).get(major)
    out: Dict[str, str] = {"component": component}
    if major:
        out["lib_major"] = major
    if cuda:
        out["cuda_major"] = cuda
    out["component_suffix"] = f" ({component}" + (f", CUDA {cuda}" if cuda else "") + ")"
    out["install"] = _install(stem, pip, major, cuda, windows=not m)
    return out


def _install(stem: str, pip: str, major: str, cuda: Optional[str], windows: bool = False) -> str:
    if not pip:
        if _TABLE[stem][0].startswith("the NVIDIA driver"):
            if windows:
                return "start https://www.nvidia.com/Download/index.aspx   # it comes with the NVIDIA driver"
            return "sudo ubuntu-drivers install   # it comes with the NVIDIA driver, not with pip or the toolkit"
        return f"# {stem}: install it from its vendor and put it on PATH"
    if pip == "tensorrt":
        return f"python -m pip install 'tensorrt=={major}.*'" if major else "python -m pip install tensorrt"
    if pip in ("nvidia-cudnn", "nvidia-nccl"):
        ver = f"=={major}.*" if major and pip == "nvidia-cudnn" else ""
        return f"python -m pip install '{pip}-cu12{ver}'   # -cu11/-cu13: the CUDA major your framework was built with"
    if cuda and int(cuda) >= 13:
        return f"python -m pip install '{pip}=={cuda}.*'"
    if cuda:
        return f"python -m pip install {pip}-cu{cuda}"
    return f"python -m pip install {pip}-cu12   # -cu11/-cu13: the CUDA major your framework was built with"
