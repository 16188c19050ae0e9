"""Probes collect facts and never judge. Each module's ``probe(ctx) -> dict`` returns
JSON-serialisable facts; :data:`ALL` fixes their names, report areas and time budgets (s)."""
from __future__ import annotations

from gpudoctor.probes import (
    compilers, cuda, cudnn, driver, engine, environment, frameworks, platform, smoke_nvcc, smoke_nvrtc, smoke_tensorrt,
    tensorrt, toolkit,
)
from gpudoctor.runner import Probe

ALL = (
    Probe("platform", "platform", platform.probe, 5.0),
    Probe("environment", "environment", environment.probe, 5.0),
    Probe("driver", "driver", driver.probe, 15.0),
    Probe("cuda", "cuda", cuda.probe, 20.0),
    Probe("toolkit", "toolkit", toolkit.probe, 30.0),
    Probe("compilers", "compilers", compilers.probe, 15.0),
    Probe("cudnn", "cudnn", cudnn.probe, 20.0),
    Probe("tensorrt", "tensorrt", tensorrt.probe, 20.0),
    Probe("frameworks", "frameworks", frameworks.probe, 20.0),
    Probe("smoke_nvrtc", "smoke", smoke_nvrtc.probe, 60.0),
    Probe("smoke_nvcc", "smoke", smoke_nvcc.probe, 150.0),
    Probe("smoke_tensorrt", "smoke", smoke_tensorrt.probe, 120.0),
    Probe("engine", "tensorrt", engine.probe, 20.0),
)
