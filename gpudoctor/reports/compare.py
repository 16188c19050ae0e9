"""Compare two saved ``gpudoctor check --json`` reports: what differs between a working
environment (A) and a broken one (B), most likely culprit first.

Pure functions over report dictionaries (docs/json-report.md); nothing here probes the machine.

:func:`compare` returns::

    {"a": {"label", "generated_at", "gpudoctor_version", "summary"},
     "b": {...},
     "findings": [{"id", "area", "change", "a", "b", "title", "comparable"}, ...],
     "differences": [{"area", "fact", "a", "b", "weight", "why", "explains"}, ...],
     "not_compared": [{"probe", "a", "b"}, ...],
     "culprit": <the first difference> | None,
     "identical": bool}

``findings`` holds one row per finding id whose worst severity differs (``change``: ``new`` = only
in B, ``gone`` = only in A, ``worse`` / ``better`` = B's severity is higher / lower), B's new
problems first. ``a`` / ``b`` are severities or None.

``differences`` are facts whose values differ, sorted by ``weight`` (highest first). Ranking:

1. Each fact has a base weight by kind (:data:`BASE_WEIGHT`): driver (driver version, CUDA of the
   driver, NVML status, kernel module) 60; GPUs present (count, model, compute capability, MIG,
   compute mode, /dev/nvidia* nodes) 55; libraries (CUDA runtimes, toolkits, cuDNN, TensorRT,
   framework versions / CUDA builds / arch lists) 50; a probe that did not finish 45; environment
   (CUDA_VISIBLE_DEVICES, LD_LIBRARY_PATH, CUDA_HOME, PATH entries, which copy the loader picks)
   40; GPU health (PCIe link, ECC, row remapping) and host compiler 30; platform (OS, kernel,
   glibc, container, WSL) 20; minor facts (VBIOS, persistence mode, install paths) 10; symptoms
   (cuInit result, CUDA device count: consequences, not causes) 5; run options (``--no-smoke``,
   gpudoctor / matrix version) 2.
2. A fact that a finding depends on (:data:`LINKS`) gains +100 when that finding is ``fail`` in B
   but not in A, +50 when it is newly ``warn`` in B (+10 either way for symptoms), and +3 per
   further such finding (at most +10). So a driver change comes first when B has a new
   ``driver.too_old``, and CUDA_VISIBLE_DEVICES first when B has a new ``device.not_visible``.
3. Ties keep report order (driver, GPUs, CUDA, toolkit, compilers, cuDNN, TensorRT, frameworks,
   environment, platform).

Cosmetic facts are never compared: temperatures, memory used, elapsed times, timestamps, GPU
UUIDs and PCI bus ids, smoke-test timings. Facts of a probe that did not finish (status error or
timeout) in either report are not compared; a ``probe.<name>`` difference says so instead.
"""
from __future__ import annotations

import re
from typing import Dict, Iterable, List, Optional, Tuple

#: The report schema version this module reads (gpudoctor.check.REPORT_SCHEMA_VERSION).
SCHEMA_VERSION = 1

BASE_WEIGHT = {
    "driver": 60, "gpu": 55, "library": 50, "probe": 45, "env": 40, "health": 30, "compiler": 30,
    "platform": 20, "minor": 10, "symptom": 5, "run": 2,
}

_WHY = {
    "driver": "the driver decides which CUDA versions, PTX and frameworks can run",
    "gpu": "the GPUs present and visible decide what CUDA can use",
    "library": "a different CUDA library, toolkit or framework build",
    "probe": "a probe that did not finish leaves its facts unknown",
    "env": "environment steers which GPUs CUDA sees and which library copies load",
    "health": "GPU hardware health: link and memory errors cause slowness, hangs and Xid errors",
    "compiler": "the host compiler nvcc builds with",
    "platform": "OS, kernel or container differences",
    "minor": "rarely the cause on its own",
    "symptom": "a consequence of another difference rather than a cause",
    "run": "how gpudoctor was run; findings that depend on it are not comparable",
}

_DRIVER = ["driver.version", "driver.cuda_version", "driver.kernel_module", "driver.user_space"]
_RUNTIMES = ["cuda.runtime_version", "cuda.bindings_version", "cuda.libcudart[*", "frameworks.*.cuda",
             "frameworks.*.version", "frameworks.*.distribution*", "frameworks.jax.*", "frameworks.cupy.*",
             "platform.container.require_cuda"]
