"""Judgements of a Windows system's CUDA stack from its files (``check --root DIR --os windows``; the facts of
:func:`gpudoctor.windows.install.windows_facts`). Each rule says one thing, with the file or variable it rests
on and a PowerShell or cmd line that fixes it. The runtimes against the driver (nvcuda.dll's version, or
``--driver``) are judged by the live check's rule (:func:`gpudoctor.rules.cuda.driver_vs_runtimes`).

Sources: CUDA Installation Guide for Microsoft Windows (CUDA_PATH, the toolkit's layout),
https://docs.nvidia.com/cuda/cuda-installation-guide-microsoft-windows/index.html; cuDNN 8's Windows install
guide (zlibwapi.dll), https://docs.nvidia.com/deeplearning/cudnn/archives/cudnn-893/install-guide/index.html;
nvcc's host_config.h (the _MSC_VER bounds it enforces).
"""
from __future__ import annotations

from typing import List, Optional

from gpudoctor.findings import Finding, Fix, Severity

WIN_GUIDE = "https://docs.nvidia.com/cuda/cuda-installation-guide-microsoft-windows/index.html"
DRIVER_DOWNLOAD = "https://www.nvidia.com/Download/index.aspx"
CUDNN8_GUIDE = "https://docs.nvidia.com/deeplearning/cudnn/archives/cudnn-893/install-guide/index.html"
#: Runtime DLL name prefixes whose copy a program built with a toolkit loads from PATH.
RUNTIME_DLLS = ("cudart64_", "nvrtc64_", "nvrtc-builtins64_", "cublas64_", "cublaslt64_", "cufft64_", "curand64_",
                "cusolver64_", "cusparse64_", "nvjitlink_")


def _w(facts) -> dict:
    return facts["windows"]


def _mm(v: Optional[str]):
    parts = (v or "").split(".")
    try:
        return int(parts[0]), int(parts[1]) if len(parts) > 1 else 0
    except ValueError:
        return None


def _setx(var: str, value: str) -> str:
    return f'[Environment]::SetEnvironmentVariable("{var}", "{value}", "Machine")   # PowerShell as administrator'


def cuda_path(facts, ctx) -> List[Finding]:
    """CUDA_PATH naming another toolkit than the nvcc on PATH, and CUDA_PATH* variables naming no toolkit."""
    w = _w(facts)
    if not w:
        return []
    out = []
    nvcc = w.get("nvcc_on_path") or {}
    for var, v in sorted((w.get("cuda_path") or {}).items()):
        if not v.get("exists") or (v.get("named_version") and v.get("toolkit_version")
                                   and v["named_version"] != v["toolkit_version"]):
            why = "which does not exist (a toolkit uninstalled since)" if not v.get("exists") else \
                f"which holds CUDA {v['toolkit_version']}, not {v['named_version']}"
            out.append(Finding("windows.cuda_path_dangling", Severity.WARN, "toolkit",
                               f"{var} points to {v['value']}, {why}",
                               evidence={"variable": var, "value": v["value"], "exists": v.get("exists"),
                                         "toolkit_version": v.get("toolkit_version")},
                               fixes=(Fix(f"Remove {var} (or point it at an installed toolkit).",
                                          (f'[Environment]::SetEnvironmentVariable("{var}", $null, "Machine")   # PowerShell as administrator',)),),
                               doc=WIN_GUIDE,
                               detail="Build systems read CUDA_PATH* (CMake's FindCUDAToolkit, the Visual Studio CUDA "
                                      "integration): one that names no installed toolkit fails the build or picks "
                                      "another toolkit."))
    main = (w.get("cuda_path") or {}).get("CUDA_PATH") or {}
    if main.get("exists") and main.get("toolkit") and nvcc.get("toolkit") and main["toolkit"].lower() != nvcc["toolkit"].lower():
        out.append(Finding("windows.cuda_path_stale", Severity.WARN, "toolkit",
                           f"CUDA_PATH names CUDA {main.get('toolkit_version') or '?'} ({main['toolkit']}) while nvcc on "
                           f"PATH is CUDA {nvcc.get('version') or '?'} ({nvcc['path']})",
                           evidence={"CUDA_PATH": main["value"], "nvcc_on_path": nvcc["path"]},
                           fixes=(Fix("Point CUDA_PATH at the toolkit whose nvcc is on PATH (new shells see it).",
                                      (_setx("CUDA_PATH", nvcc["toolkit"]),)),
                                  Fix("Or put the CUDA_PATH toolkit's bin first on PATH for this shell.",
                                      (f'set "PATH={main["toolkit"]}\\bin;%PATH%"',))),
                           doc=WIN_GUIDE,
                           detail="CMake and Visual Studio projects build with the CUDA_PATH toolkit, a shell's nvcc "
                                  "with the other: objects of two CUDA versions, and headers that do not match the "
                                  "runtime DLL a program loads."))
    return out


