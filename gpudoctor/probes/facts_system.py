"""Typed facts of the platform, environment, process_limits, loader and cudnn probes, validated where they are
parsed (as :mod:`gpudoctor.probes.facts`).

A value the probe read is kept only when plausible; a rejected one is ``None`` in the facts (or its documented
fallback) and an ``implausible`` problem record naming what answered (``Origin.take``), reported as
``probe.implausible_value``; no rule judges it. ``to_dict()`` gives today's JSON shape (docs/json-report.md);
keys a type does not know pass through, and a ``problems`` list appears only where the probe had one or a value
was rejected.

Plausible, from each source's own definition (structure only):

* os-release ``ID`` / ``VERSION_ID``: 1-64 of ``0-9 a-z A-Z . _ - + ~`` (os-release(5): "no spaces or other
  characters outside of 0-9, a-z, '.', '_' and '-'"; upper case and ``+~`` tolerated);
* kernel release (uname(2), /proc/sys/kernel/osrelease): a digit then 0-255 printable non-space characters;
* glibc (``confstr(_CS_GNU_LIBC_VERSION)``): ``glibc 2.36``: a name, a space, ``major.minor[.patch]``;
* a CUDA version a directory name claims (``/usr/local/cuda-12.4``): as :func:`~gpudoctor.probes.facts.cuda_version`;
* an rlimit (getrlimit(2)): an int >= 0 or None (unlimited), soft <= hard when both are finite;
* byte counts (statvfs of /dev/shm, cgroup v2 memory.max / memory.current): ints >= 0;
* a GPU process (NVML): PID an int >= 1, ``used_mib`` None or 0 .. 16 TiB in MiB;
* the process's own ELF header: class 32 or 64, machine a 1-32 character printable name;
* cuDNN: as :func:`~gpudoctor.probes.facts.cudnn_version`; the CUDA it was built for as ``cuda_version``.
"""
from __future__ import annotations

import re
from gpudoctor.probes.record import factclass, field
from typing import Dict, List, Optional

from gpudoctor.probes.facts import MAX_MEMORY_MIB, Implausible, Origin, cuda_version, cudnn_version

_OS_FIELD = re.compile(r"[0-9A-Za-z._+~-]{1,64}")
_KERNEL = re.compile(r"\d[\x21-\x7e]{0,255}")
_LIBC = re.compile(r"[A-Za-z][\w-]{0,31} \d{1,2}\.\d{1,3}(\.\d{1,3})?")


def os_release_field(value) -> str:
    """An os-release ``ID`` or ``VERSION_ID`` (``"debian"``, ``"12"``, ``"22.04"``); raises :class:`Implausible`."""
    if not isinstance(value, str) or not _OS_FIELD.fullmatch(value):
        raise Implausible(value, "an os-release ID or VERSION_ID (1-64 of 0-9 a-z . _ -, e.g. 22.04)")
    return value


def kernel_release(value) -> str:
    """``"6.1.0-27-amd64"``; raises :class:`Implausible` for an empty, non-printable or non-numeric release."""
    if not isinstance(value, str) or not _KERNEL.fullmatch(value):
        raise Implausible(value, "a kernel release (a digit then printable characters, e.g. 6.1.0-27-amd64)")
    return value


def libc_version(value) -> str:
    """``"glibc 2.36"``; raises :class:`Implausible`."""
    if not isinstance(value, str) or not _LIBC.fullmatch(value):
        raise Implausible(value, "a C library version (a name and major.minor, e.g. glibc 2.36)")
    return value


def count(value) -> int:
    """An int >= 0 (bytes, descriptors, processes); raises :class:`Implausible` (a negative one, a bool, text)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise Implausible(value, "a count or size (an integer >= 0)")
    return value


def pid(value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise Implausible(value, "a process ID (an integer >= 1)")
    return value


def used_mib(value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_MEMORY_MIB:
        raise Implausible(value, "a GPU memory use (0 to 16 TiB in MiB)")
    return value


def _at_most(hard: int):
    def check(value):
        raise Implausible(value, f"a soft limit <= its hard limit ({hard})")
    return check


def elf_class(value) -> int:
    if value not in (32, 64) or isinstance(value, bool):
        raise Implausible(value, "an ELF class (32 or 64)")
    return value


def elf_machine(value) -> str:
    if not isinstance(value, str) or not 0 < len(value) <= 32 or not value.isprintable():
        raise Implausible(value, "an ELF machine name (1-32 printable characters, e.g. x86-64)")
    return value


def _split(raw: dict, typed) -> Dict[str, object]:
    return {k: v for k, v in raw.items() if k not in typed}


def _problems(raw_problems, origin: Origin) -> Optional[List[dict]]:
    """The probe's problems plus the rejections; None when it had no list and nothing was rejected."""
    if raw_problems is None and not origin.problems:
        return None
    out = list(raw_problems or [])
    out.extend(p for p in origin.problems if not any(p is q for q in out))
    return out


