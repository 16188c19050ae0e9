"""Command line: ``gpudoctor check | install | matrix | inspect | explain | compare | fleet``.

Exit codes (docs/exit-codes.md): 0 no failures, 1 failures found (or warnings with
--strict), 2 usage or internal error (including a corrupt compatibility matrix).
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys

from gpudoctor import __version__

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse exits 2 on usage errors already; keep the message short
        self.print_usage(sys.stderr)
        print(f"gpudoctor: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_ERROR)


def build_parser(check_only: bool = False) -> argparse.ArgumentParser:
    """The whole CLI; ``check_only``: only the ``check`` subcommand (what ``gpudoctor check`` needs,
    without importing the other commands' modules: tens of ms on every check)."""
    p = _Parser(prog="gpudoctor", description="Diagnose an NVIDIA GPU stack and say how to fix it.")
    p.add_argument("--version", action="version", version=f"gpudoctor {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    c = sub.add_parser("check", help="probe this machine and report problems with fixes")
    c.add_argument("--json", action="store_true", help="print the JSON report (docs/json-report.md); same as --format json")
    c.add_argument("--format", choices=("console", "json", "junit", "markdown", "github"), default=None,
                   help="output format (default console); markdown and github redact the report")
    c.add_argument("--redact", action="store_true",
                   help="remove hostnames, user names in paths, UUIDs and secret-looking values from the output")
    c.add_argument("-v", "--verbose", action="store_true", help="show the evidence behind every finding")
    c.add_argument("--strict", action="store_true", help="exit 1 on warnings too")
    c.add_argument("--no-smoke", action="store_true", help="skip the compile-and-run smoke tests")
    c.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                   help="colours: auto (a terminal without NO_COLOR), always or never; pipes are never wrapped")
    c.add_argument("--no-cache", action="store_true",
                   help="build the smoke test and rescan binaries even when a verified cached result exists")
    c.add_argument("--offline", action="store_true",
                   help="ask no package index whether the packages the fixes install are served (also: "
                        "GPUDOCTOR_OFFLINE=1)")
    c.add_argument("--timeout", type=float, default=30.0, metavar="S",
                   help="the check finishes within S seconds whatever hangs (default 30); a tool that does not "
                        "answer in time is reported with its path")
    c.add_argument("--matrix", metavar="DIR", help="use the compatibility matrix in DIR instead of the bundled one")
    c.add_argument("--require", action="append", default=[], metavar="SPEC",
                   help="a requirement such as 'cuda>=12.4', 'cudnn==9.*', 'torch.arch>=sm_90' (repeatable; "
                        "also read from gpudoctor.toml or [tool.gpudoctor] in pyproject.toml)")
    c.add_argument("--no-gpu", action="store_true",
                   help="image/build stage without a GPU: skip smoke tests, report driver/device checks without failing")
    c.add_argument("--target-gpu", action="append", default=[], metavar="NAME|CC",
                   help="judge arch coverage (frameworks, toolkit) for this GPU too, e.g. 'H100' or 8.9 (repeatable)")
    c.add_argument("--engine", action="append", default=[], metavar="FILE",
                   help="also check that this TensorRT engine plan loads here (repeatable)")
    c.add_argument("-o", "--output", metavar="FILE",
                   help="write the report (any --format) to FILE atomically: a check killed mid-way leaves no file "
                        "or the previous complete one")
    c.add_argument("--root", metavar="DIR",
                   help="judge the system whose root directory is DIR (an unpacked image, a mounted or copied C:\\) "
                        "from its files; nothing in DIR is executed")
    c.add_argument("--image", metavar="FILE",
                   help="judge a container image: a `docker save` or `docker export` archive or an OCI layout tar "
                        "(- reads standard input), unpacked safely into a temporary root")
    c.add_argument("--os", choices=("linux", "windows"), dest="root_os",
                   help="the OS of --root (default: windows when DIR holds Windows\\System32, else linux)")
    c.add_argument("--env", metavar="FILE", dest="env_file",
                   help="the environment of --root/--image as KEY=VALUE lines (PATH, LD_LIBRARY_PATH, CUDA_PATH as "
                        "set there; `env` or Windows `set` output); an image's own Env is used otherwise")
    c.add_argument("--driver", metavar="VERSION",
                   help="with --root/--image: the driver version of the host that will run it (e.g. 535.104.05)")
    if check_only:
        return p

    from gpudoctor.install.command import add_arguments

    i = sub.add_parser("install", help="plan a consistent driver/CUDA/cuDNN/TensorRT/PyTorch stack and print the commands")
    add_arguments(i)

    from gpudoctor.inspect.command import add_arguments as inspect_arguments

    n = sub.add_parser("inspect", help="read a CUDA binary or TensorRT engine: which GPUs and versions it needs")
    inspect_arguments(n)

    from gpudoctor.explain.command import add_arguments as explain_arguments

    x = sub.add_parser("explain", help="diagnose an error log: explain LOGFILE | - | -- CMD ARGS")
    explain_arguments(x)

    cp = sub.add_parser("compare", help="what differs between a working and a broken report (most likely culprit first)")
    cp.add_argument("a", metavar="A.json", help="report from the working machine (gpudoctor check --json)")
    cp.add_argument("b", metavar="B.json", help="report from the broken one")
    cp.add_argument("--json", action="store_true")
    cp.add_argument("--limit", type=int, default=25, metavar="N", help="differences to show (default 25)")

    fl = sub.add_parser("fleet", help="aggregate reports from many nodes: groups by software, flags outliers")
    fl.add_argument("paths", nargs="+", metavar="REPORT|DIR|GLOB|TAR|-",
                    help="report files, directories of *.json, globs, .tar[.gz] archives, or - (JSON Lines on stdin)")
    fl.add_argument("--json", action="store_true", help="the full result as JSON (every node listed)")
    fl.add_argument("--jobs", type=int, default=None, metavar="N", help="parsing processes (default: CPU count)")

    q = sub.add_parser("matrix", help="ask the compatibility matrix: cuda X.Y | driver VERSION | gpu NAME; "
                                      "update [--from URL]; --version")
    q.add_argument("kind", nargs="?", choices=("cuda", "driver", "gpu", "update"))
    q.add_argument("value", nargs="?", metavar="VALUE")
    q.add_argument("--from", dest="url", metavar="URL",
                   help="matrix bundle to update from (a directory URL with manifest.json; default $GPUDOCTOR_MATRIX_URL "
                        "or the release location)")
    q.add_argument("--version", action="store_true", help="which matrix is in use and where it came from")
    q.add_argument("--os", choices=("linux", "windows"), default="linux", help="driver tables to use (default linux)")
    q.add_argument("--json", action="store_true", help="print JSON")
    q.add_argument("--matrix", metavar="DIR", help="use the compatibility matrix in DIR")
    return p


def _matrix_update(args) -> int:
    """Exit 0: a newer matrix was installed; 2: nothing installed (unreachable, invalid, not newer)."""
    from gpudoctor.matrix import MatrixError, load_matrix
    from gpudoctor.matrix.bundle import DEFAULT_URL, BundleError, update

    url = args.url or os.environ.get("GPUDOCTOR_MATRIX_URL") or DEFAULT_URL
    try:
        current = load_matrix()
        info = update(url, current.data_version)
    except (BundleError, MatrixError) as exc:
        print(f"gpudoctor: error: matrix update from {url} refused, the matrix in use is unchanged: {exc}",
              file=sys.stderr)
        return EXIT_ERROR
    except OSError as exc:
        print(f"gpudoctor: error: cannot install the matrix: {exc}", file=sys.stderr)
        return EXIT_ERROR
    print(f"matrix {info['data_version']} installed in {info['dir']} (was {current.data_version}); from {url}")
    return EXIT_OK


def _matrix_query(args) -> int:
    import json

    from gpudoctor.matrix import lookup
    from gpudoctor.matrix import MatrixError, load_matrix

    if args.kind == "update":
        return _matrix_update(args)
    if args.version or not args.kind:
        try:
            m = load_matrix(args.matrix) if args.matrix else load_matrix()
        except MatrixError as exc:
            print(f"gpudoctor: error: {exc}", file=sys.stderr)
            return EXIT_ERROR
        if args.json:
            sys.stdout.write(json.dumps({"data_version": m.data_version, "origin": m.origin}) + "\n")
        else:
            print(f"matrix {m.data_version} ({m.origin})")
        return EXIT_OK
    if not args.value:
        print(f"gpudoctor: error: matrix {args.kind} needs a VALUE", file=sys.stderr)
        return EXIT_ERROR
    try:
        m = load_matrix(args.matrix) if args.matrix else load_matrix()
        if args.kind == "cuda":
            data = lookup.cuda_answer(m, args.value)
        elif args.kind == "driver":
            data = lookup.driver_answer(m, args.value, args.os)
        else:
            data = lookup.gpu_answer(m, args.value)
    except (MatrixError, lookup.LookupFailed) as exc:
        print(f"gpudoctor: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    sys.stdout.write(json.dumps(data, indent=2) + "\n" if args.json else lookup.render_text(data))
    return EXIT_OK


def _compare(args) -> int:
    """Exit 0 whatever differs; 2 when a file is not a readable gpudoctor report."""
    import json
    from pathlib import Path

    from gpudoctor.reports import compare, fleet

    loaded, errors = fleet.load_reports([args.a, args.b])
    if errors or len(loaded) != 2:
        for e in errors:
            print(f"gpudoctor: error: {e['path']}: {e['error']}", file=sys.stderr)
        return EXIT_ERROR
    result = compare.compare(loaded[0]["report"], loaded[1]["report"], labels=(Path(args.a).name, Path(args.b).name))
    sys.stdout.write(json.dumps(result, indent=2, default=str) + "\n" if args.json
                     else compare.render_text(result, limit=max(1, args.limit)))
    return EXIT_OK


def _fleet(args) -> int:
    """Exit 0: no outliers and every file usable; 1: outliers or unusable files; 2: no usable report."""
    import json

    from gpudoctor.reports import fleet

    folded = fleet.stream(args.paths, jobs=args.jobs)
    if not folded.rows:
        for e in folded.errors[:50]:
            print(f"gpudoctor: error: {e['path']}: {e['error']}", file=sys.stderr)
        print("gpudoctor: error: no usable gpudoctor report", file=sys.stderr)
        return EXIT_ERROR
    result = folded.result()
    sys.stdout.write(json.dumps(result, indent=2, default=str) + "\n" if args.json else fleet.render_text(result))
    return EXIT_FINDINGS if (result["outliers"] or result["errors"]) else EXIT_OK


def _target_gpus(names, matrix_dir):
    """(name, compute capability) for each --target-gpu: a product name from the matrix or a CC like 8.9."""
    import re

    out = []
    if not names:
        return out
    from gpudoctor.matrix import load_matrix

    m = load_matrix(matrix_dir) if matrix_dir else load_matrix()
    for name in names:
        if re.fullmatch(r"\d{1,2}\.\d", name.strip()):
            out.append((f"compute capability {name.strip()}", name.strip()))
            continue
        info = m.gpu_by_name(name)
        if info is None:
            raise ValueError(f"--target-gpu {name!r}: no GPU in the matrix matches (give a product name or a CC like 8.9)")
        out.append((name, info.cc))
    return out


def _report_text(report, fmt: str, redact: bool, strict: bool, verbose: bool) -> str:
    """The report in ``fmt`` (json | markdown | github | junit | console without colour or wrapping)."""
    import json

    from gpudoctor.render import ci_formats

    if fmt == "console":
        import io

        from rich.console import Console

        from gpudoctor.render import console

        buf = io.StringIO()
        console.render(report, Console(file=buf, color_system=None, no_color=True, soft_wrap=True, width=10_000),
                       verbose=verbose)
        return buf.getvalue()
    data = report.to_dict()
    if redact:
        from gpudoctor.render.redact import redact as redact_data

        data = redact_data(data)
    if fmt == "json":
        return json.dumps(data, indent=2, default=str) + "\n"
    if fmt == "markdown":
        return ci_formats.markdown(data)
    if fmt == "github":
        return ci_formats.github(data)
    return ci_formats.junit(data, strict=strict)


def _probes_still_running() -> bool:
    import threading

    return any(t.name.startswith("probe-") and t.is_alive() for t in threading.enumerate())


def _exit_now_if_stuck(code: int) -> int:
    """A probe stuck past the budget (a hung native call, a blocked read) must not keep the process
    alive at exit (thread pools are joined at interpreter exit): flush and leave at once."""
    if _probes_still_running():
        sys.stdout.flush()
        sys.stderr.flush()
        from gpudoctor.process import scratch

        scratch.remove_all()  # os._exit runs no finally: a stuck step's scratch directory would stay in TMPDIR
        os._exit(code)
    return code


def main(argv=None) -> int:
    try:
        return _main(argv)
    except (OSError, ImportError) as exc:  # EMFILE (getrlimit(2)): the shell's open-file limit, not gpudoctor, is at fault
        import errno  # built in: opens no file

        # an extension module or a shared library that dlopen could not open is an ImportError with the words only
        if getattr(exc, "errno", None) != errno.EMFILE and os.strerror(errno.EMFILE) not in str(exc):
            raise
        print(_nofile_error(), file=sys.stderr)
        return _exit_now_if_stuck(EXIT_ERROR)


def _nofile_error() -> str:
    """One line: RLIMIT_NOFILE of this process and the command that lifts it (its soft limit up to the hard)."""
    try:
        import resource  # an extension module: itself a file to open

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        shown = "unlimited" if hard == resource.RLIM_INFINITY else str(hard)
    except (OSError, ImportError):
        soft, hard, shown = None, None, "$(ulimit -Hn)"
    fix = (f"raise it: ulimit -Sn {shown}" if hard != soft or soft is None else
           "its hard limit is the same, so start a shell without the `ulimit -n` that set it (limits.conf item 'nofile')")
    return ("gpudoctor: error: too many open files: this shell's open-file limit (ulimit -n"
            + (f" = {soft}" if soft is not None else "") + f") is too low for gpudoctor to run (and for CUDA programs); {fix}")


def _main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    rest = None
    if argv[:1] == ["explain"] and "--" in argv:  # everything after -- is the command to run, untouched
        cut = argv.index("--")
        argv, rest = argv[:cut], argv[cut + 1:]
        if not rest:
            print("gpudoctor: error: nothing after --: give the command to run", file=sys.stderr)
            return EXIT_ERROR
    if argv[:1] == ["check"] and not {"-h", "--help", "--no-gpu", "--root", "--image"} & set(argv) \
            and not any(a.startswith(("--root=", "--image=")) for a in argv):
        # Before the options are even parsed: the CUDA/NVML workers and the cached smoke binary take
        # a few hundred ms of CUDA initialisation each; run_check adopts them (or kills them).
        from gpudoctor.check import prestart_children

        prestart_children(os.environ, smoke="--no-smoke" not in argv, cache="--no-cache" not in argv)
    is_check = argv[:1] == ["check"] and not {"-h", "--help"} & set(argv)
    args = build_parser(check_only=is_check).parse_args(argv)
    if args.command == "explain":
        from gpudoctor.explain.command import run as explain_run

        return explain_run(args, rest)
    if args.command == "install":
        from gpudoctor.install.command import run

        return run(args)
    if args.command == "matrix":
        return _matrix_query(args)
    if args.command == "compare":
        return _compare(args)
    if args.command == "fleet":
        return _fleet(args)
    if args.command == "inspect":
        from gpudoctor.inspect.command import run as inspect_run

        return inspect_run(args)
    if args.command != "check":
        build_parser().print_help()
        return EXIT_ERROR
    if not (0 < args.timeout <= 600):
        print("gpudoctor: error: --timeout must be between 0 and 600 seconds", file=sys.stderr)
        return EXIT_ERROR
    if args.root or args.image or args.root_os or args.env_file or args.driver:
        from gpudoctor.rootcheck.command import run_root

        return run_root(args, _report_text, _target_gpus)
    from gpudoctor.check import run_check

    class SetupError(Exception):
        pass

    chosen = {}

    def setup():  # read while the probes already run (policy, target GPUs): its errors stop the check
        from gpudoctor.matrix import MatrixError
        from gpudoctor.rules.requirements import PolicyError, load_policy

        try:
            policy = load_policy(args.require)
            chosen["policy"] = policy
            targets = _target_gpus(list(policy.target_gpus) + list(args.target_gpu), args.matrix)
        except (PolicyError, ValueError, MatrixError) as exc:
            raise SetupError(str(exc)) from None
        if (args.format or ("json" if args.json else "console")) == "console" and not args.output:
            importlib.import_module("gpudoctor.render.console")  # rich, while the probes wait on their children
        return policy.requirements, targets

    def matrix():
        from gpudoctor.matrix import load_matrix

        return load_matrix(args.matrix) if args.matrix else load_matrix()

    from gpudoctor.matrix import MatrixError

    try:  # the probes start first; the policy and the matrix load while they run
        report = run_check(matrix, smoke=not (args.no_smoke or args.no_gpu), timeout=args.timeout, engines=args.engine,
                           no_gpu=args.no_gpu, cache=not args.no_cache, setup=setup)
    except SetupError as exc:
        print(f"gpudoctor: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except MatrixError as exc:
        print(f"gpudoctor: error: compatibility matrix is invalid: {exc}", file=sys.stderr)
        return EXIT_ERROR
    from gpudoctor.explain.annotate import annotate  # standard library only until a failed tool's words need reading

    annotate(report, args.timeout)  # a failed tool's own words, read with explain's knowledge (docs/architecture.md)
    from gpudoctor.install.fix_check import check_fix_wheels  # stdlib only unless a shown fix pins a wheel

    offline = getattr(args, "offline", False) or os.environ.get("GPUDOCTOR_OFFLINE") == "1"
    # an unserved package gets a note; OS repositories' indexes (megabytes) only from the cache: check stays fast
    check_fix_wheels(report, min(args.timeout, 5.0), offline=offline, ask_os_indexes=False)
    from gpudoctor.findings import Severity

    args.strict = args.strict or chosen["policy"].strict
    fmt = args.format or ("json" if args.json else "console")
    bad = report.worst.rank >= (Severity.WARN.rank if args.strict else Severity.FAIL.rank)
    code = EXIT_FINDINGS if bad else EXIT_OK
    redact = args.redact or fmt in ("markdown", "github")
    if args.output:
        from gpudoctor.process.atomic import write_atomic

        try:
            write_atomic(args.output, _report_text(report, fmt, redact, args.strict, args.verbose))
        except OSError as exc:
            print(f"gpudoctor: error: cannot write {args.output}: {exc.strerror or exc}", file=sys.stderr)
            return _exit_now_if_stuck(EXIT_ERROR)
    elif fmt != "console":
        sys.stdout.write(_report_text(report, fmt, redact, args.strict, args.verbose))
    else:
        from gpudoctor.render import console
        from gpudoctor.render.terminal import make_console

        console.render(report, make_console(args.color), verbose=args.verbose)
    return _exit_now_if_stuck(code)
