"""A tool that says how to learn more ("run with NCCL_DEBUG=WARN for details", "consider passing
CUDA_LAUNCH_BLOCKING=1", "Set TF_CPP_MIN_LOG_LEVEL=0"): read the instruction from its own message and
give the step's environment with it, so the step can be rerun once that way and its new words read.

The detector is the shape of the sentence (a verb that asks for a setting, then ``VAR=VALUE``), never a
list of tools or variables. The only variables refused are those that choose which code runs (``PATH``,
``LD_*``, ``PYTHON*``): a message must not be able to make gpudoctor run something else.
"""
from __future__ import annotations

import re
from typing import Mapping, Optional, Tuple

__all__ = ["instruction", "detail_env", "rerun_timeout", "RERUN_MAX_S"]

#: Longest a rerun for detail may take (s); it is also cut to the check's --timeout by subproc's budget.
RERUN_MAX_S = 20.0

# verb (run/rerun/set/try/export/pass/use/enable, any inflection), up to 40 characters of filler on the same
# line ("with the environment variable", "setting"), then VAR=VALUE with an upper-case name.
_ASK = re.compile(r"\b(?:re-?run|run|set|try|export|pass|use|enable)(?:s|ing|ed)?\b[^\n=]{0,40}?"
                  r"(?<![A-Za-z0-9_])([A-Z][A-Z0-9_]{2,63})=([A-Za-z0-9_.,:+-]{1,64})", re.IGNORECASE)
_UPPER = re.compile(r"[A-Z][A-Z0-9_]+\Z")
_CHOOSES_CODE = re.compile(r"(PATH|LD_.*|PYTHON.*|.*_PRELOAD|DYLD_.*)\Z")


def instruction(text: Optional[str]) -> Optional[Tuple[str, str]]:
    """The first ``(VAR, VALUE)`` a message asks to run with, or None. ``VAR`` must be written in capitals
    in the message (the verb may be any case); trailing sentence punctuation is not part of the value."""
    for m in _ASK.finditer(text or ""):
        var, value = m.group(1), m.group(2).rstrip(".,:")
        if _UPPER.match(var) and value and not _CHOOSES_CODE.match(var):
            return var, value
    return None


def detail_env(env: Mapping[str, str], text: Optional[str]) -> Optional[Tuple[dict, str]]:
    """``(env with the setting the message asks for, "VAR=VALUE")``, or None when the message asks for
    nothing or the step already ran that way (a second run would only say the same)."""
    ask = instruction(text)
    if ask is None or env.get(ask[0]) == ask[1]:
        return None
    return dict(env, **{ask[0]: ask[1]}), f"{ask[0]}={ask[1]}"


def rerun_timeout(first_seconds: Optional[float]) -> float:
    """Time for the rerun: three times what the failed run took, at least 5 s, at most :data:`RERUN_MAX_S`."""
    return min(RERUN_MAX_S, max(5.0, 3.0 * (first_seconds or 0.0)))