# --- platform ----------------------------------------------------------------------------------------------------

@factclass
class PlatformFacts:
    """The platform probe's facts (:func:`gpudoctor.probes.platform.probe`): ``os_id`` and ``os_version_id`` from
    /etc/os-release (a rejected ID falls back to the system's name, as a missing one does), ``kernel`` (uname
    release), ``glibc``; ``os_extra`` (pretty_name, id_like) and ``extra`` (python, wsl, container, ...) as read."""

    system: str
    os_id: Optional[str]
    os_version_id: Optional[str]
    kernel: Optional[str]
    glibc: Optional[str]
    problems: List[dict]
    os_extra: Dict[str, object] = field(default_factory=dict)
    extra: Dict[str, object] = field(default_factory=dict)
    TYPED = ("system", "os", "kernel", "glibc", "problems")

    @classmethod
    def parse(cls, raw: dict, origin: Origin) -> "PlatformFacts":
        osr = raw.get("os") or {}
        system = raw.get("system") or ""
        os_id = origin.take(os_release_field, osr.get("id"), "os-release ID")
        out = cls(system, os_id or (system.lower() if osr.get("id") is not None else None),
                  origin.take(os_release_field, osr.get("version_id"), "os-release VERSION_ID"),
                  origin.take(kernel_release, raw.get("kernel"), "uname release", path="/proc/sys/kernel/osrelease"),
                  origin.take(libc_version, raw.get("glibc"), "confstr(_CS_GNU_LIBC_VERSION)", path="confstr"),
                  list(raw.get("problems") or []), _split(osr, ("id", "version_id")), _split(raw, cls.TYPED))
        out.problems.extend(origin.problems)
        return out

    def to_dict(self) -> dict:
        return {"system": self.system, "os": {"id": self.os_id, "version_id": self.os_version_id, **self.os_extra},
                "kernel": self.kernel, "glibc": self.glibc, **self.extra, "problems": self.problems}


# --- environment -------------------------------------------------------------------------------------------------

@factclass
class PathEntry:
    """One entry of a search path (LD_LIBRARY_PATH, PATH): ``cuda_version`` the release its name (or its
    symlink's target) claims, ``"12.4"`` of ``/usr/local/cuda-12.4/lib64``."""

    index: int
    path: str
    exists: bool
    cuda_version: Optional[str]

    @classmethod
    def parse(cls, raw: dict, origin: Origin, var: str) -> "PathEntry":
        return cls(raw.get("index"), raw.get("path"), raw.get("exists"),
                   origin.take(cuda_version, raw.get("cuda_version"), f"the CUDA version in {var} entry {raw.get('path')}",
                               path=raw.get("path")))

    def to_dict(self) -> dict:
        return {"index": self.index, "path": self.path, "exists": self.exists, "cuda_version": self.cuda_version}


@factclass
class EnvironmentFacts:
    """The environment probe's facts (:func:`gpudoctor.probes.environment.probe`): ``ld_library_path`` and
    ``path_cuda_entries`` (:class:`PathEntry`), ``var_cuda_versions`` {CUDA_HOME: "12.4"} (validated); ``extra``
    (cuda_visible_devices, vars, scheduler_vars) as read; ``problems`` only when a version was rejected."""

    ld_library_path: List[PathEntry]
    path_cuda_entries: List[PathEntry]
    var_cuda_versions: Dict[str, str]
    problems: Optional[List[dict]]
    extra: Dict[str, object] = field(default_factory=dict)
    TYPED = ("ld_library_path", "path_cuda_entries", "var_cuda_versions", "problems")

    @classmethod
    def parse(cls, raw: dict, origin: Origin, env=None) -> "EnvironmentFacts":
        env = env or {}
        var_versions = {}
        for k, v in (raw.get("var_cuda_versions") or {}).items():
            got = origin.take(cuda_version, v, f"the CUDA version in {k}={env.get(k, '?')}", path=env.get(k))
            if got:
                var_versions[k] = got
        return cls([PathEntry.parse(e, origin, "LD_LIBRARY_PATH") for e in raw.get("ld_library_path") or []],
                   [PathEntry.parse(e, origin, "PATH") for e in raw.get("path_cuda_entries") or []],
                   var_versions, None, _split(raw, cls.TYPED))._with(raw.get("problems"), origin)

    def _with(self, raw_problems, origin: Origin) -> "EnvironmentFacts":
        self.problems = _problems(raw_problems, origin)
        return self

    def to_dict(self) -> dict:
        out = {**self.extra, "ld_library_path": [e.to_dict() for e in self.ld_library_path],
               "path_cuda_entries": [e.to_dict() for e in self.path_cuda_entries],
               "var_cuda_versions": self.var_cuda_versions}
        if self.problems is not None:
            out["problems"] = self.problems
        return out


