"""The rich Console every command prints through: colour and wrapping decided from where output goes.

* A terminal: colours unless ``NO_COLOR`` is set (https://no-color.org) or ``--color never``; prose
  wraps at the terminal's width.
* A pipe or a file (CI logs, ``| tee``): no colour unless ``--color always``; nothing is wrapped
  unless ``COLUMNS`` is set, and then only prose: fix commands and URLs are printed with
  ``soft_wrap`` and stay on one line whatever the width, so copying a fix copies all of it.
"""
from __future__ import annotations

import os
import sys
from typing import Mapping, Optional, TextIO

__all__ = ["make_console", "COLOR_CHOICES", "UNWRAPPED_WIDTH"]

COLOR_CHOICES = ("auto", "always", "never")
#: The width given to a console that must not wrap (rich needs a number).
UNWRAPPED_WIDTH = 100_000


def make_console(color: str = "auto", file: Optional[TextIO] = None, env: Optional[Mapping[str, str]] = None):
    from rich.console import Console

    env = os.environ if env is None else env
    file = file if file is not None else sys.stdout
    try:
        tty = file.isatty()
    except (AttributeError, ValueError):
        tty = False
    if color == "always":
        colored = True
    elif color == "never":
        colored = False
    else:
        colored = tty and not env.get("NO_COLOR")
    width = None
    if not tty:
        cols = env.get("COLUMNS", "")
        width = int(cols) if cols.isdigit() and int(cols) > 0 else UNWRAPPED_WIDTH
    return Console(file=file, width=width, force_terminal=colored if color == "always" else None,
                   no_color=not colored, color_system="auto" if colored else None, highlight=False,
                   emoji=False, legacy_windows=False)
