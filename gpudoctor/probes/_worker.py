"""Run a :mod:`gpudoctor.process.worker` task in a child Python and return its JSON (or why it failed)."""
from __future__ import annotations

import json
import os
import sys
import threading

from gpudoctor.process import problems, subproc
from gpudoctor.process.subproc import run

_PKG_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_prestarted: dict = {}
_lock = threading.Lock()


_CONTEXT_TASKS = ("nvrtc-smoke", "trt-smoke", "trt-deserialize", "multigpu-smoke")  # the children that create a CUDA context


def _argv_env(python: str, env, task: str, args=()):
    env = subproc.lean_context_env(env) if task in _CONTEXT_TASKS else dict(env)
    env["PYTHONPATH"] = _PKG_PARENT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return [python, "-m", "gpudoctor.process.worker", task, *args], env


def _key(python, env, task, args) -> tuple:
    return (python, task, tuple(args), tuple(sorted(dict(env).items())))


def _task_runner(task: str, args):
    def run_task() -> int:
        from gpudoctor.process import worker

        return worker.main([task, *args])
    return run_task


def prestart(python: str, env, tasks) -> None:
    """Start the workers of ``tasks`` now (``check`` calls this first thing: a CUDA context or cuInit
    takes a few hundred ms, and the rest of the check can be imported meanwhile). The probe that asks
    for the same task with the same interpreter and environment adopts the running child."""
    for task in tasks:
        task, args = (task[0], tuple(task[1:])) if isinstance(task, tuple) else (task, ())
        key = _key(python, env, task, args)
        with _lock:
            if key in _prestarted:  # already started (the command line starts them even earlier)
                continue
            argv, wenv = _argv_env(python, env, task, args)
            if python == sys.executable and dict(env) == dict(os.environ) and subproc.can_fork():
                # this interpreter, this environment: fork instead of starting a new interpreter
                _prestarted[key] = subproc.fork_start(argv, _task_runner(task, args), wenv, name=f"gd:{task}")
            else:
                _prestarted[key] = subproc.start(argv, env=wenv)


def discard_prestarted() -> None:
    """Kill prestarted workers no probe adopted (a probe that did not run, an aborted check)."""
    with _lock:
        left = list(_prestarted.values())
        _prestarted.clear()
    for st in left:
        st.kill()


def run_worker(ctx, task: str, *args: str, timeout: float = None) -> dict:
    """The child's JSON result; ``{"worker_error": "...", "stderr_tail", "problems": [record]}`` when it
    crashed, hung or printed no JSON (the record names the child's command: ``python -m gpudoctor.process.worker TASK``)."""
    with _lock:
        started = _prestarted.pop(_key(ctx.python, ctx.env, task, args), None)
    if started is not None:
        res = started.wait(timeout=timeout or ctx.timeout)
    else:
        argv, env = _argv_env(ctx.python, ctx.env, task, args)
        res = run(argv, timeout=timeout or ctx.timeout, env=env)
    if res.error:
        return _with_differential(ctx, task, args, res, {
            "worker_error": res.error, "stderr_tail": res.stderr[-2000:], "problems": [_problem(ctx, task, args, res)]})
    last = res.stdout.strip().splitlines()[-1] if res.stdout.strip() else ""
    try:
        return json.loads(last)
    except ValueError:
        what = f"worker exited with {res.returncode} and no result"
        return _with_differential(ctx, task, args, res, {
            "worker_error": what, "stderr_tail": res.stderr[-2000:],
            "problems": [_problem(ctx, task, args, res, unparsable="JSON result")]})


def _load_differential(ctx, path: str) -> dict:
    """A library that failed to load (dlopen's error, or a crash while loading): would it load in the clean
    base? (a foreign libgcc_s or libstdc++ on LD_LIBRARY_PATH, a preload)."""
    from gpudoctor.process import differential

    def loaded(res) -> bool:
        try:
            answer = json.loads(res.stdout.strip().splitlines()[-1])[path]
        except (ValueError, IndexError, KeyError, TypeError):
            return False
        return isinstance(answer, dict) and not answer.get("load_error")

    argv, _ = _argv_env(ctx.python, ctx.env, "libversions", (path,))
    step = differential.command_step(argv, timeout=ctx.timeout, passed=loaded,
                                     env_for=lambda e: _argv_env(ctx.python, e, "libversions", (path,))[1])
    return differential.explain_failure(step, ctx.env, label=f"loading {os.path.basename(path)} ({path})",
                                        paths=[path], command=f"{ctx.python} -m gpudoctor.process.worker libversions {path}")


