"""Typed facts of the smoke probes and the engine probe, validated where they are parsed.

As :mod:`gpudoctor.probes.facts`: a probe hands its worker's answer to ``X.parse(raw, origin)``; a version or
compute capability is kept only when plausible, else it is ``None`` (or left out of a list) and an
``implausible`` problem record naming the file that answered (``probe.implausible_value``), never an input
to an arch or version rule. ``to_dict()`` gives the probe's JSON shape as it was (same keys, same order):
each type keeps the answer it parsed (``raw``) and writes back only its typed values; other keys pass through.

Plausible (structure only, never the matrix):

* NVRTC's version (nvrtcVersion): a CUDA ``major.minor`` (:func:`gpudoctor.probes.facts.cuda_version`);
* an arch ``sm_XY[a|f]`` (nvrtcGetSupportedArchs, or a device's compute capability as the worker wrote it)
  whose ``X.Y`` is a compute capability (:func:`gpudoctor.probes.facts.compute_capability`): ``sm_90``,
  ``sm_100``, ``sm_121``; ``sm_NoneNone`` (a failed cuDeviceGetAttribute) or ``sm_999`` are not;
* a plan header's TensorRT version: :func:`gpudoctor.probes.facts_frameworks.tensorrt_version`, and its
  compute capability as above;
* a smoke build's nvcc release and a device's compute capability: CUDA ``major.minor`` / compute capability.
"""
from __future__ import annotations

import re
from gpudoctor.probes.record import factclass, field
from typing import Dict, List, Optional

from gpudoctor.probes.facts import Implausible, Origin, compute_capability, cuda_version
from gpudoctor.probes.facts_frameworks import nccl_version, tensorrt_version

__all__ = ["sm_arch", "NvrtcRun", "NvrtcSmokeFacts", "EngineRecord", "EngineFacts", "TensorRTSmokeFacts",
           "MultiGpuSmokeFacts", "NvccBuild", "NvccSmokeFacts"]

_SM = re.compile(r"sm_(\d{1,2})(\d)([af]?)")


def sm_arch(value) -> str:
    """``"sm_90"`` as given; raises :class:`Implausible` unless ``sm_`` + a plausible compute capability's digits."""
    m = _SM.fullmatch(value) if isinstance(value, str) else None
    try:
        if not m:
            raise Implausible(value, "")
        compute_capability(f"{int(m.group(1))}.{m.group(2)}")
    except Implausible:
        raise Implausible(value, "a GPU arch (sm_ and a compute capability's digits, e.g. sm_90)") from None
    return value


def _with(raw: dict, problems: List[dict], **typed) -> dict:
    """``raw`` with the typed values written back where raw had them (order kept); ``problems`` added when any."""
    out = dict(raw)
    out.update({k: v for k, v in typed.items() if k in raw})
    if problems:
        out["problems"] = list(problems)
    return out


@factclass
class NvrtcRun:
    """One compile (and launch) of the NVRTC smoke worker: ``ordinal`` the device (None: no device), ``arch``
    the CUBIN's target; ``raw`` the rest (compile_result, compile_seconds, log, cubin_bytes, launch, ...)."""

    ordinal: Optional[int]
    arch: str
    raw: Dict[str, object]

    def to_dict(self) -> dict:
        return _with(self.raw, [], ordinal=self.ordinal, arch=self.arch)


@factclass
class NvrtcSmokeFacts:
    """The smoke_nvrtc probe's facts (:func:`gpudoctor.process.worker.task_nvrtc_smoke`): ``nvrtc_version``
    ("13.0"), ``supported_archs`` (["sm_75", ...]), ``runs``; a run whose arch (the device's compute capability)
    was rejected is left out, so no smoke or arch finding is built on it."""

    nvrtc_version: Optional[str]
    supported_archs: Optional[List[str]]
    runs: Optional[List[NvrtcRun]]
    problems: List[dict]
    raw: Dict[str, object]

    @classmethod
    def parse(cls, raw: dict, nvrtc: Origin, device: Origin) -> "NvrtcSmokeFacts":
        """``nvrtc`` says where NVRTC's answers come from (libnvrtc), ``device`` the devices' (libcuda)."""
        archs = raw.get("nvrtc_supported_archs")
        if isinstance(archs, list):
            archs = [a for a in (nvrtc.take(sm_arch, a, "nvrtcGetSupportedArchs") for a in archs) if a]
        runs = None
        if isinstance(raw.get("runs"), list):
            runs = []
            for r in raw["runs"]:
                if not isinstance(r, dict):
                    continue
                i = r.get("ordinal")
                arch = (device.take(sm_arch, r.get("arch"), f"cuDeviceGetAttribute(COMPUTE_CAPABILITY, {i})")
                        if i is not None else nvrtc.take(sm_arch, r.get("arch"), "nvrtcGetSupportedArchs"))
                if arch is not None or r.get("arch") is None:
                    runs.append(NvrtcRun(i, arch, dict(r)))
        version = nvrtc.take(cuda_version, raw.get("nvrtc_version"), "nvrtcVersion")
        problems = list(raw.get("problems") or []) + nvrtc.problems + device.problems
        return cls(version, archs, runs, problems, dict(raw))

    def to_dict(self) -> dict:
        return _with(self.raw, self.problems, nvrtc_version=self.nvrtc_version, nvrtc_supported_archs=self.supported_archs,
                     runs=None if self.runs is None else [r.to_dict() for r in self.runs])


