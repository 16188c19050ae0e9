"""Make-rule dependency lists, as ``nvcc -M`` (and ``gcc -M``) print them: the files a compilation reads.

Format (GNU make rules, as the preprocessor writes them)::

    vector_add.o : /path/vector_add.cu \\
        /usr/include/stdc-predef.h /usr/local/cuda/include/cuda_runtime.h \\
        /path/with\\ space.h

A backslash before a newline continues the rule; a backslash before a space keeps the space in the name
(``$$`` is a literal ``$``). Only the first rule's prerequisites are returned; ``-MP``'s phony rules
(``header.h:`` with nothing after it) add nothing.
"""
from __future__ import annotations

import re
from typing import List

__all__ = ["parse_make_deps", "MakeDepsError"]

#: Most prerequisites kept (a real kernel reads a few hundred headers).
MAX_DEPS = 20000
_TOKEN = re.compile(r"(?:\\.|[^\s\\]|\\$)+")


class MakeDepsError(ValueError):
    """The text is not a make rule (no ``target:`` before the prerequisites)."""


def parse_make_deps(text: str) -> List[str]:
    """The prerequisites of the first rule in ``text``, in order, without duplicates (paths as printed).
    Raises MakeDepsError when there is no rule, or more than :data:`MAX_DEPS` prerequisites."""
    joined = re.sub(r"\\\r?\n", " ", text)
    for line in joined.splitlines():
        m = re.match(r"\s*(?:\\.|[^:\\]|\\$)+?\s*:(?!=)(?:\s+|$)(.*)$", line)
        if m is None:
            continue
        out: List[str] = []
        seen = set()
        for tok in _TOKEN.findall(m.group(1)):
            name = re.sub(r"\\(.)", r"\1", tok).replace("$$", "$")
            if name not in seen:
                seen.add(name)
                out.append(name)
            if len(out) > MAX_DEPS:
                raise MakeDepsError(f"more than {MAX_DEPS} prerequisites")
        return out
    raise MakeDepsError("no make rule (target: prerequisites) in the text")