def runtime_dll_shadowed(facts, ctx) -> List[Finding]:
    """A runtime DLL of the nvcc-on-PATH toolkit that an earlier PATH entry of another toolkit provides."""
    w = _w(facts)
    nvcc = w.get("nvcc_on_path") or {}
    if not nvcc.get("toolkit"):
        return []
    toolkits = {t["root"].lower(): t for t in w.get("toolkits") or []}
    own = toolkits.get(nvcc["toolkit"].lower())
    if not own:
        return []
    order = [toolkits.get((p.get("toolkit") or "").lower()) for p in w.get("path_toolkits") or []]
    out = []
    for dll in own.get("dlls") or []:
        name = (dll.get("name") or "").lower()
        if not name.startswith(RUNTIME_DLLS):
            continue
        first = next((t for t in order if t and any((d.get("name") or "").lower() == name for d in t.get("dlls") or [])), None)
        if first is None or first["root"].lower() == own["root"].lower():
            continue
        theirs = next(d for d in first["dlls"] if (d.get("name") or "").lower() == name)
        older = (_mm(theirs.get("product_version")) or (0, 0)) < (_mm(dll.get("product_version")) or (0, 0))
        out.append(Finding("windows.runtime_dll_shadowed", Severity.WARN if older else Severity.INFO, "toolkit",
                           f"Programs built with nvcc {nvcc.get('version') or ''} load {dll['name']} "
                           f"{theirs.get('product_version') or '?'} from {first['root']}\\bin, earlier on PATH, not its own "
                           f"{dll.get('product_version') or '?'}".replace("  ", " "),
                           evidence={"nvcc": nvcc["path"], "loaded": theirs.get("path"), "own": dll.get("path")},
                           fixes=(Fix("Put the toolkit of the nvcc you build with first on PATH.",
                                      (f'set "PATH={own["root"]}\\bin;%PATH%"',)),),
                           doc="https://learn.microsoft.com/en-us/windows/win32/dlls/dynamic-link-library-search-order",
                           detail="Windows takes the first copy on PATH for a program's DLLs. An older runtime than "
                                  "the headers a program was built with fails with 'The procedure entry point … could "
                                  "not be located'; a newer one of the same major works."))
    return out


def driver_missing(facts, ctx) -> List[Finding]:
    w = _w(facts)
    nv = (w.get("driver") or {}).get("nvcuda") or {}
    if not w or nv.get("present", True):
        return []
    return [Finding("windows.driver_missing", Severity.FAIL, "driver",
                    f"No NVIDIA driver in this system: {nv.get('path')} is missing",
                    evidence={"nvcuda": nv.get("path"), "nvml": [n.get("path") for n in (w.get('driver') or {}).get('nvml') or []]},
                    fixes=(Fix("Install the NVIDIA driver for the GPU (the CUDA toolkit installer does not replace it).",
                               (DRIVER_DOWNLOAD,)),),
                    doc=WIN_GUIDE,
                    detail="CUDA programs fail with 'CUDA driver version is insufficient for CUDA runtime version' "
                           "or 'no CUDA-capable device is detected': nvcuda.dll is the driver's CUDA library.")]


def _cuda_of_ptx_isa(matrix, isa: str) -> Optional[str]:
    """The CUDA release ("12.9") whose nvcc writes PTX of ISA ``isa`` ("8.8"), from the matrix; for an ISA newer
    than the matrix's releases, the CUDA major ("13") of its ISA major, where the matrix's releases of that ISA
    major are all of one CUDA major (ISA 9.x: CUDA 13.x); else None."""
    if matrix is None or not _mm(isa):
        return None
    found = matrix.cuda_for_ptx_isa(isa)
    if found:
        return found
    majors = {r.major for r in matrix.cuda_releases() if r.ptx_isa and _mm(r.ptx_isa)[0] == _mm(isa)[0]}
    return str(majors.pop()) if len(majors) == 1 else None


def cudnn_for_another_cuda(facts, ctx) -> List[Finding]:
    """A cuDNN copied into a toolkit that was built for another CUDA major: its installer folder, its imports, the
    CUDA libraries its DLLs name for LoadLibrary or the PTX of their kernels say which (the CUDA whose cuBLAS
    and NVRTC it will load)."""
    out = []
    matrix = getattr(ctx, "matrix", None)
    for c in _w(facts).get("cudnn") or []:
        tk = _mm(c.get("in_toolkit_version"))
        built = c.get("built_for_cuda") or {}
        kernels = [{"dll": k.get("dll"), "ptx_isa": isa, "cuda": _cuda_of_ptx_isa(matrix, isa)}
                   for k in built.get("from_kernels") or [] for isa in k.get("ptx_isa") or []]
        loads = built.get("from_load_names") or []
        said = [x for x in [built.get("from_path")] + list(built.get("from_imports") or [])
                + [m for n in loads for m in n.get("cuda_majors") or []] + [k["cuda"] for k in kernels] if x]
        majors = sorted({_mm(str(x))[0] for x in said if _mm(str(x))})
        if not tk or not majors or tk[0] in majors:
            continue
        evidence = {"dir": c["dir"], "built_for_cuda": built, "toolkit": c.get("in_toolkit")}
        if loads:
            evidence["loads"] = loads  # the DLL that names the CUDA libraries it will load
        if kernels:
            evidence["kernels"] = kernels  # each DLL whose PTX says it, and the CUDA release that writes that PTX
        out.append(Finding("windows.cudnn_cuda_mismatch", Severity.FAIL, "cudnn",
                           f"cuDNN in {c['dir']} was built for CUDA {'/'.join(map(str, majors))}, copied into the CUDA "
                           f"{c['in_toolkit_version']} toolkit",
                           evidence=evidence,
                           fixes=(Fix(f"Install the cuDNN build for CUDA {tk[0]} (the zip's bin\\{tk[0]}.x folder, or "
                                      f"the cuDNN installer) in its place.",
                                      ("https://developer.nvidia.com/cudnn-downloads",)),),
                           doc="https://docs.nvidia.com/deeplearning/cudnn/installation/windows.html",
                           detail="cuDNN loads the cuBLAS and NVRTC of the CUDA major it was built for: with another "
                                  "toolkit's they are not found (CUDNN_STATUS_NOT_INITIALIZED, 'Could not load "
                                  "library cublasLt64_12.dll')."))
    return out


