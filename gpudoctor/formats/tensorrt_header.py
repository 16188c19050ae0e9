"""TensorRT: the version in ``NvInferVersion.h``, and CUDA's ``CUDA_VERSION`` in ``cuda.h`` and
``CUDART_VERSION`` in ``cuda_runtime_api.h``.

Pure: text in, plain data out; see gpudoctor.formats._text for the robustness contract."""
from __future__ import annotations

import re
from typing import Dict, Optional, Tuple

from gpudoctor.formats._text import _lines
from gpudoctor.formats.nvidia_driver import cuda_version_from_int

_DEFINE_RE = re.compile(r"\s*#\s*define\s+([A-Za-z_][A-Za-z0-9_]{0,63})\s+\(?([A-Za-z0-9_]{1,64})\)?\s*(?:/[/*].*)?")
_PARTS = ("MAJOR", "MINOR", "PATCH", "BUILD")


def _defines(text, wanted) -> Dict[str, str]:
    """``{NAME: token}`` of the simple ``#define NAME token`` lines (first definition wins)."""
    found: Dict[str, str] = {}
    for line in _lines(text):
        if "define" not in line:
            continue
        m = _DEFINE_RE.fullmatch(line)
        if m and m.group(1) not in found and wanted(m.group(1)):
            found[m.group(1)] = m.group(2)
    return found


def parse_nvinfer_version_header(text) -> Optional[Tuple[int, int, int, Optional[int]]]:
    """Parse TensorRT's ``NvInferVersion.h``: ``(major, minor, patch, build)``, build None when absent; None
    when major, minor or patch is missing or not a number.

    TensorRT 8 defines the numbers directly (``#define NV_TENSORRT_MAJOR 8 //!< TensorRT major version.``);
    TensorRT 10.x defines them through a second macro (``#define TRT_MAJOR_ENTERPRISE 10`` then
    ``#define NV_TENSORRT_MAJOR TRT_MAJOR_ENTERPRISE``, as in
    https://github.com/NVIDIA/TensorRT/blob/main/include/NvInferVersion.h): one level of such indirection is
    followed. Never raises."""
    defs = _defines(text, lambda name: name.startswith(("NV_TENSORRT_", "TRT_")))
    out = []
    for part in _PARTS:
        token = defs.get("NV_TENSORRT_" + part)
        if token is not None and not token.isdigit():
            token = defs.get(token)
        if token is None or not token.isdigit():
            if part == "BUILD":
                out.append(None)
                continue
            return None
        out.append(int(token))
    return out[0], out[1], out[2], out[3]


def parse_cuda_h_version(text) -> Optional[str]:
    """``CUDA_VERSION`` of CUDA's ``include/cuda.h`` as "major.minor" (``#define CUDA_VERSION 13000`` ->
    "13.0", 11080 -> "11.8", as :func:`gpudoctor.formats.nvidia_driver.cuda_version_from_int`); None when the
    header has no numeric CUDA_VERSION. Never raises."""
    return _version_define(text, "CUDA_VERSION")


def parse_cudart_h_version(text) -> Optional[str]:
    """``CUDART_VERSION`` of CUDA's ``include/cuda_runtime_api.h`` as "major.minor" (13000 -> "13.0"), as
    :func:`parse_cuda_h_version`; None when it has no numeric one. Never raises."""
    return _version_define(text, "CUDART_VERSION")


def _version_define(text, name: str) -> Optional[str]:
    token = _defines(text, lambda n: n == name).get(name)
    if token is None or not token.isdigit():
        return None
    return cuda_version_from_int(int(token))
