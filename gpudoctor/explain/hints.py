"""Weak hints: where no known signature matches, say which part of the stack a log's error points at.

A signature names an exact message; a hint names a *shape* that each component's failures share,
whatever the words of the tool that printed them (the project read a message in one tool; the next
report has it from another). Each hint is one component and one way of failing, on one line:

- an error *located in* a component's own files: a compile error inside the CUDA toolkit's headers
  (CCCL/libcu++, Thrust, CUB, ``crt/``) means those headers met a compiler or a copy of another
  version; inside the host compiler's C++ headers during a CUDA build, nvcc's front end cannot
  parse that standard library (the host compiler support table of the nvcc documentation);
- a component named together with a version-contradiction word (cuDNN "built against ... but",
  a driver "too old"/"insufficient", an engine that fails to deserialize);
- a CUDA library that is named and fails to load, or a CUDA symbol that is undefined at link or
  load time (headers and library of different releases);
- a GPU architecture named with "unsupported"/"not defined" (by a compiler: the toolkit does not know
  it; at run time: the binary has no kernel for it).

Hints are read from the last :data:`gpudoctor.explain.scan.TAIL` bytes of the log (where a log's
error is), so they cost nothing on a huge log. A hint is always a *low-confidence* diagnosis
(:data:`HINT_MAX`, below every signature's weight): it never outranks a signature, and only says
where to look when nothing else matched.
"""
from __future__ import annotations

import re
from typing import Callable, Dict, List, Optional, Tuple

__all__ = ["HINTS", "HINT_SCORE", "HINT_MAX", "find_hints", "add_hints"]

HINT_SCORE = 0.4
HINT_MAX = 0.44
_MAX_LINE = 4096
_NVCC_DOC = "https://docs.nvidia.com/cuda/cuda-installation-guide-linux/index.html#host-compiler-support-policy"
_COMPAT_DOC = "https://docs.nvidia.com/deploy/cuda-compatibility/index.html"
_CUDNN_DOC = "https://docs.nvidia.com/deeplearning/cudnn/backend/latest/reference/support-matrix.html"
_TRT_DOC = "https://docs.nvidia.com/deeplearning/tensorrt/latest/inference-library/advanced.html#version-compatibility"
_ARCH_DOC = "https://docs.nvidia.com/cuda/cuda-compiler-driver-nvcc/index.html#gpu-feature-list"
_LOADER_DOC = "https://docs.nvidia.com/cuda/cuda-installation-guide-linux/index.html#post-installation-actions"
_FAIL = r"(?:\bfail\w*|\berror\b|\binvalid\b|\bmismatch\w*|\bassert\w*|\bcannot\b|\bunable\b)"
_CUDA_LIB = r"(?:cudart|cublas\w*|cudnn\w*|cufft\w*|curand|cusparse\w*|cusolver\w*|nvrtc|nccl|nvinfer\w*|nvjitlink|cupti|nvonnxparser)"


_CUDA_BUILD = re.compile(r"\bnvcc\b|\.cuh?\b|cudafe|\bcicc\b", re.I)
_COMPILER = re.compile(r"\bnvcc\b|\bptxas\b|\bcmake\b|\bcicc\b|\bmake\b|\.cuh?\b|gpu-architecture|torch_cuda_arch_list", re.I)
_TRT = re.compile(r"tensorrt|\btrt\b|nvinfer|\.engine\b|\.plan\b|\.trt\b", re.I)

# A hint's shape: alternatives, each a set of patterns that must all be on the line, in any order.
# Separate searches keep a hint linear in the line's length (an "a.*?b" regex is quadratic on a long
# line full of a's, and hints read whatever the log ends with).
_Shape = Tuple[Tuple["re.Pattern[str]", ...], ...]


def _all(*patterns: str) -> Tuple["re.Pattern[str]", ...]:
    return tuple(re.compile(p, re.I) for p in patterns)


def _any(*alternatives: Tuple["re.Pattern[str]", ...]) -> _Shape:
    return alternatives


