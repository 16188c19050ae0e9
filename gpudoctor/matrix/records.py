"""Immutable rows of the compatibility matrix, one dataclass per table.

Every record keeps the row's ``source`` (URLs) and ``unconfirmed`` (names of
fields no source confirmed). Lists in the JSON become tuples, objects become
read-only dicts. Field meanings and their NVIDIA sources are listed in
``compat_matrix/README.md``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping, Optional, Tuple, Type, TypeVar

__all__ = [
    "ArchiveCuda", "CudaRelease", "CudnnRelease", "GpuInfo", "JaxRelease", "MinorCompat", "OnnxruntimeRelease",
    "OsInfo", "TensorflowRelease", "TensorrtRelease", "TorchBuild", "TorchRelease", "covers_cuda", "from_row",
]

_EMPTY: Mapping[str, str] = MappingProxyType({})


@dataclass(frozen=True)
class MinorCompat:
    """CUDA minor version compatibility floor for one CUDA major release.

    From Table 2 of the CUDA Toolkit release notes ("CUDA Toolkit and Minimum
    Required Driver Version for CUDA Minor Version Compatibility"). Driver
    versions are strings such as ``"450.80.02"``; ``min_driver_windows`` may be
    ``None`` when the source gives none.
    """

    cuda_major: int
    min_driver_linux: str
    min_driver_windows: Optional[str]
    source: Tuple[str, ...]
    unconfirmed: Tuple[str, ...] = ()
    notes: Optional[str] = None


@dataclass(frozen=True)
class CudaRelease:
    """One CUDA toolkit minor release ("12.4").

    * ``min_driver_linux`` / ``min_driver_windows``: the GA toolkit driver of
      that release, Table 3 of the CUDA Toolkit release notes ("CUDA Toolkit and
      Corresponding Driver Versions"); Windows is ``None`` where Table 3 says N/A.
    * ``max_gcc`` / ``max_clang``: newest host compiler major version accepted by
      ``crt/host_config.h`` of that release (CUDA Installation Guide for Linux).
    * ``sms``: every real target (``sm_XX``, plus arch-specific ``sm_XXa`` and
      family-specific ``sm_XXf``) nvcc of that release accepts for ``-arch`` /
      ``-code`` (nvcc "GPU feature list"); ``min_sm`` / ``max_sm`` are the lowest
      and highest plain targets among them.
    * ``latest_update``: newest update of the minor ("12.4.1");
      ``runfile_driver_linux``: the driver bundled in that update's Linux runfile
      (``cuda_12.4.1_550.54.15_linux.run``); ``msvc``: Visual Studio versions
      ("2019", "2022") the Windows installation guide supports.
    """

    cuda: str
    min_driver_linux: str
    min_driver_windows: Optional[str]
    max_gcc: int
    max_clang: int
    min_sm: str
    max_sm: str
    sms: Tuple[str, ...]
    source: Tuple[str, ...]
    unconfirmed: Tuple[str, ...] = ()
    notes: Optional[str] = None
    latest_update: Optional[str] = None
    runfile_driver_linux: Optional[str] = None
    msvc: Tuple[str, ...] = ()
    #: Newest PTX ISA version ("8.4") the release emits and its driver JIT-compiles (PTX ISA release history).
    ptx_isa: Optional[str] = None

    @property
    def major(self) -> int:
        return int(self.cuda.split(".")[0])

    @property
    def minor(self) -> int:
        return int(self.cuda.split(".")[1])


@dataclass(frozen=True)
class CudnnRelease:
    """One cuDNN release line ("9.10") from the cuDNN support matrix.

    ``cuda_majors`` lists the CUDA majors it has builds for; ``cuda_min`` /
    ``cuda_max`` are the oldest / newest supported CUDA toolkit ("12.9", or
    "12.x"), either may be ``None`` when the source only gives majors.
    ``latest`` is the newest patch ("9.1.1.17"); ``pip`` the PyPI distributions
    that ship it; ``apt`` the NVIDIA-repo package names (``{cuda_major}`` is a
    placeholder); ``apt_versions`` CUDA major ("12") -> apt package version;
    ``min_sm`` the oldest GPU target supported; ``windows`` whether a Windows
    build exists. ``exact`` is False when the query asked for a newer minor of
    the same major and this is the newest row not above it.
    """

    cudnn: str
    cuda_majors: Tuple[int, ...]
    cuda_min: Optional[str]
    cuda_max: Optional[str]
    source: Tuple[str, ...]
    unconfirmed: Tuple[str, ...] = ()
    notes: Optional[str] = None
    latest: Optional[str] = None
    pip: Tuple[str, ...] = ()
    apt: Tuple[str, ...] = ()
    apt_versions: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    min_sm: Optional[str] = None
    windows: Optional[bool] = None
    exact: bool = True

    @property
    def major(self) -> int:
        return int(self.cudnn.split(".")[0])


@dataclass(frozen=True)
class TensorrtRelease:
    """One TensorRT release line ("10.3") from the TensorRT support matrix / release notes.

    Fields as :class:`CudnnRelease`, plus ``cudnn``: the cuDNN major.minor the
    release was validated with (optional dependency from TensorRT 10), or None;
    ``python``: CPython versions with bindings; ``min_sm`` / ``max_sm``: the
    supported GPU range.
    """

    tensorrt: str
    cuda_majors: Tuple[int, ...]
    cuda_min: Optional[str]
    cuda_max: Optional[str]
    cudnn: Optional[str]
    source: Tuple[str, ...]
    unconfirmed: Tuple[str, ...] = ()
    notes: Optional[str] = None
    latest: Optional[str] = None
    python: Tuple[str, ...] = ()
    min_sm: Optional[str] = None
    max_sm: Optional[str] = None
    pip: Tuple[str, ...] = ()
    apt_versions: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    windows: Optional[bool] = None
    exact: bool = True

    @property
    def major(self) -> int:
        return int(self.tensorrt.split(".")[0])


@dataclass(frozen=True)
class GpuInfo:
    """A GPU product family matched by NVML product name.

    ``pattern`` is a case-insensitive regex (``re.search``) over the NVML name;
    ``cc`` the compute capability ("9.0"), ``family`` the architecture name,
    ``segment`` "data-center" | "workstation" | "geforce" | "jetson", from
    developer.nvidia.com/cuda-gpus (and the legacy page).
    """

    pattern: str
    cc: str
    family: str
    example: str
    source: Tuple[str, ...]
    unconfirmed: Tuple[str, ...] = ()
    notes: Optional[str] = None
    segment: Optional[str] = None


@dataclass(frozen=True)
class ArchiveCuda:
    """The CUDA release a distribution's own archive packages (Debian 12: CUDA 11.8 in bookworm non-free).

    ``suite`` the archive's release ("bookworm"); ``components`` the components to enable beyond main;
    ``packages`` what the plan installs (the toolkit first); ``toolkit_version`` the toolkit package's version
    in the archive (for the record: plans do not pin it, a point release may replace it); ``nvcc`` its path;
    ``driver_package`` / ``driver_version`` the archive's driver; ``cudnn`` a cuDNN package that installs
    without NVIDIA's servers, or None where the archive has none.
    """

    cuda: str
    suite: str
    components: Tuple[str, ...]
    packages: Tuple[str, ...]
    toolkit_version: str
    nvcc: str
    driver_package: str
    driver_version: str
    cudnn: Optional[str] = None

    @property
    def toolkit_package(self) -> str:
        return self.packages[0]

    @property
    def driver_branch(self) -> str:
        return self.driver_version.split(".")[0]


@dataclass(frozen=True)
class OsInfo:
    """An operating system ``gpudoctor install`` plans for ("ubuntu-22.04", "wsl-ubuntu", "windows").

    ``repo`` is NVIDIA's CUDA network repository directory ("ubuntu2204"; None
    on Windows); ``cuda_min`` / ``cuda_max`` the CUDA releases published for it
    (``cuda_max`` None: still current); ``python`` the distro's python3;
    ``driver_package`` the driver package template (``{branch}`` placeholder;
    None where no Linux driver may be installed: WSL, or Windows);
    ``keyring`` the cuda-keyring .deb or .repo URL; ``archive_cuda`` the CUDA the distribution's own
    archive packages (None: none planned from it).
    """

    os: str
    family: str
    repo: Optional[str]
    cuda_min: str
    cuda_max: Optional[str]
    python: Optional[str]
    driver_package: Optional[str]
    keyring: Optional[str]
    source: Tuple[str, ...]
    unconfirmed: Tuple[str, ...] = ()
    notes: Optional[str] = None
    archive_cuda: Optional[ArchiveCuda] = None


@dataclass(frozen=True)
class TorchBuild:
    """One CUDA variant of a PyTorch release: its wheel index, bundled cuDNN, SASS and PTX targets."""

    cuda: str
    index_url: str
    cudnn: Optional[str]
    sass: Tuple[str, ...]
    ptx: Tuple[str, ...]


@dataclass(frozen=True)
class TorchRelease:
    """A PyTorch release line ("2.4") and its CUDA wheel variants (``builds``, oldest CUDA first)."""

    torch: str
    python: Tuple[str, ...]
    default_cuda: Optional[str]
    builds: Tuple[TorchBuild, ...]
    source: Tuple[str, ...]
    unconfirmed: Tuple[str, ...] = ()
    notes: Optional[str] = None

    def build(self, cuda: str) -> Optional[TorchBuild]:
        """The variant built with CUDA ``cuda`` ("12.4"), or None."""
        for b in self.builds:
            if b.cuda == cuda:
                return b
        return None


@dataclass(frozen=True)
class JaxRelease:
    """A JAX release and the CUDA plugin it installs with (``pip`` e.g. "jax[cuda12]")."""

    jax: str
    python: Tuple[str, ...]
    cuda_majors: Tuple[int, ...]
    cuda_min: Optional[str]
    cudnn_min: Optional[str]
    pip: str
    min_sm: Optional[str]
    source: Tuple[str, ...]
    unconfirmed: Tuple[str, ...] = ()
    notes: Optional[str] = None


@dataclass(frozen=True)
class TensorflowRelease:
    """A TensorFlow release and its tested CUDA/cuDNN build configuration."""

    tensorflow: str
    python: Tuple[str, ...]
    cuda: Optional[str]
    cudnn: Optional[str]
    pip: str
    source: Tuple[str, ...]
    unconfirmed: Tuple[str, ...] = ()
    notes: Optional[str] = None


@dataclass(frozen=True)
class OnnxruntimeRelease:
    """An onnxruntime-gpu release: CUDA versions it is built for and the matching cuDNN (pairwise)."""

    onnxruntime: str
    cuda: Tuple[str, ...]
    cudnn: Tuple[str, ...]
    pip: Tuple[str, ...]
    source: Tuple[str, ...]
    unconfirmed: Tuple[str, ...] = ()
    notes: Optional[str] = None


def covers_cuda(row: "CudnnRelease | TensorrtRelease", cuda: str) -> bool:
    """Whether a cuDNN or TensorRT line supports CUDA release ``cuda`` ("12.4"): its major is listed, and the
    release lies between ``cuda_min`` and ``cuda_max`` ("12.x" admits every 12 minor; None: no bound)."""
    major, minor = (int(x) for x in cuda.split(".")[:2])
    if major not in row.cuda_majors:
        return False

    def mm(text: str) -> Tuple[int, int]:
        a, b = text.split(".")
        return int(a), (10**9 if b == "x" else int(b))

    if row.cuda_min and (major, minor) < mm(row.cuda_min):
        return False
    return not (row.cuda_max and (major, minor) > mm(row.cuda_max))


T = TypeVar("T")


def _freeze(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, dict):
        return MappingProxyType({k: _freeze(v) for k, v in value.items()})
    return value


def from_row(cls: Type[T], row: Mapping[str, Any], **override: Any) -> T:
    """Build record ``cls`` from a validated JSON row (missing optional fields keep their defaults)."""
    kwargs = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.name in override:
            kwargs[f.name] = override[f.name]
        elif f.name == "source":
            src = row["source"]
            kwargs[f.name] = (src,) if isinstance(src, str) else tuple(src)
        elif f.name in row:
            kwargs[f.name] = _freeze(row[f.name])
    return cls(**kwargs)
