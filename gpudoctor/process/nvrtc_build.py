"""NVRTC's side of the NVRTC smoke test: the kernels, compiling them to a CUBIN (through the verified
cache), and NVRTC's own facts. Used by the compiler child (:mod:`gpudoctor.process.nvrtc_compiler`) and,
where fork is not available, by the worker itself (:mod:`gpudoctor.process.worker`)."""
from __future__ import annotations

import hashlib
import os
import time

from gpudoctor.process.cuda_bindings import binding as _binding, name as _name

KERNELS = r"""
%(fp16_include)s
extern "C" __global__ void vadd(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
extern "C" __global__ void hadd2(const unsigned int* a, const unsigned int* b, unsigned int* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
%(hadd2_body)s
    }
}
"""
_HADD2_HEADER = """        __half2 x = *reinterpret_cast<const __half2*>(&a[i]);
        __half2 y = *reinterpret_cast<const __half2*>(&b[i]);
        __half2 z = __hadd2(x, y);
        c[i] = *reinterpret_cast<unsigned int*>(&z);"""
# Without cuda_fp16.h, the same instruction (add.f16x2) through inline PTX.
_HADD2_PTX = """        unsigned int z;
        asm("add.rn.f16x2 %0, %1, %2;" : "=r"(z) : "r"(a[i]), "r"(b[i]));
        c[i] = z;"""


def _nvrtc_compile(nvrtc, source: bytes, arch: str, include_dir):
    """Compile ``source`` to a CUBIN for ``arch`` (e.g. sm_90). Returns (cubin|None, log, seconds, result)."""
    opts = [f"--gpu-architecture={arch}".encode()]
    if include_dir:
        opts.append(f"--include-path={include_dir}".encode())
    t0 = time.perf_counter()
    err, prog = nvrtc.nvrtcCreateProgram(source, b"gpudoctor_smoke.cu", 0, [], [])
    if _name(err) != "NVRTC_SUCCESS":
        return None, "", 0.0, _name(err)
    try:
        (res,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        _, size = nvrtc.nvrtcGetProgramLogSize(prog)
        log = b" " * size
        nvrtc.nvrtcGetProgramLog(prog, log)
        log_text = log.rstrip(b"\0 ").decode(errors="replace")
        if _name(res) != "NVRTC_SUCCESS":
            return None, log_text, time.perf_counter() - t0, _name(res)
        _, n = nvrtc.nvrtcGetCUBINSize(prog)
        cubin = b" " * n
        nvrtc.nvrtcGetCUBIN(prog, cubin)
        return cubin, log_text, time.perf_counter() - t0, "NVRTC_SUCCESS"
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


#: Bump when the NVRTC smoke kernels or options change (invalidates cached CUBINs).
CUBIN_FORMAT = 1


def _loaded_library(fragment: str):
    """The file of a loaded shared library whose name contains ``fragment`` (from /proc/self/maps)."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                path = line.split()[-1] if len(line.split()) >= 6 else ""
                if fragment in os.path.basename(path):
                    return path
    except OSError:
        pass
    return None


def _cached_compile(nvrtc, res: dict, source: bytes, arch: str, include_dir, use_cache: bool):
    """:func:`_nvrtc_compile`, through the on-disk cache: a CUBIN is a pure function of the NVRTC
    library (version and file identity), the source, the fp16 header and the arch. A hit returns
    ``(cubin, "", 0.0, "NVRTC_SUCCESS", True)``; the cached CUBIN is verified (SHA-256) before use."""
    from gpudoctor.process.cache import Cache, file_identity

    cache = Cache("nvrtc-cubin", enabled=use_cache)
    lib = _loaded_library("libnvrtc")
    try:
        inputs = {"format": CUBIN_FORMAT, "nvrtc": res.get("nvrtc_version"),
                  "library": file_identity(lib) if lib else None,
                  "fp16_header": file_identity(os.path.join(include_dir, "cuda_fp16.h")) if include_dir else None,
                  "source": hashlib.sha256(source).hexdigest(), "arch": arch}
    except OSError:
        inputs = None
    hit = cache.get_files(inputs) if inputs is not None and lib else None
    if hit is not None:
        with open(hit["files"]["kernel.cubin"], "rb") as fh:
            return fh.read(), "", 0.0, "NVRTC_SUCCESS", True
    cubin, log, secs, result = _nvrtc_compile(nvrtc, source, arch, include_dir)
    if cubin is not None and inputs is not None and lib and use_cache:
        import tempfile

        with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as fh:
            fh.write(cubin)
        try:
            cache.put_files(inputs, {"kernel.cubin": fh.name})
        finally:
            os.unlink(fh.name)
    return cubin, log, secs, result, False


def _fp16_include_dir():
    """A directory holding cuda_fp16.h for NVRTC: CUDA_HOME, /usr/local/cuda, then pip's nvidia wheels."""
    cands = [os.path.join(os.environ.get(v, ""), "include") for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]
    cands.append("/usr/local/cuda/include")
    try:
        import nvidia  # namespace package of the nvidia-* wheels

        for root in list(getattr(nvidia, "__path__", [])):
            cands += [os.path.join(root, sub, "include") for sub in ("cu13", "cu12", "cuda_runtime")]
    except ImportError:
        pass
    for c in cands:
        if os.path.isfile(os.path.join(c, "cuda_fp16.h")):
            return c
    return None


def _nvrtc_info(res: dict):
    """Load NVRTC and read its version and supported archs into ``res``; the module, or None."""
    try:
        nvrtc = _binding("nvrtc")
        out = nvrtc.nvrtcVersion()
        major, minor = out[1], out[2]
        res["nvrtc_version"] = f"{major}.{minor}"
        res["nvrtc_supported_archs"] = [f"sm_{a}" for a in (nvrtc.nvrtcGetSupportedArchs()[1] or [])]
        return nvrtc
    except Exception as exc:
        res["nvrtc_error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        return None
