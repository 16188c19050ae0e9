"""`gpudoctor install`: plan a consistent stack and print the commands (exit 0), or say why not (exit 2)."""
from __future__ import annotations

import json
import sys
from typing import Any, Dict, List, Optional

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the CLI builds its parser from this module: keep `gpudoctor check` from importing the planner
    from gpudoctor.install.solver import Plan

__all__ = ["add_arguments", "run", "plan_to_dict"]

OS_CHOICES_HELP = ("ubuntu-20.04|ubuntu-22.04|ubuntu-24.04|debian-12|rhel-9|wsl-ubuntu|windows (default: this machine); "
                   "debian-12 --cuda 11.8 plans Debian's own CUDA packages")


def add_arguments(p) -> None:
    p.add_argument("--os", metavar="OS", help=OS_CHOICES_HELP)
    p.add_argument("--gpu", metavar="NAME", help="GPU product name, compute capability (8.9) or 'auto' "
                                                 "(default: auto on this machine, none for another --os)")
    p.add_argument("--cuda", metavar="X.Y", help="CUDA major or major.minor (default: newest that fits)")
    p.add_argument("--cudnn", metavar="N", help="cuDNN major or major.minor, or 'none' (default: newest that fits)")
    p.add_argument("--tensorrt", metavar="N", default="none", help="TensorRT major or major.minor, 'latest' or 'none' (default)")
    p.add_argument("--torch", metavar="X.Y", default="none", help="PyTorch version, 'latest' or 'none' (default)")
    p.add_argument("--pip-only", action="store_true",
                   help="only pip wheels in a virtual environment (nvidia-*-cuXX, torch, tensorrt-cuXX): no toolkit")
    p.add_argument("--driver", choices=("keep", "install"), default="keep",
                   help="keep the installed driver (default) or install one that runs the stack")
    p.add_argument("--driver-version", metavar="VER", help="plan around this driver instead of the detected one")
    p.add_argument("--format", choices=("sh", "ps1", "dockerfile"), help="default: ps1 for windows, sh otherwise")
    p.add_argument("--json", action="store_true", help="print the plan as JSON instead of a script")
    p.add_argument("--from-check", nargs="?", const="-", metavar="REPORT",
                   help="plan the fix for what `gpudoctor check` finds (a saved --json report, or run it now)")
    p.add_argument("--matrix", metavar="DIR", help="use the compatibility matrix in DIR")
    p.add_argument("--offline", action="store_true",
                   help="do not ask package indexes whether they serve what the plan names (answers cached "
                        "within the hour are still used); the plan says so")
    p.add_argument("--index-timeout", metavar="SECONDS", type=_seconds, default=5.0,
                   help="network time for all package-index checks together (default 5); past it, the "
                        "remaining requirements are marked unverified")


def _seconds(text: str) -> float:
    import argparse
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not (math.isfinite(value) and 0 < value <= 600):
        raise argparse.ArgumentTypeError(f"{text!r}: give a number of seconds above 0 and at most 600")
    return value


def plan_to_dict(plan: "Plan", verification=None) -> Dict[str, Any]:
    """The plan's choices as plain JSON data; ``verification`` (a :class:`~gpudoctor.install.verify.Verification`)
    adds the ``verification`` key: what each requirement's index serves."""
    from gpudoctor.install.steps import pip_requirements, toolkit_package

    t = plan.target
    out = {
        "os": t.os.os,
        "gpu": {"name": t.gpu.name, "compute_capability": t.gpu.cc, "sm": t.gpu.sm} if t.gpu else None,
        "driver": {"installed": t.driver, "action": t.driver_action, "min_required": plan.driver_min,
                   "install_branch": plan.driver_branch, "verdict": plan.driver_verdict},
        "cuda": {"version": plan.cuda.cuda, "latest_update": plan.cuda.latest_update,
                 "package": toolkit_package(plan),
                 "channel": "pip" if plan.pip_only else ("distribution archive" if plan.archive else "nvidia"),
                 "archive_version": plan.archive.toolkit_version if plan.archive else None},
        "cudnn": {"version": plan.cudnn.cudnn, "latest": plan.cudnn.latest} if plan.cudnn else None,
        "tensorrt": {"version": plan.tensorrt.tensorrt, "latest": plan.tensorrt.latest} if plan.tensorrt else None,
        "torch": {"version": plan.torch.torch, "cuda": plan.torch_build.cuda, "index_url": plan.torch_build.index_url}
        if plan.torch and plan.torch_build else None,
        "pip_only": plan.pip_only,
        "pip": [{"requirement": r, "index_url": i} for r, i in pip_requirements(plan)],
        "notes": list(plan.notes),
    }
    if verification is not None:
        out["verification"] = verification.to_dict()
    return out


