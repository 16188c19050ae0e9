"""Judgements of a system read from its files (``check --root`` / ``--image``): what it holds, CUDA majors
mixed in one root, and what only a live system can say. The driver and runtime rules of the live check judge
a root's runtimes too (against ``--driver``): see :mod:`gpudoctor.rootcheck.check`."""
from __future__ import annotations

import shlex
from typing import Dict, List

from gpudoctor.findings import Finding, Fix, Severity

#: The CUDA runtime and the libraries built against one CUDA major (one process loads one major of each).
RUNTIME_FAMILY = ("libcudart", "libcublas", "libcublasLt", "libcufft", "libcurand", "libcusolver", "libcusparse",
                  "libnvrtc", "libnvJitLink")
DOC = "https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html"


def inventory(facts, ctx) -> List[Finding]:
    r = facts["root"]
    if not r:
        return []
    libs = r.get("libraries") or {}
    shown = []
    for stem, copies in libs.items():
        versions = sorted({c.get("version") or "?" for c in copies})
        shown.append(f"{stem} {'/'.join(versions)}")
    where = (r.get("os_release") or {}).get("PRETTY_NAME") or "a Linux root"
    toolkits = [f"{t.get('version') or '?'} ({t.get('home')})" for t in r.get("toolkits") or []]
    title = f"{where}: {len(libs)} CUDA libraries" + (f" ({', '.join(shown[:6])}{', …' if len(shown) > 6 else ''})" if shown else "") \
        + (f"; CUDA toolkit {', '.join(toolkits)}" if toolkits else "; no CUDA toolkit")
    return [Finding("root.inventory", Severity.INFO, "root", title,
                    evidence={"libraries": {s: [c.get("path") for c in cs] for s, cs in libs.items()},
                              "toolkits": r.get("toolkits") or [], "frameworks": r.get("frameworks") or {},
                              "site_dirs": r.get("site_dirs") or []})]


def cuda_majors_mixed(facts, ctx) -> List[Finding]:
    """Runtime-family libraries of more than one CUDA major in one root: a process loads whichever its
    loader or its framework finds first, and a library of one major beside a runtime of another fails."""
    libs = facts["root"].get("libraries") or {}
    by_major: Dict[str, List[dict]] = {}
    for stem in RUNTIME_FAMILY:
        for c in libs.get(stem) or []:
            mj = c.get("cuda_major")  # the probe's: wheel, cuNN dir, toolkit, or a soname that tracks CUDA
            if mj:
                by_major.setdefault(mj, []).append(dict(c, stem=stem))
    if len(by_major) < 2:
        return []
    majors = sorted(by_major, key=int)
    counts = {m: len(v) for m, v in by_major.items()}
    minority = min(majors, key=lambda m: (counts[m], int(m)))
    packages = sorted({c["package"] for c in by_major[minority] if c.get("package")})
    fixes = []
    if packages:
        fixes.append(Fix(f"Keep one CUDA major: remove the CUDA {minority} wheels if nothing in the image needs them.",
                         ("python -m pip uninstall -y " + " ".join(shlex.quote(p) for p in packages),)))
    fixes.append(Fix("List which package brought each copy.",
                     ("python -m pip list 2>/dev/null | grep -i nvidia; dpkg -S libcudart.so 2>/dev/null",)))
    return [Finding("root.cuda_majors_mixed", Severity.WARN, "cuda",
                    f"CUDA libraries of {len(majors)} majors in one root: "
                    + "; ".join(f"CUDA {m}: {', '.join(sorted({c['stem'] for c in by_major[m]}))}" for m in majors),
                    evidence={f"cuda_{m}": [c.get("path") for c in by_major[m]] for m in majors},
                    fixes=tuple(fixes), doc=DOC,
                    detail="Each framework loads the major it was built for; a library of another major on the "
                           "loader's path (LD_LIBRARY_PATH, the ldconfig cache) can be picked instead and fail with "
                           "undefined symbols or 'CUDA driver version is insufficient'.")]


def dependencies_missing(facts, ctx) -> List[Finding]:
    """A shared library an NVIDIA library or extension module needs (DT_NEEDED) that the root's loader would not
    find: loading it fails with "cannot open shared object file". One finding per missing library."""
    deps = facts["root"].get("dependencies") or {}
    by_needed: Dict[str, List[str]] = {}
    for u in deps.get("unresolved") or []:
        by_needed.setdefault(u["needed"], []).append(u["object"])
    out = []
    dists = {d: v for fw in [facts["root"].get("tensorrt_distributions") or {}] for d, v in fw.items()}
    for needed, objects in sorted(by_needed.items()):
        fixes = []
        trt = next(((d, v) for d, v in dists.items() if "bindings" in d), None)
        if needed.startswith("libnvinfer") and trt and "-cu" in trt[0]:
            cu = trt[0].split("-cu", 1)[1].split("-", 1)[0]
            fixes.append(Fix("Install the TensorRT libraries wheel of the same version as the bindings.",
                             (f"python -m pip install 'tensorrt-cu{cu}-libs=={trt[1]}'",)))
        fixes.append(Fix("Find the package that provides it (Debian/Ubuntu images), then install it in the image.",
                         (f"apt-get install -y apt-file && apt-file update && apt-file search {shlex.quote(needed)}",)))
        shown = objects[0] + (f" and {len(objects) - 1} more" if len(objects) > 1 else "")
        out.append(Finding("root.dependency_missing", Severity.FAIL, "root",
                           f"{needed}, needed by {shown}, is not where the loader looks",
                           evidence={"needed": needed, "needed_by": objects,
                                     "searched": "RPATH/RUNPATH of the object, LD_LIBRARY_PATH, /etc/ld.so.cache, default dirs"},
                           fixes=tuple(fixes), doc="https://man7.org/linux/man-pages/man8/ld.so.8.html",
                           detail=f"Loading fails with '{needed}: cannot open shared object file: No such file or directory'."))
    return out


def needs_live_system(facts, ctx) -> List[Finding]:
    """Said once: what a check from files cannot judge."""
    if not (facts["root"] or facts["windows"]):
        return []
    given = facts["driver"].get("given_version")
    live = "the GPUs, the driver's own answers (NVML, WDDM or TCC)" if ctx.os.family == "windows" else \
        "the GPUs, the kernel module, NVML"
    return [Finding("root.needs_live_system", Severity.INFO, "root",
                    f"Judged from files only: {live} and the smoke tests need a live system"
                    + ("" if given else "; give --driver VERSION (the host's driver) to judge the runtimes against it"),
                    evidence={"driver": given or "not given", "target_gpus": [t.get("name") for t in facts.targets]})]
