"""The probe of a Windows root (``check --root DIR --os windows``): the facts of :mod:`gpudoctor.windows`
(toolkits, CUDA_PATH, the driver's DLLs, cuDNN and TensorRT copied into a toolkit, Visual Studio), read
through the root's view; and the rules that judge them."""
from __future__ import annotations

from typing import Callable, List


def probe(ctx) -> dict:
    """:func:`gpudoctor.windows.install.windows_facts` of ``ctx.view``."""
    from gpudoctor.windows.install import windows_facts

    return windows_facts(ctx.view)


def rules() -> List[Callable]:
    """The rules that judge a Windows root's facts (:mod:`gpudoctor.rules.windows` when present)."""
    try:
        from gpudoctor.rules import windows
    except ImportError:
        return []
    return list(windows.RULES)
