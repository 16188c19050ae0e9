"""NCCL: the version in ``nccl.h`` (``#define NCCL_MAJOR 2`` / ``NCCL_MINOR 32`` / ``NCCL_PATCH 3``, as the real
nvidia-nccl-cu13 wheel's header has them).

Pure: text in, plain data out; see gpudoctor.formats._text for the robustness contract."""
from __future__ import annotations

from typing import Optional

from gpudoctor.formats.tensorrt_header import _defines


def parse_nccl_header_version(text) -> Optional[str]:
    """``"2.32.3"`` from nccl.h's NCCL_MAJOR, NCCL_MINOR and NCCL_PATCH; None when one of them is missing or not a
    number. Never raises."""
    defs = _defines(text, lambda name: name in ("NCCL_MAJOR", "NCCL_MINOR", "NCCL_PATCH"))
    parts = [defs.get(n) for n in ("NCCL_MAJOR", "NCCL_MINOR", "NCCL_PATCH")]
    if not all(p is not None and p.isdigit() and len(p) <= 4 for p in parts):
        return None
    return ".".join(str(int(p)) for p in parts)
