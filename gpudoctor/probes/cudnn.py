"""Every cuDNN on the machine: library copies, headers, and what each library says of itself.

Versions come from three places that can disagree (the disagreement is the bug):
the file or wheel name, ``cudnn_version.h`` next to it, and ``cudnnGetVersion()`` /
``cudnnGetCudartVersion()`` asked in a child process (the latter gives the CUDA
version the library was built for). A root on disk (``check --root`` / ``--image``) is read through its view
and never asked (nothing of it is run): a wheel's version stands for the library's, less the wheel's build
number (nvidia-cudnn-cu13 9.19.0.56 is cuDNN 9.19.0, as its cudnnGetVersion says).
"""
from __future__ import annotations

import os
import re

from gpudoctor.formats import cudnn as cudnn_fmt

from gpudoctor.probes import facts as typed
from gpudoctor.probes.facts_system import CudnnFacts, CudnnHeader, CudnnLibrary
from gpudoctor.probes.libfind import index_for
from gpudoctor.probes._worker import ask_libraries
from gpudoctor.process.problems import read_text

_WHEEL_CUDA = re.compile(r"nvidia-cudnn-cu(\d+)")
HEADER_DIRS = ("/usr/include", "/usr/include/x86_64-linux-gnu", "/usr/local/include")


def _header_candidates(idx) -> list:
    view = idx.view
    dirs = list(HEADER_DIRS) + view.glob("/usr/local/cuda*/include")
    for sp in idx.site_dirs:
        dirs.append(os.path.join(sp, "nvidia", "cudnn", "include"))
    if idx.env.get("CONDA_PREFIX"):
        dirs.append(os.path.join(idx.env["CONDA_PREFIX"], "include"))
    out, seen = [], set()
    for d in dirs:
        h = os.path.join(d, "cudnn_version.h")
        if view.lstat(h) is not None and view.realpath(h) not in seen:
            seen.add(view.realpath(h))
            out.append(h)
    return out


def _unasked(copy: dict) -> dict:
    """A copy's facts when the library is not asked (a root on disk): its wheel's version cut to cuDNN's own
    major.minor.patch."""
    v = copy.get("version") or ""
    if copy.get("package") and v.count(".") >= 3:
        return dict(copy, version=".".join(v.split(".")[:3]), version_from=f"its wheel {copy['package']} {v}")
    return copy


def probe(ctx) -> dict:
    """``{"libraries": [{path, realpath, origin, version, package, built_for_cuda_major, api: {...},
    wheel_libraries_missing: [paths its wheel's RECORD lists that are not on disk] (only when there are)}],
    "headers": [{path, version}], "loader_pick": {soname: path}, "problems": [...]}``; versions validated
    (:class:`~gpudoctor.probes.facts_system.CudnnFacts`)."""
    idx = index_for(ctx)
    copies = [c for c in idx.copies("libcudnn")]
    api = ask_libraries(ctx, [c.realpath for c in copies]) if idx.view.live else {}
    libs, problems = [], []
    for c in copies:
        # Validated where parsed (facts_system.CudnnLibrary): an implausible answer is a problem, never a version.
        m = _WHEEL_CUDA.match(c.package or "")
        copy = c.to_dict() if idx.view.live else _unasked(c.to_dict())
        gone = next((v for (name, _), v in idx.wheel_libs_missing.items() if name == c.package), None)
        if gone:  # cuDNN 9's libcudnn.so.9 dlopens its sub-libraries on first use: without them it aborts
            copy["wheel_libraries_missing"] = sorted(gone)
        libs.append(CudnnLibrary.parse(copy, api.get(c.realpath) or {},
                                       typed.Origin(c.realpath, "the library-version worker", problems),
                                       int(m.group(1)) if m else None))
    headers = []
    for h in _header_candidates(idx):
        text = read_text(idx.view.host(h) or h, problems, limit=65536)
        v = cudnn_fmt.parse_cudnn_version_header(text) if text is not None else None
        headers.append(CudnnHeader.parse(h, v, typed.Origin(h, "cudnn_version.h", problems)))
    majors = sorted({(c.version or "").split(".")[0] for c in copies if c.version})
    return CudnnFacts(libs, headers, {f"libcudnn.so.{m}": idx.loader_pick(f"libcudnn.so.{m}") for m in majors if m},
                      problems).to_dict()