def _load_report(path: str) -> Dict[str, Any]:
    """A saved report, read and checked by the same code as `gpudoctor fleet` / `compare`."""
    from gpudoctor.reports.fleet import load_reports
    from gpudoctor.install.solver import PlanError

    reports, errors = load_reports([path])
    if errors or not reports:
        why = errors[0]["error"] if errors else "no report"
        raise PlanError(f"--from-check {path}: cannot read a gpudoctor JSON report ({why})")
    return reports[0]["report"]


def _from_check(source: str, timeout: float) -> Dict[str, Any]:
    if source != "-":
        return _load_report(source)
    from gpudoctor.check import run_check
    from gpudoctor.matrix import load_matrix

    return run_check(load_matrix, smoke=False, timeout=timeout).to_dict()


def _check_pins(report: Optional[Dict[str, Any]], args) -> List[str]:
    """With --from-check: a driver failure means installing one; an installed torch gets a fitting wheel."""
    from gpudoctor.install.target import findings_to_fix

    if report is None:
        return []
    fixing = findings_to_fix(report)
    if any(f.startswith("driver.") and f not in ("driver.minor_version_compat",) for f in fixing):
        args.driver = "install"
    torch = ((report["probes"].get("frameworks") or {}).get("facts") or {}).get("torch")
    if torch and args.torch == "none":
        args.torch = "latest"
    return fixing


def run(args) -> int:
    from gpudoctor.install.formats import FormatError, render
    from gpudoctor.install.solver import Pins, PlanError, parse_pin, solve
    from gpudoctor.install.verify import IndexSession, verify_plan
    from gpudoctor.install.target import detect_facts, target_from
    from gpudoctor.matrix import MatrixError, load_matrix

    try:
        m = load_matrix(args.matrix) if args.matrix else load_matrix()
    except MatrixError as exc:
        print(f"gpudoctor: error: compatibility matrix is invalid: {exc}", file=sys.stderr)
        return 2
    try:
        report = _from_check(args.from_check, 10.0) if args.from_check else None
        fixing = _check_pins(report, args)
        if report is not None:
            facts = {k: (v or {}).get("facts") or {} for k, v in report["probes"].items()}
        elif args.os is None or args.gpu in (None, "auto") or args.driver_version is None:
            facts = detect_facts()
        else:
            facts = {}
        target = target_from(m, facts, args.os, args.gpu, args.driver, args.driver_version)
        pins = Pins(cuda=parse_pin(args.cuda, "cuda"), cudnn=parse_pin(args.cudnn, "cudnn"),
                    tensorrt=parse_pin(args.tensorrt, "tensorrt", allow_latest=True),
                    torch=parse_pin(args.torch, "torch", allow_latest=True), pip_only=args.pip_only)
        session = IndexSession(offline=getattr(args, "offline", False),
                               timeout=getattr(args, "index_timeout", 5.0))
        plan = solve(m, target, pins, served=session.unserved)
        if fixing:
            plan = _with_note(plan, "planned from `gpudoctor check`, which reported: " + ", ".join(fixing))
        fmt = args.format or ("ps1" if target.os.os == "windows" else "sh")
        verification = verify_plan(plan, session=session)
        text = json.dumps(plan_to_dict(plan, verification), indent=2) if args.json else \
            render(plan, fmt, verification)
    except (PlanError, FormatError) as exc:
        print(f"gpudoctor: error: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0


def _with_note(plan: "Plan", note: str) -> "Plan":
    import dataclasses

    return dataclasses.replace(plan, notes=plan.notes + (note,))