# --- process_limits ----------------------------------------------------------------------------------------------

@factclass
class Rlimit:
    """One resource limit (getrlimit(2)): ``soft``/``hard`` bytes or counts, None = unlimited (a rejected value is
    None too: no rule judges it, ``probe.implausible_value`` reports it)."""

    soft: Optional[int]
    hard: Optional[int]

    @classmethod
    def parse(cls, name: str, raw: dict, origin: Origin) -> "Rlimit":
        soft = origin.take(count, raw.get("soft"), f"getrlimit({name}).soft")
        hard = origin.take(count, raw.get("hard"), f"getrlimit({name}).hard")
        if soft is not None and hard is not None and soft > hard:  # setrlimit(2) refuses such a pair: no real answer
            soft = origin.take(_at_most(hard), soft, f"getrlimit({name}).soft")
        return cls(soft, hard)

    def to_dict(self) -> dict:
        return {"soft": self.soft, "hard": self.hard}


@factclass
class GpuProcess:
    """A process NVML says holds a context on a GPU, resolved in /proc (:func:`gpudoctor.probes.process_limits._resolve`)."""

    pid: Optional[int]
    used_mib: Optional[int]
    extra: Dict[str, object] = field(default_factory=dict)

    @classmethod
    def parse(cls, raw: dict, origin: Origin) -> "GpuProcess":
        g = raw.get("gpu")
        nvml = "libnvidia-ml.so.1"
        return cls(origin.take(pid, raw.get("pid"), f"nvmlDeviceGetComputeRunningProcesses(GPU {g}).pid", path=nvml),
                   origin.take(used_mib, raw.get("used_mib"),
                               f"nvmlDeviceGetComputeRunningProcesses(GPU {g}).usedGpuMemory", path=nvml),
                   _split(raw, ("pid", "used_mib")))

    def to_dict(self) -> dict:
        return {"pid": self.pid, **self.extra, "used_mib": self.used_mib}


def _sizes(raw, keys, origin: Origin, what: str, path: Optional[str]):
    if not isinstance(raw, dict):
        return raw
    return dict(raw, **{k: origin.take(count, raw[k], f"{what} {k}", path=path) for k in keys if raw.get(k) is not None})


@factclass
class ProcessLimitsFacts:
    """The process_limits probe's facts (:func:`gpudoctor.probes.process_limits.probe`): ``rlimits``
    {RLIMIT_*: :class:`Rlimit`}, ``shm`` {path, size_bytes, free_bytes} and ``cgroup_memory`` {path, max_bytes,
    current_bytes} (sizes validated), ``gpu_processes`` (:class:`GpuProcess`); ``extra`` (privileged, uid,
    status, gpus) as read."""

    rlimits: Dict[str, Rlimit]
    shm: Optional[dict]
    cgroup_memory: Optional[dict]
    gpu_processes: List[GpuProcess]
    problems: List[dict]
    extra: Dict[str, object] = field(default_factory=dict)
    TYPED = ("rlimits", "shm", "cgroup_memory", "gpu_processes", "problems")

    @classmethod
    def parse(cls, raw: dict, origin: Origin) -> "ProcessLimitsFacts":
        shm = raw.get("shm")
        cg = raw.get("cgroup_memory")
        out = cls({k: Rlimit.parse(k, v, origin) for k, v in (raw.get("rlimits") or {}).items() if isinstance(v, dict)},
                  _sizes(shm, ("size_bytes", "free_bytes"), origin, "statvfs", (shm or {}).get("path")),
                  _sizes(cg, ("max_bytes", "current_bytes"), origin, "cgroup memory", (cg or {}).get("path")),
                  [GpuProcess.parse(p, origin) for p in raw.get("gpu_processes") or [] if isinstance(p, dict)],
                  list(raw.get("problems") or []), _split(raw, cls.TYPED))
        out.problems.extend(origin.problems)
        return out

    def to_dict(self) -> dict:
        return {"rlimits": {k: v.to_dict() for k, v in self.rlimits.items()}, **self.extra, "shm": self.shm,
                "cgroup_memory": self.cgroup_memory, "gpu_processes": [p.to_dict() for p in self.gpu_processes],
                "problems": self.problems}


