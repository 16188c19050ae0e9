"""Does a per-process resource limit stop CUDA? Rerun the CUDA steps in a child that differs in one thing.

A process inherits its shell's ``ulimit``s, and CUDA needs more of some than other programs: at context
creation the driver reserves virtual address space for the Unified Virtual Addressing range, so a finite
``RLIMIT_AS`` makes it fail with CUDA_ERROR_OUT_OF_MEMORY (NVIDIA MPS guide, "clients may fail to start,
returning ERROR_OUT_OF_MEMORY when the first CUDA context is created ... the client tries to reserve virtual
address space for the Unified Virtual Addressing memory range",
https://docs.nvidia.com/deploy/mps/index.html, https://docs.nvidia.com/deploy/topics/topic_5_4.html; the
kernel refuses such an mmap with ENOMEM past ``RLIMIT_AS``, https://man7.org/linux/man-pages/man2/getrlimit.2.html).
Rather than judge a limit by a threshold, a worker whose CUDA step failed calls :func:`differential`: the
same steps (cuInit, a context, a 1 MiB allocation) in a fresh child with the soft limits raised; if that
passes, one limit at a time names the one that matters. Only a failing step pays for it.

``python -m gpudoctor.process.limits NAME[,NAME...]`` is that child: it raises the named limits (the hard one
too where setrlimit lets it: that attempt, not the uid, says whether this process may), runs the steps and
prints one JSON line ``{"raised": {NAME: [soft, hard] | "not raised: why"}, "hard_raise": bool|None (None: no
hard limit needed raising), "cuInit": err, "context": err|None, "ok": bool}``.
"""
from __future__ import annotations

import json
import os
import resource
import sys
import time

#: The limits a CUDA or NCCL process can run into, most likely first (the order the single reruns try).
#: RLIMIT_CORE is left out: it only decides whether a crash writes a core file.
NAMES = ("RLIMIT_AS", "RLIMIT_DATA", "RLIMIT_MEMLOCK", "RLIMIT_STACK", "RLIMIT_NOFILE", "RLIMIT_NPROC")
#: Longest one rerun child may take, and all of one differential's reruns together (s): the worker that
#: calls it has its own timeout (10 s for the CUDA worker).
RERUN_TIMEOUT = 5.0
DIFFERENTIAL_BUDGET = 6.0
_INF = resource.RLIM_INFINITY
#: A rerun raises the stack limit this far, no further (see :func:`raise_targets`).
STACK_MOST = 1 << 30


def read() -> dict:
    """``{NAME: {"soft": int|None, "hard": int|None}}`` of this process; None is unlimited. Units: bytes for
    AS, DATA, MEMLOCK and STACK; a count for NOFILE (descriptors) and NPROC (processes and threads of the user)."""
    out = {}
    for name in NAMES:
        soft, hard = resource.getrlimit(getattr(resource, name))
        out[name] = {"soft": None if soft == _INF else soft, "hard": None if hard == _INF else hard}
    return out