_DRIVER_LOAD = _DRIVER + ["driver.nvml_status", "driver.lib*", "platform.kernel", "platform.container*",
                          "platform.dev_nodes", "platform.wsl", "env.LD_LIBRARY_PATH"]

#: finding id (``*`` wildcard) -> fact patterns (``*`` wildcard) the finding depends on.
LINKS: Dict[str, List[str]] = {
    "driver.too_old": _DRIVER + _RUNTIMES,
    "driver.minor_version_compat": _DRIVER + _RUNTIMES,
    "driver.ptx_too_new": _DRIVER + ["toolkit*", "cuda.runtime_version"],
    "driver.missing": _DRIVER_LOAD,
    "driver.not_loaded": _DRIVER_LOAD,
    "driver.version_mismatch": _DRIVER_LOAD,
    "driver.no_permission": _DRIVER_LOAD,
    "driver.nvml_error": _DRIVER_LOAD,
    "framework.cuda_mismatch": _DRIVER + ["frameworks.*"],
    "framework.cpu_build": ["frameworks.*"],
    "arch.binary_missing": ["frameworks.*", "gpu[*].name", "gpu[*].compute_capability", "env.TORCH_CUDA_ARCH_LIST"],
    "arch.toolkit_unsupported": ["toolkit*", "gpu[*].name", "gpu[*].compute_capability"],
    "device.not_visible": ["env.CUDA_VISIBLE_DEVICES", "platform.container.nvidia_visible_devices", "platform.dev_nodes",
                           "gpus.count", "gpu[*].compute_mode", "gpu[*].mig_mode", "env.CUDA_DEVICE_ORDER",
                           "cuda.cuInit", "cuda.device_count"],
    "gpu.health": ["gpu[*].pcie_link", "gpu[*].ecc*", "gpu[*].remapped_rows", "gpu[*].retired_pages_pending",
                   "gpu[*].error", "gpu[*].mig_mode*", "gpus.count"],
    "compiler.unsupported": ["compilers.*", "toolkit[*].host_compiler", "toolkit[*].version", "env.CUDAHOSTCXX",
                             "env.NVCC_*"],
    "toolkit.mixed": ["toolkit*", "env.CUDA_HOME", "env.CUDA_PATH", "env.PATH"],
    "toolkit.none": ["toolkit*", "env.PATH", "env.CUDA_HOME", "env.CUDA_PATH"],
    "library.not_found": ["cuda.*", "driver.lib*", "env.LD_LIBRARY_PATH"],
    "cudnn.*": ["cudnn.*", "env.LD_LIBRARY_PATH", "frameworks.*.cudnn*"],
    "tensorrt.*": ["tensorrt.*", "env.LD_LIBRARY_PATH", "cuda.runtime_version"],
    "env.ld_library_path": ["env.LD_LIBRARY_PATH", "cuda.libcudart_loaded*"],
    "env.cuda_home": ["env.CUDA_HOME", "env.CUDA_PATH"],
    "wsl.*": ["platform.wsl", "driver.*"],
    "container.no_gpu": ["platform.dev_nodes", "platform.container*", "env.CUDA_VISIBLE_DEVICES", "gpus.count"],
    "container.require_cuda": ["platform.container.require_cuda"] + _DRIVER,
    "smoke.nvrtc": _DRIVER + ["cuda.*", "toolkit*", "gpu[*].compute_capability", "env.*"],
    "smoke.nvcc": _DRIVER + ["toolkit*", "compilers.*", "env.*"],
    "smoke.tensorrt": _DRIVER + ["tensorrt.*"],
    "gpudoctor.probe_failed": ["probe.*"],
}

#: facts per probe; a probe that did not finish in either report is skipped for both.
_PROBE_ORDER = ("driver", "cuda", "toolkit", "compilers", "cudnn", "tensorrt", "frameworks", "environment",
                "platform")
_SEV_RANK = {"ok": 0, "info": 1, "warn": 2, "fail": 3}


# --------------------------------------------------------------------------------------------- validation

