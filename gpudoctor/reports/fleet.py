"""Aggregate many saved ``gpudoctor check --json`` reports (one per node) and flag the odd nodes.

Collection recipes: docs/fleet.md. :func:`stream` reads files, directories, globs, ``.tar[.gz]``
archives and JSON on standard input, parsing many files in worker processes, and folds each report
into a :class:`Fleet` as it is read (only a small summary per node is kept: 20,000 nodes fit in
tens of MB). :func:`aggregate` does the same for reports already in memory.

:func:`load_reports` returns ``(reports, errors)``: ``reports`` is a list of
``{"node", "path", "report"}``, ``errors`` a list of ``{"path", "error"}`` (missing, unreadable,
empty, not JSON, not a gpudoctor report, another schema version): bad files never raise.

:func:`aggregate` returns::

    {"nodes": int,                       # reports aggregated
     "errors": [{"path", "error"}],      # files that could not be used
     "majority": {"fingerprint", "facts", "nodes", "of", "clear", "gpu_count"},
     "groups": [{"fingerprint", "facts", "nodes": [names], "majority": bool}],  # biggest first
     "outliers": [{"node", "path", "fingerprint", "gpus", "reasons": [Reason]}],
     "outlier_groups": [{"reasons": [{"kind", "detail"}], "nodes": [names], "hostlist"}],  # odd the same way
     "healthy": [names],
     "healthy_hostlist": "gpu[0000-0006,0008-0299]",       # Slurm host list (python-hostlist)
     "finding_counts": [{"id", "nodes", "severity": {sev: nodes}, "worst",
                         "node_names": [the nodes where it is not ok]}]}

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
import sys
from collections import Counter
from pathlib import Path
from typing import Dict, Iterable, List, Mapping, Optional, Tuple, Union

from gpudoctor.process.nvml_topology import NVIDIA_SMI_NAMES, nvlink_pairs
from gpudoctor.reports.compare import _d, _l, _probe_facts, check_report

_SEV_RANK = {"ok": 0, "info": 1, "warn": 2, "fail": 3}
_REASON_ORDER = ("fingerprint", "gpu_count", "topology", "pcie", "ecc", "fail")


# --------------------------------------------------------------------------------------------- loading

def _read(path: Path) -> dict:
    return _parse_bytes(_read_bytes(path))


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except IsADirectoryError:
        raise ValueError("is a directory")
    except OSError as exc:
        raise ValueError(f"cannot read: {exc.strerror or exc}")


def _parse_bytes(raw: bytes) -> dict:
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


# --------------------------------------------------------------------------------------------- streaming

#: Reports per task handed to a parsing process; in-flight tasks are bounded so memory stays flat.
BATCH = 64
_PARALLEL_FROM = 256  # fewer files than this are parsed in this process (a pool costs ~0.1 s)


def _parse_one(raw: bytes, label: str, fallback: str):
    """``("row", node, path, summary)`` or ``("error", path, message)`` for one report's bytes."""
    try:
        rep = _parse_bytes(raw)
    except ValueError as exc:
        return ("error", label, _strip_source(str(exc)))
    return ("row", _node_name(rep, fallback), label, summarize(rep))


def _parse_batch(items) -> list:
    """Runs in a worker process: items are ``(label, fallback, path_or_bytes)``."""
    out = []
    for label, fallback, src in items:
        if isinstance(src, bytes):
            out.append(_parse_one(src, label, fallback))
            continue
        try:
            raw = _read_bytes(Path(src))
        except ValueError as exc:
            out.append(("error", label, _strip_source(str(exc))))
            continue
        out.append(_parse_one(raw, label, fallback))
    return out


def _is_glob(p: str) -> bool:
    return any(ch in p for ch in "*?[")


def _is_tar(path: Path) -> bool:
    return path.name.endswith((".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz"))


