"""``--env FILE``: the environment of a system a check reads from disk, as ``KEY=VALUE`` lines.

Accepted: what ``env`` prints on Linux and ``set`` prints in a Windows ``cmd`` (one ``KEY=VALUE`` per line),
an optional ``export`` in front, a value in matching single or double quotes (taken literally: nothing is
expanded), blank lines and ``#`` comments. Windows names such as ``ProgramFiles(x86)`` are kept as they
are. Anything else is an error naming the line, never a guess.
"""
from __future__ import annotations

import re
from typing import Dict

__all__ = ["EnvFileError", "parse_env_file", "read_env_file", "MAX_BYTES"]

#: Largest environment file read (bytes): a real environment is a few KiB.
MAX_BYTES = 1 << 20
_LINE = re.compile(r"^(?:export\s+)?([^=\s#][^=]*?)=(.*)$")


class EnvFileError(ValueError):
    """The file is not ``KEY=VALUE`` lines (names the line and what is wrong with it)."""


def parse_env_file(text: str, where: str = "the environment file") -> Dict[str, str]:
    """``{KEY: VALUE}`` from ``text`` (the last of a repeated key wins, as in a shell). Raises EnvFileError."""
    if "\0" in text:
        raise EnvFileError(f"{where} holds NUL bytes: not a text file of KEY=VALUE lines")
    out: Dict[str, str] = {}
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _LINE.match(line)
        if m is None:
            shown = line if len(line) <= 80 else line[:77] + "..."
            raise EnvFileError(f"{where}, line {no}: not KEY=VALUE: {shown!r}")
        key, value = m.group(1).strip(), m.group(2)
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        out[key] = value
    return out


def read_env_file(path: str) -> Dict[str, str]:
    """:func:`parse_env_file` of the file at ``path`` (UTF-8, or UTF-16 with a BOM as Windows writes it).
    Raises EnvFileError: unreadable, larger than :data:`MAX_BYTES`, or not KEY=VALUE lines."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        raise EnvFileError(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(data) > MAX_BYTES:
        raise EnvFileError(f"{path} is larger than {MAX_BYTES // 1024} KiB: not an environment file")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        text = data.decode("utf-16", errors="strict") if len(data) % 2 == 0 else None
        if text is None:
            raise EnvFileError(f"{path}: UTF-16 text cut in the middle of a character")
    else:
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise EnvFileError(f"{path} is not UTF-8 text (byte {exc.start}): not an environment file") from None
    return parse_env_file(text, path)