def check_report(obj, source: str = "report") -> dict:
    """Return ``obj`` if it is a gpudoctor report this version reads, else raise ValueError
    with a message naming ``source``."""
    if not isinstance(obj, dict):
        raise ValueError(f"{source}: not a gpudoctor report (expected the JSON object `gpudoctor check --json` "
                         f"writes, got a JSON {type(obj).__name__})")
    if "schema_version" not in obj:
        raise ValueError(f"{source}: not a gpudoctor report (no schema_version; expected the output of "
                         "`gpudoctor check --json`)")
    version = obj.get("schema_version")
    if version != SCHEMA_VERSION:
        raise ValueError(f"{source}: report schema_version {version!r} is not supported: this gpudoctor reads "
                         f"schema_version {SCHEMA_VERSION}; produce both reports with the same gpudoctor "
                         "release or upgrade gpudoctor")
    if not isinstance(obj.get("findings"), list) or not isinstance(obj.get("probes"), dict):
        raise ValueError(f"{source}: not a gpudoctor report (schema_version {version} but no findings list "
                         "or probes object; was the file truncated?)")
    return obj


# --------------------------------------------------------------------------------------------- facts

def _probe_facts(report: dict, name: str) -> Optional[dict]:
    p = report.get("probes", {}).get(name)
    if not isinstance(p, dict) or p.get("status") != "ok" or not isinstance(p.get("facts"), dict):
        return None
    return p["facts"]


def probe_status(report: dict, name: str) -> str:
    p = report.get("probes", {}).get(name)
    if not isinstance(p, dict):
        return "missing"
    st = p.get("status") or "?"
    return st if st == "ok" or not p.get("error") else f"{st}: {p['error']}"


def _d(x) -> dict:
    return x if isinstance(x, dict) else {}


def _l(x) -> list:
    return x if isinstance(x, list) else []


def _pcie(g: dict) -> Optional[str]:
    if g.get("pcie_width_current") is None and g.get("pcie_gen_current") is None:
        return None
    return (f"Gen{g.get('pcie_gen_current')} x{g.get('pcie_width_current')} "
            f"(max Gen{g.get('pcie_gen_max')} x{g.get('pcie_width_max')})")


def _remap(rr) -> Optional[str]:
    if not isinstance(rr, dict):
        return None
    return (f"correctable {rr.get('correctable')}, uncorrectable {rr.get('uncorrectable')}, "
            f"pending {rr.get('pending')}, failure {rr.get('failure')}")


def _copies(out, key, area, cat, copies):
    for c in _l(copies):
        if isinstance(c, dict) and c.get("path"):
            ver = c.get("api_version") or c.get("version")
            if c.get("built_for_cuda"):
                ver = f"{ver} (CUDA {c['built_for_cuda']})"
            out[f"{key}[{c['path']}]"] = (area, cat, ver)


def _picks(out, key, area, picks):
    for soname, path in sorted(_d(picks).items()):
        out[f"{key}[{soname}]"] = (area, "env", path)


def _flat(value):
    """Nested dicts become ``k=v, ...`` strings so that one fact is one comparable value."""
    if isinstance(value, dict):
        return ", ".join(f"{k}={_flat(v)}" for k, v in sorted(value.items()))
    if isinstance(value, list):
        return [_flat(v) for v in value]
    return value


