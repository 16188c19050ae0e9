"""Run external commands with a timeout, turning every failure into data.

Probes never see an exception from here: a missing binary, a hang or a crash
comes back as a :class:`CommandResult` whose ``error`` says what happened and
whose :meth:`CommandResult.problem` is the record the report is built from.

A check has one wall-clock budget (``gpudoctor check --timeout S``): while a
:func:`budget` is open, every command's timeout is cut to what is left of it,
no new command starts once it has run out, and :func:`Budget.expire` kills every
command still running (the runner calls it at the deadline), so one hanging tool
costs the budget once, not once per call.
"""
from __future__ import annotations

import contextlib
import os
import signal
import sys
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

#: Output kept per stream (bytes): the first MAX_OUTPUT, plus the last TAIL bytes when a tool
#: prints more (a 100 MB log is drained and dropped, never buffered).
MAX_OUTPUT = 256 * 1024
TAIL = 16 * 1024
_CHUNK = 64 * 1024


@dataclass(frozen=True)
class CommandResult:
    """Outcome of one command.

    ``returncode`` is None when the command did not finish (not found, timed out).
    ``error`` is a one-line human description of a failure to run, else None.
    ``truncated`` says that a stream was longer than :data:`MAX_OUTPUT` (its middle is dropped).
    """

    argv: tuple
    returncode: Optional[int]
    stdout: str
    stderr: str
    error: Optional[str] = None
    timed_out: bool = False
    truncated: bool = False
    signal_name: Optional[str] = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and self.error is None

    @property
    def output(self) -> str:
        return (self.stdout + ("\n" if self.stdout and self.stderr else "") + self.stderr).strip()

    @property
    def shown(self) -> str:
        """The command line as a user would type it (arguments after the first three elided)."""
        extra = " ..." if len(self.argv) > 4 else ""
        return " ".join(self.argv[:4]) + extra

    def last_line(self) -> Optional[str]:
        """The last non-empty line of stderr (else stdout), cut to 200 characters."""
        for text in (self.stderr, self.stdout):
            lines = [l.strip() for l in text.splitlines() if l.strip()]
            if lines:
                return lines[-1][:200]
        return None

    def problem(self, unparsable: Optional[str] = None) -> Optional[dict]:
        """The problem record (see :mod:`gpudoctor.process.problems`) for a command that failed, or that
        succeeded but printed nothing usable (``unparsable`` says what was expected); None when fine."""
        from gpudoctor.process import problems

        if self.error and self.returncode is None and not self.timed_out:
            kind = "not_found" if self.error.endswith(": not found") else "cannot_run"
            return problems.record(self.argv[0], kind, self.error, command=self.shown)
        words = self.stderr if self.stderr.strip() else self.stdout  # nvidia-smi says why on stdout
        if self.timed_out:
            return problems.record(self.argv[0], "timeout", self.error, command=self.shown, last_line=self.last_line(),
                                   stderr_tail=words)
        if self.signal_name:
            return problems.record(self.argv[0], "signal", self.error, command=self.shown, last_line=self.last_line(),
                                   stderr_tail=words)
        if self.returncode != 0:
            return problems.record(self.argv[0], "exit", f"{os.path.basename(self.argv[0])} exited with code {self.returncode}",
                                   command=self.shown, last_line=self.last_line(), stderr_tail=words)
        if unparsable:
            first = next((l.strip() for l in self.output.splitlines() if l.strip()), "")
            what = f"{os.path.basename(self.argv[0])} printed no {unparsable}" + (
                f" (it printed {len(self.stdout) + len(self.stderr)} characters; first line: {first[:120]!r})" if first else
                " (empty output)")
            return problems.record(self.argv[0], "unparsable", what, command=self.shown)
        return None


