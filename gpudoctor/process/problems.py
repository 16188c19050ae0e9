"""Problem records: every error a probe meets, in one shape the rules can walk.

A probe that cannot ask a tool (timeout, signal, non-zero exit, output it cannot
parse), read a file or load a library still returns facts, and appends to a
``"problems"`` list in them one record per failure::

    {"path": "/opt/wrap/bin/nvcc", "kind": "timeout", "what": "nvcc timed out after 10 s",
     "command": "/opt/wrap/bin/nvcc --version", "last_line": "...", "stderr_tail": "..."}

``stderr_tail``: the tool's last words (:func:`gpudoctor.process.tail.tail`: at most 20 lines / 2 KiB,
secrets masked), read by ``gpudoctor check`` with ``explain``'s knowledge.

``kind`` is one of :data:`KINDS`. :func:`walk` finds every record in a probe's facts,
at any depth; :func:`gpudoctor.rules.unreported_problems` turns each record that no
other finding names (by its path) into a finding, so nothing a probe saw fail is
ever reported as fine.
"""
from __future__ import annotations

import os
import stat
from typing import Iterator, List, Optional

#: timeout | signal | exit (non-zero) | not_found | cannot_run (exec failed) | unparsable (ran, said nothing usable)
#: | unreadable (a file) | load_error (a shared library) | broken_dist (a pip dist-info without RECORD/METADATA)
#: | implausible (a value that cannot be what it claims, e.g. driver version "1": gpudoctor.probes.facts)
KINDS = ("timeout", "signal", "exit", "not_found", "cannot_run", "unparsable", "unreadable", "load_error", "broken_dist",
         "implausible")
#: Largest text file a probe reads (bytes).
READ_LIMIT = 1 << 20


def record(path: str, kind: str, what: str, command: Optional[str] = None, last_line: Optional[str] = None,
           stderr_tail: Optional[str] = None) -> dict:
    """One problem record; ``stderr_tail`` (the tool's output, any length) is kept bounded and masked."""
    assert kind in KINDS, kind
    out = {"path": path, "kind": kind, "what": what}
    if command:
        out["command"] = command
    from gpudoctor.process.tail import mask, tail

    if last_line:
        out["last_line"] = mask(last_line)
    if stderr_tail:
        kept = tail(stderr_tail)
        if kept:
            out["stderr_tail"] = kept
    return out


def read_text(path: str, problems: Optional[List[dict]] = None, limit: int = READ_LIMIT) -> Optional[str]:
    """The first ``limit`` bytes of a text file (undecodable bytes replaced), or None.

    A file that exists but cannot be read (permissions, a directory or a FIFO in its place,
    an I/O error) is appended to ``problems`` as ``unreadable``; a missing file is just None.
    FIFOs and devices are never opened (an open() on a FIFO blocks forever)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            _add(problems, record(path, "unreadable", f"{path} is a dangling symbolic link (to {os.readlink(path)})"))
        return None
    except OSError as exc:
        _add(problems, record(path, "unreadable", f"cannot stat {path}: {exc.strerror or exc}"))
        return None
    if not stat.S_ISREG(st.st_mode):
        what = "a directory" if stat.S_ISDIR(st.st_mode) else "a FIFO" if stat.S_ISFIFO(st.st_mode) else "not a regular file"
        _add(problems, record(path, "unreadable", f"{path} is {what}, not a readable file"))
        return None
    try:
        with open(path, "rb") as fh:
            return fh.read(limit).decode("utf-8", errors="replace")
    except OSError as exc:
        _add(problems, record(path, "unreadable", f"cannot read {path}: {exc.strerror or exc}"))
        return None


def _add(problems, rec) -> None:
    if problems is not None:
        problems.append(rec)


def walk(facts) -> Iterator[dict]:
    """Every problem record in ``facts`` (lists under a ``"problems"`` key, at any depth)."""
    if isinstance(facts, dict):
        for key, value in facts.items():
            if key == "problems" and isinstance(value, list):
                for rec in value:
                    if isinstance(rec, dict) and rec.get("path") and rec.get("kind"):
                        yield rec
            else:
                yield from walk(value)
    elif isinstance(facts, list):
        for item in facts:
            yield from walk(item)
