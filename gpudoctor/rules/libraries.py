"""Shared libraries: present and loadable, one consistent cuDNN, TensorRT with its libraries."""
from __future__ import annotations

import re

from gpudoctor.rules.differential import verified_cause
from gpudoctor.findings import Finding, Fix, Severity
from gpudoctor.rules._util import major_minor
from gpudoctor.rules.driver import stub_picks
from gpudoctor.rules.loader import damaged_loaded_by, damaged_paths

CUDNN_DOC = "https://docs.nvidia.com/deeplearning/cudnn/backend/latest/reference/support-matrix.html"
TRT_DOC = "https://docs.nvidia.com/deeplearning/tensorrt/latest/installing-tensorrt/installing.html"
_MISSING_SO = re.compile(r"(lib[\w.+-]+\.so[\w.]*): cannot open shared object file")


def _bindings_major(facts):
    bv = (facts["cuda"].get("api") or {}).get("bindings_version") or facts["smoke_nvrtc"].get("bindings_version")
    mm = major_minor(bv)
    return mm[0] if mm else None


def library_not_found(facts, ctx):
    out = []
    api = facts["cuda"].get("api") or {}
    if api.get("import_error"):
        out.append(Finding("library.not_found", Severity.WARN, "cuda",
                           "cuda-python is not importable: CUDA driver/runtime API facts unavailable",
                           evidence={"error": api["import_error"]},
                           fixes=(Fix("Install NVIDIA's CUDA Python bindings.", ("python -m pip install cuda-python",)),)))
    drv_err = (api.get("cuDriverGetVersion") or {}).get("result", "")
    stub = any(s["soname"] == "libcuda.so.1" for s in stub_picks(facts))  # driver.stub_library explains it
    # a libcuda that is no library: library.damaged names the file the loader picked
    damaged = facts["driver"].get("libcuda_loaded") in damaged_paths(facts) or damaged_loaded_by(facts, "worker cuda")
    if not stub and not damaged and ("NotFound" in drv_err or "not found" in drv_err.lower()):
        out.append(Finding("library.not_found", Severity.FAIL, "cuda", "libcuda.so.1 (the CUDA driver library) cannot be loaded",
                           evidence={"cuDriverGetVersion": drv_err},
                           detail="It is part of the NVIDIA driver; see the driver findings."))
    nv = facts["smoke_nvrtc"]
    if damaged_loaded_by(facts, "worker nvrtc-smoke") and (nv.get("nvrtc_crashed") or nv.get("nvrtc_error")):
        pass  # the worker loads a file that is no library: library.damaged attributes the failure to it
    elif nv.get("nvrtc_crashed"):
        out.append(Finding("library.load_failed", Severity.FAIL, "cuda",
                           f"NVRTC crashed while loading or compiling: the compiler process was {nv['nvrtc_error']}",
                           evidence={"error": nv["nvrtc_error"], "cuda-python": nv.get("bindings_version")},
                           detail="A libnvrtc that kills its process is corrupt or does not match libnvrtc-builtins "
                                  "beside it; every runtime compilation (CuPy, Numba, JAX/Triton kernels) will fail the same way.",
                           fixes=(Fix("See it crash by hand, then reinstall NVRTC.",
                                      ("python -c \"from cuda.bindings import nvrtc; print(nvrtc.nvrtcVersion())\"",
                                       "python -m pip install --force-reinstall --no-deps 'nvidia-cuda-nvrtc'")),)))
    elif nv.get("nvrtc_error"):
        mj = _bindings_major(facts)
        pkg = "nvidia-cuda-nvrtc" if (mj or 13) >= 13 else f"nvidia-cuda-nvrtc-cu{mj}"
        out.append(Finding("library.not_found", Severity.WARN, "cuda",
                           "NVRTC (libnvrtc) not found: runtime compilation (and the NVRTC smoke test) cannot run",
                           evidence={"error": nv["nvrtc_error"], "cuda-python": nv.get("bindings_version")},
                           fixes=(Fix(f"Install NVRTC for CUDA {mj or ''} (pip), or a CUDA toolkit that has it.".replace(" ()", ""),
                                      (f"python -m pip install '{pkg}=={mj}.*'" if mj else f"python -m pip install {pkg}",)),)))
    return out