@factclass
class EngineRecord:
    """One ``--engine`` plan (:func:`gpudoctor.probes.engine.probe`): ``header`` the plan header's facts
    (:func:`gpudoctor.formats.engine_plan.header_facts`) with ``trt_version`` (its parts joined) and
    ``compute_capability`` validated (a rejected version is None in ``trt_version`` and ``trt_version_text``), or ``error``/``reason`` when the
    file is no plan; ``raw`` keeps the rest (``runtime_answer``)."""

    path: str
    header: Optional[dict]
    error: Optional[str]
    reason: Optional[str]
    raw: Dict[str, object]

    @classmethod
    def parse(cls, raw: dict, origin: Origin) -> "EngineRecord":
        path, header = raw.get("path"), raw.get("header")
        if isinstance(header, dict):
            header = dict(header)
            parts = header.get("trt_version")  # [10, 13, 3, 9]; the text may be a range ("8.0-8.2"): parts decide
            said = ".".join(map(str, parts)) if isinstance(parts, list) else parts
            if parts and origin.take(tensorrt_version, said, "the plan header's TensorRT version", path=path) is None:
                header.update(trt_version=None, trt_version_text=None)
            header["compute_capability"] = origin.take(compute_capability, header.get("compute_capability"),
                                                       "the plan header's compute capability", path=path)
        return cls(path, header, raw.get("error"), raw.get("reason"), dict(raw))

    def to_dict(self) -> dict:
        return _with(self.raw, [], path=self.path, header=self.header, error=self.error, reason=self.reason)


@factclass
class EngineFacts:
    """The engine probe's facts: ``engines`` (:class:`EngineRecord`); ``problems`` only when a value was rejected."""

    engines: List[EngineRecord]
    problems: List[dict]

    @classmethod
    def parse(cls, raw: dict, origin: Origin) -> "EngineFacts":
        engines = [EngineRecord.parse(e, origin) for e in raw.get("engines") or [] if isinstance(e, dict)]
        return cls(engines, list(origin.problems))

    def to_dict(self) -> dict:
        return _with({"engines": None}, self.problems, engines=[e.to_dict() for e in self.engines])


@factclass
class TensorRTSmokeFacts:
    """The smoke_tensorrt probe's facts (:func:`gpudoctor.process.trt_smoke.task_trt_smoke`, or a skip):
    ``version`` the imported module's ``__version__``, ``libnvinfer`` ``{"path", "version"}`` from its
    getInferLibVersion(), ``engine`` ``{"tensorrt_version", "version_source"}`` the TensorRT that built the
    engine; each version validated (a rejected one is None); ``raw`` the rest."""

    version: Optional[str]
    libnvinfer: Optional[dict]
    engine: Optional[dict]
    problems: List[dict]
    raw: Dict[str, object]

    @classmethod
    def parse(cls, raw: dict, origin: Origin) -> "TensorRTSmokeFacts":
        module = raw.get("module_path") or raw.get("module")
        version = origin.take(tensorrt_version, raw.get("version"), f"{raw.get('module') or 'tensorrt'}.__version__",
                              path=module)
        lib = raw.get("libnvinfer")
        if isinstance(lib, dict):
            lib = dict(lib, version=origin.take(tensorrt_version, lib.get("version"), "getInferLibVersion",
                                                path=lib.get("path")))
        eng = raw.get("engine")
        if isinstance(eng, dict):
            src = str(eng.get("version_source") or "")
            where = src.rpartition(" of ")[2] if " of " in src else module
            eng = dict(eng, tensorrt_version=origin.take(tensorrt_version, eng.get("tensorrt_version"),
                                                         src or "the engine's TensorRT version", path=where))
        return cls(version, lib, eng, list(raw.get("problems") or []) + origin.problems, dict(raw))

    def to_dict(self) -> dict:
        return _with(self.raw, self.problems, version=self.version, libnvinfer=self.libnvinfer, engine=self.engine)