def _facts_driver(f: dict, out: dict) -> None:
    nvml = _d(f.get("nvml"))
    st = nvml.get("status")
    out["driver.nvml_status"] = ("driver", "driver", st if st == "ok" else
                                 f"{st}: {nvml.get('reason') or nvml.get('error')}" if st else None)
    version = nvml.get("driver_version") or f.get("user_space_version")
    out["driver.version"] = ("driver", "driver", version)
    out["driver.cuda_version"] = ("driver", "driver", nvml.get("cuda_driver_version"))
    km = _d(f.get("kernel_module")).get("version") if f.get("kernel_module") else "not loaded"
    out["driver.kernel_module"] = ("driver", "driver", "same as driver" if km == version else km)
    us = f.get("user_space_version")
    out["driver.user_space"] = ("driver", "driver", "same as driver" if us == version else us)
    out["driver.kernel_module_flavor"] = ("driver", "minor", _d(f.get("kernel_module")).get("flavor"))
    out["driver.libcuda_loaded"] = ("driver", "env", f.get("libcuda_loaded"))
    out["driver.libnvidia_ml_loaded"] = ("driver", "env", f.get("libnvidia_ml_loaded"))
    gpus = [g for g in _l(nvml.get("gpus")) if isinstance(g, dict)]
    out["gpus.count"] = ("devices", "gpu", len(gpus))
    for i, g in enumerate(gpus):
        k = f"gpu[{g.get('index', i)}]"
        if g.get("error"):
            out[f"{k}.error"] = ("devices", "gpu", g["error"])
        out[f"{k}.name"] = ("devices", "gpu", g.get("name"))
        out[f"{k}.compute_capability"] = ("devices", "gpu", g.get("compute_capability"))
        out[f"{k}.mig_mode"] = ("devices", "gpu", g.get("mig_mode_current"))
        out[f"{k}.compute_mode"] = ("devices", "gpu", g.get("compute_mode"))
        out[f"{k}.pcie_link"] = ("devices", "health", _pcie(g))
        out[f"{k}.ecc_mode"] = ("devices", "health", g.get("ecc_mode_current"))
        out[f"{k}.ecc_uncorrected_volatile"] = ("devices", "health", g.get("ecc_uncorrected_volatile"))
        out[f"{k}.retired_pages_pending"] = ("devices", "health", g.get("retired_pages_pending"))
        out[f"{k}.remapped_rows"] = ("devices", "health", _remap(g.get("remapped_rows")))
        out[f"{k}.mig_mode_pending"] = ("devices", "minor", g.get("mig_mode_pending"))
        out[f"{k}.memory_total_mib"] = ("devices", "minor", g.get("memory_total_mib"))
        out[f"{k}.persistence_mode"] = ("devices", "minor", g.get("persistence_mode"))
        out[f"{k}.vbios"] = ("devices", "minor", g.get("vbios"))
    _copies(out, "driver.libcuda", "driver", "minor", f.get("libcuda"))
    _copies(out, "driver.libnvidia_ml", "driver", "minor", f.get("libnvidia_ml"))


def _facts_cuda(f: dict, out: dict) -> None:
    api = _d(f.get("api"))
    init = _d(api.get("cuInit")).get("result")
    out["cuda.runtime_version"] = ("cuda", "library", f.get("runtime_version"))
    out["cuda.bindings_version"] = ("cuda", "library", api.get("bindings_version"))
    out["cuda.cuInit"] = ("cuda", "symptom", init)
    out["cuda.device_count"] = ("cuda", "symptom", len(_l(api.get("devices"))) if init == "CUDA_SUCCESS" else 0)
    out["cuda.cudaGetDeviceCount"] = ("cuda", "symptom", _d(api.get("cudaGetDeviceCount")).get("result"))
    _copies(out, "cuda.libcudart", "cuda", "library", f.get("libcudart"))
    _picks(out, "cuda.libcudart_loaded", "cuda", f.get("libcudart_loaded"))


def _facts_toolkit(f: dict, out: dict) -> None:
    out["toolkit.on_path"] = ("toolkit", "env", f.get("on_path"))
    for t in _l(f.get("toolkits")):
        if not isinstance(t, dict) or not t.get("nvcc"):
            continue
        k = f"toolkit[{t['nvcc']}]"
        out[f"{k}.version"] = ("toolkit", "library", t.get("version") or t.get("release"))
        out[f"{k}.home"] = ("toolkit", "minor", t.get("home"))
        hc = _d(t.get("host_compiler"))
        out[f"{k}.host_compiler"] = ("toolkit", "compiler",
                                     f"{hc.get('kind')} {hc.get('version_seen_by_nvcc')} ({hc.get('path')})" if hc else None)
        px = _d(t.get("ptxas"))
        pv = px.get("version")
        out[f"{k}.ptxas"] = ("toolkit", "library", "same as nvcc" if pv == t.get("version") else pv)


def _facts_compilers(f: dict, out: dict) -> None:
    for name, c in sorted(_d(f.get("default")).items()):
        if isinstance(c, dict):
            out[f"compilers.{name}"] = ("toolkit", "compiler", f"{c.get('version')} ({c.get('path')})"
                                        if c.get("path") else c.get("error"))
    for name, v in sorted(_d(f.get("env")).items()):
        out[f"env.{name}"] = ("environment", "env", v)


def _facts_cudnn(f: dict, out: dict) -> None:
    _copies(out, "cudnn.library", "cudnn", "library", f.get("libraries"))
    for h in _l(f.get("headers")):
        if isinstance(h, dict) and h.get("path"):
            out[f"cudnn.header[{h['path']}]"] = ("cudnn", "library", h.get("version"))
    _picks(out, "cudnn.loader_pick", "cudnn", f.get("loader_pick"))