def iter_items(paths, stdin=None):
    """Every report to read, in order: ``(label, fallback node name, path or bytes)``, or an error
    ``(label, None, ValueError)``. Inputs: a report file, a directory (its ``*.json``), a glob, a
    ``.tar[.gz]`` of reports (streamed, never unpacked to disk), or ``-``: JSON on standard input
    (JSON Lines or concatenated reports, e.g. ``srun gpudoctor check --json | gpudoctor fleet -``)."""
    import glob as globmod

    for p in paths:
        p = str(p)
        if p == "-":
            yield from _stdin_items(stdin if stdin is not None else sys.stdin.buffer)
            continue
        path = Path(p)
        if not (path.exists() or path.is_symlink()) and _is_glob(p):
            matches = sorted(globmod.glob(p))
            if not matches:
                yield (p, None, ValueError("no file matches this pattern"))
            for m in matches:
                if Path(m).is_file():
                    yield (m, _stem(Path(m).name), m)
            continue
        if path.is_dir():
            files = sorted(f for f in path.glob("*.json") if f.is_file() or f.is_symlink())
            if not files:
                yield (str(path), None, ValueError("no *.json files in this directory"))
            for f in files:
                yield (str(f), _stem(f.name), str(f))
        elif path.is_file() and _is_tar(path):
            yield from _tar_items(path)
        elif path.exists() or path.is_symlink():
            yield (str(path), _stem(path.name), str(path))
        else:
            yield (str(path), None, ValueError("no such file or directory"))


def _stem(name: str) -> str:
    return name[:-5] if name.endswith(".json") else name


def _tar_items(path: Path):
    import tarfile

    try:
        with tarfile.open(path, "r|*") as tar:  # streamed: members are read in order, never all at once
            seen = False
            for m in tar:
                if not m.isfile() or not m.name.endswith(".json") or os.path.basename(m.name).startswith("."):
                    continue
                seen = True
                fh = tar.extractfile(m)
                yield (f"{path}:{m.name}", _stem(os.path.basename(m.name)), fh.read() if fh else b"")
            if not seen:
                yield (str(path), None, ValueError("no *.json members in this archive"))
    except (tarfile.TarError, OSError, EOFError) as exc:
        yield (str(path), None, ValueError(f"not a readable tar archive ({exc})"))


def _stdin_items(stream, chunk: int = 1 << 20, max_report: int = 64 << 20):
    """Reports from a byte stream of JSON values separated by whitespace (JSON Lines, or the indented
    output of several ``check --json`` runs one after the other). A value that does not parse is
    reported with its line number and skipped to the next line."""
    decoder = json.JSONDecoder()
    buf, line, n, eof = "", 1, 0, False
    pending = b""
    while True:
        if not eof:
            data = stream.read(chunk)
            if not data:
                eof = True
            else:
                pending += data
                try:
                    buf += pending.decode("utf-8")
                    pending = b""
                except UnicodeDecodeError as exc:
                    if exc.start < len(pending) - 4:  # not just a character cut by the chunk boundary
                        buf += pending.decode("utf-8", errors="replace")
                        pending = b""
        while True:
            stripped = buf.lstrip()
            line += buf.count("\n", 0, len(buf) - len(stripped))
            buf = stripped
            if not buf:
                break
            try:
                obj, end = decoder.raw_decode(buf)
            except json.JSONDecodeError as exc:
                if not eof and exc.pos >= len(buf) - 1 and len(buf) < max_report:
                    break  # the value continues in the next chunk
                cut = buf.find("\n")
                yield (f"<stdin> line {line}", None, ValueError(f"not JSON ({exc.msg})"))
                if cut < 0:
                    buf = ""
                    break
                line += 1
                buf = buf[cut + 1:]
                continue
            n += 1
            raw = buf[:end]
            line_at = line
            line += raw.count("\n")
            buf = buf[end:]
            yield (f"<stdin> report {n} (line {line_at})", f"stdin-{n}", _Loaded(obj))
        if eof:
            return


class _Loaded:
    """A report already parsed (standard input is parsed while it is split into reports)."""

    __slots__ = ("obj",)

    def __init__(self, obj) -> None:
        self.obj = obj


def stream(paths, stdin=None, jobs: Optional[int] = None) -> "Fleet":
    """Read every report of ``paths`` (see :func:`iter_items`) into a :class:`Fleet`, folding each in as
    it is read. Many files are parsed in ``jobs`` processes (default: the CPU count) in batches of
    :data:`BATCH`, with a bounded number in flight, so memory does not grow with the fleet."""
    import itertools
    from collections import deque
    from concurrent.futures import ProcessPoolExecutor

    from gpudoctor.render.progress import progress

    fleet = Fleet()
    jobs = jobs or os.cpu_count() or 1
    items = iter_items(paths, stdin)
    head = list(itertools.islice(items, _PARALLEL_FROM))
    if len(head) < _PARALLEL_FROM or jobs <= 1:
        for batch in _batches(itertools.chain(head, items)):
            _fold(fleet, _merge(batch, _parse_batch(_work(batch))))
        return fleet
    with progress("reading reports", None) as tick, ProcessPoolExecutor(max_workers=jobs) as pool:
        inflight: deque = deque()
        for batch in _batches(itertools.chain(head, items)):
            work = _work(batch)
            inflight.append((batch, pool.submit(_parse_batch, work) if work else None))
            while len(inflight) > 2 * jobs:  # bounded: at most 2 batches per process waiting
                _drain_one(fleet, inflight, tick)
        while inflight:
            _drain_one(fleet, inflight, tick)
    return fleet