def _running(key: str):
    """This interpreter's own ELF class (its pointer size) or machine (uname's, in elf_check's names), or None."""
    import platform
    import struct

    if key == "elf_class":
        return struct.calcsize("P") * 8
    names = {"x86_64": "x86-64", "amd64": "x86-64", "aarch64": "AArch64", "arm64": "AArch64", "ppc64le": "PowerPC64",
             "ppc64": "PowerPC64", "s390x": "S/390", "riscv64": "RISC-V", "loongarch64": "LoongArch"}
    return names.get(platform.machine().lower())


# --- loader ------------------------------------------------------------------------------------------------------

@factclass
class LoaderFacts:
    """The loader probe's facts (:func:`gpudoctor.probes.loader.probe`): ``process`` {executable, elf_class,
    machine}, this interpreter's ELF header (class and machine validated: every pick is judged against them, so a
    rejected one is replaced by the running interpreter's own pointer size and uname machine);
    ``extra`` (libraries, unresolved, copies, preload, ld_library_path, ld_preload) as read, each file's own
    header being the fact under judgement there, never rejected; ``problems`` only when a value was rejected."""

    process: dict
    problems: Optional[List[dict]]
    extra: Dict[str, object] = field(default_factory=dict)

    @classmethod
    def parse(cls, raw: dict, origin: Origin) -> "LoaderFacts":
        proc = dict(raw.get("process") or {})
        exe = proc.get("executable")
        for key, check in (("elf_class", elf_class), ("machine", elf_machine)):
            if key in proc:
                got = origin.take(check, proc[key], f"the ELF header's {key}", path=exe)
                # every pick is judged against these: a rejected one is the running interpreter's own, never None
                proc[key] = got if got is not None or proc[key] is None else _running(key)
        return cls(proc, _problems(raw.get("problems"), origin), _split(raw, ("process", "problems")))

    def to_dict(self) -> dict:
        out = {"process": self.process, **self.extra}
        if self.problems is not None:
            out["problems"] = self.problems
        return out


# --- cudnn -------------------------------------------------------------------------------------------------------

@factclass
class CudnnLibrary:
    """One libcudnn copy: ``api_version`` from its cudnnGetVersion() ("9.1.0"; present only when asked),
    ``built_for_cuda`` from cudnnGetCudartVersion() ("12.0"), ``built_for_cuda_major`` from the wheel's
    -cuNN name, else that; ``copy`` the copy's facts (path, realpath, origin, version, package) and ``api``."""

    api_version: Optional[str]
    asked_version: bool
    built_for_cuda: Optional[str]
    built_for_cuda_major: Optional[int]
    copy: Dict[str, object] = field(default_factory=dict)

    @classmethod
    def parse(cls, copy: dict, api: dict, origin: Origin, wheel_cuda_major: Optional[int]) -> "CudnnLibrary":
        asked = "cudnnGetVersion" in api
        version = origin.take(cudnn_version, api["cudnnGetVersion"], "cudnnGetVersion") if asked else None
        built = api.get("cudnnGetCudartVersion")
        built_cuda = origin.take(cuda_version, built, "cudnnGetCudartVersion") if built else None
        major = wheel_cuda_major if wheel_cuda_major is not None else (int(built_cuda.split(".")[0]) if built_cuda else None)
        return cls(version, asked, built_cuda, major, dict(copy, api=api))

    def to_dict(self) -> dict:
        out = dict(self.copy)
        if self.asked_version:
            out["api_version"] = self.api_version
        out.update(built_for_cuda_major=self.built_for_cuda_major, built_for_cuda=self.built_for_cuda)
        return out


@factclass
class CudnnHeader:
    """A ``cudnn_version.h``: ``version`` its CUDNN_MAJOR.CUDNN_MINOR.CUDNN_PATCHLEVEL, validated."""

    path: str
    version: Optional[str]

    @classmethod
    def parse(cls, path: str, parts, origin: Origin) -> "CudnnHeader":
        return cls(path, origin.take(cudnn_version, ".".join(map(str, parts)) if parts else None,
                                     "CUDNN_MAJOR.CUDNN_MINOR.CUDNN_PATCHLEVEL"))

    def to_dict(self) -> dict:
        return {"path": self.path, "version": self.version}


@factclass
class CudnnFacts:
    """The cudnn probe's facts (:func:`gpudoctor.probes.cudnn.probe`): ``libraries`` (:class:`CudnnLibrary`),
    ``headers`` (:class:`CudnnHeader`), ``loader_pick`` {"libcudnn.so.9": path|None}, ``problems``."""

    libraries: List[CudnnLibrary]
    headers: List[CudnnHeader]
    loader_pick: Dict[str, Optional[str]]
    problems: List[dict]

    def to_dict(self) -> dict:
        return {"libraries": [x.to_dict() for x in self.libraries], "headers": [h.to_dict() for h in self.headers],
                "loader_pick": self.loader_pick, "problems": self.problems}
