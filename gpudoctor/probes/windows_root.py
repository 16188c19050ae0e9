"""The probe of a Windows root (``check --root DIR --os windows``): the facts of :mod:`gpudoctor.windows`
(toolkits, CUDA_PATH, the driver's DLLs, cuDNN and TensorRT copied into a toolkit, Visual Studio), read
through the root's view (:mod:`gpudoctor.rootcheck.check` judges them)."""
from __future__ import annotations

def probe(ctx) -> dict:
    """:func:`gpudoctor.windows.install.windows_facts` of ``ctx.view`` (a root on disk), or of this Windows
    machine as it runs (the live check on Windows)."""
    from gpudoctor.windows.install import windows_facts

    view = ctx.view
    if view is None:
        from gpudoctor.sysroot.view import SystemView

        view = SystemView("/", "windows", ctx.env, live=True, drive=ctx.env.get("SystemDrive") or "C:")
    return windows_facts(view)