def _batches(items):
    import itertools

    while True:
        batch = list(itertools.islice(items, BATCH))
        if not batch:
            return
        yield batch


def _work(batch) -> list:
    """The items a parsing process must read: files and raw bytes (errors and parsed ones stay here)."""
    return [b for b in batch if isinstance(b[2], (str, bytes))]


def _drain_one(fleet, inflight, tick=None) -> None:
    batch, fut = inflight.popleft()
    _fold(fleet, _merge(batch, fut.result() if fut is not None else []), tick)


def _merge(batch, parsed) -> list:
    """Results in the order of ``batch``: errors and pre-parsed stdin reports are handled here."""
    it = iter(parsed)
    out = []
    for label, fallback, src in batch:
        if isinstance(src, ValueError):
            out.append(("error", label, str(src)))
        elif isinstance(src, _Loaded):
            try:
                rep = check_report(src.obj, "not usable")
            except ValueError as exc:
                out.append(("error", label, _strip_source(str(exc))))
                continue
            out.append(("row", _node_name(rep, fallback), label, summarize(rep)))
        else:
            out.append(next(it))
    return out


def _fold(fleet: "Fleet", results, tick=None) -> None:
    if tick is not None:
        tick.advance(len(results))
    for res in results:
        if res[0] == "error":
            fleet.add_error(res[1], res[2])
        else:
            _, node, label, row = res
            fleet.add(row, node, label)


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


def topology_fingerprint(report: dict) -> Optional[str]:
    """How the node's GPUs are wired, in one comparable line (None without NVML's answer):
    ``"8 GPUs; NVLink active 18x8; pairs NV18 x28; P2P refused 0/28"`` (pairs without NVLink by PCIe level). A node with a GPU
    missing, a link down or peer access refused differs from its siblings in this line."""
    drv = _probe_facts(report, "driver")
    nvml = _d(drv.get("nvml")) if drv is not None else {}
    if nvml.get("status") != "ok":
        return None
    gpus = [g for g in _l(nvml.get("gpus")) if isinstance(g, dict)]
    parts = [f"{len(gpus)} GPU{'s' if len(gpus) != 1 else ''}"]
    links = [sum(1 for x in _l(g.get("nvlinks")) if isinstance(x, dict) and x.get("active")) for g in gpus
             if g.get("nvlinks")]
    if links:
        counts = Counter(links)
        parts.append("NVLink active " + ", ".join(f"{k}x{v}" for k, v in sorted(counts.items(), reverse=True)))
    pairs = [p for p in _l(nvml.get("pairs")) if isinstance(p, dict)]
    if pairs:
        try:  # a pair joined by NVLink is named as nvidia-smi topo -m names it (NV18), else by its PCIe level
            nv = nvlink_pairs([g for g in gpus if isinstance(g.get("index"), int)], pairs)
        except (AttributeError, TypeError, ValueError):
            nv = {}  # a malformed report: its pairs keep their PCIe names
        levels = Counter(f"NV{nv[(p.get('a'), p.get('b'))]}" if (p.get("a"), p.get("b")) in nv else
                         NVIDIA_SMI_NAMES.get(p.get("topology"), str(p.get("topology"))) for p in pairs)
        parts.append("pairs " + ", ".join(f"{k} x{v}" for k, v in sorted(levels.items())))
        refused = sum(1 for p in pairs if any(v != "OK" for k, v in _d(p.get("p2p")).items() if k in ("read", "write")))
        parts.append(f"P2P refused {refused}/{len(pairs)}")
    return "; ".join(parts)


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
    return good, errors


