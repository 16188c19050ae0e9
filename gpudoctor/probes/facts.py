"""Typed facts of the driver and CUDA probes, validated where they are parsed.

A probe hands what a tool or library said to ``X.parse(raw, origin)``; each version, compute capability,
name, UUID or memory size is kept only when it is plausible. An implausible one is left out of the facts
(``None``) and becomes a problem record of kind ``implausible`` (:mod:`gpudoctor.process.problems`) with the
raw value, the call that produced it and the file that answered, so it reaches the report as a probe error
and never a version rule. ``to_dict()`` gives the JSON shape the report has always had (docs/json-report.md);
keys this module does not type (a newer worker's) pass through unchanged.

Plausible, from NVIDIA's numbering (checked on structure, never against the matrix, so a GPU or driver newer
than the matrix is still seen):

* driver version: ``NNN.N[NN][.N[N]]`` with a three-digit branch 100-999 (CUDA 1.0 needed driver 100.14;
  R384 ... R580 are ``580.95.05``-shaped; Jetson says ``540.4.0``; NVML on Windows ``581.15``);
* CUDA version: ``major.minor``, major 1-20, minor 0-9 (an int from cuDriverGetVersion/NVML is
  ``1000 * major + 10 * minor``);
* compute capability: ``major.minor``, major 1-20, minor 0-9 (NVIDIA's published set is 1.0 ... 12.1);
* GPU name: printable, 1-96 characters (NVML_DEVICE_NAME_V2_BUFFER_SIZE); UUID ``GPU-``/``MIG-`` + 32 hex
  digits in 8-4-4-4-12 groups; memory 1 MiB - 16 TiB.
"""
from __future__ import annotations

import re
from gpudoctor.probes.record import factclass, field
from typing import Dict, List, Optional, Tuple

from gpudoctor.process.problems import record


class Implausible(ValueError):
    """A value that cannot be what its source claims; ``expected`` says what it should look like."""

    def __init__(self, value, expected: str):
        super().__init__(f"{value!r} is not {expected}")
        self.value, self.expected = value, expected


