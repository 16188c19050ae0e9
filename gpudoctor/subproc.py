"""Run external commands with a timeout, turning every failure into data.

Probes never see an exception from here: a missing binary, a hang or a crash
comes back as a :class:`CommandResult` whose ``error`` says what happened.
"""
from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

#: Output kept per stream (bytes). Logs beyond this are cut, not buffered without bound.
MAX_OUTPUT = 256 * 1024


@dataclass(frozen=True)
class CommandResult:
    """Outcome of one command.

    ``returncode`` is None when the command did not finish (not found, timed out).
    ``error`` is a one-line human description of a failure to run, else None.
    """

    argv: tuple
    returncode: Optional[int]
    stdout: str
    stderr: str
    error: Optional[str] = None
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and self.error is None

    @property
    def output(self) -> str:
        return (self.stdout + ("\n" if self.stdout and self.stderr else "") + self.stderr).strip()


def run(
    argv: Sequence[str],
    timeout: float = 10.0,
    env: Optional[Mapping[str, str]] = None,
    cwd: Optional[str] = None,
    input_text: Optional[str] = None,
) -> CommandResult:
    """Run ``argv`` (no shell) and return its result; never raises for run-time failures.

    The child gets its own process group so that a timeout kills the whole tree
    (nvcc spawns cicc/ptxas/gcc; killing only nvcc would leave them running).
    """
    argv = tuple(str(a) for a in argv)
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            start_new_session=True,
        )
    except FileNotFoundError:
        return CommandResult(argv, None, "", "", error=f"{argv[0]}: not found")
    except OSError as exc:
        return CommandResult(argv, None, "", "", error=f"{argv[0]}: cannot run ({exc.strerror or exc})")
    try:
        out, err = proc.communicate(input=input_text.encode() if input_text is not None else None, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, err = proc.communicate()
        return CommandResult(
            argv, None, _decode(out), _decode(err),
            error=f"{os.path.basename(argv[0])} timed out after {timeout:g} s", timed_out=True,
        )
    rc = proc.returncode
    error = None
    if rc is not None and rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = f"signal {-rc}"
        error = f"{os.path.basename(argv[0])} was killed by {name}"
    return CommandResult(argv, rc, _decode(out), _decode(err), error=error)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


def _decode(data: Optional[bytes]) -> str:
    if not data:
        return ""
    if len(data) > MAX_OUTPUT:
        data = data[:MAX_OUTPUT]
    return data.decode("utf-8", errors="replace")