def summarize(report: dict) -> dict:
    """What the fleet keeps of one report (computed where the report is parsed, then the report is
    dropped): fingerprint (id and facts), GPU count, PCIe/ECC issues, fail ids, worst severity per finding."""
    fp = fingerprint(report)
    gpus = _gpus(report)
    worst: Dict[str, str] = {}
    for f in report.get("findings") or []:
        if not isinstance(f, dict) or not f.get("id"):
            continue
        sev = f.get("severity") if f.get("severity") in _SEV_RANK else "info"
        if f["id"] not in worst or _SEV_RANK[sev] > _SEV_RANK[worst[f["id"]]]:
            worst[f["id"]] = sev
    return {"fid": fingerprint_id(fp), "fp": fp, "gpus": len(gpus) if gpus is not None else None,
            "topology": topology_fingerprint(report),
            "pcie": _pcie_issues(gpus or []), "ecc": _ecc_issues(gpus or []),
            "fails": sorted(i for i, sev in worst.items() if sev == "fail"), "worst": worst,
            "host": _node_name(report, "")}


class Fleet:
    """Folds reports in one at a time (:meth:`add` a :func:`summarize` row); memory per node is its
    name, fingerprint id, GPU count and problems, whatever the size of its report. :meth:`result`
    gives :func:`aggregate`'s shape."""

    def __init__(self) -> None:
        self.rows: List[tuple] = []  # (node, path, fid, gpus, pcie, ecc, fails, topology, nth)
        self.facts: Dict[str, Dict[str, str]] = {}  # fingerprint id -> facts (kept once)
        self.errors: List[dict] = []
        self._names: Counter = Counter()
        self._per_id: Dict[str, dict] = {}

    def add_error(self, path: str, error: str) -> None:
        self.errors.append({"path": path, "error": error})

    def add(self, row: dict, node: Optional[str], path: Optional[str]) -> None:
        node = node or row.get("host") or f"node-{len(self.rows) + 1}"
        self._names[node] += 1
        self.facts.setdefault(row["fid"], row["fp"])
        index = len(self.rows)  # the display name is decided at the end, when collisions are known
        self.rows.append((node, path, row["fid"], row["gpus"], row["pcie"] or None, row["ecc"] or None,
                          tuple(row["fails"]) or None, sys.intern(row["topology"]) if row.get("topology") else None,
                          self._names[node]))
        node = index
        for fid, sev in row["worst"].items():
            c = self._per_id.get(fid)
            if c is None:
                c = self._per_id[fid] = {"id": fid, "nodes": 0, "severity": {}, "worst": "ok", "node_names": []}
            c["nodes"] += 1
            c["severity"][sev] = c["severity"].get(sev, 0) + 1
            if sev != "ok":
                c["node_names"].append(node)
            if _SEV_RANK[sev] > _SEV_RANK[c["worst"]]:
                c["worst"] = sev

    def _display_names(self) -> List[str]:
        """Host names; where several reports share one (containers, copied images), each also names its
        report file ("vm (nodeA.json)"), or its rank ("vm (2)") when it came without a file."""
        out = []
        for node, path, *_, nth in self.rows:
            if self._names[node] == 1:
                out.append(node)
            elif path:
                out.append(f"{node} ({os.path.basename(str(path).rsplit(':', 1)[-1])})")
            else:
                out.append(node if nth == 1 else f"{node} ({nth})")
        return out

    def result(self) -> dict:
        names = self._display_names()
        rows = [(names[i],) + r[1:8] for i, r in enumerate(self.rows)]
        return self._result(rows, names)

    def _result(self, rows, names) -> dict:
        for c in self._per_id.values():
            c["node_names"] = [names[i] if isinstance(i, int) else i for i in c["node_names"]]
        sizes = Counter(r[2] for r in rows)
        first = {}
        for r in rows:
            first.setdefault(r[2], r[0])
        ordered = sorted(sizes, key=lambda f: (-sizes[f], first[f]))
        clear = len(ordered) <= 1 or sizes[ordered[0]] > sizes[ordered[1]]
        major = ordered[0] if ordered else None
        counts = Counter(r[3] for r in rows if r[3] is not None)
        gpu_major = max(counts.items(), key=lambda kv: (kv[1], kv[0]))[0] if counts else None
        topos = Counter(r[7] for r in rows if r[7] is not None)
        topo_major = max(topos.items(), key=lambda kv: (kv[1], kv[0]))[0] if topos else None
        outliers, healthy = [], []
        for node, path, fid, n, pcie, ecc, fails, topo in rows:
            reasons = _reasons(self.facts, major, fid, n, gpu_major, pcie or [], ecc or [], fails or ())
            if topo_major is not None and topo is not None and topo != topo_major and n == gpu_major:
                # (a node with fewer GPUs is wired differently too: its gpu_count reason says it)
                reasons.insert(sum(r["kind"] in ("fingerprint", "gpu_count") for r in reasons),
                               {"kind": "topology", "topology": topo, "majority": topo_major,
                                "detail": f"GPU wiring {topo} (majority {topo_major})"})
            if reasons:
                outliers.append({"node": node, "path": path, "fingerprint": fid, "gpus": n, "topology": topo,
                                 "reasons": reasons})
            else:
                healthy.append(node)
        groups_nodes: Dict[str, List[str]] = {f: [] for f in ordered}
        for r in rows:
            groups_nodes[r[2]].append(r[0])
        return {
            "nodes": len(rows),
            "errors": self.errors,
            "majority": None if major is None else {
                "fingerprint": major, "facts": self.facts[major], "nodes": sizes[major],
                "of": len(rows), "clear": clear, "gpu_count": gpu_major, "topology": topo_major},
            "groups": [{"fingerprint": f, "facts": self.facts[f], "nodes": groups_nodes[f], "majority": f == major}
                       for f in ordered],
            "outliers": outliers,
            "outlier_groups": _group_outliers(outliers),
            "healthy": healthy,
            "healthy_hostlist": hostlist_expression(healthy),
            "finding_counts": sorted(self._per_id.values(), key=lambda c: (-_SEV_RANK[c["worst"]], -c["nodes"], c["id"])),
        }


