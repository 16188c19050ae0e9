"""Requirements a machine or image must meet: ``check --require "cuda>=12.4"`` and the same in a file.

A requirement is ``NAME SPEC``: a PEP 440 specifier set on a version (``cuda>=12.4``,
``cudnn==9.*``, ``driver>=550,<600``) or, for ``torch.arch``, an SM bound (``torch.arch>=sm_90``:
the wheel has SASS for sm_90 or newer). Names:

=============== ====================================================================
``driver``      installed driver version (NVML, else the kernel module)
``driver.cuda`` newest CUDA the driver supports
``cuda``        CUDA toolkit in use (nvcc), else the runtime version
``cuda.runtime``CUDA runtime (cudart) version
``cudnn``       every cuDNN library found must match
``tensorrt``    importable TensorRT, else libnvinfer
``torch``       PyTorch version (local build tag dropped); ``torch.cuda`` its CUDA build
``torch.arch``  SASS targets of libtorch_cuda.so (SM bound)
``gpu.count``   number of GPUs NVML reports; ``gpu.cc`` the lowest compute capability
``python``      Python version
=============== ====================================================================

Files: ``gpudoctor.toml`` (top-level keys) or ``[tool.gpudoctor]`` in ``pyproject.toml``, found in the
working directory: ``require = ["cuda>=12.4", ...]``, ``strict = true``, ``target-gpu = ["H100"]``.
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

__all__ = ["NAMES", "Policy", "PolicyError", "Requirement", "actual_values", "load_policy", "parse_requirement"]

NAMES = ("driver", "driver.cuda", "cuda", "cuda.runtime", "cudnn", "tensorrt", "torch", "torch.cuda", "torch.arch",
         "gpu.count", "gpu.cc", "python")
_REQ = re.compile(r"^\s*(?P<name>[a-z][a-z.]*)\s*(?P<spec>(?:[<>=!~]=?|===).+)$")
_SM = re.compile(r"^\s*(?P<op><=|>=|==|<|>)\s*sm_(?P<n>\d{2,3})\s*$")


class PolicyError(ValueError):
    """A requirement or policy file that cannot be understood (the message says which and why)."""


@dataclass(frozen=True)
class Requirement:
    text: str
    name: str
    spec: str

    def check(self, values: Sequence[str]) -> bool:
        """True when every value satisfies the spec (False when there is no value)."""
        if not values:
            return False
        if self.name == "torch.arch":
            m = _SM.match(self.spec)
            nums = [int(re.sub(r"\D", "", v.split("_", 1)[1]) or 0) for v in values if v.startswith("sm_")]
            if not m or not nums:
                return False
            want, best = int(m.group("n")), max(nums)
            return {"<=": best <= want, ">=": best >= want, "==": want in nums, "<": best < want, ">": best > want}[m.group("op")]
        spec = SpecifierSet(self.spec)
        try:
            return all(spec.contains(Version(v), prereleases=True) for v in values)
        except InvalidVersion:
            return False


@dataclass
class Policy:
    requirements: List[Requirement] = field(default_factory=list)
    strict: bool = False
    target_gpus: List[str] = field(default_factory=list)
    source: Optional[str] = None


def parse_requirement(text: str) -> Requirement:
    m = _REQ.match(text or "")
    if not m:
        raise PolicyError(f"requirement {text!r}: write NAME OP VERSION, e.g. 'cuda>=12.4' or 'cudnn==9.*'")
    name, spec = m.group("name"), m.group("spec").strip()
    if name not in NAMES:
        raise PolicyError(f"requirement {text!r}: unknown name {name!r} (known: {', '.join(NAMES)})")
    if name == "torch.arch":
        if not _SM.match(spec):
            raise PolicyError(f"requirement {text!r}: torch.arch takes an SM bound like '>=sm_90'")
    else:
        try:
            SpecifierSet(spec)
        except InvalidSpecifier:
            raise PolicyError(f"requirement {text!r}: {spec!r} is not a version specifier (PEP 440)") from None
    return Requirement(text.strip(), name, spec)


def _read_toml(path: Path) -> Dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python 3.9/3.10
        import tomli as tomllib
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise PolicyError(f"{path}: cannot be read: {exc}") from None


def load_policy(requires: Sequence[str] = (), directory: Optional[Path] = None) -> Policy:
    """Requirements from ``requires`` plus the policy file in ``directory`` (default: the working directory)."""
    root = Path(directory) if directory is not None else Path.cwd()
    table: Dict[str, Any] = {}
    source = None
    if (root / "gpudoctor.toml").is_file():
        source = str(root / "gpudoctor.toml")
        table = _read_toml(root / "gpudoctor.toml")
    elif (root / "pyproject.toml").is_file():
        table = (_read_toml(root / "pyproject.toml").get("tool") or {}).get("gpudoctor") or {}
        source = f"{root / 'pyproject.toml'} [tool.gpudoctor]" if table else None
    unknown = set(table) - {"require", "strict", "target-gpu"}
    if unknown:
        raise PolicyError(f"{source}: unknown key(s) {sorted(unknown)} (known: require, strict, target-gpu)")
    req = table.get("require", [])
    if not isinstance(req, list) or not all(isinstance(r, str) for r in req):
        raise PolicyError(f"{source}: 'require' must be a list of strings")
    targets = table.get("target-gpu", [])
    if isinstance(targets, str):
        targets = [targets]
    return Policy([parse_requirement(r) for r in list(req) + list(requires)], bool(table.get("strict", False)),
                  list(targets), source)


def _probe(facts, name: str) -> Mapping[str, Any]:
    """A probe's facts from check's Facts or from a plain dict (a saved report's probe facts)."""
    try:
        return facts[name] or {}
    except KeyError:
        return {}


def actual_values(facts: Mapping[str, Mapping[str, Any]], name: str) -> Tuple[List[str], str]:
    """(values, where they come from) for a requirement name, from ``check``'s probe facts."""
    drv = _probe(facts, "driver") or {}
    nvml = drv.get("nvml") or {}
    cuda = _probe(facts, "cuda") or {}
    torch = (_probe(facts, "frameworks") or {}).get("torch") or {}
    if name in ("driver", "driver.cuda"):
        from gpudoctor.rules._util import driver_cuda, driver_version

        view = {"driver": drv, "cuda": cuda}  # the same sources check's driver rules use
        v, where = driver_version(view) if name == "driver" else driver_cuda(view)
        return ([v] if v else []), where
    if name == "cuda":
        tks = [t for t in (_probe(facts, "toolkit") or {}).get("toolkits") or [] if t.get("release")]
        if tks:
            return [tks[0]["release"]], f"nvcc {tks[0].get('nvcc')}"
        return ([cuda["runtime_version"]] if cuda.get("runtime_version") else []), "cudaRuntimeGetVersion"
    if name == "cuda.runtime":
        return ([cuda["runtime_version"]] if cuda.get("runtime_version") else []), "cudaRuntimeGetVersion"
    if name == "cudnn":
        libs = (_probe(facts, "cudnn") or {}).get("libraries") or []
        return [str(lib.get("api_version") or lib.get("version")) for lib in libs if lib.get("api_version") or lib.get("version")], \
            "cuDNN libraries found"
    if name == "tensorrt":
        from gpudoctor.rules.engine_verdict import installed_tensorrt

        v, where = installed_tensorrt(_probe(facts, "tensorrt") or {})
        return ([v] if v else []), where or "no TensorRT"
    if name == "torch":
        v = torch.get("version")
        return ([str(v).split("+")[0]] if v else []), "torch/version.py"
    if name == "torch.cuda":
        return ([torch["cuda"]] if torch.get("cuda") else []), "torch/version.py"
    if name == "torch.arch":
        return list((torch.get("archs") or {}).get("sass") or []), "libtorch_cuda.so fatbinaries"
    gpus = nvml.get("gpus") or []
    if name == "gpu.count":
        return ([str(len(gpus))] if nvml.get("status") == "ok" else []), "NVML"
    if name == "gpu.cc":
        ccs = sorted((g["compute_capability"] for g in gpus if g.get("compute_capability")), key=Version)
        return ccs[:1], "NVML (lowest)"
    if name == "python":
        v = ((_probe(facts, "platform") or {}).get("python") or {}).get("version")
        return ([v] if v else []), "platform"
    return [], "unknown"
