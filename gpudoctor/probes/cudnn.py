"""Every cuDNN on the machine: library copies, headers, and what each library says of itself.

Versions come from three places that can disagree (the disagreement is the bug):
the file or wheel name, ``cudnn_version.h`` next to it, and ``cudnnGetVersion()`` /
``cudnnGetCudartVersion()`` asked in a child process (the latter gives the CUDA
version the library was built for).
"""
from __future__ import annotations

import glob
import os
import re

from gpudoctor.formats import cudnn as cudnn_fmt

from gpudoctor.probes import facts as typed
from gpudoctor.probes.libfind import index_for
from gpudoctor.probes._worker import ask_libraries
from gpudoctor.process.problems import read_text

_WHEEL_CUDA = re.compile(r"nvidia-cudnn-cu(\d+)")
HEADER_DIRS = ("/usr/include", "/usr/include/x86_64-linux-gnu", "/usr/local/include")


def _header_candidates(idx) -> list:
    dirs = list(HEADER_DIRS) + sorted(glob.glob("/usr/local/cuda*/include"))
    for sp in idx.site_dirs:
        dirs.append(os.path.join(sp, "nvidia", "cudnn", "include"))
    if idx.env.get("CONDA_PREFIX"):
        dirs.append(os.path.join(idx.env["CONDA_PREFIX"], "include"))
    out, seen = [], set()
    for d in dirs:
        h = os.path.join(d, "cudnn_version.h")
        if os.path.lexists(h) and os.path.realpath(h) not in seen:
            seen.add(os.path.realpath(h))
            out.append(h)
    return out


def probe(ctx) -> dict:
    """``{"libraries": [{path, realpath, origin, version, package, built_for_cuda_major, api: {...}}],
    "headers": [{path, version}], "loader_pick": {soname: path}}``."""
    idx = index_for(ctx)
    copies = [c for c in idx.copies("libcudnn")]
    api = ask_libraries(ctx, [c.realpath for c in copies])
    libs, problems = [], []
    for c in copies:
        info = c.to_dict()
        got = api.get(c.realpath) or {}
        info["api"] = got
        # Validated where parsed (gpudoctor.probes.facts): an implausible answer is a problem, never a version.
        origin = typed.Origin(c.realpath, "the library-version worker", problems)
        if "cudnnGetVersion" in got:
            info["api_version"] = origin.take(typed.cudnn_version, got["cudnnGetVersion"], "cudnnGetVersion")
        built = got.get("cudnnGetCudartVersion")
        built_cuda = origin.take(typed.cuda_version, built, "cudnnGetCudartVersion") if built else None
        m = _WHEEL_CUDA.match(c.package or "")
        info["built_for_cuda_major"] = int(m.group(1)) if m else (int(built_cuda.split(".")[0]) if built_cuda else None)
        info["built_for_cuda"] = built_cuda
        libs.append(info)
    headers = []
    for h in _header_candidates(idx):
        text = read_text(h, problems, limit=65536)
        v = cudnn_fmt.parse_cudnn_version_header(text) if text is not None else None
        said = typed.Origin(h, "cudnn_version.h", problems)
        headers.append({"path": h, "version": said.take(typed.cudnn_version, ".".join(map(str, v)) if v else None,
                                                        "CUDNN_MAJOR.CUDNN_MINOR.CUDNN_PATCHLEVEL")})
    majors = sorted({(c.version or "").split(".")[0] for c in copies if c.version})
    return {
        "libraries": libs,
        "headers": headers,
        "loader_pick": {f"libcudnn.so.{m}": idx.loader_pick(f"libcudnn.so.{m}") for m in majors if m},
        "problems": problems,
    }