def _reasons(facts, major, fid, n, gpu_major, pcie, ecc, fails) -> List[dict]:
    reasons = []
    if major is not None and fid != major:
        mine, theirs = facts[fid], facts[major]
        diff = [{"fact": k, "node": mine.get(k, "none"), "majority": theirs.get(k, "none")}
                for k in sorted(set(mine) | set(theirs)) if mine.get(k, "none") != theirs.get(k, "none")]
        reasons.append({"kind": "fingerprint", "facts": diff,
                        "detail": "software differs from the majority: " + "; ".join(
                            f"{d['fact']} {d['node']} (majority {d['majority']})" for d in diff)})
    if gpu_major is not None and (n is None or n < gpu_major):
        reasons.append({"kind": "gpu_count", "gpus": n, "majority": gpu_major,
                        "detail": f"{'unknown number of' if n is None else n} GPU{'s' if n != 1 else ''} "
                                  f"(majority {gpu_major})"})
    if pcie:
        note = "" if all(p["width_degraded"] for p in pcie) else \
            " (a lower generation alone can be idle power saving: re-check under load)"
        reasons.append({"kind": "pcie", "gpus": pcie, "detail": "degraded PCIe link: " + "; ".join(
            f"GPU {p['index']} {p['current']} (max {p['max']})" for p in pcie) + note})
    if ecc:
        reasons.append({"kind": "ecc", "gpus": ecc, "detail": "memory errors: " + "; ".join(
            f"GPU {x['index']}: {', '.join(x['issues'])}" for x in ecc)})
    if fails:
        reasons.append({"kind": "fail", "ids": list(fails), "detail": "fail findings: " + ", ".join(fails)})
    return reasons


def _group_outliers(outliers: List[dict]) -> List[dict]:
    """Outliers that are odd in the same way, together: ``[{"reasons", "nodes", "hostlist"}]``, biggest first."""
    groups: Dict[tuple, dict] = {}
    for o in outliers:
        key = tuple(r["detail"] for r in o["reasons"])
        g = groups.setdefault(key, {"reasons": [{"kind": r["kind"], "detail": r["detail"]} for r in o["reasons"]],
                                    "nodes": []})
        g["nodes"].append(o["node"])
    out = sorted(groups.values(), key=lambda g: (-len(g["nodes"]), g["nodes"][0]))
    for g in out:
        g["hostlist"] = hostlist_expression(g["nodes"])
    return out


def hostlist_expression(nodes: List[str]) -> str:
    """Slurm-style compressed host list (``gpu[00000-04998,05000-19999]``, python-hostlist); names it
    cannot compress (commas, brackets) are listed as they are."""
    if not nodes:
        return ""
    try:
        import hostlist

        return hostlist.collect_hostlist(list(nodes))
    except Exception:  # noqa: BLE001 - odd names: a plain list is still correct
        return ",".join(nodes)