#: (finding id, what the line shows, its shape, a regex the tail must also match or None, source)
HINTS: Tuple[Tuple[str, str, _Shape, Optional["re.Pattern[str]"], str], ...] = (
    ("toolkit.mixed", "a compile error inside the CUDA toolkit's own headers",
     # the toolkit's include/ subdirectories (CUDA 12: cuda/std, thrust, cub, nv; CUDA 13: cccl/..., plus
     # cooperative_groups, crt, nvtx3); NVRTC logs name them relative, at the start of the line
     _any(_all(r"(?:^|[\s/\\\"'(])(?:cuda[/\\]std|cuda[/\\]__\w+|cccl|libcudacxx|thrust|cub|crt|nv[/\\]target|cooperative_groups|nvtx3)[/\\]\S{0,400}?(?:\(\d+\)|:\d+)\W+(?:\d+:\s*)?(?:fatal )?error\b")),
     None, _NVCC_DOC),
    ("toolkit.mixed", "a CUDA symbol undefined at link or load time (headers and library of different releases)",
     _any(_all(rf"undefined (?:references? to|symbol:?)\s*\W?(?:cuda|{_CUDA_LIB}|cu[a-z]+_v\d)")), None, _COMPAT_DOC),
    ("compiler.unsupported", "a CUDA build's error inside the host compiler's C++ standard headers",
     _any(_all(r"(?:/include/c\+\+/[\d.]+/|/bits/|\\msvc\\[\d.]+\\include\\|/usr/lib/gcc/\S{1,200}?/include/)\S{0,400}?(?:\(\d+\)|:\d+)\W+(?:\d+:\s*)?(?:fatal )?error\b")),
     _CUDA_BUILD, _NVCC_DOC),
    ("cudnn.mismatch", "cuDNN named with a version contradiction",
     _any(_all(r"\bcudnn\b", r"mismatch|incompatib|outdated|does not match|doesn't match|but (?:source|found|got|the|installed)|"
               r"(?:built|compiled) (?:against|with)|expected|too old|lower than|minimum|at least|\bneeds?\b|requires?")),
     None, _CUDNN_DOC),
    ("driver.too_old", "the driver named as too old",
     _any(_all(r"(?:update|upgrade) (?:your |the )?(?:nvidia |gpu |graphics |cuda )?drivers?\b|newer (?:nvidia |gpu )?drivers?\b|"
               r"minimum required (?:nvidia |gpu )?driver|driver does not support the required"),
          _all(r"\bdrivers?\b", r"too old|outdated|older than|is insufficient|minimum (?:required )?version|requires? (?:a |an )?newer|"
               r"\bminimum (?:is|required)\b|install (?:the )?latest|invalid (?:nvidia |gpu )?driver version")),
     None, _COMPAT_DOC),
    ("framework.cuda_mismatch", "two CUDA versions named as not matching",
     _any(_all(r"\bcuda\b", r"\bversions?\b", r"mismatch|incompatib|does not match|doesn't match|differ|not compatible")),
     None, _COMPAT_DOC),
    ("tensorrt.engine_mismatch", "a TensorRT engine that fails to deserialize",
     _any(_all(r"deserializ", r"\b(?:engine|plan)\b", _FAIL)), _TRT, _TRT_DOC),
    ("arch.toolkit_unsupported", "a compiler refusing a GPU architecture",
     _any(_all(r"gpu-architecture|gpu-code|\bsm_\d{2,3}[af]?\b|\bcompute_\d{2,3}[af]?\b|cuda_architectures",
               r"not defined|unsupported|not supported|invalid|unknown|not recognized|not a valid")),
     _COMPILER, _ARCH_DOC),
    ("arch.binary_missing", "a GPU architecture the program's kernels do not cover",
     _any(_all(r"\bsm_\d{2,3}\b|compute capability \d+\.\d",
               r"not compatible|not supported|unsupported|too (?:old|new)|no kernel|no binary"),
          _all(r"\bno (?:device code|kernel|binary|compatible (?:kernel|code|binary))\b", r"\barch\b|\barchitecture|\bsm_?\d{2,3}\b|compute capability"),
          _all(r"\bptx\b(?!as)|\bcubins?\b|\bsass\b|kernel images?",
               r"\bmissing\b|\bnot (?:found|included|available)\b|\bno (?:compatible|matching)\b")),
     None, _ARCH_DOC),
    ("arch.half_unsupported", "half precision named as not built or not supported",
     _any(_all(r"half[- ]precision|\bfp16\b|\bbf16\b|bfloat16|\b__half\b",
               r"not compiled with|compiled without|built without|not supported|unsupported|requires? (?:compute capability|sm_?\d)")),
     None, _ARCH_DOC),
    ("env.cuda_home", "CUDA_HOME (or CUDA_PATH) named as unset or wrong",
     _any(_all(r"\b(?:cuda_home|cuda_path|cuda_toolkit_root_dir|cudatoolkit_root|cuda_root|cudacxx)\b",
               r"not set|not found|\bnone\b|invalid|could not|cannot|unset|no such|does ?n[o']t exist|is not|not defined")),
     None, _NVCC_DOC),
    ("library.not_found", "a CUDA library that fails to load",
     # (a JVM binding names the library with its own prefix: JCublas2, JCudnn)
     _any(_all(r"(?:could not|cannot|can't|unable to|failed to) (?:load|find|open|locate|dlopen)\b|error while loading|unsatisfiedlinkerror",
               rf"\b(?:lib|j)?{_CUDA_LIB}")),
     None, _LOADER_DOC),
    ("driver.not_loaded", "the NVIDIA kernel module named as not loaded",
     _any(_all(r"falling back to nouveau"),
          _all(r"\bnvidia(?:[-_](?:uvm|drm|modeset))?(?:\.ko)?\b",
               r"module not found|module (?:is )?missing|not loaded|failed to load|could not (?:load|insert)|"
               r"cannot (?:load|insert)|key was rejected|unknown symbol|required key not available")),
     None, _LOADER_DOC),
    ("driver.version_mismatch", "NVIDIA driver parts named with a version mismatch",
     _any(_all(r"\bnvidia|\bnvml\b|\bnvrm\b", r"version mismatch|versions? (?:do not|don't) match|mismatched version")),
     None, _LOADER_DOC),
    ("driver.not_loaded", "the NVIDIA kernel module failing to build for the kernel (DKMS, akmods)",
     _any(_all(r"\bdkms\b|\bakmods?\w*|\bkmod\b|nvidia-kmod", r"\bnvidia")),
     re.compile(r"error|fail|bad return|could not|does not exist", re.I), _LOADER_DOC),
    ("driver.not_loaded", "an NVIDIA device node that does not exist (the kernel module creates them)",
     _any(_all(r"/dev/nvidia", r"no such (?:file|device)")), None, _LOADER_DOC),
    ("driver.no_permission", "an NVIDIA device file that may not be opened",
     _any(_all(r"/dev/nvidia", r"permission denied|operation not permitted|access denied")), None, _LOADER_DOC),
    ("driver.missing", "the NVIDIA driver (or its NVML library) named as absent",
     _any(_all(r"nvidia-smi|libcuda\.so|nvcuda\.dll|(?:nvidia|cuda|display|gpu) driver|nvml\.dll|libnvidia-ml|\bnvml\b",
               r"not found|no such file|not installed|missing|(?:can't|cannot|could not|unable to) find")),
     None, _LOADER_DOC),
    ("driver.not_loaded", "the NVIDIA driver named as not running",
     _any(_all(r"\bnvidia\b|\bdriver\b", r"installed and running|is not running|isn't running|couldn't communicate|could not communicate")),
     None, _LOADER_DOC),
    ("gpu.health", "a GPU named as lost or faulted",
     _any(_all(r"\b(?:gpu|device)\b", r"fallen off|fell off|is lost|was lost|stopped responding|not responding|hung|overheat|thermal")),
     None, "https://docs.nvidia.com/deploy/xid-errors/index.html"),
    ("device.not_visible", "no CUDA device found",
     _any(_all(r"\b(?:no|0|zero) (?:cuda[- ]capable |cuda |nvidia |usable |available )?(?:gpus?|devices?)\b",
               r"found|available|detected|visible"),
          _all(r"\b(?:gpu|cuda)\b", r"is not available|not available|unavailable"),
          _all(r"(?:unable to|cannot|can't|could not|couldn't|failed to) (?:find|locate|detect|see|enumerate) (?:any |a )?"
               r"(?:cuda[- ]capable |cuda |nvidia |compatible |usable |supported )?(?:gpus?|devices?|graphics cards?)\b"),
          _all(r"(?:number of|num|count of) (?:cuda |nvidia )?(?:gpus?|devices?)\W{0,3}(?:available|found|detected|visible)?\s*[:=]\s*0\b|"
               r"\b(?:gpu|device) count\s*[:=]\s*0\b")),
     None, "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#cuda-environment-variables"),
    ("framework.cpu_build", "a CPU-only build named",
     _any(_all(r"(?:not compiled with|built without|compiled without) (?:cuda|gpu)|\bcpu[- ]only\b|\+cpu\b|\bcpuonly\b")),
     None, "https://pytorch.org/get-started/locally/"),
    ("cuda.out_of_memory", "GPU memory named as exhausted",
     _any(_all(r"\b(?:gpu|cuda\d*|device|vram)\b", r"not enough memory|insufficient memory|memory (?:exhausted|exceeded)|failed to allocate|"
               r"(?:allocation|alloc|malloc) failed|\boom\b")),
     None, "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html"),
)


