"""Run a :mod:`gpudoctor.worker` task in a child Python and return its JSON (or why it failed)."""
from __future__ import annotations

import json
import os
import sys

from gpudoctor.subproc import run

_PKG_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_worker(ctx, task: str, *args: str, timeout: float = None) -> dict:
    """``{"worker_error": "..."}`` when the child crashed, hung or printed no JSON."""
    env = dict(ctx.env)
    env["PYTHONPATH"] = _PKG_PARENT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    res = run([sys.executable, "-m", "gpudoctor.worker", task, *args], timeout=timeout or ctx.timeout, env=env)
    if res.error:
        return {"worker_error": res.error, "stderr_tail": res.stderr[-2000:]}
    last = res.stdout.strip().splitlines()[-1] if res.stdout.strip() else ""
    try:
        return json.loads(last)
    except ValueError:
        return {"worker_error": f"worker exited with {res.returncode} and no result", "stderr_tail": res.stderr[-2000:]}
