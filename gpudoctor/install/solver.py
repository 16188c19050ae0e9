"""Pick a consistent CUDA / cuDNN / TensorRT / PyTorch stack for one OS, GPU and driver.

:func:`solve` walks the compatibility matrix newest-first and returns the first
combination that satisfies every constraint below, or raises :class:`PlanError`
with the reasons the pinned versions cannot work together. The constraints
(each a function returning ``None`` or the reason it fails) are:

* CUDA is published for the OS (``os.json``: ``cuda_min``..``cuda_max`` in NVIDIA's repository, or the
  distribution's own archive, ``archive_cuda``: Debian 12's CUDA 11.8, planned without NVIDIA's repository,
  with no cuDNN and Debian's own driver);
* nvcc of that CUDA accepts the GPU's target (``cuda.json``: ``sms``);
* a kept driver runs it (Table 3 natively; a pinned CUDA may also run through
  minor-version compatibility, Table 2, which the plan then says);
* cuDNN / TensorRT lines list that CUDA (support matrices) and the GPU's
  compute capability; TensorRT < 10 needs the cuDNN major it was built with;
* a PyTorch wheel of the same CUDA major has SASS (or PTX to JIT) for the GPU,
  a kept driver runs its CUDA, and it has a wheel for the OS's python3.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, List, Optional, Sequence, Tuple

from packaging.version import Version

from gpudoctor.formats.fatbin import coverage
from gpudoctor.matrix import (
    ArchiveCuda, CudaRelease, CudnnRelease, Matrix, OsInfo, TensorrtRelease, TorchBuild, TorchRelease, covers_cuda, sm_of,
)

__all__ = ["GpuTarget", "Pins", "Plan", "PlanError", "Target", "solve", "parse_pin", "Served"]

#: Availability oracle: a candidate plan -> None when the indexes serve every requirement it fetches (or cannot
#: be asked now), else one line saying which is not served and what is. The solver never asks an index itself
#: (gpudoctor.install.verify.IndexSession.unserved is the one gpudoctor passes).
Served = Callable[["Plan"], Optional[str]]


class PlanError(ValueError):
    """No stack satisfies the pins; ``reasons`` lists why, one line each."""

    def __init__(self, summary: str, reasons: Sequence[str] = ()) -> None:
        self.summary = summary
        self.reasons = tuple(reasons)
        super().__init__(summary + "".join(f"\n  - {r}" for r in self.reasons))


@dataclass(frozen=True)
class GpuTarget:
    """The GPU to plan for: its name as given or detected, and its compute capability ("8.9")."""

    name: str
    cc: str

    @property
    def sm(self) -> str:
        return sm_of(self.cc)


@dataclass(frozen=True)
class Target:
    """Where the stack goes. ``driver`` is the installed driver version (None: unknown or none);
    ``driver_action`` is "keep" (plan around it) or "install" (the plan installs a new one)."""

    os: OsInfo
    gpu: Optional[GpuTarget] = None
    driver: Optional[str] = None
    driver_action: str = "keep"
    #: Python the wheels are for ("3.12"); None: the OS's python3 (``os.json``).
    python_version: Optional[str] = None
    #: Planning for the inside of a container: the driver belongs to the host.
    container: bool = False

    @property
    def python(self) -> Optional[str]:
        return self.python_version or self.os.python

    @property
    def driver_os(self) -> str:
        # Under WSL the driver is the Windows one, so Table 3's Windows column applies.
        return "windows" if self.os.os in ("windows", "wsl-ubuntu") else "linux"


@dataclass(frozen=True)
class Pins:
    """What the user asked for: ``None`` lets the solver choose ("auto"), "none" leaves a part out.

    Versions are a major ("12") or "major.minor" ("12.4"). ``tensorrt`` and ``torch``
    default to "none" (only installed when asked); "latest" picks the newest that fits.
    """

    cuda: Optional[str] = None
    cudnn: Optional[str] = None
    tensorrt: Optional[str] = "none"
    torch: Optional[str] = "none"
    #: Only pip wheels (nvidia-*-cuXX, torch, tensorrt-cuXX) in a virtual environment: no toolkit, no repository.
    pip_only: bool = False


@dataclass(frozen=True)
class Plan:
    """A consistent stack. ``driver_min`` is the lowest driver that runs every part natively;
    ``driver_branch`` the branch to install (None when the driver is kept or lives elsewhere);
    ``driver_verdict`` how the kept driver runs CUDA ("native", "minor_version_compat", "unknown")."""

    target: Target
    cuda: CudaRelease
    cudnn: Optional[CudnnRelease]
    tensorrt: Optional[TensorrtRelease]
    torch: Optional[TorchRelease]
    torch_build: Optional[TorchBuild]
    driver_min: str
    driver_branch: Optional[str]
    driver_verdict: str
    notes: Tuple[str, ...] = field(default=())
    pip_only: bool = False
    #: Suffix of the CUDA wheels in a pip-only plan ("-cu12"; "" from CUDA 13).
    pip_suffix: Optional[str] = None
    #: The distribution archive's CUDA the plan installs (Debian's nvidia-cuda-toolkit); None: NVIDIA's repository.
    archive: Optional[ArchiveCuda] = None


def parse_pin(text: Optional[str], what: str, allow_latest: bool = False) -> Optional[str]:
    """Normalise a pin: None/"auto" -> None, "none" -> "none", "latest", "12" or "12.4" (from "12.4.1").

    Raises PlanError for anything else (e.g. "twelve", "12.x.y")."""
    if text is None or text.strip().lower() == "auto":
        return None
    t = text.strip().lower()
    if t == "none" or (allow_latest and t == "latest"):
        return t
    parts = t.split(".")
    if not all(p.isdigit() for p in parts) or not 1 <= len(parts) <= 4:
        raise PlanError(f"--{what} {text!r} is not a version: use a major ('12'), 'major.minor' ('12.4')"
                        + (", 'latest'" if allow_latest else "") + " or 'none'")
    return ".".join(str(int(p)) for p in parts[:2])


def _matches(pin: Optional[str], version: str) -> bool:
    if pin in (None, "latest"):
        return True
    return version == pin or version.split(".")[0] == pin and "." not in pin


def _v(text: str) -> Version:
    return Version(text.replace(".x", ".999"))


# --------------------------------------------------------------------------- constraints


def cuda_on_os(os_: OsInfo, cuda: CudaRelease) -> Optional[str]:
    if _v(cuda.cuda) < _v(os_.cuda_min) or (os_.cuda_max and _v(cuda.cuda) > _v(os_.cuda_max)):
        if archive_for(os_, cuda) is not None:
            return None
        upto = os_.cuda_max or "the newest"
        own = (f"; {_archive_name(os_)}'s archive has CUDA {os_.archive_cuda.cuda} ({os_.archive_cuda.toolkit_package})"
               if os_.archive_cuda else "")
        return f"CUDA {cuda.cuda} is not published for {os_.os} (NVIDIA ships CUDA {os_.cuda_min} to {upto} there{own})"
    return None


def _archive_name(os_: OsInfo) -> str:
    return os_.os.split("-")[0].capitalize()


def archive_for(os_: OsInfo, cuda: CudaRelease) -> Optional[ArchiveCuda]:
    """The distribution archive's CUDA when ``cuda`` is the one it packages and NVIDIA's repository does not
    publish it for the OS (NVIDIA's is preferred where both have it); else None."""
    a = os_.archive_cuda
    in_nvidia = not (_v(cuda.cuda) < _v(os_.cuda_min) or (os_.cuda_max and _v(cuda.cuda) > _v(os_.cuda_max)))
    return a if a is not None and a.cuda == cuda.cuda and not in_nvidia else None


def cudnn_in_archive(target: Target, archive: ArchiveCuda, pin: Optional[str]) -> Optional[str]:
    """Why a pinned cuDNN cannot come with the archive's CUDA (None when unpinned: the plan has none)."""
    if pin in (None, "none") or archive.cudnn:
        return None
    return (f"cuDNN {pin}: {_archive_name(target.os)}'s CUDA {archive.cuda} ({archive.toolkit_package}) has no cuDNN "
            f"package that installs without NVIDIA's servers (the archive's nvidia-cudnn downloads it from NVIDIA); "
            f"use NVIDIA's repository (CUDA {target.os.cuda_min} or newer) or --cudnn none")


def cuda_for_gpu(m: Matrix, gpu: Optional[GpuTarget], cuda: CudaRelease) -> Optional[str]:
    if gpu is None or gpu.sm in cuda.sms:
        return None
    span = m.cuda_range_for_sm(gpu.sm)
    hint = f"CUDA {span[0]} to {span[1]} can" if span else "no CUDA release in the matrix can"
    return f"nvcc of CUDA {cuda.cuda} cannot build for {gpu.name} ({gpu.sm}); {hint}"


def cuda_for_driver(m: Matrix, target: Target, cuda: str, allow_mvc: bool) -> Optional[str]:
    if target.driver is None or target.driver_action == "install":
        return None
    verdict = m.driver_supports(target.driver, cuda, target.driver_os)
    if verdict == "native" or verdict == "unknown" or (allow_mvc and verdict == "minor_version_compat"):
        return None
    rel = m.cuda_release(cuda)
    need = rel.min_driver_linux if rel and target.driver_os == "linux" else (rel.min_driver_windows if rel else None)
    newest = m.max_cuda_for_driver(target.driver, target.driver_os)
    return (f"driver {target.driver} is too old for CUDA {cuda} (needs {need or 'a newer driver'}"
            f"{'' if verdict == 'minor_version_compat' else ', or its minor-version-compatibility floor'}); "
            f"it runs CUDA {newest or 'none'} natively. Use --driver install, or pin an older CUDA")


def _span(lo: Optional[str], hi: Optional[str], majors: Sequence[int]) -> str:
    low = lo or f"{majors[0]}.x"
    return f"{low} and newer" if hi is None else f"{low} to {hi}"


def _pinned_line_conflict(m: Matrix, pins: Pins) -> Optional[str]:
    """With CUDA pinned, a pinned cuDNN/TensorRT line that supports none of those CUDA releases, said once."""
    cudas = [c for c in m.cuda_releases() if _matches(pins.cuda, c.cuda)]
    for what, pin, rows, key in (("cuDNN", pins.cudnn, m.cudnn_releases(), "cudnn"),
                                 ("TensorRT", pins.tensorrt, m.tensorrt_releases(), "tensorrt")):
        if pin in (None, "none", "latest"):
            continue
        lines = [r for r in rows if _matches(pin, getattr(r, key))]
        if lines and not any(covers_cuda(r, c.cuda) for r in lines for c in cudas):
            name = f"{what} {pin}" + (".x" if "." not in pin else "")
            los = [r.cuda_min or f"{r.cuda_majors[0]}.0" for r in lines]
            his = [r.cuda_max for r in lines]
            top = None if None in his else max(his, key=_v)
            return (f"{name} supports CUDA {_span(min(los, key=_v), top, lines[0].cuda_majors)}; "
                    f"CUDA {pins.cuda} is outside that")
    return None


def _sm_ok(gpu: Optional[GpuTarget], lo: Optional[str], hi: Optional[str]) -> bool:
    if gpu is None:
        return True
    n = int(gpu.sm[3:])
    return not ((lo and n < int(lo[3:].rstrip("af"))) or (hi and n > int(hi[3:].rstrip("af"))))


def cuda_as_wheels(m: Matrix, cuda: CudaRelease) -> Optional[str]:
    if m.pip_suffix(cuda.cuda) is None:
        return f"CUDA {cuda.cuda} has no nvidia-cuda-runtime wheels on PyPI"
    return None


def _pip_name(names: Sequence[str], stem: str, cuda_major: int) -> Optional[str]:
    want = f"{stem}-cu{cuda_major}"
    return want if want in names else None


def cudnn_fits(target: Target, cuda: CudaRelease, c: CudnnRelease, pip_only: bool = False) -> Optional[str]:
    if pip_only and not _pip_name(c.pip, "nvidia-cudnn", cuda.major):
        return f"cuDNN {c.cudnn} has no nvidia-cudnn-cu{cuda.major} wheel"
    if not covers_cuda(c, cuda.cuda):
        return f"cuDNN {c.cudnn} supports CUDA {_span(c.cuda_min, c.cuda_max, c.cuda_majors)}, not {cuda.cuda}"
    if not _sm_ok(target.gpu, c.min_sm, None):
        return f"cuDNN {c.cudnn} needs {c.min_sm} or newer; {target.gpu.name} is {target.gpu.sm}"
    if target.os.family == "windows" and c.windows is False:
        return f"cuDNN {c.cudnn} has no Windows build"
    return None


def tensorrt_fits(target: Target, cuda: CudaRelease, cudnn: Optional[CudnnRelease],
                  t: TensorrtRelease, pip_only: bool = False) -> Optional[str]:
    if pip_only and not _pip_name(t.pip, "tensorrt", cuda.major):
        return f"TensorRT {t.tensorrt} has no tensorrt-cu{cuda.major} wheel"
    if not covers_cuda(t, cuda.cuda):
        return f"TensorRT {t.tensorrt} supports CUDA {_span(t.cuda_min, t.cuda_max, t.cuda_majors)}, not {cuda.cuda}"
    if not _sm_ok(target.gpu, t.min_sm, t.max_sm):
        return f"TensorRT {t.tensorrt} supports {t.min_sm} to {t.max_sm}; {target.gpu.name} is {target.gpu.sm}"
    if t.major < 10 and t.cudnn:
        if cudnn is None:
            return f"TensorRT {t.tensorrt} needs cuDNN {t.cudnn}"
        if cudnn.major != int(t.cudnn.split(".")[0]):
            return f"TensorRT {t.tensorrt} was built against cuDNN {t.cudnn}, not {cudnn.cudnn}"
    if target.python and t.python and target.python not in t.python:
        return f"TensorRT {t.tensorrt} has no bindings for Python {target.python}"
    if target.os.family == "windows" and t.windows is False:
        return f"TensorRT {t.tensorrt} has no Windows build"
    return None


def _torch_coverage(b: TorchBuild, gpu: GpuTarget):
    return coverage({"sass": list(b.sass), "ptx": list(b.ptx)}, gpu.cc)


def torch_build_fits(m: Matrix, target: Target, tr: TorchRelease, b: TorchBuild, allow_mvc: bool) -> Optional[str]:
    gpu = target.gpu
    if gpu is not None and _torch_coverage(b, gpu).verdict == "none":
        return (f"torch {tr.torch}+cu{b.cuda.replace('.', '')} has no kernel image for {gpu.name} ({gpu.sm}): "
                f"SASS {', '.join(b.sass) or 'none'}")
    if target.python and target.python not in tr.python:
        return f"torch {tr.torch} has no wheel for Python {target.python}"
    return cuda_for_driver(m, target, b.cuda, allow_mvc)


# --------------------------------------------------------------------------- search


def _ga_driver(m: Matrix, rel: CudaRelease, drv_os: str) -> Optional[str]:
    """Table 3's driver for the release; where it lists none (Windows, CUDA >= 13.1), or the value is not
    confirmed by a source yet, the major's Table 2 floor (minor-version compatibility), which is."""
    field = "min_driver_linux" if drv_os == "linux" else "min_driver_windows"
    ga = getattr(rel, field)
    if ga and field in rel.unconfirmed:
        ga = None
    mvc = m.minor_version_compat(rel.major)
    return ga or (getattr(mvc, field) if mvc is not None else None)


def unconfirmed_driver_note(m: Matrix, rel: CudaRelease, drv_os: str) -> Optional[str]:
    """Said in the plan when the release's own driver minimum is not confirmed and the floor is used."""
    field = "min_driver_linux" if drv_os == "linux" else "min_driver_windows"
    if getattr(rel, field) and field in rel.unconfirmed:
        mvc = m.minor_version_compat(rel.major)
        floor = getattr(mvc, field) if mvc is not None else None
        return (f"CUDA {rel.cuda}'s own minimum driver ({getattr(rel, field)} in the matrix) is not confirmed by a "
                f"source yet; the plan uses the confirmed floor for CUDA {rel.major}.x, {floor} (minor-version "
                "compatibility: PTX newer than the driver is not JIT-compiled)")
    return None


def _driver_need(versions: Iterable[Optional[str]]) -> str:
    known = [v for v in versions if v]
    return max(known, key=Version) if known else "unknown"


# A row whose existence or install facts are unconfirmed is only chosen when no confirmed row fits.
_INSTALL_FACTS = frozenset({"latest", "cuda_majors", "pip"})


def _confirmed_first(rows: List[Any]) -> List[Any]:
    return sorted(rows, key=lambda r: r is not None and bool(_INSTALL_FACTS & set(r.unconfirmed)))


def _torch_candidates(m: Matrix, pin: Optional[str], cuda: CudaRelease) -> List[Tuple[TorchRelease, TorchBuild]]:
    out = []
    for tr in reversed(m.torch_releases()):
        if not _matches(pin, tr.torch):
            continue
        same = [b for b in tr.builds if int(b.cuda.split(".")[0]) == cuda.major]
        # Prefer the wheel built with this exact CUDA, then older minors (closest first), then newer ones.
        same.sort(key=lambda b: (b.cuda != cuda.cuda, _v(b.cuda) > _v(cuda.cuda),
                                 abs(_v(b.cuda).minor - cuda.minor)))
        out.extend((tr, b) for b in same)
    return out


def _try_cuda(m: Matrix, target: Target, pins: Pins, cuda: CudaRelease, allow_mvc: bool,
              why_cuda: List[str], why: List[str], served: Optional[Served] = None,
              unserved: Optional[List[str]] = None) -> Optional[Plan]:
    """The best plan built on ``cuda``; rejections go to ``why_cuda`` (CUDA itself) or ``why`` (the other parts)."""
    where = cuda_as_wheels(m, cuda) if pins.pip_only else cuda_on_os(target.os, cuda)
    for reason in (where, cuda_for_gpu(m, target.gpu, cuda),
                   cuda_for_driver(m, target, cuda.cuda, allow_mvc)):
        if reason:
            why_cuda.append(reason)
            return None

    archive = None if pins.pip_only else archive_for(target.os, cuda)
    if archive is not None:
        reason = cudnn_in_archive(target, archive, pins.cudnn)
        if reason:
            why.append(reason)
            return None

    torches: List[Tuple[Optional[TorchRelease], Optional[TorchBuild]]] = [(None, None)]
    if pins.torch != "none":
        torches = []
        for tr, b in _torch_candidates(m, pins.torch, cuda):
            reason = torch_build_fits(m, target, tr, b, allow_mvc)
            if reason:
                why.append(reason)
            else:
                torches.append((tr, b))
        if not torches:
            why.append(f"no torch{' ' + pins.torch if pins.torch != 'latest' else ''} wheel fits CUDA {cuda.cuda}")
            return None

    for tr, b in torches:
        cudnns: List[Optional[CudnnRelease]] = [None]
        if pins.cudnn != "none" and (archive is None or archive.cudnn):
            cudnns = []
            for c in reversed(m.cudnn_releases()):
                if _matches(pins.cudnn, c.cudnn):
                    reason = cudnn_fits(target, cuda, c, pins.pip_only)
                    if reason:
                        why.append(reason)
                    else:
                        cudnns.append(c)
            cudnns = _confirmed_first(cudnns)
            if b is not None and b.cudnn:  # one cuDNN on the machine: the one torch bundles, when it fits
                cudnns.sort(key=lambda c: c.cudnn != b.cudnn)
            if not cudnns:
                continue
        for cudnn in cudnns:
            trts: List[Optional[TensorrtRelease]] = [None]
            if pins.tensorrt != "none":
                trts = []
                for t in reversed(m.tensorrt_releases()):
                    if _matches(pins.tensorrt, t.tensorrt):
                        reason = tensorrt_fits(target, cuda, cudnn, t, pins.pip_only)
                        if reason:
                            why.append(reason)
                        else:
                            trts.append(t)
            for trt in _confirmed_first(trts):
                plan = _plan(m, target, cuda, cudnn, trt, tr, b, pins.pip_only, archive)
                no_driver = archive_driver_fits(plan)
                reason = no_driver or (served(plan) if served is not None else None)
                if reason is None:
                    skipped = [f"skipped: {r}" for r in dict.fromkeys(unserved or ())]
                    return dataclasses.replace(plan, notes=plan.notes + tuple(skipped[:3]))
                if no_driver:
                    why.append(no_driver)
                elif unserved is not None:
                    unserved.append(reason)
    return None


def archive_driver_fits(plan: Plan) -> Optional[str]:
    """Why the archive's driver, when the plan installs it, cannot run the plan's stack; else None."""
    a = plan.archive
    if a is None or plan.driver_branch is None or plan.driver_min == "unknown":
        return None
    have = a.driver_version.split("-")[0]
    if Version(have) < Version(plan.driver_min):
        return (f"{_archive_name(plan.target.os)}'s {a.driver_package} {have} is older than the {plan.driver_min} "
                f"the stack needs")
    return None


def _archive_notes(target: Target, a: ArchiveCuda) -> List[str]:
    name = _archive_name(target.os)
    notes = [f"{name}'s own packaging of CUDA {a.cuda} ({a.toolkit_package} {a.toolkit_version} from {a.suite} "
             f"{'/'.join(a.components)}), not NVIDIA's repository: nvcc is {a.nvcc}, a wrapper whose profile puts "
             f"the toolkit's gcc/g++ ({a.packages[1]}) first; {' '.join(a.packages[1:])} come with it because nvcc runs "
             "`gcc` from PATH to read the host compiler's properties before that wrapper applies."]
    if not a.cudnn:
        notes.append(f"No cuDNN: {name}'s archive has none that installs without NVIDIA's servers (its nvidia-cudnn "
                     "downloads cuDNN from NVIDIA at install time).")
    return notes


def _plan(m: Matrix, target: Target, cuda: CudaRelease, cudnn: Optional[CudnnRelease],
          trt: Optional[TensorrtRelease], tr: Optional[TorchRelease], b: Optional[TorchBuild],
          pip_only: bool = False, archive: Optional[ArchiveCuda] = None) -> Plan:
    drv_os = target.driver_os
    needs = [_ga_driver(m, cuda, drv_os)]
    if b is not None:
        rel = m.cuda_release(b.cuda)
        if rel is not None:
            needs.append(_ga_driver(m, rel, drv_os))
    driver_min = _driver_need(needs)
    notes: List[str] = []
    verdict = "unknown"
    if target.driver and target.driver_action == "keep":
        verdicts = {m.driver_supports(target.driver, v, drv_os) for v in [cuda.cuda] + ([b.cuda] if b else [])}
        verdict = "minor_version_compat" if "minor_version_compat" in verdicts else \
            "unknown" if "unknown" in verdicts else "native"
        if verdict == "minor_version_compat":
            notes.append(f"driver {target.driver} runs CUDA {cuda.cuda} only through minor-version compatibility: "
                         f"PTX newer than the driver cannot be JIT-compiled; driver {driver_min} or newer runs it natively")
    branch = None
    if target.driver_action == "install" and target.os.os not in ("wsl-ubuntu",) and not target.container:
        base = next((getattr(cuda, f) for f in ("runfile_driver_linux", "min_driver_linux")
                     if getattr(cuda, f) and f not in cuda.unconfirmed), None) or driver_min  # only confirmed values
        if archive is not None:  # the archive's own driver: one branch, checked by archive_driver_fits
            branch = archive.driver_branch
        elif base == "unknown":
            branch = None
        else:
            branch = base.split(".")[0] if driver_min == "unknown" else max(base, driver_min, key=Version).split(".")[0]
    if archive is not None:
        notes += _archive_notes(target, archive)
    if target.gpu is None:
        notes.append("no GPU given or detected: the plan is not checked against a GPU's compute capability")
    if b is not None and target.gpu is not None and _torch_coverage(b, target.gpu).verdict == "ptx_jit":
        notes.append(f"torch {tr.torch}+cu{b.cuda.replace('.', '')} has no SASS for {target.gpu.sm}: "
                     f"kernels are JIT-compiled from PTX ({', '.join(b.ptx)}) on first use")
    for rel in [cuda] + ([m.cuda_release(b.cuda)] if b is not None and m.cuda_release(b.cuda) else []):
        note = unconfirmed_driver_note(m, rel, drv_os)
        if note and note not in notes:
            notes.append(note)
    for name, rec, key in (("CUDA", cuda, "cuda"), ("cuDNN", cudnn, "cudnn"), ("TensorRT", trt, "tensorrt"),
                           ("torch", tr, "torch")):
        if rec is not None and rec.unconfirmed:
            notes.append(f"{name} {getattr(rec, key)}: matrix fields not confirmed by a source: "
                         f"{', '.join(rec.unconfirmed)}")
    return Plan(target, cuda, cudnn, trt, tr, b, driver_min, branch, verdict, tuple(notes), pip_only,
                m.pip_suffix(cuda.cuda) if pip_only else None, archive)


_LATEST = (("tensorrt", "TensorRT", "tensorrt_releases", "tensorrt"), ("torch", "torch", "torch_releases", "torch"),
           ("cudnn", "cuDNN", "cudnn_releases", "cudnn"))


def solve(m: Matrix, target: Target, pins: Pins = Pins(), served: Optional[Served] = None) -> Plan:
    """The newest consistent stack for ``target`` under ``pins``; ``latest`` for TensorRT, torch or cuDNN
    means the newest release of that component that fits (a newer CUDA is given up for it), and the
    plan says which newer releases were passed over and why.

    ``served`` (see :data:`Served`) makes "fits" include "what it fetches is served by its index":
    an unserved release is passed over for the next older one (the plan says so); when only unserved
    releases match a pin, :class:`PlanError` names the requirement and the versions that are served."""

    for part, label, rows_of, key in _LATEST:
        if getattr(pins, part) != "latest":
            continue
        passed_over: List[str] = []
        for rec in reversed(getattr(m, rows_of)()):
            version = getattr(rec, key)
            try:  # the pin stands for "latest": minor-version compatibility stays as unpinned
                plan = _solve_latest(m, target, dataclasses.replace(pins, **{part: version}), pins, served)
            except PlanError as exc:
                passed_over.append(f"{label} {version} (newer) does not fit: {_own_reason(exc, label)}")
                continue
            notes = tuple(passed_over[:3]) + ((f"and {len(passed_over) - 3} more newer {label} releases",)
                                               if len(passed_over) > 3 else ())
            return dataclasses.replace(plan, notes=plan.notes + notes)
        raise PlanError(f"no {label} release in the matrix fits", passed_over[:8])
    return _solve(m, target, pins, served=served)


_NESTED = re.compile(r"^(?:\S+ \S+ \(newer\) does not fit: )+")


def _own_reason(exc: PlanError, label: str) -> str:
    """Why a release was passed over, without blaming another component: when another "latest" was resolved
    inside (every torch tried with TensorRT 11.5), the first of its reasons that names this component (the
    unserved ``tensorrt-cu13==11.5.*``) rather than the first overall (torch 2.15's Python), nested prefixes
    removed."""
    reasons = [_NESTED.sub("", r) for r in exc.reasons] or [exc.summary]
    word = label.lower()
    return next((r for r in reasons if word in r.lower()), reasons[0])


def _solve_latest(m: Matrix, target: Target, pins: Pins, asked: Pins, served: Optional[Served] = None) -> Plan:
    """``solve`` with one "latest" resolved to a version; the other "latest" pins still resolve."""
    for part, *_ in _LATEST:
        if getattr(pins, part) == "latest":
            return solve(m, target, pins, served)  # resolves the next one; asked-ness of the first is kept below
    return _solve(m, target, pins, asked=asked, served=served)


def _solve(m: Matrix, target: Target, pins: Pins = Pins(), asked: Optional[Pins] = None,
           served: Optional[Served] = None) -> Plan:
    """The newest consistent stack for ``target`` under ``pins`` (no ``latest`` pins left).

    Raises :class:`PlanError` naming the conflicts when nothing fits: an unknown
    pinned version, a pin outside the OS's CUDA range, cuDNN 9 for CUDA 10.2, a
    GPU the pinned CUDA cannot target, a kept driver too old, and so on.
    """
    for what, pin, rows, key in (("cuda", pins.cuda, m.cuda_releases(), "cuda"),
                                 ("cudnn", pins.cudnn, m.cudnn_releases(), "cudnn"),
                                 ("tensorrt", pins.tensorrt, m.tensorrt_releases(), "tensorrt"),
                                 ("torch", pins.torch, m.torch_releases(), "torch")):
        if pin not in (None, "none", "latest") and not any(_matches(pin, getattr(r, key)) for r in rows):
            known = ", ".join(getattr(r, key) for r in rows)
            raise PlanError(f"--{what} {pin}: not in the compatibility matrix", [f"known: {known}"])
    conflict = _pinned_line_conflict(m, pins) if pins.cuda else None
    if conflict:
        raise PlanError(f"the pins contradict each other: {conflict}")
    candidates = [c for c in reversed(m.cuda_releases()) if _matches(pins.cuda, c.cuda)]
    why_cuda: List[str] = []
    why: List[str] = []
    unserved: List[str] = []
    # Natively supported stacks first; minor-version compatibility only when the user pinned CUDA or torch.
    asked = asked or pins
    passes = (False, True) if (asked.cuda or asked.torch not in (None, "none", "latest")) else (False,)
    for allow_mvc in passes:
        for cuda in candidates:
            plan = _try_cuda(m, target, pins, cuda, allow_mvc, why_cuda, why, served, unserved)
            if plan is not None:
                return plan
    # When some CUDA fitted OS, GPU and driver, the conflict is among the other parts: say those.
    # Stacks that fitted the matrix but whose wheels the index does not serve: that is the reason, said alone.
    why = list(dict.fromkeys(unserved)) or (why or why_cuda)
    asked = ", ".join(f"{k} {v}" for k, v in vars(pins).items() if v not in (None, "none", False, True))
    gpu = f" on {target.gpu.name} ({target.gpu.sm})" if target.gpu else ""
    drv = f" with driver {target.driver}" if target.driver and target.driver_action == "keep" else ""
    where = "; the stacks that fit the matrix need wheels their index does not serve" if unserved else ""
    raise PlanError(f"no consistent stack for {target.os.os}{gpu}{drv}" + (f" and {asked}" if asked else "") + where,
                    list(dict.fromkeys(why))[:8])
