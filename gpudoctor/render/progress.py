"""A progress bar on standard error for long operations, only when standard error is a terminal.

Pipes, files and CI logs never get one (nothing is written at all), so redirected output stays
clean; on a terminal it is transient (erased when done). rich.progress draws it.
"""
from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Iterator, Optional, TextIO

__all__ = ["progress", "Tick"]


class Tick:
    """What the caller advances: ``advance(n)``; a no-op when no bar is shown."""

    def __init__(self, bar=None, task=None) -> None:
        self._bar, self._task = bar, task

    def advance(self, n: float = 1) -> None:
        if self._bar is not None:
            self._bar.advance(self._task, n)


@contextmanager
def progress(description: str, total: Optional[float], unit: str = "", file: Optional[TextIO] = None,
             min_total: float = 0) -> Iterator[Tick]:
    """``with progress("scanning build.log", size, "bytes") as tick: ... tick.advance(n)``. Shows nothing
    when ``file`` (default stderr) is not a terminal or ``total`` is below ``min_total``."""
    out = file if file is not None else sys.stderr
    try:
        tty = out.isatty()
    except (AttributeError, ValueError):
        tty = False
    if not tty or (total is not None and total < min_total):
        yield Tick()
        return
    from rich.console import Console
    from rich.progress import (BarColumn, DownloadColumn, MofNCompleteColumn, Progress, TextColumn,
                               TimeRemainingColumn)

    count = DownloadColumn() if unit == "bytes" else MofNCompleteColumn()
    with Progress(TextColumn("{task.description}"), BarColumn(), count, TimeRemainingColumn(),
                  console=Console(file=out), transient=True) as bar:
        yield Tick(bar, bar.add_task(description, total=total))