class Budget:
    """The wall-clock budget of one check: a deadline (``time.monotonic()``) and the commands running under it."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds
        self.expired = False
        self._live = set()
        self._lock = threading.Lock()

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def _add(self, proc) -> bool:
        with self._lock:
            if self.expired:
                return False
            self._live.add(proc)
            return True

    def _discard(self, proc) -> None:
        with self._lock:
            self._live.discard(proc)

    def expire(self) -> None:
        """Stop: kill every command still running (their whole process groups); start no new one."""
        with self._lock:
            self.expired = True
            live = list(self._live)
        for proc in live:
            _kill_group(proc)


_current: Optional[Budget] = None
_current_lock = threading.Lock()


def install(b: Budget) -> None:
    """Make ``b`` the budget every :func:`run` in this process obeys (one check at a time)."""
    global _current
    with _current_lock:
        _current = b


def uninstall(b: Budget) -> None:
    global _current
    with _current_lock:
        if _current is b:
            _current = None


@contextlib.contextmanager
def budget(seconds: float):
    """Open a check-wide :class:`Budget` of ``seconds`` for every :func:`run` in this process."""
    b = Budget(seconds)
    install(b)
    try:
        yield b
    finally:
        uninstall(b)


#: Seconds kept back from the deadline so a probe can still record what happened to its command.
GRACE = 0.5


def run(
    argv: Sequence[str],
    timeout: float = 10.0,
    env: Optional[Mapping[str, str]] = None,
    cwd: Optional[str] = None,
    input_text: Optional[str] = None,
) -> CommandResult:
    """Run ``argv`` (no shell) and return its result; never raises for run-time failures.

    The child gets its own process group so that a timeout kills the whole tree
    (nvcc spawns cicc/ptxas/gcc; killing only nvcc would leave them running). Under a
    :func:`budget`, ``timeout`` is cut to the budget's remainder (less :data:`GRACE`).
    """
    argv = tuple(str(a) for a in argv)
    b = _current
    if b is not None:
        left = b.remaining() - GRACE
        if b.expired or left <= 0:
            return CommandResult(argv, None, "", "", timed_out=True,
                                 error=f"{os.path.basename(argv[0])} not run: the check's {b.seconds:g} s budget (--timeout) ran out")
        if left < timeout:
            timeout = left
    t0 = time.monotonic()
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
    if b is not None and not b._add(proc):
        _kill_group(proc)
    try:
        return _wait(proc, argv, timeout, input_text, b, t0)
    finally:
        if b is not None:
            b._discard(proc)


class Started:
    """A command started ahead of the probe that will need it (:func:`start`); :meth:`wait` is
    :func:`run`'s second half, under the budget current at that time."""

    def __init__(self, argv, proc, t0: float, error: Optional[str] = None) -> None:
        self.argv, self.proc, self.t0, self.error = argv, proc, t0, error

    def wait(self, timeout: float = 10.0) -> CommandResult:
        if self.proc is None:
            return CommandResult(self.argv, None, "", "", error=self.error)
        b = _current
        if b is not None:
            left = b.remaining() - GRACE
            timeout = min(timeout, max(left, 0.0))
            if not b._add(self.proc):
                _kill_group(self.proc)
        try:  # time counts from the start, as if the probe had run it itself
            return _wait(self.proc, self.argv, max(timeout - (time.monotonic() - self.t0), 0.0), None, b, self.t0)
        finally:
            if b is not None:
                b._discard(self.proc)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            _kill_group(self.proc)
            self.proc.wait()


def lean_context_env(env: Optional[Mapping[str, str]]) -> dict:
    """``env`` for a child that creates a CUDA context to run a smoke test: one hardware work queue
    (``CUDA_DEVICE_MAX_CONNECTIONS=1``; the default is 8). A smoke test launches on one stream, and
    each queue costs pinned push-buffer memory: on an H100 (driver 580) the context's resident memory
    drops from 126 to 79 MiB and it is created in half the time (benchmarks/device_rss_probe.py).
    A value the user set is kept: their setting is part of what is being checked."""
    out = dict(os.environ if env is None else env)
    out.setdefault("CUDA_DEVICE_MAX_CONNECTIONS", "1")
    return out


