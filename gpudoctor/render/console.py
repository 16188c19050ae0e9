"""Console report with rich: areas in a fixed order, ✓ · ! ✗ markers, fixes under each problem."""
from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from gpudoctor import __version__
from gpudoctor.findings import Severity, worst

AREAS = ("root", "platform", "driver", "cuda", "devices", "multigpu", "toolkit", "cudnn", "tensorrt", "frameworks", "environment",
         "smoke", "policy", "gpudoctor")
TITLES = {"root": "System read from its files", "platform": "Platform", "driver": "NVIDIA driver", "cuda": "CUDA driver & runtime", "devices": "GPUs",
          "multigpu": "Multi-GPU & NCCL",
          "toolkit": "CUDA toolkit & host compiler", "cudnn": "cuDNN", "tensorrt": "TensorRT",
          "frameworks": "Frameworks", "environment": "Environment", "smoke": "Smoke tests", "policy": "Requirements",
          "gpudoctor": "gpudoctor"}
MARK = {Severity.OK: "[green]✓[/]", Severity.INFO: "[blue]•[/]", Severity.WARN: "[yellow]![/]", Severity.FAIL: "[red]✗[/]"}


def _fmt(value) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value)) if value else "none"
    if isinstance(value, dict):
        return "; ".join(f"{k}={v}" for k, v in value.items())
    return str(value)


def render(report, console: Console, verbose: bool = False) -> None:
    plat = (report.probes.get("platform").facts or {}) if report.probes.get("platform") else {}
    osname = (plat.get("os") or {}).get("pretty_name", "unknown OS")
    python = f" · Python {(plat.get('python') or {}).get('version', '?')}"
    root = (report.options or {}).get("root")
    if root:  # check --root / --image: the judged system, not this machine
        rel = ((report.probes["root"].facts or {}).get("os_release") or {}) if report.probes.get("root") else {}
        osname, python = f"{rel.get('PRETTY_NAME') or report.options.get('os')} in {root} (read from its files)", ""
    console.print(f"[bold]gpudoctor {__version__}[/] · {escape(osname)}{python} "
                  f"· matrix {report.matrix_version}" + (f" ({escape(report.matrix_origin)})"
                                                         if report.matrix_origin and not report.matrix_origin.startswith("bundled")
                                                         else ""))
    by_area = {}
    for f in report.findings:
        by_area.setdefault(f.area if f.area in TITLES else "gpudoctor", []).append(f)
    for area in AREAS:
        items = by_area.get(area)
        if not items:
            continue
        console.print(f"\n{MARK[worst(items)]} [bold]{TITLES[area]}[/]")
        for f in sorted(items, key=lambda x: -x.severity.rank):
            console.print(f"    {MARK[f.severity]} {escape(f.title)} [dim]\\[{f.id}][/]")
            if f.detail and (verbose or f.severity.rank >= Severity.WARN.rank):
                console.print(f"        [dim]{escape(f.detail)}[/]")
            if verbose and f.evidence:
                for k, v in f.evidence.items():
                    console.print(f"        [dim]{escape(str(k))}: {escape(_fmt(v))}[/]")
            if f.severity.rank >= Severity.WARN.rank or verbose:
                for i, fix in enumerate(f.fixes, 1):
                    console.print(f"        [cyan]fix {i}:[/] {escape(fix.summary)}")
                    for cmd in fix.commands:
                        prompt = "PS>" if fix.shell == "powershell" else "$"
                        console.print(f"            [bold]{prompt} {escape(cmd)}[/]", soft_wrap=True, highlight=False)
                if f.doc:
                    console.print(f"        [dim]docs: {escape(f.doc)}[/]", soft_wrap=True)
    fails, warns = report.count(Severity.FAIL), report.count(Severity.WARN)
    if fails or warns:
        summary = f"[red]{fails} failure{'s' if fails != 1 else ''}[/], [yellow]{warns} warning{'s' if warns != 1 else ''}[/]"
    else:
        summary = "[green]No issues found[/]"
    console.print(f"\n{summary} · {report.count(Severity.OK)} checks passed · took {report.elapsed_s:.2f} s"
                  + ("" if verbose else " · -v for evidence"))
    if verbose:  # where the time went: each probe ran concurrently, so the slowest sets the pace
        timings = sorted(((r.elapsed_s, name, r.status) for name, r in report.probes.items()), reverse=True)
        console.print("[dim]probe timings: " + ", ".join(
            f"{name} {t * 1000:.0f} ms" + ("" if status == "ok" else f" ({status})") for t, name, status in timings) + "[/]",
            highlight=False)
