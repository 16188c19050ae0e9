"""The probe of a Windows root (``check --root DIR --os windows``): the facts of :mod:`gpudoctor.windows`
(toolkits, CUDA_PATH, the driver's DLLs, cuDNN and TensorRT copied into a toolkit, Visual Studio), read
through the root's view (:mod:`gpudoctor.rootcheck.check` judges them)."""
from __future__ import annotations

def probe(ctx) -> dict:
    """:func:`gpudoctor.windows.install.windows_facts` of ``ctx.view``."""
    from gpudoctor.windows.install import windows_facts

    return windows_facts(ctx.view)
