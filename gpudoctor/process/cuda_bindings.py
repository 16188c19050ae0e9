"""cuda-python, as the child-process workers use it: one binding module at a time, results as names.

Shared by :mod:`gpudoctor.process.worker` and :mod:`gpudoctor.process.trt_smoke` (so neither imports the other)."""
from __future__ import annotations


def binding(name: str):
    """One cuda-python module (driver | runtime | nvrtc), new layout (cuda.bindings) or old (cuda.cuda);
    imported one at a time because each costs start-up time."""
    import importlib

    try:
        return importlib.import_module(f"cuda.bindings.{name}")
    except ImportError:
        old = {"driver": "cuda.cuda", "runtime": "cuda.cudart", "nvrtc": "cuda.nvrtc"}[name]  # cuda-python < 12.6
        return importlib.import_module(old)


def name(code) -> str:
    return getattr(code, "name", str(code))


def bindings_version():
    from importlib import metadata

    for dist in ("cuda-bindings", "cuda-python"):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return None


def call(fn, *args):
    """cuda-python returns (err, values...); return (err_name, first value) and never raise."""
    try:
        out = fn(*args)
    except Exception as exc:  # a missing libcuda/libnvrtc surfaces here as a pathfinder error
        return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}", None
    err = name(out[0])
    return err, (out[1] if len(out) > 1 else None)