def cudnn8_zlibwapi(facts, ctx) -> List[Finding]:
    out = []
    for c in _w(facts).get("cudnn") or []:
        z = c.get("zlibwapi") or {}
        if not z.get("needed") or (z.get("found") or {}).get("path"):
            continue
        out.append(Finding("windows.cudnn8_zlibwapi_missing", Severity.FAIL, "cudnn",
                           f"cuDNN 8 in {c['dir']} needs zlibwapi.dll, which no directory of the DLL search order holds",
                           evidence={"dir": c["dir"], "searched": "the DLL's directory, System32, Windows, PATH"},
                           fixes=(Fix("Get ZLIB DLL (zlib123dllx64) as cuDNN 8's install guide says and put zlibwapi.dll "
                                      "next to cudnn64_8.dll (or in a PATH directory).", (CUDNN8_GUIDE,)),),
                           doc=CUDNN8_GUIDE,
                           detail="cuDNN 8 fails at its first convolution with 'Could not locate zlibwapi.dll. Please "
                                  "make sure it is in your library path!'"))
    return out


def msvc_unsupported(facts, ctx) -> List[Finding]:
    """No Visual Studio C++ toolset inside the _MSC_VER range the nvcc on PATH accepts."""
    w = _w(facts)
    nvcc = w.get("nvcc_on_path") or {}
    tk = next((t for t in w.get("toolkits") or [] if nvcc.get("toolkit") and t["root"].lower() == nvcc["toolkit"].lower()), None)
    bounds = (tk or {}).get("msvc_bounds") or {}
    if not tk or not bounds.get("present"):
        return []
    lo, hi = bounds.get("min_msc_ver"), bounds.get("max_msc_ver")
    installs = w.get("msvc") or []
    ok = [m for m in installs if m.get("msc_ver") and (lo is None or m["msc_ver"] >= lo) and (hi is None or m["msc_ver"] <= hi)]
    if ok:
        return []
    span = f"_MSC_VER {lo or '?'}–{hi or '?'}"
    shown = ", ".join(f"{m['toolset']} ({m['msc_ver']})" for m in installs) or "none"
    sev = Severity.FAIL if installs else Severity.WARN
    return [Finding("windows.msvc_unsupported" if installs else "windows.msvc_missing", sev, "toolkit",
                    f"nvcc {nvcc.get('version') or ''} accepts MSVC {span}; Visual Studio C++ toolsets here: {shown}".replace("  ", " "),
                    evidence={"host_config": bounds.get("path"), "msvc": [m.get("toolset_dir") for m in installs]},
                    fixes=(Fix("Install a Visual Studio C++ toolset in that range (Visual Studio Installer → Individual "
                               "components → MSVC v143 of the matching version).",
                               ("winget install Microsoft.VisualStudio.2022.BuildTools",)),),
                    doc=WIN_GUIDE,
                    detail="nvcc stops with 'unsupported Microsoft Visual Studio version! Only the versions between "
                           "2017 and 2022 (inclusive) are supported!' (host_config.h), or finds no cl.exe at all.")]


RULES = (cuda_path, runtime_dll_shadowed, driver_missing, cudnn_for_another_cuda, cudnn8_zlibwapi, msvc_unsupported)


def runtime_facts(w: dict) -> dict:
    """The live cuda probe's shape (``{"libcudart": [...]}``) for the cudart DLLs of a Windows system's toolkits,
    so the live driver-vs-runtime rule judges them."""
    out = []
    for t in w.get("toolkits") or []:
        for d in t.get("dlls") or []:
            if (d.get("name") or "").lower().startswith("cudart64_") and d.get("product_version"):
                out.append({"path": d.get("path"), "realpath": d.get("path"), "version": d["product_version"],
                            "origin": "cuda-toolkit", "package": None})
    return {"libcudart": out}