def _facts_tensorrt(f: dict, out: dict) -> None:
    for m in _l(f.get("modules")):
        if isinstance(m, dict) and m.get("name"):
            ok = m.get("import_ok")
            out[f"tensorrt.module[{m['name']}]"] = ("tensorrt", "library", f"{m.get('version')}"
                                                    + ("" if ok is None else " (imports)" if ok else " (import fails)"))
    for name, v in sorted(_d(f.get("distributions")).items()):
        out[f"tensorrt.distribution[{name}]"] = ("tensorrt", "library", v)
    _copies(out, "tensorrt.libnvinfer", "tensorrt", "library", f.get("libnvinfer"))
    _picks(out, "tensorrt.libnvinfer_loaded", "tensorrt", f.get("libnvinfer_loaded"))
    out["tensorrt.trtexec"] = ("tensorrt", "minor", f.get("trtexec"))


def _facts_frameworks(f: dict, out: dict) -> None:
    for fw, info in f.items():
        if not isinstance(info, dict):
            out[f"frameworks.{fw}"] = ("frameworks", "library", "not installed" if info is None else info)
            continue
        for key, v in info.items():
            if key == "path":
                out[f"frameworks.{fw}.path"] = ("frameworks", "minor", v)
            elif key == "nvidia_requirements":
                out[f"frameworks.{fw}.nvidia_requirements"] = ("frameworks", "library", _flat(v))
            elif key == "archs" and isinstance(v, dict):
                out[f"frameworks.{fw}.archs.sass"] = ("frameworks", "library", v.get("sass"))
                out[f"frameworks.{fw}.archs.ptx"] = ("frameworks", "library", v.get("ptx"))
            else:
                out[f"frameworks.{fw}.{key}"] = ("frameworks", "library", _flat(v))


def _facts_environment(f: dict, out: dict) -> None:
    cvd = _d(f.get("cuda_visible_devices"))
    out["env.CUDA_VISIBLE_DEVICES"] = ("environment", "env", cvd.get("raw") if cvd.get("set") else "unset")
    out["env.LD_LIBRARY_PATH"] = ("environment", "env",
                                  ":".join(e.get("path", "") for e in _l(f.get("ld_library_path")) if isinstance(e, dict)))
    out["env.PATH"] = ("environment", "env", ":".join(e.get("path", "") for e in _l(f.get("path_cuda_entries"))
                                                       if isinstance(e, dict)))
    for name, v in sorted(_d(f.get("vars")).items()):
        out[f"env.{name}"] = ("environment", "env", v)


def _facts_platform(f: dict, out: dict) -> None:
    out["platform.os"] = ("platform", "platform", _d(f.get("os")).get("pretty_name"))
    out["platform.kernel"] = ("platform", "platform", f.get("kernel"))
    out["platform.machine"] = ("platform", "platform", f.get("machine"))
    out["platform.glibc"] = ("platform", "platform", f.get("glibc"))
    out["platform.python"] = ("platform", "minor", _d(f.get("python")).get("version"))
    out["platform.wsl"] = ("platform", "platform", _d(f.get("wsl")).get("is_wsl"))
    c = _d(f.get("container"))
    out["platform.container"] = ("platform", "platform", c.get("is_container"))
    out["platform.container.nvidia_visible_devices"] = ("platform", "env", c.get("nvidia_visible_devices"))
    out["platform.container.nvidia_driver_capabilities"] = ("platform", "env", c.get("nvidia_driver_capabilities"))
    out["platform.container.require_cuda"] = ("platform", "env", _d(c.get("nvidia_require_cuda")).get("cuda"))
    out["platform.dev_nodes"] = ("platform", "gpu", f.get("dev_nodes"))


_EXTRACT = {"driver": _facts_driver, "cuda": _facts_cuda, "toolkit": _facts_toolkit, "compilers": _facts_compilers,
            "cudnn": _facts_cudnn, "tensorrt": _facts_tensorrt, "frameworks": _facts_frameworks,
            "environment": _facts_environment, "platform": _facts_platform}


