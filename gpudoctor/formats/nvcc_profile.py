"""nvcc.profile: the file beside nvcc that sets the environment of nvcc's own children (its PATH, INCLUDES, ...).

Syntax, as the file itself documents it (CUDA 11.8 to 13.x, e.g. Debian's /usr/lib/nvidia-cuda-toolkit/bin/nvcc.profile)::

    name  = <text>   assignment
    name ?= <text>   conditional assignment
    name += <text>   prepend
    name =+ <text>   append
    Predefined variables: _SPACE_, _HERE_, _TARGET_DIR_, _TARGET_SIZE_, _NVVM_BRANCH_

``$(NAME)`` expands a variable set earlier in the file, a predefined one, or the environment's. Pure: text in,
plain data out; never raises.
"""
from __future__ import annotations

import re
from typing import Dict, Mapping, Optional

_LINE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(\?=|\+=|=\+|=)\s*(.*?)\s*$")
_REF = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")
#: Longest profile read (bytes): real ones are under 1 KiB.
MAX_PROFILE = 64 << 10


def predefined(here: str, target_dir: str = "targets/x86_64-linux", target_size: str = "64",
               nvvm_branch: str = "nvvm") -> Dict[str, str]:
    """nvcc's predefined variables for the nvcc in directory ``here`` (x86-64 Linux by default)."""
    return {"_SPACE_": " ", "_HERE_": here, "_TARGET_DIR_": target_dir, "_TARGET_SIZE_": target_size,
            "_NVVM_BRANCH_": nvvm_branch}


def apply_profile(text: Optional[str], env: Mapping[str, str], here: str) -> Dict[str, str]:
    """The variables an nvcc in ``here`` runs its children with, after its nvcc.profile ``text`` (None: no
    profile): ``env`` updated with every name the profile sets, each value expanded. ``PATH += /d:`` gives
    ``"/d:" + env PATH`` as nvcc does (the trailing colon joins the old value)."""
    out: Dict[str, str] = dict(env)
    pre = predefined(here)

    def expand(value: str) -> str:
        return _REF.sub(lambda m: out.get(m.group(1), pre.get(m.group(1), "")), value)

    for line in (text or "")[:MAX_PROFILE].splitlines():
        if line.lstrip().startswith("#"):
            continue
        m = _LINE.match(line)
        if not m:
            continue
        name, op, value = m.group(1), m.group(2), expand(m.group(3))
        old = out.get(name, "")
        if op == "=":
            out[name] = value
        elif op == "?=":
            out.setdefault(name, value)
        elif op == "+=":
            out[name] = value + old
        else:  # =+
            out[name] = old + value
    return out
