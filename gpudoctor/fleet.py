"""Aggregate many saved ``gpudoctor check --json`` reports (one per node) and flag the odd nodes.

Pure functions over report dictionaries (docs/json-report.md); collection recipes: docs/fleet.md.

:func:`load_reports` returns ``(reports, errors)``: ``reports`` is a list of
``{"node", "path", "report"}``, ``errors`` a list of ``{"path", "error"}`` (missing, unreadable,
empty, not JSON, not a gpudoctor report, another schema version): bad files never raise.

:func:`aggregate` returns::

    {"nodes": int,                       # reports aggregated
     "errors": [{"path", "error"}],      # files that could not be used
     "majority": {"fingerprint", "facts", "nodes", "of", "clear", "gpu_count"},
     "groups": [{"fingerprint", "facts", "nodes": [names], "majority": bool}],  # biggest first
     "outliers": [{"node", "path", "fingerprint", "gpus", "reasons": [Reason]}],
     "healthy": [names],
     "finding_counts": [{"id", "nodes", "severity": {sev: nodes}, "worst", "node_names"}]}

A **Reason** is ``{"kind", "detail", ...}``; kinds, in this order:

``fingerprint``   software differs from the majority group; ``facts`` lists ``{fact, node, majority}``
``gpu_count``     fewer GPUs (NVML) than the majority count; ``gpus``, ``majority``
``pcie``          a GPU's PCIe link below its maximum generation or width; ``gpus``: [{index, current, max}]
``ecc``           uncorrected ECC errors since the last reset, retired pages pending, or row
                  remapping pending / failed; ``gpus``: [{index, issues}]
``fail``          at least one ``fail`` finding; ``ids``

The software fingerprint is: driver version and its CUDA version; cuda-python and the CUDA runtime
it links; the versions of libcudart copies, toolkits (nvcc), cuDNN and TensorRT (bindings,
wheels, libnvinfer); framework versions and the CUDA they were built for. Paths and hostnames are
not part of it. The majority group is the fingerprint most nodes share (ties: ``clear`` is False and
the group listed first is used). The majority GPU count is the most common count (ties: the higher).
"""
from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from pathlib import Path
from typing import Dict, Iterable, List, Mapping, Optional, Tuple, Union

from gpudoctor.compare import _d, _l, _probe_facts, check_report

_SEV_RANK = {"ok": 0, "info": 1, "warn": 2, "fail": 3}
_REASON_ORDER = ("fingerprint", "gpu_count", "pcie", "ecc", "fail")


# --------------------------------------------------------------------------------------------- loading

