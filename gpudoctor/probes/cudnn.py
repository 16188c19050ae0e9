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

from gpudoctor.formats import nvidia_driver as nvidia_driver_fmt
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
    libs = []
    for c in copies:
        info = c.to_dict()
        got = api.get(c.realpath) or {}
        info["api"] = got
        if "cudnnGetVersion" in got:
            info["api_version"] = cudnn_fmt.cudnn_version_from_int(got["cudnnGetVersion"])
        built = got.get("cudnnGetCudartVersion")
        m = _WHEEL_CUDA.match(c.package or "")
        info["built_for_cuda_major"] = int(m.group(1)) if m else (built // 1000 if built else None)
        info["built_for_cuda"] = nvidia_driver_fmt.cuda_version_from_int(built) if built else None
        libs.append(info)
    headers, problems = [], []
    for h in _header_candidates(idx):
        text = read_text(h, problems, limit=65536)
        v = cudnn_fmt.parse_cudnn_version_header(text) if text is not None else None
        headers.append({"path": h, "version": ".".join(map(str, v)) if v else None})
    majors = sorted({(c.version or "").split(".")[0] for c in copies if c.version})
    return {
        "libraries": libs,
        "headers": headers,
        "loader_pick": {f"libcudnn.so.{m}": idx.loader_pick(f"libcudnn.so.{m}") for m in majors if m},
        "problems": problems,
    }