def _answered(res) -> bool:
    """A worker run that gave its JSON result (whatever the result says)."""
    last = res.stdout.strip().splitlines()[-1] if res.ok and res.stdout.strip() else ""
    try:
        return isinstance(json.loads(last), dict)
    except ValueError:
        return False


def _with_differential(ctx, task, args, res, failed: dict) -> dict:
    """A worker that crashed or exited without its result: did the environment do it (a damaged or foreign
    library on LD_LIBRARY_PATH, a preload, a variable)? Rerun it in the clean base and narrow the difference
    (:mod:`gpudoctor.process.differential`); never for a hang (each rerun would wait as long)."""
    from gpudoctor.process import differential

    if not differential.worth_rerunning(res):
        return failed
    argv, _ = _argv_env(ctx.python, ctx.env, task, args)
    step = differential.command_step(argv, timeout=ctx.timeout, passed=_answered,
                                     env_for=lambda e: _argv_env(ctx.python, e, task, args)[1])
    rec = failed["problems"][0]
    # The step is gpudoctor's own query, run by this interpreter: named as the program, never as what failed.
    failed["differential"] = dict(differential.explain_failure(
        step, ctx.env, label=f"gpudoctor's {task} query", paths=[p for p in (rec["path"],) if p != ctx.python],
        command=rec.get("command")), program=ctx.python)
    return failed


def _problem(ctx, task, args, res, unparsable=None) -> dict:
    rec = res.problem(unparsable=unparsable) or {}
    # The path users recognise is what the child was asked about (a library), else the interpreter.
    rec = dict(rec, path=args[0] if len(args) == 1 and os.path.isabs(args[0]) else ctx.python,
               command=f"{ctx.python} -m gpudoctor.process.worker {task}" + (" ..." if args else ""))
    rec.setdefault("kind", "exit")
    rec.setdefault("what", f"python -m gpudoctor.process.worker {task} failed")
    return rec


_asked_libraries: set = set()  # every library path this run asked a child about (see remember_asked)
MAX_EARLY_LIBRARIES = 16


def _asked_cache(env):
    from gpudoctor.process.cache import Cache

    return Cache("prestart", env=env)


def _asked_key(python: str) -> dict:
    return {"libversions_asked_by": python}


def prestart_libraries(python: str, env) -> None:
    """Start the library-version children the last check ran with this interpreter (each dlopens a
    cuDNN/NCCL/cudart copy: 100-300 ms). Only a hint: a probe adopts a child only when it asks for the
    same path with the same environment; the others are killed. The hint is a verified cache entry
    (a tampered one is dropped), and entries that are not existing absolute paths are ignored."""
    paths = _asked_cache(env).get_json(_asked_key(python))
    if not isinstance(paths, list):
        return
    good = [p for p in paths[:MAX_EARLY_LIBRARIES] if isinstance(p, str) and os.path.isabs(p) and os.path.isfile(p)]
    prestart(python, env, [("libversions", p) for p in good])


def remember_asked(python: str, env) -> None:
    """Note this run's library paths for :func:`prestart_libraries` (written only when they changed)."""
    asked = sorted(_asked_libraries)[:MAX_EARLY_LIBRARIES]
    _asked_libraries.clear()
    cache = _asked_cache(env)
    if cache.get_json(_asked_key(python)) != asked:
        cache.put_json(_asked_key(python), asked)


def ask_libraries(ctx, paths) -> dict:
    """``{path: versions}`` from :func:`gpudoctor.process.worker.task_libversions`, one child per library:
    two copies with one SONAME in one process would resolve each other's dependencies
    (seen: a pip cuDNN 9.19 shim reporting the system 9.14 after both were loaded)."""
    from concurrent.futures import ThreadPoolExecutor

    paths = list(paths)
    if not paths:
        return {}
    _asked_libraries.update(paths)
    try:
        with ThreadPoolExecutor(max_workers=min(8, len(paths))) as pool:
            answers = list(pool.map(lambda p: run_worker(ctx, "libversions", p), paths))
    except RuntimeError:  # no thread can start (a shell limit on memory or tasks): ask one after the other
        answers = [run_worker(ctx, "libversions", p) for p in paths]
    out = {}
    for p, a in zip(paths, answers):
        out[p] = a.get(p) if p in a else {"load_error": a.get("worker_error", "no answer")}
        if out[p].get("load_error"):
            rec = problems.record(p, "load_error", f"{os.path.basename(p)} fails to load: "
                                  f"{str(out[p]['load_error']).splitlines()[0][:200]}")
            if "worker_error" in a:  # the child itself died or hung while loading it: name that program too
                rec.update(command=(a.get("problems") or [{}])[0].get("command"), program=ctx.python)
            out[p]["problems"] = [rec]
            out[p]["differential"] = a.get("differential") or _load_differential(ctx, p)
    return out