def _read(path: Path) -> dict:
    try:
        raw = path.read_bytes()
    except IsADirectoryError:
        raise ValueError("is a directory")
    except OSError as exc:
        raise ValueError(f"cannot read: {exc.strerror or exc}")
    if not raw.strip():
        raise ValueError("empty file (did `gpudoctor check --json` fail before writing? see the job's stderr)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("not JSON (not UTF-8 text)")
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        head = text.lstrip()[:40].splitlines()[0] if text.strip() else ""
        hint = "" if head.startswith(("{", "[")) else f"; it starts with {head!r}: was it written with --json?"
        raise ValueError(f"not JSON ({exc.msg} at line {exc.lineno} column {exc.colno}){hint}")
    return check_report(obj, "not usable")


def _strip_source(msg: str) -> str:
    return msg[len("not usable: "):] if msg.startswith("not usable: ") else msg


def load_reports(paths: Iterable[Union[str, os.PathLike]]) -> Tuple[List[dict], List[dict]]:
    """Read reports from files and directories (their ``*.json``, not recursive).

    Returns ``(reports, errors)``; ``reports``: ``[{"node", "path", "report"}]`` with ``node`` the
    report's ``host`` when present, else the file name without ``.json``."""
    reports: List[dict] = []
    errors: List[dict] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            files = sorted(f for f in path.glob("*.json") if f.is_file() or f.is_symlink())
            if not files:
                errors.append({"path": str(path), "error": "no *.json files in this directory"})
            targets = files
        elif path.exists() or path.is_symlink():
            targets = [path]
        else:
            errors.append({"path": str(path), "error": "no such file or directory"})
            continue
        for f in targets:
            try:
                rep = _read(f)
            except ValueError as exc:
                errors.append({"path": str(f), "error": _strip_source(str(exc))})
                continue
            reports.append({"node": _node_name(rep, f.name[:-5] if f.name.endswith(".json") else f.name),
                            "path": str(f), "report": rep})
    return reports, errors


def _node_name(report: dict, fallback: str) -> str:
    host = report.get("host")
    return host.strip() if isinstance(host, str) and host.strip() else fallback


# --------------------------------------------------------------------------------------------- facts

def fingerprint(report: dict) -> Dict[str, str]:
    """The software facts that should be identical across a homogeneous fleet (no paths, no hostnames).
    A probe that did not finish gives ``"?"`` for its facts."""
    fp: Dict[str, str] = {}

    def join(values) -> str:
        vals = sorted({str(v) for v in values if v})
        return ", ".join(vals) if vals else "none"

    drv = _probe_facts(report, "driver")
    if drv is None:
        fp["driver.version"] = fp["driver.cuda_version"] = "?"
    else:
        nvml = _d(drv.get("nvml"))
        fp["driver.version"] = str(nvml.get("driver_version") or drv.get("user_space_version") or "none")
        fp["driver.cuda_version"] = str(nvml.get("cuda_driver_version") or "none")
    cuda = _probe_facts(report, "cuda")
    if cuda is None:
        fp["cuda.runtime"] = fp["cuda.bindings"] = fp["cuda.libcudart"] = "?"
    else:
        fp["cuda.runtime"] = str(cuda.get("runtime_version") or "none")
        fp["cuda.bindings"] = str(_d(cuda.get("api")).get("bindings_version") or "none")
        fp["cuda.libcudart"] = join(c.get("version") for c in _l(cuda.get("libcudart")) if isinstance(c, dict))
    tk = _probe_facts(report, "toolkit")
    fp["toolkits"] = "?" if tk is None else join(
        t.get("version") or t.get("release") for t in _l(tk.get("toolkits")) if isinstance(t, dict))
    cd = _probe_facts(report, "cudnn")
    fp["cudnn"] = "?" if cd is None else join(
        c.get("api_version") or c.get("version") for c in _l(cd.get("libraries")) if isinstance(c, dict))
    trt = _probe_facts(report, "tensorrt")
    if trt is None:
        fp["tensorrt"] = "?"
    else:
        vals = [f"{m.get('name')} {m.get('version')}" for m in _l(trt.get("modules")) if isinstance(m, dict)]
        vals += [f"{n} {v}" for n, v in _d(trt.get("distributions")).items()]
        vals += [f"libnvinfer {c.get('version')}" for c in _l(trt.get("libnvinfer")) if isinstance(c, dict)]
        fp["tensorrt"] = join(vals)
    fw = _probe_facts(report, "frameworks")
    if fw is None:
        fp["frameworks"] = "?"
    else:
        for name, info in sorted(fw.items()):
            if not isinstance(info, dict):
                continue
            parts = [str(info.get("distribution") or "") if info.get("distribution") not in (None, name) else "",
                     str(info.get("version") or "")]
            if info.get("cuda"):
                parts.append(f"CUDA {info['cuda']}")
            for key in ("plugins", "distributions"):
                if isinstance(info.get(key), dict):
                    parts.append(", ".join(f"{k} {v}" for k, v in sorted(info[key].items())))
            fp[f"frameworks.{name}"] = " ".join(p for p in parts if p)
    return fp


def fingerprint_id(fp: Mapping[str, str]) -> str:
    return hashlib.sha1(json.dumps(fp, sort_keys=True).encode()).hexdigest()[:8]


def _gpus(report: dict) -> Optional[List[dict]]:
    drv = _probe_facts(report, "driver")
    if drv is None:
        return None
    return [g for g in _l(_d(drv.get("nvml")).get("gpus")) if isinstance(g, dict)]


def _pcie_issues(gpus: List[dict]) -> List[dict]:
    out = []
    for g in gpus:
        gc, gm = g.get("pcie_gen_current"), g.get("pcie_gen_max")
        wc, wm = g.get("pcie_width_current"), g.get("pcie_width_max")
        if (gc and gm and gc < gm) or (wc and wm and wc < wm):
            out.append({"index": g.get("index"), "current": f"Gen{gc} x{wc}", "max": f"Gen{gm} x{wm}",
                        "width_degraded": bool(wc and wm and wc < wm)})
    return out


def _ecc_issues(gpus: List[dict]) -> List[dict]:
    out = []
    for g in gpus:
        issues = []
        if g.get("ecc_uncorrected_volatile"):
            issues.append(f"{g['ecc_uncorrected_volatile']} uncorrected ECC errors since the last reset")
        if g.get("retired_pages_pending"):
            issues.append("retired pages pending")
        rr = _d(g.get("remapped_rows"))
        if rr.get("failure"):
            issues.append("row remapping failed")
        elif rr.get("pending"):
            issues.append("row remap pending")
        if issues and rr.get("uncorrectable"):
            issues.append(f"{rr['uncorrectable']} row(s) remapped for uncorrectable errors")
        if issues:
            out.append({"index": g.get("index"), "issues": issues})
    return out


# --------------------------------------------------------------------------------------------- aggregate

def _entries(reports) -> Tuple[List[dict], List[dict]]:
    """Accept load_reports entries, bare report dicts, or a {name: report} mapping."""
    if isinstance(reports, Mapping):
        items = [{"node": str(k), "path": None, "report": v} for k, v in reports.items()]
    else:
        items = []
        for i, r in enumerate(reports, 1):
            if isinstance(r, dict) and "report" in r and "schema_version" not in r:
                items.append({"node": r.get("node"), "path": r.get("path"), "report": r["report"]})
            else:
                items.append({"node": None, "path": None, "report": r, "_i": i})
    good, errors = [], []
    for it in items:
        label = it.get("path") or it.get("node") or f"report #{it.get('_i')}"
        try:
            check_report(it["report"], "not usable")
        except ValueError as exc:
            errors.append({"path": label, "error": _strip_source(str(exc))})
            continue
        node = it.get("node") or _node_name(it["report"], f"node-{it.get('_i', len(good) + 1)}")
        good.append({"node": node, "path": it.get("path"), "report": it["report"]})
    seen: Counter = Counter()
    for e in good:  # two reports of one host stay two rows
        seen[e["node"]] += 1
        if seen[e["node"]] > 1:
            e["node"] = f"{e['node']} ({seen[e['node']]})"
    return good, errors


def aggregate(reports, errors: Optional[List[dict]] = None) -> dict:
    """Group nodes by software fingerprint, find the majority, flag outliers (see the module doc).

    ``reports``: :func:`load_reports` entries, bare report dicts (node = ``host`` or ``node-N``) or a
    ``{node: report}`` mapping; invalid reports are added to ``errors`` instead of raising."""
    nodes, bad = _entries(reports)
    errors = list(errors or []) + bad

    rows = []
    for e in nodes:
        fp = fingerprint(e["report"])
        gpus = _gpus(e["report"])
        rows.append({"node": e["node"], "path": e["path"], "report": e["report"], "fp": fp, "fid": fingerprint_id(fp),
                     "gpus": gpus})

    groups: Dict[str, dict] = {}
    for r in rows:
        g = groups.setdefault(r["fid"], {"fingerprint": r["fid"], "facts": r["fp"], "nodes": []})
        g["nodes"].append(r["node"])
    ordered = sorted(groups.values(), key=lambda g: (-len(g["nodes"]), sorted(g["nodes"])[0]))
    clear = len(ordered) <= 1 or len(ordered[0]["nodes"]) > len(ordered[1]["nodes"])
    major = ordered[0] if ordered else None
    for g in ordered:
        g["majority"] = g is major

    counts = Counter(len(r["gpus"]) for r in rows if r["gpus"] is not None)
    gpu_major = max(counts.items(), key=lambda kv: (kv[1], kv[0]))[0] if counts else None

    outliers, healthy = [], []
    for r in rows:
        reasons = []
        if major is not None and r["fid"] != major["fingerprint"]:
            diff = [{"fact": k, "node": r["fp"].get(k, "none"), "majority": major["facts"].get(k, "none")}
                    for k in sorted(set(r["fp"]) | set(major["facts"]))
                    if r["fp"].get(k, "none") != major["facts"].get(k, "none")]
            reasons.append({"kind": "fingerprint", "facts": diff,
                            "detail": "software differs from the majority: " + "; ".join(
                                f"{d['fact']} {d['node']} (majority {d['majority']})" for d in diff)})
        n = len(r["gpus"]) if r["gpus"] is not None else None
        if gpu_major is not None and (n is None or n < gpu_major):
            reasons.append({"kind": "gpu_count", "gpus": n, "majority": gpu_major,
                            "detail": f"{'unknown number of' if n is None else n} GPU{'s' if n != 1 else ''} "
                                      f"(majority {gpu_major})"})
        pcie = _pcie_issues(r["gpus"] or [])
        if pcie:
            note = "" if all(p["width_degraded"] for p in pcie) else \
                " (a lower generation alone can be idle power saving: re-check under load)"
            reasons.append({"kind": "pcie", "gpus": pcie, "detail": "degraded PCIe link: " + "; ".join(
                f"GPU {p['index']} {p['current']} (max {p['max']})" for p in pcie) + note})
        ecc = _ecc_issues(r["gpus"] or [])
        if ecc:
            reasons.append({"kind": "ecc", "gpus": ecc, "detail": "memory errors: " + "; ".join(
                f"GPU {x['index']}: {', '.join(x['issues'])}" for x in ecc)})
        fails = sorted({f.get("id") for f in r["report"].get("findings") or []
                        if isinstance(f, dict) and f.get("severity") == "fail"})
        if fails:
            reasons.append({"kind": "fail", "ids": fails, "detail": "fail findings: " + ", ".join(fails)})
        if reasons:
            outliers.append({"node": r["node"], "path": r["path"], "fingerprint": r["fid"], "gpus": n,
                             "reasons": reasons})
        else:
            healthy.append(r["node"])

    per_id: Dict[str, dict] = {}
    for r in rows:
        worst: Dict[str, str] = {}
        for f in r["report"].get("findings") or []:
            if not isinstance(f, dict) or not f.get("id"):
                continue
            sev = f.get("severity") if f.get("severity") in _SEV_RANK else "info"
            if f["id"] not in worst or _SEV_RANK[sev] > _SEV_RANK[worst[f["id"]]]:
                worst[f["id"]] = sev
        for fid, sev in worst.items():
            c = per_id.setdefault(fid, {"id": fid, "nodes": 0, "severity": {}, "worst": "ok", "node_names": []})
            c["nodes"] += 1
            c["severity"][sev] = c["severity"].get(sev, 0) + 1
            c["node_names"].append(r["node"])
            if _SEV_RANK[sev] > _SEV_RANK[c["worst"]]:
                c["worst"] = sev
    finding_counts = sorted(per_id.values(), key=lambda c: (-_SEV_RANK[c["worst"]], -c["nodes"], c["id"]))

    return {
        "nodes": len(rows),
        "errors": errors,
        "majority": None if major is None else {
            "fingerprint": major["fingerprint"], "facts": major["facts"], "nodes": len(major["nodes"]),
            "of": len(rows), "clear": clear, "gpu_count": gpu_major},
        "groups": [{"fingerprint": g["fingerprint"], "facts": g["facts"], "nodes": g["nodes"],
                    "majority": g["majority"]} for g in ordered],
        "outliers": outliers,
        "healthy": healthy,
        "finding_counts": finding_counts,
    }


# --------------------------------------------------------------------------------------------- text

def render_text(result: dict) -> str:
    """Human-readable form of :func:`aggregate`'s result."""
    n, errs = result["nodes"], result["errors"]
    lines = [f"gpudoctor fleet: {n} report{'s' if n != 1 else ''}"
             + (f", {len(errs)} unusable file{'s' if len(errs) != 1 else ''}" if errs else "")]
    m = result.get("majority")
    if m:
        lines.append(f"Majority software ({m['nodes']} of {m['of']} nodes, fingerprint {m['fingerprint']}"
                     + ("" if m["clear"] else "; NO clear majority, the first group is used") + "):")
        lines.extend(f"  {k}: {v}" for k, v in m["facts"].items())
        if m.get("gpu_count") is not None:
            lines.append(f"Majority GPU count: {m['gpu_count']}")
        if len(result["groups"]) > 1:
            lines.append("Software groups: " + "; ".join(
                f"{g['fingerprint']}: {len(g['nodes'])} node{'s' if len(g['nodes']) != 1 else ''}"
                for g in result["groups"]))
    lines.append("")
    lines.append(f"Outliers ({len(result['outliers'])}):" if result["outliers"] else "Outliers: none")
    for o in result["outliers"]:
        lines.append(f"  {o['node']}")
        for r in o["reasons"]:
            lines.append(f"    - [{r['kind']}] {r['detail']}")
    if result["healthy"]:
        lines.append("")
        lines.append(f"Healthy ({len(result['healthy'])}): " + ", ".join(result["healthy"]))
    counts = [c for c in result["finding_counts"] if c["worst"] != "ok"]
    if counts:
        lines.append("")
        lines.append("Findings across nodes (info and worse):")
        for c in counts:
            sev = ", ".join(f"{k} {v}" for k, v in sorted(c["severity"].items(), key=lambda kv: -_SEV_RANK[kv[0]]))
            lines.append(f"  {c['worst']:4} {c['id']}: {c['nodes']} node{'s' if c['nodes'] != 1 else ''} ({sev})")
    if errs:
        lines.append("")
        lines.append("Unusable files:")
        for e in errs:
            lines.append(f"  {e['path']}: {e['error']}")
    return "\n".join(lines) + "\n"
