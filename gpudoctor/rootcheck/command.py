"""The command line of `gpudoctor check --root DIR` / `--image FILE`: validate the options, unpack an image into a
temporary root (removed afterwards, whatever happens), judge it (:func:`gpudoctor.rootcheck.check.run_root_check`)
and print the report as `check` does. Bad input is one ``gpudoctor: error:`` line and exit 2."""
from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
_DRIVER = re.compile(r"\d{3,4}\.\d{1,3}(\.\d{1,3})?")


class _Bad(Exception):
    pass


def _error(msg: str) -> int:
    print(f"gpudoctor: error: {msg}", file=sys.stderr)
    return EXIT_ERROR


def _guess_os(root: str) -> str:
    from gpudoctor.sysroot.view import SystemView

    return "windows" if SystemView(root, "windows", {}).isdir("C:\\Windows\\System32") else "linux"


def run_root(args, report_text, target_gpus) -> int:
    """``gpudoctor check`` with --root or --image (and --os, --env, --driver, --target-gpu); the exit status.
    ``report_text(report, fmt, redact, strict, verbose)`` and ``target_gpus(names, matrix_dir)`` are the command
    line's own (the report's formats, --target-gpu's lookup)."""
    from gpudoctor.sysroot.envfile import EnvFileError, read_env_file

    if bool(args.root) == bool(args.image):
        return _error("give one of --root DIR or --image FILE (--os, --env and --driver describe that system)")
    if args.driver and not _DRIVER.fullmatch(args.driver):
        return _error(f"--driver {args.driver!r} is not an NVIDIA driver version such as 535.104.05 or 581.15")
    if args.engine:
        return _error("--engine needs a live system (a TensorRT runtime and a GPU); leave it out with --root/--image")
    try:
        env = read_env_file(args.env_file) if args.env_file else None
    except EnvFileError as exc:
        return _error(str(exc))
    if args.root:
        if not os.path.isdir(args.root):
            return _error(f"--root {args.root}: not a directory")
        return _judge(args, args.root, args.root_os or _guess_os(args.root), env if env is not None else {},
                      report_text, target_gpus)
    return _judge_image(args, env, report_text, target_gpus)


def _judge_image(args, env, report_text, target_gpus) -> int:
    from gpudoctor.sysroot.image import ImageError, unpack_image

    if args.image != "-" and not os.path.isfile(args.image):
        return _error(f"--image {args.image}: no such file")
    if args.root_os == "windows":
        return _error("--image reads Linux container images; for a Windows system use --root DIR --os windows")
    tmp = tempfile.mkdtemp(prefix="gpudoctor-image-")
    try:
        dest = os.path.join(tmp, "image")
        os.mkdir(dest)
        try:
            info = unpack_image(args.image, dest)
        except ImageError as exc:
            return _error(f"--image {args.image}: {exc}")
        image_env = dict(getattr(info, "env", None) or {})
        return _judge(args, os.path.join(dest, "rootfs"), "linux", env if env is not None else image_env,
                      report_text, target_gpus, image=args.image)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _judge(args, root: str, os_name: str, env, report_text, target_gpus, image=None) -> int:
    from gpudoctor.findings import Severity
    from gpudoctor.matrix import MatrixError, load_matrix
    from gpudoctor.rootcheck.check import run_root_check
    from gpudoctor.sysroot.view import SystemView

    try:
        targets = target_gpus(list(args.target_gpu), args.matrix)
        matrix = load_matrix(args.matrix) if args.matrix else load_matrix()
    except (ValueError, MatrixError) as exc:
        return _error(str(exc))
    view = SystemView(root, os_name, env)
    report = run_root_check(view, matrix, driver=args.driver, targets=targets, timeout=args.timeout)
    if image:
        report.options["root"] = f"image {image}"
    fmt = args.format or ("json" if args.json else "console")
    redact = args.redact or fmt in ("markdown", "github")
    if args.output:
        from gpudoctor.process.atomic import write_atomic

        try:
            write_atomic(args.output, report_text(report, fmt, redact, args.strict, args.verbose))
        except OSError as exc:
            return _error(f"cannot write {args.output}: {exc.strerror or exc}")
    elif fmt != "console":
        sys.stdout.write(report_text(report, fmt, redact, args.strict, args.verbose))
    else:
        from gpudoctor.render import console
        from gpudoctor.render.terminal import make_console

        console.render(report, make_console(args.color), verbose=args.verbose)
    bad = report.worst.rank >= (Severity.WARN.rank if args.strict else Severity.FAIL.rank)
    return EXIT_FINDINGS if bad else EXIT_OK