@factclass
class MultiGpuSmokeFacts:
    """The smoke_multigpu probe's facts (:func:`gpudoctor.process.multigpu_smoke.multigpu_smoke_main`, or a
    skip): ``device_count`` (0-1024, cudaGetDeviceCount), ``nccl`` the all-reduce's answer with its
    ``version_code`` (ncclGetVersion, 22803 for 2.28.3) validated, ``nccl_library`` the libnccl the child was
    given; a rejected value is None; ``raw`` the rest (peer copies)."""

    device_count: Optional[int]
    nccl: Optional[dict]
    nccl_library: Optional[str]
    problems: List[dict]
    raw: Dict[str, object]

    @classmethod
    def parse(cls, raw: dict, origin: Origin) -> "MultiGpuSmokeFacts":
        count = origin.take(_device_count, raw.get("device_count"), "cudaGetDeviceCount")
        nccl = raw.get("nccl")
        if isinstance(nccl, dict) and "version_code" in nccl:
            said = origin.take(_nccl_code, nccl["version_code"], "ncclGetVersion", path=raw.get("nccl_library"))
            nccl = dict(nccl, version_code=said)
        return cls(count, nccl, raw.get("nccl_library"), list(raw.get("problems") or []) + origin.problems, dict(raw))

    def to_dict(self) -> dict:
        return _with(self.raw, self.problems, device_count=self.device_count, nccl=self.nccl,
                     nccl_library=self.nccl_library)


def _nccl_code(value) -> int:
    """ncclGetVersion's int, kept as given when it decodes to a plausible 2.x.y (:func:`facts_frameworks.nccl_version`)."""
    from gpudoctor.formats.nccl_env import nccl_version_from_int

    try:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError
        nccl_version(nccl_version_from_int(value))
    except (ValueError, Implausible):
        raise Implausible(value, "an NCCL version code (ncclGetVersion: 22803 for 2.28.3)") from None
    return value


def _device_count(value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 1024:
        raise Implausible(value, "a device count (0-1024)")
    return value


@factclass
class NvccBuild:
    """One nvcc smoke build (:func:`gpudoctor.probes.smoke_nvcc.probe`): ``nvcc`` the compiler, ``release``
    its CUDA release ("13.0"); ``raw`` the rest (command, compile output, run, cache, differential)."""

    nvcc: Optional[str]
    release: Optional[str]
    raw: Dict[str, object]

    def to_dict(self) -> dict:
        return _with(self.raw, [], nvcc=self.nvcc, release=self.release)


@factclass
class NvccSmokeFacts:
    """The smoke_nvcc probe's facts: ``builds`` (:class:`NvccBuild`), ``device_ccs`` the GPUs' compute
    capabilities the builds targeted; a rejected release or capability is None / left out."""

    builds: Optional[List[NvccBuild]]
    device_ccs: Optional[List[str]]
    problems: List[dict]
    raw: Dict[str, object]

    @classmethod
    def parse(cls, raw: dict, origin: Origin) -> "NvccSmokeFacts":
        builds = None
        if isinstance(raw.get("builds"), list):
            builds = [NvccBuild(b.get("nvcc"), origin.take(cuda_version, b.get("release"), "nvcc --version (release)",
                                                           path=b.get("nvcc")), dict(b))
                      for b in raw["builds"] if isinstance(b, dict)]
        ccs = raw.get("device_ccs")
        if isinstance(ccs, list):
            ccs = [c for c in (origin.take(compute_capability, c, "nvmlDeviceGetCudaComputeCapability") for c in ccs) if c]
        return cls(builds, ccs, list(raw.get("problems") or []) + origin.problems, dict(raw))

    def to_dict(self) -> dict:
        return _with(self.raw, self.problems, device_ccs=self.device_ccs,
                     builds=None if self.builds is None else [b.to_dict() for b in self.builds])