def cudnn_mismatch(facts, ctx):
    c = facts["cudnn"]
    # a copy that is no library (cut short, an LFS pointer) has no version and crashes whoever asks it:
    # library.damaged reports it, with the crash
    bad = damaged_paths(facts)
    libs = [l for l in c.get("libraries") or [] if l.get("realpath") not in bad and l.get("path") not in bad]
    if not libs:
        return []
    out = []
    m = ctx.matrix
    # CUDA majors something here runs with: cuda-python's runtime, the toolkit, pip runtimes, frameworks.
    majors = {}
    rt = facts["cuda"].get("runtime_version")
    if rt:
        majors.setdefault(int(rt.split(".")[0]), []).append(f"cuda-python runtime {rt}")
    for lib in facts["cuda"].get("libcudart") or []:
        if lib.get("package") and lib.get("version"):
            majors.setdefault(int(lib["version"].split(".")[0]), []).append(f"{lib['package']} {lib['version']}")
    torch = facts["frameworks"].get("torch") or {}
    if torch.get("cuda"):
        majors.setdefault(int(str(torch["cuda"]).split(".")[0]), []).append(f"torch {torch.get('version')}")
    for lib in libs:
        err = (lib.get("api") or {}).get("load_error")
        env_cause = verified_cause((lib.get("api") or {}).get("differential"), facts)
        gone = lib.get("wheel_libraries_missing") or []
        if gone:  # the files say why (its wheel is incomplete), whether or not it was asked: live and root alike
            names = [p.rsplit("/", 1)[-1] for p in gone]
            shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
            out.append(Finding(
                "cudnn.broken", Severity.FAIL, "cudnn",
                f"cuDNN at {lib['realpath']} is incomplete: {shown}, installed by its wheel {lib.get('package')}, "
                "are missing",
                evidence={"library": lib["realpath"], "package": lib.get("package"), "missing": gone,
                          "listed_in": "the wheel's RECORD", **({"error": err} if err else {})},
                fixes=(Fix("Reinstall the wheel completely (its RECORD lists these files).",
                           (f"python -m pip install --force-reinstall --no-deps {lib['package']}",)),),
                detail="cuDNN 9's libcudnn.so.9 is a dispatcher that loads libcudnn_graph.so.9 and others on first use; "
                       "with them missing it prints 'Invalid handle. Cannot load symbol ...' and aborts the process.",
                doc=CUDNN_DOC))
        elif err and env_cause:  # cuDNN is fine: something in this shell's environment breaks its load
            out.append(Finding(
                "cudnn.broken", Severity.FAIL, "cudnn",
                f"cuDNN {lib.get('version') or ''} at {lib['realpath']} {env_cause}: {err}".replace("  ", " "),
                evidence={"library": lib["realpath"], "package": lib.get("package"), "error": err},
                doc=CUDNN_DOC))
        elif err:
            out.append(Finding(
                "cudnn.broken", Severity.FAIL, "cudnn",
                f"cuDNN {lib.get('version') or ''} at {lib['realpath']} fails when asked its version: {err}".replace("  ", " "),
                evidence={"library": lib["realpath"], "package": lib.get("package"), "error": err},
                fixes=(Fix("Reinstall this cuDNN completely (its sub-libraries libcudnn_graph/ops/... must sit next to it).",
                           (f"python -m pip install --force-reinstall {lib['package']}",) if lib.get("package") else
                           ("ls -l " + lib["realpath"].rsplit("/", 1)[0] + "/libcudnn*",)),),
                detail="cuDNN 9's libcudnn.so.9 is a dispatcher that loads libcudnn_graph.so.9 and others on first use; "
                       "with them missing it prints 'Invalid handle. Cannot load symbol ...' and aborts the process.",
                doc=CUDNN_DOC))
        built = lib.get("built_for_cuda_major")
        label = f"cuDNN {lib.get('api_version') or lib.get('version')} ({lib.get('package') or lib.get('realpath')})"
        row = m.cudnn_release(lib.get("version") or "") if (m is not None and lib.get("version")) else None
        supported = set(getattr(row, "cuda_majors", ()) or ())
        if built and majors and built not in majors:
            want = sorted(majors)[-1]
            pkg = f"nvidia-cudnn-cu{want}"
            out.append(Finding(
                "cudnn.mismatch", Severity.WARN if len(libs) > 1 else Severity.FAIL, "cudnn",
                f"{label} is built for CUDA {built}, but this environment runs CUDA {', '.join(map(str, sorted(majors)))}",
                evidence={"cudnn": lib.get("realpath"), "built_for_cuda_major": built,
                          "cuda_in_use": {str(k): v for k, v in majors.items()}},
                fixes=(Fix(f"Install the cuDNN build for CUDA {want} and remove the other.",
                           (f"python -m pip uninstall -y nvidia-cudnn-cu{built}", f"python -m pip install {pkg}")
                           if lib.get("package") else ((f"sudo apt-get install -y libcudnn9-cuda-{want}",)
                                                       if ctx.os.family == "debian" else ())),),
                doc=CUDNN_DOC,
                detail="Loading it fails or mixes runtimes (e.g. 'Loaded runtime CuDNN library: X but source was compiled with: Y')."))
        elif supported and built and built not in supported:
            out.append(Finding("cudnn.mismatch", Severity.WARN, "cudnn",
                               f"{label} reports CUDA {built}, which its release notes do not list ({sorted(supported)})",
                               evidence={"cudnn": lib.get("realpath")}, doc=CUDNN_DOC))
    versions = sorted({(l.get("api_version") or l.get("version") or "?") for l in libs})
    if len(versions) > 1:
        out.append(Finding(
            "cudnn.mismatch", Severity.WARN, "cudnn",
            f"{len(libs)} cuDNN libraries of different versions: {', '.join(versions)}",
            evidence={l["realpath"]: l.get("api_version") or l.get("version") for l in libs} | {"loader_pick": c.get("loader_pick")},
            fixes=(Fix("Keep one cuDNN per CUDA major; which copy a program loads depends on RPATH, LD_LIBRARY_PATH "
                       "and import order.", ("python -m pip list 2>/dev/null | grep -i cudnn",
                                             "ldconfig -p | grep libcudnn")),),
            doc=CUDNN_DOC))
    for h in c.get("headers") or []:
        for l in libs:  # compare a header only with the library of the same install (same prefix)
            if _install_root(h["path"], "/include") != _install_root(l["realpath"], "/lib"):
                continue
            lv = (l.get("api_version") or l.get("version") or "").split(".")[:2]
            hv = (h.get("version") or "").split(".")[:2]
            if len(lv) == 2 and len(hv) == 2 and lv != hv:
                out.append(Finding("cudnn.mismatch", Severity.WARN, "cudnn",
                                   f"cuDNN header {h.get('version')} ({h['path']}) differs from library {'.'.join(lv)} ({l['realpath']})",
                                   evidence={"header": h["path"], "library": l["realpath"]},
                                   fixes=(Fix("Install the dev package of the same cuDNN version as the library.", ()),)))
    if not out:
        built = sorted({l["built_for_cuda_major"] for l in libs if l.get("built_for_cuda_major")})
        with_cuda = f"consistent with CUDA {', '.join(map(str, sorted(majors)))}" if majors else \
            (f"built for CUDA {', '.join(map(str, built))}; no CUDA runtime here to compare it with" if built
             else "(no CUDA runtime here to compare it with)")
        out.append(Finding("cudnn.ok", Severity.OK, "cudnn", f"cuDNN {', '.join(versions)} {with_cuda}",
                           evidence={l["realpath"]: l.get("api_version") or l.get("version") for l in libs}))
    return out