_DRIVER = re.compile(r"[1-9]\d{2}\.\d{1,3}(\.\d{1,2})?")
_MAJOR_MINOR = re.compile(r"(\d{1,2})\.(\d{1,2})")
_UUID = re.compile(r"(GPU|MIG)-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
MAX_MEMORY_MIB = 16 << 20


def driver_version(value) -> str:
    """``"580.95.05"`` as given; raises :class:`Implausible` for anything not shaped like an NVIDIA driver
    version (``"1"``, ``""``, ``"0.0"``, ``"12.4"``, a 4-digit branch)."""
    text = value.strip() if isinstance(value, str) else None
    if not text or not _DRIVER.fullmatch(text):
        raise Implausible(value, "an NVIDIA driver version (a branch 100-999 and a release, e.g. 580.95.05)")
    return text


def _major_minor(value, expected: str) -> str:
    if isinstance(value, bool):
        raise Implausible(value, expected)
    if isinstance(value, int):  # 13000 -> 13.0, 12020 -> 12.2 (cuDriverGetVersion, NVML, CUDA_VERSION)
        if value < 0 or value % 10:
            raise Implausible(value, expected)
        value = f"{value // 1000}.{(value % 1000) // 10}"
    m = _MAJOR_MINOR.fullmatch(value.strip()) if isinstance(value, str) else None
    if not m or not (1 <= int(m.group(1)) <= 20 and 0 <= int(m.group(2)) <= 9):
        raise Implausible(value, expected)
    return f"{int(m.group(1))}.{int(m.group(2))}"


def cuda_version(value) -> str:
    """``"13.0"`` from ``"13.0"`` or ``13000``; raises :class:`Implausible` outside major 1-20, minor 0-9."""
    return _major_minor(value, "a CUDA version (major 1-20, minor 0-9, e.g. 13.0)")


def compute_capability(value) -> str:
    """``"9.0"`` from ``"9.0"`` or ``(9, 0)``; raises :class:`Implausible` outside major 1-20, minor 0-9."""
    if isinstance(value, (tuple, list)) and len(value) == 2 and all(isinstance(x, int) for x in value):
        value = f"{value[0]}.{value[1]}"
    elif isinstance(value, int):
        raise Implausible(value, "a compute capability")
    return _major_minor(value, "a compute capability (major 1-20, minor 0-9, e.g. 9.0)")


def nvml_version(value) -> str:
    """NVML's own version, the CUDA major and the driver version: ``"13.580.95.05"``; raises :class:`Implausible`."""
    head, _, rest = value.strip().partition(".") if isinstance(value, str) else ("", "", "")
    try:
        if not (head.isdigit() and 1 <= int(head) <= 20):
            raise Implausible(value, "")
        driver_version(rest)
    except Implausible:
        raise Implausible(value, "an NVML version (a CUDA major and a driver version, e.g. 13.580.95.05)") from None
    return value.strip()


def cudnn_version(value) -> str:
    """``"9.1.0"`` from ``cudnnGetVersion()``'s int (90100; 8907 for cuDNN 8) or a dotted text; raises
    :class:`Implausible` for 0, the never-used 10000-89999 range, or a major outside 1-20."""
    from gpudoctor.formats.cudnn import cudnn_version_from_int

    expected = "a cuDNN version (e.g. 9.1.0 from cudnnGetVersion() = 90100)"
    try:
        text = cudnn_version_from_int(value) if isinstance(value, int) and not isinstance(value, bool) else value
    except ValueError:
        raise Implausible(value, expected) from None
    parts = text.split(".") if isinstance(text, str) else []
    if len(parts) != 3 or not all(p.isdigit() for p in parts) or not 1 <= int(parts[0]) <= 20:
        raise Implausible(value, expected)
    return text


def gpu_name(value) -> str:
    if not isinstance(value, str) or not 0 < len(value.strip()) <= 96 or not value.isprintable():
        raise Implausible(value, "a GPU name (1-96 printable characters)")
    return value


def gpu_uuid(value) -> str:
    if not isinstance(value, str) or not _UUID.fullmatch(value):
        raise Implausible(value, "a GPU UUID (GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)")
    return value


def memory_mib(value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_MEMORY_MIB:
        raise Implausible(value, "a GPU memory size (1 MiB to 16 TiB)")
    return value


@factclass
class Origin:
    """Where values come from: ``path`` the file that answered (a library, /proc file, tool), ``via`` the
    program that asked (``"NVML worker (nvidia-ml-py)"``); implausible values land in ``problems``."""

    path: object  # str, or a callable giving it (the loader's pick is looked up only when a value is rejected)
    via: str
    problems: List[dict] = field(default_factory=list)

    def take(self, check, value, call: str, path: Optional[str] = None):
        """``check(value)``, or None after recording the rejection (None itself is 'not known', not a rejection)."""
        if value is None:
            return None
        try:
            return check(value)
        except Implausible as exc:
            where = path or (self.path() if callable(self.path) else self.path) or "?"
            rec = record(where, "implausible",
                         f"{call} returned {str(value)[:80]!r} ({self.via}; {where}), which is not {exc.expected.split(' (')[0]}: "
                         "left out of the facts, so no version check uses it")
            rec.update(value=str(value)[:200], call=call, expected=exc.expected, via=self.via)
            self.problems.append(rec)
            return None


def _split(raw: dict, typed: Tuple[str, ...]) -> Dict[str, object]:
    return {k: v for k, v in raw.items() if k not in typed}


@factclass
class NvmlGpu:
    """One GPU as NVML answered (:func:`gpudoctor.process.worker._gpu_facts`); ``extra`` holds the
    untyped keys (PCIe, ECC, MIG, NVLink, ...) as they came."""

    index: Optional[int]
    name: Optional[str]
    uuid: Optional[str]
    compute_capability: Optional[str]
    memory_total_mib: Optional[int]
    extra: Dict[str, object] = field(default_factory=dict)
    TYPED = ("index", "name", "uuid", "compute_capability", "memory_total_mib")

    @classmethod
    def parse(cls, raw: dict, origin: Origin) -> "NvmlGpu":
        i = raw.get("index")
        return cls(i, origin.take(gpu_name, raw.get("name"), f"nvmlDeviceGetName(GPU {i})"),
                   origin.take(gpu_uuid, raw.get("uuid"), f"nvmlDeviceGetUUID(GPU {i})"),
                   origin.take(compute_capability, raw.get("compute_capability"), f"nvmlDeviceGetCudaComputeCapability(GPU {i})"),
                   origin.take(memory_mib, raw.get("memory_total_mib"), f"nvmlDeviceGetMemoryInfo(GPU {i}).total"),
                   _split(raw, cls.TYPED))

    def to_dict(self) -> dict:
        if "error" in self.extra:  # a GPU NVML could not query: {"index", "error", "reason"} as before
            return {"index": self.index, **self.extra}
        return {"index": self.index, "name": self.name, "uuid": self.uuid, "compute_capability": self.compute_capability,
                "memory_total_mib": self.memory_total_mib, **self.extra}


@factclass
class NvmlSnapshot:
    """NVML's view (:func:`gpudoctor.probes.driver.nvml_snapshot`): ``status`` ok | error | unavailable,
    ``driver_version`` (e.g. "580.95.05"), ``cuda_driver_version`` ("13.0"), ``nvml_version``
    ("13.580.95.05"), ``gpus``; ``problems`` the worker's and the rejected values."""

    status: str
    driver_version: Optional[str]
    cuda_driver_version: Optional[str]
    nvml_version: Optional[str]
    gpus: List[NvmlGpu]
    problems: List[dict]
    extra: Dict[str, object] = field(default_factory=dict)
    TYPED = ("status", "driver_version", "cuda_driver_version", "nvml_version", "gpus", "problems")

    @classmethod
    def parse(cls, raw: dict, origin: Origin) -> "NvmlSnapshot":
        out = cls(raw.get("status") or "error",
                  origin.take(driver_version, raw.get("driver_version"), "nvmlSystemGetDriverVersion"),
                  origin.take(cuda_version, raw.get("cuda_driver_version"), "nvmlSystemGetCudaDriverVersion"),
                  origin.take(nvml_version, raw.get("nvml_version"), "nvmlSystemGetNVMLVersion"),
                  [NvmlGpu.parse(g, origin) for g in raw.get("gpus") or [] if isinstance(g, dict)],
                  list(raw.get("problems") or []), _split(raw, cls.TYPED))
        out.problems.extend(origin.problems)
        return out

    def to_dict(self) -> dict:
        out = {"status": self.status, **self.extra, "gpus": [g.to_dict() for g in self.gpus]}
        if self.status == "ok" or self.driver_version or self.cuda_driver_version or self.nvml_version:
            out.update(driver_version=self.driver_version, cuda_driver_version=self.cuda_driver_version,
                       nvml_version=self.nvml_version)
        if self.problems:
            out["problems"] = self.problems
        return out

    @property
    def rejected(self) -> List[dict]:
        return [p for p in self.problems if p.get("kind") == "implausible"]


@factclass
class CudaDevice:
    """One device the CUDA driver API enumerates (cuDeviceGet*): ``error`` when cuDeviceGet failed."""

    ordinal: Optional[int]
    name: Optional[str]
    compute_capability: Optional[str]
    memory_total_mib: Optional[int]
    uuid: Optional[str]
    extra: Dict[str, object] = field(default_factory=dict)
    TYPED = ("ordinal", "name", "compute_capability", "memory_total_mib", "uuid")

    @classmethod
    def parse(cls, raw: dict, origin: Origin) -> "CudaDevice":
        i = raw.get("ordinal")
        return cls(i, origin.take(gpu_name, raw.get("name"), f"cuDeviceGetName({i})"),
                   origin.take(compute_capability, raw.get("compute_capability"), f"cuDeviceGetAttribute(COMPUTE_CAPABILITY, {i})"),
                   origin.take(memory_mib, raw.get("memory_total_mib"), f"cuDeviceTotalMem({i})"),
                   origin.take(gpu_uuid, raw.get("uuid"), f"cuDeviceGetUuid({i})"), _split(raw, cls.TYPED))

    def to_dict(self) -> dict:
        if "error" in self.extra:
            return {"ordinal": self.ordinal, **self.extra}
        return {"ordinal": self.ordinal, "name": self.name, "compute_capability": self.compute_capability,
                "memory_total_mib": self.memory_total_mib, "uuid": self.uuid, **self.extra}


def _answer(call, success: str):
    call = call if isinstance(call, dict) else {}
    return call.get("value") if call.get("result") in (success, None) else None


@factclass
class CudaApi:
    """The CUDA worker's answer (:func:`gpudoctor.process.worker.task_cuda`): ``driver_cuda_version`` from
    cuDriverGetVersion, ``runtime_version`` from cudaRuntimeGetVersion (the cudart cuda-python links),
    ``devices``; ``raw`` keeps the worker's JSON (results, timings) with ``devices`` replaced."""

    driver_cuda_version: Optional[str]
    runtime_version: Optional[str]
    devices: List[CudaDevice]
    raw: Dict[str, object]

    @classmethod
    def parse(cls, raw: dict, origin: Origin, runtime_path: Optional[str] = None) -> "CudaApi":
        # Only a call that succeeded claims a value; then 0 (what a damaged library answers) is implausible.
        drv = _answer(raw.get("cuDriverGetVersion"), "CUDA_SUCCESS")
        rt = _answer(raw.get("cudaRuntimeGetVersion"), "cudaSuccess")
        return cls(origin.take(cuda_version, drv, "cuDriverGetVersion"),
                   origin.take(cuda_version, rt, "cudaRuntimeGetVersion", path=runtime_path),
                   [CudaDevice.parse(d, origin) for d in raw.get("devices") or [] if isinstance(d, dict)], dict(raw))

    def to_dict(self) -> dict:
        out = dict(self.raw)
        if "devices" in out or self.devices:
            out["devices"] = [d.to_dict() for d in self.devices]
        return out


def soname_driver_version(value) -> Optional[str]:
    """A driver version read from a library's file name (``libnvidia-ml.so.580.95.05``), or None: a name that
    carries only its soname (``libnvidia-ml.so.1``, WSL's ``libcuda.so.1.1``) claims no driver version."""
    try:
        return driver_version(value) if value else None
    except Implausible:
        return None


@factclass
class DriverFacts:
    """The driver probe's facts (:func:`gpudoctor.probes.driver.probe`): ``nvml`` (:class:`NvmlSnapshot`),
    ``kernel_module`` ``{"version", "flavor", "arch", "build_gcc"}`` or None, ``user_space_version`` from the
    libnvidia-ml the loader picks, ``smi_driver_versions`` what nvidia-smi printed; ``extra`` the untyped
    rest (library copies, stub picks, PCI functions, nvidia-smi's other answers)."""

    nvml: NvmlSnapshot
    kernel_module: Optional[dict]
    user_space_version: Optional[str]
    smi_driver_versions: List[str]
    problems: List[dict]
    extra: Dict[str, object] = field(default_factory=dict)

    @property
    def kernel_module_version(self) -> Optional[str]:
        return (self.kernel_module or {}).get("version")

    @property
    def version(self) -> Tuple[Optional[str], str]:
        """(driver version, where it came from): NVML, else the user-space library's file name, else a libcuda's."""
        if self.nvml.driver_version:
            return self.nvml.driver_version, "NVML"
        if self.user_space_version:
            return self.user_space_version, "libnvidia-ml file name"
        for c in self.extra.get("libcuda") or []:
            if c.get("version"):
                return c["version"], "libcuda file name"
        return None, "none"

    def to_dict(self) -> dict:
        smi = self.extra.get("nvidia_smi")
        out = {"nvml": self.nvml.to_dict(), "kernel_module": self.kernel_module,
               "user_space_version": self.user_space_version, **self.extra}
        if isinstance(smi, dict) and "driver_versions" in smi:
            out["nvidia_smi"] = dict(smi, driver_versions=self.smi_driver_versions)
        out["problems"] = self.problems
        return out

    @classmethod
    def from_dict(cls, d: dict) -> "DriverFacts":
        """The typed view of a driver probe's (already validated) dict, for rules."""
        nvml = d.get("nvml") or {}
        snap = NvmlSnapshot(nvml.get("status") or "missing", nvml.get("driver_version"), nvml.get("cuda_driver_version"),
                            nvml.get("nvml_version"), [NvmlGpu(g.get("index"), g.get("name"), g.get("uuid"),
                                                               g.get("compute_capability"), g.get("memory_total_mib"),
                                                               _split(g, NvmlGpu.TYPED)) for g in nvml.get("gpus") or []],
                            list(nvml.get("problems") or []), _split(nvml, NvmlSnapshot.TYPED))
        keep = ("nvml", "kernel_module", "user_space_version", "problems")
        return cls(snap, d.get("kernel_module"), d.get("user_space_version"),
                   list((d.get("nvidia_smi") or {}).get("driver_versions") or []), list(d.get("problems") or []),
                   _split(d, keep))


@factclass
class CudaFacts:
    """The cuda probe's facts (:func:`gpudoctor.probes.cuda.probe`): ``api`` (:class:`CudaApi`),
    ``libcudart`` copies (``version`` from the file name or the library's own cudaRuntimeGetVersion) and
    which file the loader picks for each soname."""

    api: CudaApi
    libcudart: List[dict]
    libcudart_loaded: Dict[str, Optional[str]]
    problems: List[dict]

    @property
    def driver_cuda_version(self) -> Optional[str]:
        return self.api.driver_cuda_version

    @property
    def runtime_version(self) -> Optional[str]:
        return self.api.runtime_version

    def to_dict(self) -> dict:
        out = {"api": self.api.to_dict(), "driver_cuda_version": self.api.driver_cuda_version,
               "runtime_version": self.api.runtime_version, "libcudart": self.libcudart,
               "libcudart_loaded": self.libcudart_loaded}
        if self.problems:
            out["problems"] = self.problems
        return out

    @classmethod
    def from_dict(cls, d: dict) -> "CudaFacts":
        raw = dict(d.get("api") or {})
        devices = [CudaDevice(x.get("ordinal"), x.get("name"), x.get("compute_capability"), x.get("memory_total_mib"),
                              x.get("uuid"), _split(x, CudaDevice.TYPED)) for x in raw.get("devices") or []]
        return cls(CudaApi(d.get("driver_cuda_version"), d.get("runtime_version"), devices, raw),
                   list(d.get("libcudart") or []), dict(d.get("libcudart_loaded") or {}), list(d.get("problems") or []))
