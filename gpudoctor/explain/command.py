"""`gpudoctor explain LOGFILE | - | -- CMD ARGS`: diagnose a pasted error log.

Exit codes: 0 a known signature was found, 1 no known signature (the answer says so and points to
`gpudoctor check`), 2 unreadable input or a command that could not be started.
With ``-- CMD`` the command runs (its output is shown as it comes and scanned on the fly), and the
log is joined with this machine's facts; ``--here`` does the same for a log file.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any, Dict, List, Optional

__all__ = ["add_arguments", "run"]


def add_arguments(p) -> None:
    p.add_argument("source", nargs="?", metavar="LOGFILE", help="log file, or - for standard input")
    p.add_argument("--here", action="store_true", help="join the log with this machine's facts (default for -- CMD)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--top", type=int, default=3, metavar="N", help="show the N best diagnoses (default 3)")
    p.add_argument("--timeout", type=float, default=3600.0, metavar="S", help="limit for -- CMD (default 3600 s)")


def _scan_file(kb, path: str):
    from gpudoctor.explain.scan import scan_stream

    if path == "-":
        return scan_stream(kb, sys.stdin.buffer)
    if os.path.isdir(path):
        raise OSError(f"{path} is a directory")
    from gpudoctor.render.progress import progress

    with open(path, "rb") as fh, progress(f"scanning {os.path.basename(path)}", os.fstat(fh.fileno()).st_size,
                                          "bytes", min_total=64 << 20) as tick:
        return scan_stream(kb, fh, on_chunk=tick.advance)


def _scan_command(kb, cmd: List[str], timeout: float):
    """Run ``cmd``, echo its output, scan it as it streams. Returns (scanner, exit code or None if killed)."""
    import threading

    from gpudoctor.explain.scan import Scanner

    sc = Scanner(kb)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    try:
        assert proc.stdout is not None
        while True:
            chunk = proc.stdout.read1(1 << 16) if hasattr(proc.stdout, "read1") else proc.stdout.read(1 << 16)
            if not chunk:
                break
            sys.stderr.buffer.write(chunk)
            sys.stderr.buffer.flush()
            sc.feed(chunk)
        rc = proc.wait()
    finally:
        timer.cancel()
    sc.close()
    return sc, rc


def _render(diags, scanner, top: int, cmd_rc: Optional[int]) -> str:
    from gpudoctor.explain.diagnose import confidence_label

    out: List[str] = []
    if cmd_rc is not None:
        out.append(f"The command exited with {cmd_rc}.")
    if not diags:
        out.append(f"No known signature in {scanner.lines} lines ({scanner.bytes} bytes): gpudoctor will not guess. "
                   "Run `gpudoctor check` on the machine where it failed; it checks the whole stack.")
        return "\n".join(out) + "\n"
    for rank, d in enumerate(diags[:top], 1):
        f = d.finding
        icon = {"fail": "✗", "warn": "!"}.get(f.severity.value, "•")
        out.append(f"{rank}. {icon} {f.title} [{f.id}] — {confidence_label(d.score)} confidence")
        shown = []
        for m in d.matches:
            if m.line_no not in shown and len(shown) < 2:
                shown.append(m.line_no)
                out.append(f"     log line {m.line_no}: {m.line}")
        for key in ("container_command", "cuda_visible_devices", "wsl", "nvcc_command", "command", "jit_call",
                    "cuda_versions_in_log", "ld_library_path"):
            if key in f.evidence:
                out.append(f"     context: {f.evidence[key]}")
        if "hint" in f.evidence:  # gpudoctor.explain.hints: no signature, only where the error points
            out.append(f"     hint (no known signature matched): {f.evidence['hint']}")
            out += [f"     {line}" for line in f.evidence.get("hint_lines", [])[:2]]
        if "judged_by" in f.evidence:  # gpudoctor.explain.facts: versions the log states, judged by the matrix
            for key in ("driver", "built_for_cuda", "nvcc", "host_compiler", "gpu", "build", "framework", "cpu_only_package",
                        "tensorflow", "installed_cuda", "tensorrt"):
                if f.evidence.get(key):
                    out.append(f"     stated: {f.evidence[key]}")
            out += [f"     {k.replace('_', ' ')}: {v}" for k, v in f.evidence.items()
                    if k.startswith("newest_") or k == "why"]
        for line in d.confirmed_by:
            out.append(f"     on this machine: {line}")
        if f.detail:
            out.append(f"     {f.detail}")
        for i, fx in enumerate(f.fixes, 1):
            out.append(f"     fix {i}: {fx.summary}")
            out += [f"         $ {c}" for c in fx.commands]
        if f.doc:
            out.append(f"     docs: {f.doc}")
    if len(diags) > top:
        out.append(f"({len(diags) - top} more: --top {len(diags)})")
    return "\n".join(out) + "\n"


def run(args, argv_rest: Optional[List[str]] = None) -> int:
    from gpudoctor.explain.diagnose import diagnose
    from gpudoctor.explain.kb import KbError, load_kb

    cmd = list(argv_rest or [])
    if not cmd and not args.source:
        print("gpudoctor: error: give a LOGFILE, - for standard input, or -- CMD ARGS", file=sys.stderr)
        return 2
    try:
        kb = load_kb()
    except KbError as exc:
        print(f"gpudoctor: error: signature knowledge base is invalid: {exc}", file=sys.stderr)
        return 2
    cmd_rc = None
    try:
        if cmd:
            scanner, cmd_rc = _scan_command(kb, cmd, args.timeout)
        else:
            scanner = _scan_file(kb, args.source)
    except (OSError, ValueError) as exc:
        what = f"cannot run {cmd[0]!r}" if cmd else f"cannot read {args.source}"
        print(f"gpudoctor: error: {what}: {exc}", file=sys.stderr)
        return 2
    live: Dict[str, List[str]] = {}
    if cmd or args.here:
        from gpudoctor.explain.live import collect, evidence

        live = evidence(collect())
    diags = diagnose(scanner, live)
    if args.json:
        data: Dict[str, Any] = {"lines": scanner.lines, "bytes": scanner.bytes, "command_exit": cmd_rc,
                                "diagnoses": [d.to_dict() for d in diags],
                                "known_signature": bool(diags)}
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
    else:
        sys.stdout.write(_render(diags, scanner, max(1, args.top), cmd_rc))
    return 0 if diags else 1
