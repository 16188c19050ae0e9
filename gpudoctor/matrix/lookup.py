"""`gpudoctor matrix`: answers to the questions people ask of the compatibility matrix.

* :func:`cuda_answer` "12.4": drivers it needs, host compilers, GPU targets, OSes,
  and the cuDNN / TensorRT / framework builds made for it;
* :func:`driver_answer` "535.104.05": newest CUDA it runs natively and through
  minor-version compatibility;
* :func:`gpu_answer` "RTX 4090": compute capability, the CUDA releases that can
  target it, and which PyTorch wheels have SASS (or only PTX) for it.

Each returns plain JSON data; :func:`render_text` prints it. Unknown keys raise
:class:`LookupFailed` with the known values.
"""
from __future__ import annotations

import difflib
from typing import Any, Dict, List

from packaging.version import Version

from gpudoctor.formats.fatbin import coverage
from gpudoctor.matrix import Matrix, covers_cuda, sm_of

__all__ = ["LookupFailed", "cuda_answer", "driver_answer", "gpu_answer", "render_text"]


class LookupFailed(ValueError):
    """The query names something the matrix does not know."""


def _v(text: str) -> Version:
    return Version(text.replace(".x", ".999"))


def cuda_answer(m: Matrix, version: str) -> Dict[str, Any]:
    rel = m.cuda_release(version)
    if rel is None:
        raise LookupFailed(f"CUDA {version!r} is not in the matrix; known: "
                           + ", ".join(r.cuda for r in m.cuda_releases()))
    mvc = m.minor_version_compat(rel.major)
    c = rel.cuda
    return {
        "query": {"cuda": version},
        "cuda": c,
        "latest_update": rel.latest_update,
        "driver": {
            "native_linux": rel.min_driver_linux, "native_windows": rel.min_driver_windows,
            "minor_version_compat_linux": mvc.min_driver_linux if mvc else None,
            "minor_version_compat_windows": mvc.min_driver_windows if mvc else None,
            "runfile_bundled_linux": rel.runfile_driver_linux,
        },
        "host_compilers": {"gcc_max": rel.max_gcc, "clang_max": rel.max_clang, "msvc": list(rel.msvc)},
        "gpu_targets": {"min": rel.min_sm, "max": rel.max_sm, "all": list(rel.sms),
                        "arch_specific": [s for s in rel.sms if not s[-1].isdigit()]},
        "oses": [o.os for o in m.oses() if _v(o.cuda_min) <= _v(c) and (o.cuda_max is None or _v(c) <= _v(o.cuda_max))],
        "cudnn": [r.cudnn for r in m.cudnn_releases() if covers_cuda(r, c)],
        "tensorrt": [r.tensorrt for r in m.tensorrt_releases() if covers_cuda(r, c)],
        "torch": [f"{t.torch}+cu{b.cuda.replace('.', '')}" for t in m.torch_releases() for b in t.builds if b.cuda == c],
        "tensorflow": [t.tensorflow for t in m.tensorflow_releases() if t.cuda == c],
        "unconfirmed": list(rel.unconfirmed),
        "sources": list(dict.fromkeys(list(rel.source) + (list(mvc.source) if mvc else []))),
    }


def driver_answer(m: Matrix, version: str, os: str = "linux") -> Dict[str, Any]:
    native = m.max_cuda_for_driver(version, os)
    if native is None and m.driver_supports(version, m.cuda_releases()[0].cuda, os) == "unknown":
        raise LookupFailed(f"driver {version!r} is not a driver version like 535.104.05")
    with_mvc = None
    for rel in m.cuda_releases():
        if m.driver_supports(version, rel.cuda, os) in ("native", "minor_version_compat"):
            with_mvc = rel.cuda
    return {
        "query": {"driver": version, "os": os},
        "branch": version.split(".")[0],
        "newest_cuda_native": native,
        "newest_cuda_minor_version_compat": with_mvc,
        "runs": {rel.cuda: m.driver_supports(version, rel.cuda, os) for rel in m.cuda_releases()},
        "note": "minor-version compatibility runs applications of a newer minor release of the same CUDA major, "
                "without JIT-compiling PTX newer than the driver (CUDA Compatibility guide)",
    }


def gpu_answer(m: Matrix, name: str) -> Dict[str, Any]:
    info = m.gpu_by_name(name)
    if info is None:
        close = difflib.get_close_matches(name, [g.example for g in m.gpus()], n=3, cutoff=0.4)
        raise LookupFailed(f"no GPU in the matrix matches {name!r}" + (f"; did you mean {', '.join(close)}?" if close else ""))
    sm = sm_of(info.cc)
    n = int(sm[3:])
    span = m.cuda_range_for_sm(sm)
    cudas = [r.cuda for r in m.cuda_releases() if sm in r.sms]
    sass, ptx_only, none = [], [], []
    for t in m.torch_releases():
        for b in t.builds:
            tag = f"{t.torch}+cu{b.cuda.replace('.', '')}"
            # The loader's own rules: SASS runs on later minors of its major, 'a' targets only on their CC.
            verdict = coverage({"sass": list(b.sass), "ptx": list(b.ptx)}, info.cc).verdict
            {"sass": sass, "ptx_jit": ptx_only}.get(verdict, none).append(tag)
    return {
        "query": {"gpu": name},
        "matched": info.example, "compute_capability": info.cc, "sm": sm,
        "family": m.family(info.cc) or info.family, "segment": info.segment,
        "cuda": {"oldest": span[0], "newest": span[1]} if span else None,
        "arch_specific_targets": sorted({s for r in m.cuda_releases() for s in r.sms if s.startswith(sm) and s != sm}),
        # A library line serves the GPU when its SM range admits it and it supports a CUDA that can target it.
        "cudnn": [c.cudnn for c in m.cudnn_releases() if (not c.min_sm or int(c.min_sm[3:]) <= n)
                  and any(covers_cuda(c, x) for x in cudas)],
        "tensorrt": [t.tensorrt for t in m.tensorrt_releases()
                     if (not t.min_sm or int(t.min_sm[3:]) <= n) and (not t.max_sm or n <= int(t.max_sm[3:]))
                     and any(covers_cuda(t, x) for x in cudas)],
        "torch": {"sass": sass, "ptx_jit_only": ptx_only, "no_kernel_image": none},
        "unconfirmed": list(info.unconfirmed),
        "sources": list(info.source),
    }


def _lines(data: Any, indent: int = 0) -> List[str]:
    pad = "  " * indent
    out: List[str] = []
    for key, value in data.items():
        if key in ("query",):
            continue
        label = key.replace("_", " ")
        if isinstance(value, dict):
            out.append(f"{pad}{label}:")
            out += _lines(value, indent + 1)
        elif isinstance(value, list):
            out.append(f"{pad}{label}: {', '.join(map(str, value)) if value else '-'}")
        else:
            out.append(f"{pad}{label}: {'-' if value is None else value}")
    return out


def render_text(data: Dict[str, Any]) -> str:
    """Indented ``key: value`` text of an answer (lists comma-separated, missing values as '-')."""
    return "\n".join(_lines(data)) + "\n"