def facts_of(report: dict, probes: Iterable[str] = _PROBE_ORDER) -> Dict[str, Tuple[str, str, object]]:
    """Comparable facts of a report: ``{fact: (area, kind, value)}`` (kind: a :data:`BASE_WEIGHT` key),
    in report order. Probes that did not finish contribute nothing."""
    out: Dict[str, Tuple[str, str, object]] = {}
    for name in probes:
        f = _probe_facts(report, name)
        if f is not None:
            _EXTRACT[name](f, out)
    return out


# --------------------------------------------------------------------------------------------- findings

def _worst_by_id(report: dict) -> Dict[str, dict]:
    out: Dict[str, dict] = {}
    for f in report.get("findings") or []:
        if not isinstance(f, dict) or not f.get("id"):
            continue
        sev = f.get("severity") if f.get("severity") in _SEV_RANK else "info"
        cur = out.get(f["id"])
        if cur is None or _SEV_RANK[sev] > _SEV_RANK[cur["severity"]]:
            out[f["id"]] = {"severity": sev, "title": f.get("title") or "", "area": f.get("area") or ""}
    return out


def compare_findings(a: dict, b: dict) -> List[dict]:
    """Finding ids whose worst severity differs between A and B, B's new problems first."""
    fa, fb = _worst_by_id(a), _worst_by_id(b)
    smoke_differs = bool(_d(a.get("options")).get("smoke", True)) != bool(_d(b.get("options")).get("smoke", True))
    rows = []
    for fid in list(fb) + [i for i in fa if i not in fb]:
        sa = fa.get(fid, {}).get("severity")
        sb = fb.get(fid, {}).get("severity")
        if sa == sb:
            continue
        if sa is None:
            change = "new"
        elif sb is None:
            change = "gone"
        else:
            change = "worse" if _SEV_RANK[sb] > _SEV_RANK[sa] else "better"
        src = fb.get(fid) or fa.get(fid)
        rows.append({"id": fid, "area": src["area"], "change": change, "a": sa, "b": sb, "title": src["title"],
                     "comparable": not (smoke_differs and fid.startswith("smoke."))})

    def key(r):
        bad = r["change"] in ("new", "worse")
        return (0 if bad else 1, -_SEV_RANK[r["b"] or "ok"] if bad else -_SEV_RANK[r["a"] or "ok"])

    rows.sort(key=key)
    return rows


# --------------------------------------------------------------------------------------------- ranking

def _glob(pattern: str) -> "re.Pattern":
    return re.compile("^" + re.escape(pattern).replace(r"\*", ".*") + "$")


def _links_for(fid: str, area: str) -> List["re.Pattern"]:
    pats = LINKS.get(fid)
    if pats is None:
        for k, v in LINKS.items():
            if "*" in k and _glob(k).match(fid):
                pats = v
                break
    if pats is None:
        pats = [f"{area}*"] if area else []
    return [_glob(p) for p in pats]


def _show(v) -> str:
    if v is None:
        return "—"
    if isinstance(v, list):
        return ", ".join(str(x) for x in v) if v else "[]"
    if isinstance(v, bool):
        return "yes" if v else "no"
    return str(v) if v != "" else '""'


def _summary(report: dict, label: str) -> dict:
    return {"label": label, "generated_at": report.get("generated_at"),
            "gpudoctor_version": report.get("gpudoctor_version"), "summary": report.get("summary")}