def _fits(shape: _Shape, line: str) -> bool:
    return any(all(p.search(line) for p in alternative) for alternative in shape)


def find_hints(tail: bytes, first_line_no: int) -> Dict[str, List[Tuple[int, str, str, str]]]:
    """Hint lines in ``tail`` -> finding id -> [(line number, line, why, source)] (``first_line_no``:
    the number of the tail's first line in the log)."""
    text = tail.decode("utf-8", errors="replace")
    out: Dict[str, List[Tuple[int, str, str, str]]] = {}
    needs: Dict[int, bool] = {}
    for i, line in enumerate(text.split("\n")):
        line = line[:_MAX_LINE]
        if len(line) < 8:
            continue
        for k, (fid, why, shape, need, doc) in enumerate(HINTS):
            if not _fits(shape, line):
                continue
            if need is not None:
                if k not in needs:
                    needs[k] = bool(need.search(text))
                if not needs[k]:
                    continue
            out.setdefault(fid, []).append((first_line_no + i, line.strip()[:300], why, doc))
    return out


def add_hints(diags: list, tail: bytes, total_lines: int, make: Callable) -> list:
    """Append a low-confidence diagnosis per hinted class the diagnoses lack; ``make(sig_id, score,
    evidence)`` builds one. A class with more hint lines (then a later one) ranks first."""
    if not tail:
        return diags
    first = max(total_lines - tail.count(b"\n"), 0) + 1
    have = {d.finding.id for d in diags}
    hinted = [(fid, lines) for fid, lines in find_hints(tail, first).items() if fid not in have]
    hinted.sort(key=lambda x: (-len(x[1]), -x[1][-1][0]))
    for fid, lines in hinted:
        score = min(HINT_SCORE + 0.01 * (len(lines) - 1), HINT_MAX)
        d = make(fid, score, {"hint": lines[0][2], "hint_lines": [f"line {n}: {t}" for n, t, _, _ in lines[:3]],
                              "confidence_basis": "no known error signature matched; this is where the error points",
                              "hint_source": lines[0][3]})
        if d is not None:
            diags.append(d)
    return diags
