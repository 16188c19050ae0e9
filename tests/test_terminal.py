"""Output to pipes and files: never hard-wrapped, no colour unless asked; fixes and URLs stay on one line."""
from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gpudoctor.render.terminal import make_console

ROOT = Path(__file__).resolve().parents[1]
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _gd(*args, env=None):
    e = dict(os.environ)
    e.pop("COLUMNS", None)  # the test's own terminal width must not leak in
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "gpudoctor", *args], capture_output=True, text=True, cwd=str(ROOT),
                          env=e, timeout=120)


@pytest.fixture(scope="module")
def report_and_text():
    data = json.loads(_gd("check", "--no-smoke", "--json").stdout)
    return data, _gd("check", "--no-smoke", "-v").stdout, _gd("check", "--no-smoke", "-v", env={"COLUMNS": "40"}).stdout


def _commands_and_urls(data):
    out = [c for f in data["findings"] for fx in f.get("fixes") or [] for c in fx.get("commands") or []]
    return out + [f["doc"] for f in data["findings"] if f.get("doc")]


@pytest.mark.parametrize("which", ["unwrapped", "COLUMNS=40"])
def test_piped_output_keeps_every_fix_command_and_url_on_one_line(report_and_text, which):
    data, text, narrow = report_and_text
    out = text if which == "unwrapped" else narrow
    lines = out.splitlines()
    wanted = _commands_and_urls(data)
    assert wanted, "this machine's check should have fixes to show"
    missing = [w for w in wanted if not any(w in line for line in lines)]
    assert not missing, missing
    assert not ANSI.search(out)
    if which == "unwrapped":  # prose is not wrapped either: no line was cut at 80 columns
        assert max(len(line) for line in lines) > 80
    else:  # COLUMNS is honoured for prose
        prose = [line for line in lines if not line.strip().startswith(("$", "docs:")) and "http" not in line]
        assert max(len(line) for line in prose) <= 40


def test_colour_follows_the_flag_and_no_color():
    assert ANSI.search(_gd("check", "--no-smoke", "--color", "always").stdout)
    assert not ANSI.search(_gd("check", "--no-smoke", "--color", "never").stdout)


class FakeTerminal(io.StringIO):
    """A fake terminal (isatty() is True): what rich sees when stdout is a tty."""

    def isatty(self):
        return True


def test_a_terminal_gets_colour_unless_no_color():
    for env, colored in (({}, True), ({"NO_COLOR": "1"}, False)):
        buf = FakeTerminal()
        make_console("auto", file=buf, env=env).print("[red]x[/]")
        assert bool(ANSI.search(buf.getvalue())) is colored, env
    pipe = io.StringIO()
    make_console("auto", file=pipe, env={}).print("[red]" + "word " * 100 + "[/]")
    assert not ANSI.search(pipe.getvalue()) and pipe.getvalue().count("\n") == 1  # one unwrapped line


def test_progress_bars_only_on_a_terminal(tmp_path):
    from gpudoctor.render.progress import progress

    tty = FakeTerminal()
    with progress("scanning", 10, file=tty) as tick:
        for _ in range(10):
            tick.advance()
    assert "scanning" in tty.getvalue()
    pipe = io.StringIO()
    with progress("scanning", 10, file=pipe) as tick:
        tick.advance(10)
    assert pipe.getvalue() == ""
    big = tmp_path / "big.log"  # over the size where explain shows a bar on a terminal
    with open(big, "wb") as fh:
        fh.write(b"INFO epoch 1 step 2 loss 0.3\n" * (3 << 20))
        fh.write(b"CUDA driver version is insufficient for CUDA runtime version\n")
    p = _gd("explain", str(big))
    assert p.returncode == 0 and p.stderr == ""  # stderr is a pipe here: no bar, nothing written