def compare(a: dict, b: dict, labels: Tuple[str, str] = ("A", "B")) -> dict:
    """What differs between report ``a`` (working) and report ``b`` (broken), most likely culprit
    first. Raises ValueError when either is not a gpudoctor report of schema version 1."""
    check_report(a, labels[0])
    check_report(b, labels[1])
    findings = compare_findings(a, b)
    # findings that are new problems in B and can explain a fact difference
    culprits = []
    for r in findings:
        if r["change"] in ("new", "worse") and r["comparable"] and r["b"] in ("fail", "warn"):
            culprits.append((r, 100 if r["b"] == "fail" else 50, _links_for(r["id"], r["area"])))

    diffs: List[dict] = []
    not_compared = []
    order = 0
    for probe in _PROBE_ORDER:
        sa, sb = probe_status(a, probe), probe_status(b, probe)
        if sa != "ok" or sb != "ok":
            if sa != sb:
                diffs.append(_diff("gpudoctor", f"probe.{probe}", sa, sb, "probe", culprits, order))
                order += 1
            not_compared.append({"probe": probe, "a": sa, "b": sb})
            continue
        fa, fb = facts_of(a, [probe]), facts_of(b, [probe])
        for key in list(fa) + [k for k in fb if k not in fa]:
            area, kind, va = fa.get(key, (None, None, None))
            area_b, kind_b, vb = fb.get(key, (area, kind, None))
            area, kind = area or area_b, kind or kind_b
            if va != vb:
                diffs.append(_diff(area, key, va, vb, kind, culprits, order))
                order += 1
    oa, ob = _d(a.get("options")), _d(b.get("options"))
    for key in ("smoke", "engines"):
        if key in oa or key in ob:
            if oa.get(key) != ob.get(key):
                diffs.append(_diff("gpudoctor", f"options.{key}", oa.get(key), ob.get(key), "run", culprits, order))
                order += 1
    for key in ("gpudoctor_version", "matrix_data_version"):
        if a.get(key) != b.get(key):
            diffs.append(_diff("gpudoctor", key, a.get(key), b.get(key), "run", culprits, order))
            order += 1
    diffs.sort(key=lambda d: (-d["weight"], d.pop("_order")))
    return {"a": _summary(a, labels[0]), "b": _summary(b, labels[1]), "findings": findings,
            "differences": diffs, "not_compared": not_compared,
            "culprit": diffs[0] if diffs else None, "identical": not diffs and not findings}


def _diff(area, fact, va, vb, kind, culprits, order) -> dict:
    base = BASE_WEIGHT.get(kind, 10)
    linked = [(r, boost) for r, boost, pats in culprits if any(p.match(fact) for p in pats)]
    weight = base
    why = _WHY.get(kind, "")
    if linked:
        top = max(boost for _, boost in linked)
        weight += (10 if kind == "symptom" else top) + min(10, 3 * (len(linked) - 1))
        r = max(linked, key=lambda x: x[1])[0]
        why = f"explains B's new {r['b']} finding {r['id']}; " + why
    if kind == "probe":
        why = "a probe that did not finish in one report: its facts are not compared. " + _WHY["probe"]
    return {"area": area, "fact": fact, "a": va, "b": vb, "weight": weight, "why": why,
            "explains": [r["id"] for r, _ in linked], "_order": order}


# --------------------------------------------------------------------------------------------- text

def render_text(result: dict, limit: int = 25) -> str:
    """Human-readable form of :func:`compare`'s result (``limit`` differences at most; 0 = all)."""
    a, b = result["a"], result["b"]
    lines = [f"gpudoctor compare: A = {a['label']} ({a.get('generated_at') or '?'}), "
             f"B = {b['label']} ({b.get('generated_at') or '?'})"]
    if result.get("identical"):
        lines.append("No differences in findings or compared facts.")
        return "\n".join(lines) + "\n"
    c = result.get("culprit")
    if c:
        lines.append(f"Most likely culprit: {c['fact']}: {_show(c['a'])} (A) → {_show(c['b'])} (B)")
    lines.append("")
    lines.append("Findings that differ (A → B):")
    if not result["findings"]:
        lines.append("  none")
    for r in result["findings"]:
        note = "" if r["comparable"] else "  [not comparable: smoke tests ran in only one report]"
        lines.append(f"  {r['change'].upper():6} {r['a'] or '—':>4} → {r['b'] or '—':<4} {r['id']}: {r['title']}{note}")
    lines.append("")
    diffs = result["differences"]
    shown = diffs if not limit else diffs[:limit]
    lines.append("Differences, most likely culprit first:")
    if not diffs:
        lines.append("  none")
    for i, d in enumerate(shown, 1):
        lines.append(f"  {i:2}. [{d['area']}] {d['fact']}: {_show(d['a'])} → {_show(d['b'])}  (weight {d['weight']})")
        lines.append(f"      {d['why']}")
    if len(diffs) > len(shown):
        lines.append(f"  ... {len(diffs) - len(shown)} more (use --json for all)")
    for n in result.get("not_compared") or []:
        lines.append(f"  not compared: probe {n['probe']} (A: {n['a']}, B: {n['b']})")
    lines.append("")
    lines.append("Not compared by design: temperatures, memory used, elapsed times, timestamps, GPU UUIDs, "
                 "PCI bus ids.")
    return "\n".join(lines) + "\n"
