"""`gpudoctor inspect binary|engine`: evidence from a file, read without the toolkit or TensorRT.

Exit codes: 0 every GPU can use the file, 1 a GPU cannot (no kernel image, PTX too new for the
driver, an engine that will not load), 2 the input cannot be read (missing, empty, truncated,
not a CUDA binary / engine plan, unknown package).
"""
from __future__ import annotations

import json
import sys
from typing import Any, Dict, List, Optional

__all__ = ["add_arguments", "run"]


def add_arguments(p) -> None:
    sub = p.add_subparsers(dest="what", metavar="binary|engine")
    b = sub.add_parser("binary", help="SASS/PTX targets of a CUDA binary and which GPUs can run it")
    b.add_argument("files", nargs="*", metavar="FILE", help=".so, executable, .cubin or .fatbin")
    b.add_argument("--package", metavar="NAME", help="every CUDA library of an installed distribution (e.g. torch)")
    b.add_argument("--cc", action="append", default=[], metavar="X.Y",
                   help="judge for this compute capability instead of (or, repeated, besides) the GPUs here")
    b.add_argument("--json", action="store_true")
    e = sub.add_parser("engine", help="TensorRT version and target of a serialized engine plan")
    e.add_argument("file", metavar="FILE", help=".engine / .plan / .trt")
    e.add_argument("--json", action="store_true")


def _local_gpus(facts: Dict[str, Any]):
    from gpudoctor.inspect.binary import GpuSpec

    nvml = (facts.get("driver") or {}).get("nvml") or {}
    gpus = [GpuSpec(f"GPU {g.get('index', i)} ({g.get('name') or '?'})", g["compute_capability"])
            for i, g in enumerate(nvml.get("gpus") or []) if g.get("compute_capability")]
    return gpus, nvml.get("cuda_driver_version")


def _render_binary(data: Dict[str, Any]) -> str:
    from gpudoctor.inspect.binary import union

    out: List[str] = []
    if data["package"]:
        u = union(data)
        out.append(f"{data['package']}: {data['files_with_cuda_code']} of {len(data['files'])} files have CUDA code")
        out.append(f"  SASS: {' '.join(u['sass']) or '-'}")
        out.append(f"  PTX:  {' '.join(u['ptx']) or '-'}")
    else:
        for f in data["files"]:
            if "error" in f:
                out.append(f"{f['path']}: cannot read: {f['error']}")
                continue
            ptx = " ".join(f"{p['arch']}(ISA {p['ptx_isa'] or '?'})" for p in f["ptx"])
            out.append(f"{f['path']} ({f['kind']}, {f['fatbins']} fatbin(s), {f['entries']} entries, "
                       f"{f['compressed_entries']} compressed)")
            out.append(f"  SASS: {' '.join(f['sass']) or '-'}")
            out.append(f"  PTX:  {ptx or '-'}")
    if not data["files_with_cuda_code"]:
        out.append("No CUDA code (no fatbinary or cubin) in these files: nothing runs on a GPU from them.")
        return "\n".join(out) + "\n"
    if not data["gpus"]:
        out.append("No GPU here to judge for: pass --cc X.Y (e.g. --cc 8.9).")
    mark = {"sass": "✓", "ptx_jit": "!", "ptx_too_new": "✗", "none": "✗"}
    for g in data["gpus"]:
        bad = [r for r in g["results"] if r["verdict"] not in ("sass", "ptx_jit")]
        jit = [r for r in g["results"] if r["verdict"] == "ptx_jit"]
        head = "✗" if bad else ("!" if jit else "✓")
        out.append(f"{head} {g['name']}, compute capability {g['compute_capability']}: "
                   f"{len(g['results']) - len(bad)} of {len(g['results'])} file(s) can run"
                   + (" (some only through PTX JIT)" if jit else ""))
        shown = bad if data["package"] else g["results"]
        for r in shown[:20]:
            out.append(f"    {mark[r['verdict']]} {r['path']}: {r['reason']}")
            if r["fix"]:
                out.append(f"        fix: {r['fix']['summary']}")
                out += [f"            $ {c}" for c in r["fix"]["commands"]]
        if len(shown) > 20:
            out.append(f"    ... {len(shown) - 20} more")
    return "\n".join(out) + "\n"


def _binary(args) -> int:
    from gpudoctor.inspect.binary import GpuSpec, InspectError, inspect_files, package_files
    from gpudoctor.matrix import load_matrix

    if not args.files and not args.package:
        print("gpudoctor: error: give FILE(s) or --package NAME", file=sys.stderr)
        return 2
    gpus: List[GpuSpec] = []
    driver_cuda: Optional[str] = None
    for cc in args.cc:
        text = cc.strip()
        if not text.replace(".", "", 1).isdigit() or "." not in text:
            print(f"gpudoctor: error: --cc {cc!r} is not a compute capability like 8.9", file=sys.stderr)
            return 2
        gpus.append(GpuSpec(f"--cc {text}", text))
    if not args.cc:
        from gpudoctor.check import collect_facts

        gpus, driver_cuda = _local_gpus(collect_facts(("driver",)))
    try:
        paths = list(args.files) + (package_files(args.package) if args.package else [])
        if args.package and not paths:
            sys.stdout.write(f"{args.package}: no shared libraries or CUDA binaries; no CUDA code (nothing runs on a GPU "
                             "from it).\n")
            return 0
        data = inspect_files(load_matrix(), paths, gpus, driver_cuda, package=args.package)
    except InspectError as exc:
        print(f"gpudoctor: error: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(json.dumps(data, indent=2) + "\n" if args.json else _render_binary(data))
    return 0 if data["ok"] else 1


def run(args) -> int:
    if args.what == "binary":
        return _binary(args)
    if args.what == "engine":
        from gpudoctor.inspect.engine import run_engine

        return run_engine(args)
    print("gpudoctor: error: inspect what? use `gpudoctor inspect binary FILE` or `gpudoctor inspect engine FILE`",
          file=sys.stderr)
    return 2