def privileged():
    """Whether this process holds CAP_SYS_RESOURCE (capabilities(7)), read from CapEff in /proc/self/status:
    True/False, None when unreadable. Never judged from the uid: root in a container usually lacks it. What the
    rerun may do is decided by trying (:func:`raise_targets`); this is the fact for the report."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("CapEff:"):
                    return bool(int(line.split()[1], 16) >> 24 & 1)  # CAP_SYS_RESOURCE = 24
    except (OSError, ValueError, IndexError):
        pass
    return None


def raise_targets(name: str) -> list:
    """The (soft, hard) pairs a rerun tries for ``name``, most first; [] when the soft limit is already the most.
    Raising a hard limit succeeds only with CAP_SYS_RESOURCE (setrlimit(2): EPERM otherwise), so the first
    pair lifts the hard limit and the next, where there is room, only the soft one up to the hard."""
    soft, hard = resource.getrlimit(getattr(resource, name))
    if name == "RLIMIT_STACK":  # an unlimited stack switches the kernel to the legacy mmap layout: keep it finite
        if soft != _INF and soft >= STACK_MOST or soft == _INF:
            return []
        out = [(STACK_MOST, STACK_MOST)] if hard != _INF and hard < STACK_MOST else []
        top = STACK_MOST if hard == _INF else min(hard, STACK_MOST)
        return out + ([(top, hard)] if top > soft else [])
    if soft == _INF:
        return []
    most = _nr_open() if name == "RLIMIT_NOFILE" else _INF  # NOFILE can never be unlimited (setrlimit(2))
    if most != _INF and soft >= most:
        return []
    return [(most, most)] + ([(hard, hard)] if hard != _INF and soft < hard else [])


def _nr_open():
    """/proc/sys/fs/nr_open: the ceiling of RLIMIT_NOFILE, even for a privileged process (proc(5))."""
    try:
        with open("/proc/sys/fs/nr_open") as fh:
            return int(fh.read())
    except (OSError, ValueError):
        return 1 << 20


def raisable() -> list:
    """The limits a rerun tries to raise (those not unlimited), in :data:`NAMES` order."""
    return [n for n in NAMES if raise_targets(n)]


def driver_present() -> bool:
    """A kernel driver CUDA could reach (Linux module, or WSL's /dev/dxg): without one, no limit is the cause."""
    return os.path.exists("/proc/driver/nvidia/version") or os.path.exists("/dev/dxg")


def _try(names, deadline: float) -> dict:
    """One rerun child with ``names`` raised; its JSON, or ``{"ok": False, "error": ...}``."""
    from gpudoctor.process.subproc import run

    left = deadline - time.monotonic()
    if left <= 0.5:
        return {"ok": False, "error": "no time left for this rerun"}

    env = dict(os.environ)
    pkg_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = pkg_parent + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    res = run([sys.executable, "-m", "gpudoctor.process.limits", ",".join(names)], timeout=min(RERUN_TIMEOUT, left), env=env)
    lines = res.stdout.strip().splitlines()
    try:
        return json.loads(lines[-1])
    except (ValueError, IndexError):
        return {"ok": False, "error": res.error or f"exited with {res.returncode}",
                "stderr_tail": res.stderr[-500:]}


def differential(failed_step: str, failure: str) -> dict:
    """Rerun the CUDA steps under the same limits (the baseline must fail too, else the limits are not what
    failed), then with every finite limit raised as far as this process may (hard ones too where setrlimit
    allows it), then (if that passed) with one at a time.

    Returns ``{"failed_step", "failure", "limits": read(), "privileged": bool|None (CAP_SYS_RESOURCE, from the
    rerun's own setrlimit of a hard limit where it tried one, else CapEff), "baseline": child result,
    "raised": [names the rerun did raise], "not_raised": {name: why} (finite limits it could not raise, so
    never tested), "all_raised": child result, "cause": [names]|None, "verified": bool, "reruns": int}``, or with
    ``"skipped": why`` when no rerun was made (no kernel driver, every limit unlimited)."""
    out = {"failed_step": failed_step, "failure": failure, "limits": read(), "privileged": privileged()}
    if not driver_present():
        return dict(out, skipped="no NVIDIA kernel driver: no limit can be the cause")
    names = raisable()
    if not names:
        return dict(out, skipped="every limit is already unlimited")
    deadline = time.monotonic() + DIFFERENTIAL_BUDGET
    base = _try([], deadline)
    out.update(baseline=base, reruns=1, cause=None, verified=False)
    if base.get("ok"):  # the steps pass under the same limits: what failed was something else (a kernel, a module)
        return out
    both = _try(names, deadline)
    got = both.get("raised") or {}
    done = [n for n in names if isinstance(got.get(n), list)]
    out.update(raised=done, not_raised={n: got.get(n) or both.get("error") or "not tried" for n in names if n not in done},
               all_raised=both, reruns=2)
    if both.get("hard_raise") is not None:
        out["privileged"] = both["hard_raise"]
    if not both.get("ok"):
        return out  # fails with every limit it could raise raised: those are not the cause
    if len(done) == 1:
        return dict(out, cause=done, verified=True)
    for name in done:  # most likely first; stops at the first that alone brings CUDA back
        one = _try([name], deadline)
        out["reruns"] += 1
        if one.get("ok"):
            return dict(out, cause=[name], verified=True, single=one)
    return dict(out, cause=done, verified=True)  # only together: name them all


def _cuda_steps() -> dict:
    """cuInit, the primary context of device 0 and a 1 MiB allocation: the first things every CUDA program does."""
    from gpudoctor.process.cuda_bindings import binding, call

    driver = binding("driver")
    res = {"cuInit": call(driver.cuInit, 0)[0], "context": None}
    if res["cuInit"] != "CUDA_SUCCESS":
        return res
    err, dev = call(driver.cuDeviceGet, 0)
    if err != "CUDA_SUCCESS":
        res["context"] = f"cuDeviceGet: {err}"
        return res
    err, ctx = call(driver.cuDevicePrimaryCtxRetain, dev)
    if err != "CUDA_SUCCESS":
        res["context"] = f"cuDevicePrimaryCtxRetain: {err}"
        return res
    try:
        err, _ = call(driver.cuCtxSetCurrent, ctx)
        err2, ptr = call(driver.cuMemAlloc, 1 << 20) if err == "CUDA_SUCCESS" else (err, None)
        res["context"] = "CUDA_SUCCESS" if err2 == "CUDA_SUCCESS" else f"cuMemAlloc: {err2}"
        if ptr is not None:
            driver.cuMemFree(ptr)
    finally:
        driver.cuDevicePrimaryCtxRelease(dev)
    return res


def main(argv) -> int:
    names = [n for n in (argv[0].split(",") if argv else []) if n in NAMES]
    raised, hard_raise = {}, None
    for name in names:
        res_id = getattr(resource, name)
        hard_before = resource.getrlimit(res_id)[1]
        why = "already at its most"
        for target in raise_targets(name):
            lifts_hard = hard_before != _INF and (target[1] == _INF or target[1] > hard_before)
            try:
                resource.setrlimit(res_id, target)
            except (ValueError, OSError) as exc:  # Python reports EPERM as "not allowed to raise maximum limit"
                why = f"not raised: {exc}"
                if lifts_hard and hard_raise is None:
                    hard_raise = False
                continue
            hard_raise = True if lifts_hard else hard_raise
            raised[name] = [None if v == _INF else v for v in target]
            break
        else:
            raised[name] = why
    try:
        res = _cuda_steps()
    except Exception as exc:  # noqa: BLE001 - the binding's failure is the answer
        res = {"error": f"{type(exc).__name__}: {exc}"}
    res["raised"] = raised
    res["hard_raise"] = hard_raise
    res["ok"] = res.get("cuInit") == "CUDA_SUCCESS" and res.get("context") == "CUDA_SUCCESS"
    sys.stdout.write("\n" + json.dumps(res) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
