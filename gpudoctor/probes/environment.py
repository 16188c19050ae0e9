"""Environment variables that steer CUDA: device visibility, library and tool search paths."""
from __future__ import annotations

import os
import re

from gpudoctor.formats import cuda_env as cuda_env_fmt
from gpudoctor.probes.facts import Origin
from gpudoctor.probes.facts_system import EnvironmentFacts

_CUDA_DIR_VERSION = re.compile(r"cuda[-_/]?(\d{1,2}\.\d)(?![\d])", re.IGNORECASE)

TOOL_VARS = ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT", "CUDAHOSTCXX", "NVCC_CCBIN", "NVCC_APPEND_FLAGS",
             "NVCC_PREPEND_FLAGS", "CUDA_DEVICE_ORDER", "CUDA_MODULE_LOADING", "CUDA_LAUNCH_BLOCKING",
             "TORCH_CUDA_ARCH_LIST", "CUDA_CACHE_DISABLE", "CUDA_FORCE_PTX_JIT", "CUDA_DISABLE_PTX_JIT")
# A batch scheduler's job: it sets CUDA_VISIBLE_DEVICES to the job's GPUs on purpose.
SCHEDULER_VARS = ("SLURM_JOB_ID", "SLURM_STEP_GPUS", "SLURM_JOB_GPUS", "PBS_JOBID", "LSB_JOBID", "FLUX_JOB_ID")


def cuda_version_in_path(path: str, view=None):
    """The CUDA version a path names (``/usr/local/cuda-10.1/lib64`` → ``"10.1"``), following
    symlinks (``/usr/local/cuda`` → ``cuda-13.0``; in ``view``'s system when given); None when it names none."""
    real = view.realpath(path) if view is not None else os.path.realpath(path)
    for candidate in (path, real or path):
        m = _CUDA_DIR_VERSION.search(candidate)
        if m:
            return m.group(1)
    return None


def _path_entries(value: str, view):
    out = []
    for i, entry in enumerate(value.split(":") if value else []):
        if not entry:
            continue
        out.append({
            "index": i,
            "path": entry,
            "exists": view.isdir(entry),
            "cuda_version": cuda_version_in_path(entry, view),
        })
    return out


def _view(ctx):
    if getattr(ctx, "view", None) is not None:
        return ctx.view
    from gpudoctor.sysroot.view import live_view

    return live_view(ctx.env)


def probe(ctx) -> dict:
    """``{"cuda_visible_devices": parsed, "ld_library_path": [{index, path, exists, cuda_version}],
    "path": [... entries holding nvcc ...], "vars": {name: value},
    "var_cuda_versions": {"CUDA_HOME": "12.4", ...}, "var_dirs": {"CUDA_HOME": bool, ...} (whether it names a
    directory of the judged system), "problems"?: [...]}`` (the CUDA release a path variable
    names, validated: :class:`~gpudoctor.probes.facts_system.EnvironmentFacts`; "problems" only when one was rejected)."""
    view = _view(ctx)
    path_entries = [e for e in _path_entries(ctx.env.get("PATH", ""), view)
                    if e["exists"] and view.exists(os.path.join(e["path"], "nvcc"))]
    raw = {
        "cuda_visible_devices": cuda_env_fmt.parse_cuda_visible_devices(ctx.env.get("CUDA_VISIBLE_DEVICES")),
        "ld_library_path": _path_entries(ctx.env.get("LD_LIBRARY_PATH", ""), view),
        "path_cuda_entries": path_entries,
        "vars": {k: ctx.env[k] for k in TOOL_VARS if k in ctx.env},
        "scheduler_vars": {k: ctx.env[k] for k in SCHEDULER_VARS if k in ctx.env},
        "var_cuda_versions": {k: v for k in ("CUDA_HOME", "CUDA_PATH") if k in ctx.env
                              for v in [cuda_version_in_path(ctx.env[k], view)] if v},
        # whether each toolkit variable names a directory of the judged system (rules judge it, never look)
        "var_dirs": {k: view.isdir(ctx.env[k]) for k in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT") if ctx.env.get(k)},
    }
    return EnvironmentFacts.parse(raw, Origin("environment", "the environment probe (a directory name)"), ctx.env).to_dict()
