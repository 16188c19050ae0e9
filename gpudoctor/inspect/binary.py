"""`gpudoctor inspect binary`: which GPUs a CUDA binary can run on, read without the toolkit.

For a .so, executable, .cubin or .fatbin (or every library of an installed
package, ``--package torch``), list the SASS targets (``sm_XY``) and PTX
(``compute_XY`` with its PTX ISA version) in its fatbinaries
(:mod:`gpudoctor.formats.fatbin`), then give each GPU's verdict with the CUDA loader's
rules (:func:`gpudoctor.formats.fatbin.coverage`):

* ``sass``: a native kernel image (exact, or binary-compatible within the major);
* ``ptx_jit``: no SASS, but PTX the driver JIT-compiles on first use, if the
  driver is new enough for that PTX ISA version (PTX ISA release history,
  ``cuda.json`` ``ptx_isa``); otherwise ``CUDA_ERROR_UNSUPPORTED_PTX_VERSION``;
* ``none``: "no kernel image is available for execution on the device".
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence

from packaging.version import InvalidVersion, Version

from gpudoctor.probes import dists
from gpudoctor.formats.fatbin import CudaBinary, CudaBinaryError, coverage, read_cuda_binary
from gpudoctor.matrix import Matrix

__all__ = ["GpuSpec", "InspectError", "inspect_files", "package_files"]

class InspectError(ValueError):
    """Nothing could be inspected: a missing package, or no readable file."""


@dataclass(frozen=True)
class GpuSpec:
    """A GPU to judge for: a name and its compute capability ("9.0")."""

    name: str
    cc: str


@dataclass
class _Verdict:
    gpu: GpuSpec
    verdict: str  # "sass" | "ptx_jit" | "ptx_too_new" | "none"
    entry: Optional[str]
    reason: str


def package_files(name: str) -> List[str]:
    """The CUDA-capable files an installed distribution owns (:func:`gpudoctor.probes.dists.package_files`).
    Raises InspectError when no such distribution is installed."""
    files = dists.package_files(name)
    if files is None:
        raise InspectError(f"no installed Python distribution named {name!r}")
    return files


def _ptx_isa(b: CudaBinary, arch: str) -> Optional[str]:
    isas = [e.ptx_isa for e in b.entries if e.kind == "ptx" and e.arch == arch and e.ptx_isa]
    return max(isas, key=Version) if isas else None


def _judge(m: Matrix, b: CudaBinary, gpu: GpuSpec, driver_cuda: Optional[str]) -> _Verdict:
    cov = coverage(b, gpu.cc)
    if cov.verdict != "ptx_jit" or cov.entry is None:
        return _Verdict(gpu, cov.verdict, cov.entry, cov.reason)
    isa = _ptx_isa(b, cov.entry)
    need = m.cuda_for_ptx_isa(isa) if isa else None
    if need and driver_cuda:
        try:
            too_old = Version(driver_cuda) < Version(need)
        except InvalidVersion:
            too_old = False
        if too_old:
            return _Verdict(gpu, "ptx_too_new", cov.entry,
                            f"only PTX {cov.entry} (PTX ISA {isa}, CUDA {need}); the driver supports CUDA {driver_cuda} "
                            "and cannot JIT-compile it: 'the provided PTX was compiled with an unsupported toolchain'")
    extra = f" (PTX ISA {isa}, needs a CUDA {need}+ driver)" if isa and need else ""
    return _Verdict(gpu, "ptx_jit", cov.entry, cov.reason + extra)


def _fix(verdict: _Verdict, files: Sequence[str], package: Optional[str], m: Matrix) -> Optional[Dict[str, Any]]:
    if verdict.verdict in ("sass", "ptx_jit"):
        return None
    sm = "sm_" + verdict.gpu.cc.replace(".", "")
    if verdict.verdict == "ptx_too_new":
        return {"summary": "Upgrade the driver to one that supports the PTX's CUDA release, or rebuild with SASS for "
                           f"{sm} so that no JIT is needed.",
                "commands": [f"nvcc -gencode arch=compute_{sm[3:]},code={sm} ..."]}
    span = m.cuda_range_for_sm(sm)
    toolkits = f" (nvcc of CUDA {span[0]} to {span[1]} can target {sm})" if span else \
        f" (no CUDA release in the matrix targets {sm})"
    commands = [f"nvcc -gencode arch=compute_{sm[3:]},code={sm} -gencode arch=compute_{sm[3:]},code=compute_{sm[3:]} ..."
                + ("" if span else "   # needs a toolkit that still supports it"),
                f"export TORCH_CUDA_ARCH_LIST=\"{verdict.gpu.cc}+PTX\"   # PyTorch C++/CUDA extensions"]
    if package == "torch":
        for rel in reversed(m.torch_releases()):
            build = next((b for b in reversed(rel.builds) if coverage({"sass": list(b.sass), "ptx": list(b.ptx)},
                                                                     verdict.gpu.cc).verdict == "sass"), None)
            if build is not None:
                commands = [f"python -m pip install 'torch=={rel.torch}.*' --index-url {build.index_url}"]
                break
    return {"summary": f"No kernel image for {verdict.gpu.name} ({sm}): rebuild with {sm} in the target list"
                       f"{toolkits}, or install a build that includes it.", "commands": commands}


def inspect_files(m: Matrix, paths: Sequence[str], gpus: Sequence[GpuSpec], driver_cuda: Optional[str] = None,
                  package: Optional[str] = None) -> Dict[str, Any]:
    """Read every file and judge it for every GPU. Returns JSON data:

    ``files``: per file its kind, SASS, PTX (with ISA), compressed entry count, or ``error``;
    ``gpus``: per GPU the files with their verdicts and a fix for the failing ones;
    ``ok``: every GPU can run every file that has CUDA code.
    Raises InspectError when no file could be read at all.
    """
    from gpudoctor.render.progress import progress

    files: List[Dict[str, Any]] = []
    binaries: List[CudaBinary] = []
    with progress(f"reading {package or 'files'}", len(paths), min_total=8) as tick:
        read = []
        for p in paths:
            try:
                read.append((p, read_cuda_binary(p)))
            except (CudaBinaryError, OSError) as exc:
                read.append((p, exc))
            tick.advance()
    for p, b in read:
        if isinstance(b, Exception):
            files.append({"path": p, "error": str(b)})
            continue
        binaries.append(b)
        files.append({
            "path": p, "kind": b.kind, "sass": list(b.sass),
            "ptx": [{"arch": a, "ptx_isa": _ptx_isa(b, a)} for a in b.ptx],
            "fatbins": b.fatbin_count, "entries": len(b.entries), "compressed_entries": b.compressed_entries,
        })
    if not binaries:
        raise InspectError("; ".join(f["error"] for f in files) or "no files given")
    with_code = [b for b in binaries if b.sass or b.ptx]
    per_gpu = []
    ok = True
    for gpu in gpus:
        results = []
        for b in with_code:
            v = _judge(m, b, gpu, driver_cuda)
            ok &= v.verdict in ("sass", "ptx_jit")
            results.append({"path": b.path, "verdict": v.verdict, "entry": v.entry, "reason": v.reason,
                            "fix": _fix(v, [b.path], package, m)})
        per_gpu.append({"name": gpu.name, "compute_capability": gpu.cc, "results": results})
    return {"package": package, "driver_cuda": driver_cuda, "files": files, "gpus": per_gpu,
            "files_with_cuda_code": len(with_code), "ok": ok}


def union(report: Dict[str, Any]) -> Dict[str, List[str]]:
    """All SASS and PTX targets over the report's files (for a package summary)."""
    sass, ptx = set(), set()
    for f in report["files"]:
        sass.update(f.get("sass") or ())
        ptx.update(p["arch"] for p in f.get("ptx") or ())
    key = lambda a: (int("".join(ch for ch in a.split("_")[1] if ch.isdigit())), a)  # noqa: E731
    return {"sass": sorted(sass, key=key), "ptx": sorted(ptx, key=key)}