def tensorrt_libs(facts, ctx):
    t = facts["tensorrt"]
    out = []
    dists = t.get("distributions") or {}
    for mod in t.get("modules") or []:
        if mod.get("import_ok"):
            out.append(Finding("tensorrt.ok", Severity.OK, "tensorrt",
                               f"TensorRT {mod.get('version') or '(version unknown: see probe.implausible_value)'} "
                               + (f"{mod['runtime']} runtime " if mod.get("runtime") in ("lean", "dispatch") else "")
                               + f"imports ({mod['name']})" + (f": {mod['can']}" if mod.get("runtime") in ("lean", "dispatch") else ""),
                               evidence={"path": mod.get("path"), "runtime": mod.get("runtime")}))
            continue
        err = mod.get("import_error") or ""
        missing = _MISSING_SO.search(err)
        cu = next((re.search(r"cu(\d+)", d).group(1) for d in dists if re.search(r"tensorrt-cu(\d+)", d)), None)
        ver = mod.get("version")
        libs_pkg = f"tensorrt-cu{cu}-libs=={ver}" if cu and ver else "tensorrt-libs"
        if missing or "libnvinfer" in err:
            out.append(Finding(
                "tensorrt.libs_missing", Severity.FAIL, "tensorrt",
                f"TensorRT {ver or ''} Python bindings are installed but its libraries are not ({missing.group(1) if missing else 'libnvinfer'})".replace("  ", " "),
                evidence={"module": mod.get("path"), "import_error": err, "distributions": dists,
                          "libnvinfer_copies": [c["realpath"] for c in t.get("libnvinfer") or []] or "none"},
                fixes=(Fix("Install the matching TensorRT libraries wheel (same version as the bindings).",
                           (f"python -m pip install '{libs_pkg}'",)),
                       Fix("Or install the complete TensorRT package, which pulls bindings and libraries together.",
                           (f"python -m pip install 'tensorrt-cu{cu or 13}=={ver}'" if ver else "python -m pip install tensorrt",))),
                doc=TRT_DOC))
        else:
            out.append(Finding("tensorrt.import_error", Severity.FAIL, "tensorrt",
                               f"TensorRT module {mod['name']} fails to import: {err[:160]}",
                               evidence={"module": mod.get("path"), "import_error": err}, doc=TRT_DOC))
    return out


def _install_root(path: str, marker: str) -> str:
    """``/usr/include/x86_64-linux-gnu/cudnn_version.h`` → ``/usr``; ``.../nvidia/cudnn/lib/libcudnn.so.9`` → ``.../nvidia/cudnn``."""
    i = path.rfind(marker + "/")
    return path[:i] if i >= 0 else path
