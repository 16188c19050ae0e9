"""Probes collect facts and never judge. Each module's ``probe(ctx) -> dict`` returns
JSON-serialisable facts; :data:`ALL` fixes their names, report areas and time budgets (s).

``ALL`` is built on first use (PEP 562), so importing one probe module (the smoke-test prestart
does, first thing in a check) does not import all the others."""
from __future__ import annotations

_NAMES = (  # (name, report area, time budget in s)
    ("platform", "platform", 5.0), ("environment", "environment", 5.0), ("driver", "driver", 15.0),
    ("cuda", "cuda", 20.0), ("toolkit", "toolkit", 30.0), ("compilers", "compilers", 15.0), ("cudnn", "cudnn", 20.0),
    ("tensorrt", "tensorrt", 20.0), ("frameworks", "frameworks", 20.0), ("smoke_nvrtc", "smoke", 60.0),
    ("smoke_nvcc", "smoke", 150.0), ("smoke_tensorrt", "smoke", 120.0), ("engine", "tensorrt", 20.0),
    ("nccl", "multigpu", 20.0), ("smoke_multigpu", "smoke", 120.0),
    ("loader", "environment", 5.0), ("process_limits", "devices", 15.0),
)
#: On Windows, also what the system's files say (toolkits, CUDA_PATH, the DLLs Windows loads, copied-in cuDNN,
#: Visual Studio): the probe of ``check --root --os windows``, reading this machine (name, module, area, budget).
_WINDOWS = (("windows", "windows_root", "toolkit", 20.0),)


def __getattr__(name: str):
    if name == "ALL":
        import importlib

        from gpudoctor.process.runner import Probe

        import sys

        named = [(n, n, area, budget) for n, area, budget in _NAMES] + (list(_WINDOWS) if sys.platform == "win32" else [])
        all_ = tuple(Probe(n, area, importlib.import_module(f"gpudoctor.probes.{m}").probe, budget)
                     for n, m, area, budget in named)
        globals()["ALL"] = all_
        return all_
    raise AttributeError(f"module 'gpudoctor.probes' has no attribute {name!r}")