def start(argv: Sequence[str], env: Optional[Mapping[str, str]] = None, cwd: Optional[str] = None) -> Started:
    """Start ``argv`` now (own process group, no stdin, piped output) and return it unwaited: used to
    launch the slowest children before the rest of the check is even imported."""
    argv = tuple(str(a) for a in argv)
    t0 = time.monotonic()
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=dict(env) if env is not None else None, cwd=cwd, start_new_session=True)
    except FileNotFoundError:
        return Started(argv, None, t0, f"{argv[0]}: not found")
    except OSError as exc:
        return Started(argv, None, t0, f"{argv[0]}: cannot run ({exc.strerror or exc})")
    return Started(argv, proc, t0)


class _ForkedProc:
    """What :class:`Started` and :func:`_wait` use of ``subprocess.Popen``, for a forked child."""

    def __init__(self, pid: int, stdout_fd: int, stderr_fd: int) -> None:
        self.pid = pid
        self.stdout = os.fdopen(stdout_fd, "rb")
        self.stderr = os.fdopen(stderr_fd, "rb")
        self.stdin = None
        self.returncode: Optional[int] = None
        self._lock = threading.Lock()

    def _reap(self, flags: int) -> Optional[int]:
        with self._lock:
            if self.returncode is None:
                try:
                    pid, status = os.waitpid(self.pid, flags)
                except ChildProcessError:
                    pid, status = self.pid, 0
                if pid == self.pid:
                    self.returncode = os.waitstatus_to_exitcode(status)
            return self.returncode

    def wait(self, timeout=None) -> int:
        return self._reap(0)

    def poll(self) -> Optional[int]:
        return self._reap(os.WNOHANG)

    def kill(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
        except OSError:
            pass


def _name_process(name: str) -> None:
    """Name a forked child in ps/top (Linux PR_SET_NAME, 15 characters): its command line is still the
    parent's, so without it every worker would show as ``gpudoctor check``."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(15, name.encode()[:15], 0, 0, 0)
    except (OSError, AttributeError):
        pass


def can_fork() -> bool:
    """Forking is safe here: POSIX, and no other thread (a fork copies only the calling thread, and a
    lock another thread holds would stay locked forever in the child)."""
    return hasattr(os, "fork") and threading.active_count() == 1


def fork_call(body, name: Optional[str] = None) -> int:
    """Fork; in the child run ``body()`` (its return value is the exit code; an exception is printed on
    stderr and exits 1) and leave with ``os._exit``, so the parent's atexit handlers and buffers stay
    the parent's. ``name`` names the child in ps/top. Returns the child's pid, in the parent only."""
    for stream in (sys.stdout, sys.stderr):  # else the child's final flush repeats the parent's buffered output
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 1
        try:
            if name:
                _name_process(name)
            code = int(body() or 0)
        except BaseException:  # noqa: BLE001 - the child reports on stderr and exits, whatever happened
            import traceback

            traceback.print_exc()
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)
    return pid


def fork_start(label: Sequence[str], target, env: Mapping[str, str], name: Optional[str] = None) -> Started:
    """Like :func:`start`, for Python work of this very interpreter: fork, and in the child (own session,
    stdin from /dev/null, ``env`` as its environment) run ``target()`` (its return value is the exit
    code), then leave with ``os._exit`` (the parent's atexit handlers and buffers stay the parent's).
    Saves the interpreter start-up and imports a fresh ``python -m`` pays (70 ms on the H100 host).
    Only call it when :func:`can_fork`; ``label`` names the child in problem records, ``name`` in ps/top."""
    argv = tuple(str(a) for a in label)
    t0 = time.monotonic()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()

    def child() -> int:
        os.setsid()
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        for fd in (devnull, out_r, out_w, err_r, err_w):
            os.close(fd)
        # the parent's sys.stdout may be anything (a test's capture, a pager's pipe): use the new fds
        sys.stdout = open(1, "w", encoding="utf-8", errors="replace", closefd=False)
        sys.stderr = open(2, "w", encoding="utf-8", errors="replace", closefd=False)
        os.environ.clear()
        os.environ.update(env)
        return target()

    pid = fork_call(child, name)
    os.close(out_w)
    os.close(err_w)
    return Started(argv, _ForkedProc(pid, out_r, err_r), t0)


def _wait_or_kill(proc: subprocess.Popen, timeout: float) -> bool:
    """Wait for ``proc`` to exit; kill its group after ``timeout`` s. True when it was killed for that.

    A blocking waitpid and a timer, not ``Popen.wait(timeout=)``: that one polls with sleeps growing to
    50 ms, so every child's result arrived up to 50 ms late (a quarter of a warm check's wall time went
    to it on the H100)."""
    fired = threading.Event()

    def expire():
        fired.set()
        _kill_group(proc)

    timer = threading.Timer(timeout, expire)
    timer.daemon = True
    timer.start()
    try:
        proc.wait()
    finally:
        timer.cancel()
    # the timer may fire as the process exits by itself: only a kill it caused counts
    return fired.is_set() and proc.returncode is not None and proc.returncode < 0


def _wait(proc, argv, timeout, input_text, b, t0) -> CommandResult:
    out, err = _Drain(proc.stdout), _Drain(proc.stderr)
    if input_text is not None:
        try:
            proc.stdin.write(input_text.encode())
            proc.stdin.close()
        except OSError:
            pass
    timed_out = _wait_or_kill(proc, max(timeout, 0.0))
    _kill_group(proc)  # whatever the tool left running in its group may hold the pipes open
    out.join(1.0)
    err.join(1.0)
    name = os.path.basename(argv[0])
    seconds = time.monotonic() - t0
    stdout, stderr, cut = out.text(), err.text(), out.truncated or err.truncated
    if timed_out:
        return CommandResult(argv, None, stdout, stderr, error=f"{name} timed out after {timeout:.3g} s",
                             timed_out=True, truncated=cut, seconds=seconds)
    rc = proc.returncode
    if rc < 0 and b is not None and b.expired:
        return CommandResult(argv, None, stdout, stderr, timed_out=True, truncated=cut, seconds=seconds,
                             error=f"{name} was stopped after {seconds:.3g} s: the check's {b.seconds:g} s budget (--timeout) ran out")
    if rc < 0:
        try:
            sig = signal.Signals(-rc).name
        except ValueError:
            sig = f"signal {-rc}"
        return CommandResult(argv, rc, stdout, stderr, error=f"{name} was killed by {sig}", signal_name=sig,
                             truncated=cut, seconds=seconds)
    return CommandResult(argv, rc, stdout, stderr, truncated=cut, seconds=seconds)


class _Drain:
    """Read a pipe to its end in a thread, keeping its head and tail only (bounded memory)."""

    def __init__(self, pipe):
        self.head = bytearray()
        self.tail = bytearray()
        self.truncated = False
        self._pipe = pipe
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            while True:
                chunk = self._pipe.read1(_CHUNK) if hasattr(self._pipe, "read1") else self._pipe.read(_CHUNK)
                if not chunk:
                    break
                room = MAX_OUTPUT - len(self.head)
                if room > 0:
                    self.head += chunk[:room]
                    chunk = chunk[room:]
                if chunk:
                    self.truncated = True
                    self.tail += chunk
                    if len(self.tail) > TAIL:
                        del self.tail[:-TAIL]
        except (OSError, ValueError):
            pass

    def join(self, seconds: float) -> None:
        self._thread.join(seconds)
        if self._thread.is_alive():
            try:
                self._pipe.close()
            except OSError:
                pass

    def text(self) -> str:
        data = bytes(self.head)
        if self.truncated:
            data += b"\n[... output cut by gpudoctor ...]\n" + bytes(self.tail)
        return data.decode("utf-8", errors="replace")


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        try:
            proc.kill()
        except OSError:
            pass