def aggregate(reports, errors: Optional[List[dict]] = None) -> dict:
    """Group nodes by software fingerprint, find the majority, flag outliers (see the module doc).

    ``reports``: :func:`load_reports` entries, bare report dicts (node = ``host`` or ``node-N``) or a
    ``{node: report}`` mapping; invalid reports are added to ``errors`` instead of raising."""
    nodes, bad = _entries(reports)
    fleet = Fleet()
    for e in list(errors or []) + bad:
        fleet.add_error(e["path"], e["error"])
    for e in nodes:
        fleet.add(summarize(e["report"]), e["node"], e["path"])
    return fleet.result()


# --------------------------------------------------------------------------------------------- text

#: Folded text output: at most this many outlier groups, and host lists cut to this many characters.
MAX_GROUPS = 25
MAX_HOSTLIST = 240


def _capped_hostlist(nodes: List[str], full: Optional[str] = None) -> str:
    """The host list expression, or as much of it as fits with "and N more"."""
    text = full if full is not None else hostlist_expression(nodes)
    if len(text) <= MAX_HOSTLIST:
        return text
    lo, hi = 1, len(nodes)
    while lo < hi:  # the longest prefix of nodes whose expression fits
        mid = (lo + hi + 1) // 2
        if len(hostlist_expression(nodes[:mid])) <= MAX_HOSTLIST - 20:
            lo = mid
        else:
            hi = mid - 1
    return f"{hostlist_expression(nodes[:lo])} and {len(nodes) - lo} more"


def render_text(result: dict) -> str:
    """Human-readable, folded form of :func:`aggregate`'s result: healthy nodes as a count and a host
    list, outliers grouped by what is odd about them (each group once, its nodes as a host list),
    every long list capped with "and N more" (``--json`` has them all)."""
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
        if m.get("topology"):
            lines.append(f"Majority GPU wiring: {m['topology']}")
        if len(result["groups"]) > 1:
            shown = result["groups"][:MAX_GROUPS]
            lines.append("Software groups: " + "; ".join(
                f"{g['fingerprint']}: {len(g['nodes'])} node{'s' if len(g['nodes']) != 1 else ''}" for g in shown)
                + (f"; and {len(result['groups']) - len(shown)} more" if len(result["groups"]) > len(shown) else ""))
    lines.append("")
    groups = result.get("outlier_groups")
    if groups is None:
        groups = _group_outliers(result["outliers"])
    if result["outliers"]:
        lines.append(f"Outliers ({len(result['outliers'])} node{'s' if len(result['outliers']) != 1 else ''}"
                     f" in {len(groups)} group{'s' if len(groups) != 1 else ''}):")
    else:
        lines.append("Outliers: none")
    for g in groups[:MAX_GROUPS]:
        k = len(g["nodes"])
        lines.append(f"  {k} node{'s' if k != 1 else ''}: {_capped_hostlist(g['nodes'], g.get('hostlist'))}")
        for r in g["reasons"]:
            lines.append(f"    - [{r['kind']}] {r['detail']}")
    if len(groups) > MAX_GROUPS:
        rest = groups[MAX_GROUPS:]
        lines.append(f"  and {len(rest)} more groups ({sum(len(g['nodes']) for g in rest)} nodes): --json lists them all")
    if result["healthy"]:
        lines.append("")
        lines.append(f"Healthy ({len(result['healthy'])}): {_capped_hostlist(result['healthy'], result.get('healthy_hostlist'))}")
    counts = [c for c in result["finding_counts"] if c["worst"] != "ok"]
    if counts:
        lines.append("")
        lines.append("Findings across nodes (info and worse):")
        for c in counts[:60]:
            sev = ", ".join(f"{k} {v}" for k, v in sorted(c["severity"].items(), key=lambda kv: -_SEV_RANK[kv[0]]))
            lines.append(f"  {c['worst']:4} {c['id']}: {c['nodes']} node{'s' if c['nodes'] != 1 else ''} ({sev})")
        if len(counts) > 60:
            lines.append(f"  and {len(counts) - 60} more finding ids")
    if errs:
        lines.append("")
        lines.append("Unusable files:")
        for e in errs[:20]:
            lines.append(f"  {e['path']}: {e['error']}")
        if len(errs) > 20:
            lines.append(f"  and {len(errs) - 20} more (--json lists them all)")
    return "\n".join(lines) + "\n"
