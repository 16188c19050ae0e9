"""Where one warm `gpudoctor check` spends its wall time: the main thread's phases and each probe thread's
span, in one process, for whichever gpudoctor is first on sys.path (so that the same harness measures this
checkout and an older one). ``cpu``: user+sys seconds of this process (all its threads: they share one
interpreter lock, so its Python work is the check's critical path) and of its waited-for children.

Prints one JSON object: ``phases`` (seconds from the harness's start: ``import`` of gpudoctor.cli, ``setup``,
``matrix``, ``rules_import``, ``wait`` for the probes, ``evaluate``, ``annotate``, ``render`` = the rest to
``main``'s return) and ``probes`` ({name: [start, end, thread CPU seconds]}, from the probes' start). Phases
an older checkout lacks are absent. ``workers``: {task: [[start, end], ...]} of every gpudoctor worker
child asked (run_worker), from the probes' start. With PHASES_SAMPLE=1 also ``samples``: for each probe
thread and the main thread, where it was (innermost gpudoctor frame > innermost frame) at each 2 ms tick,
the most frequent first: a sampling profile that shows waits as well as work (it costs the check a little).
Usage: python benchmarks/check_phases.py [check options]
"""
from __future__ import annotations

import collections
import dataclasses
import json
import os
import resource
import sys
import threading
import time

T0 = time.perf_counter()


def main() -> int:
    phases = {}

    def timed(name, fn):
        def inner(*a, **k):
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                phases[name] = phases.get(name, 0.0) + time.perf_counter() - t
        return inner

    import gpudoctor.probes._worker as worker  # before the probe modules import run_worker by name

    workers = collections.defaultdict(list)
    real_run_worker = worker.run_worker

    def run_worker(ctx, task, *a, **k):
        t = time.perf_counter() - started.get("t", T0)
        try:
            return real_run_worker(ctx, task, *a, **k)
        finally:
            workers[task].append([round(t, 4), round(time.perf_counter() - started.get("t", T0), 4)])

    worker.run_worker = run_worker
    started = {}
    import gpudoctor.cli as cli
    import gpudoctor.check as check
    import gpudoctor.rules as rules

    phases["import"] = time.perf_counter() - T0
    spans = {}

    def start_probes(probes, ctx):
        started["t"] = time.perf_counter()

        def wrap(p):
            def func(c):
                a, cpu = time.perf_counter(), time.thread_time()
                try:
                    return p.func(c)
                finally:
                    spans[p.name] = [round(a - started["t"], 4), round(time.perf_counter() - started["t"], 4),
                                     round(time.thread_time() - cpu, 4)]
            return dataclasses.replace(p, func=func)

        pending = real_start([wrap(p) for p in probes], ctx)
        return timed("wait", pending)

    real_start = check.start_probes
    check.start_probes = start_probes
    rules._rules = timed("rules_import", rules._rules)
    rules.evaluate = timed("evaluate", rules.evaluate)
    real_run_check = check.run_check

    def run_check(matrix, *a, setup=None, **k):
        return real_run_check(timed("matrix", matrix) if callable(matrix) else matrix, *a,
                              setup=timed("setup", setup) if setup else None, **k)

    check.run_check = run_check
    try:
        import gpudoctor.explain.annotate as annotate

        annotate.annotate = timed("annotate", annotate.annotate)
    except ImportError:  # a checkout from before the tool's words were read
        pass
    samples = collections.defaultdict(collections.Counter)
    stop = threading.Event()

    def sample():
        pkg = os.sep + "gpudoctor" + os.sep
        names = {}
        while not stop.wait(0.002):
            names.update({t.ident: t.name for t in threading.enumerate()})
            for ident, frame in sys._current_frames().items():
                name = names.get(ident, "?")
                if not (name.startswith("probe-") or name == "MainThread"):
                    continue
                inner, ours = frame, None
                f = frame
                while f is not None:
                    if ours is None and pkg in f.f_code.co_filename and "check_phases" not in f.f_code.co_filename:
                        ours = f
                    f = f.f_back
                where = (f"{os.path.basename(ours.f_code.co_filename)}:{ours.f_lineno}:{ours.f_code.co_name}" if ours else "-")
                samples[name][f"{where} > {inner.f_code.co_name}"] += 1

    sampler = threading.Thread(target=sample, daemon=True) if os.environ.get("PHASES_SAMPLE") else None
    if sampler:
        sampler.start()
    out = sys.stdout
    sys.stdout = open("/dev/null", "w")
    t = time.perf_counter()
    try:
        code = cli.main(["check"] + sys.argv[1:])
    finally:
        sys.stdout.close()
        sys.stdout = out
    total = time.perf_counter() - T0
    stop.set()
    known = sum(v for k, v in phases.items() if k not in ("import",))
    phases["main"] = time.perf_counter() - t
    phases["render_and_rest"] = phases["main"] - known
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = {"self": round(me.ru_utime + me.ru_stime, 4), "children": round(kids.ru_utime + kids.ru_stime, 4)}
    print(json.dumps({"exit": code, "total": round(total, 4), "cpu": cpu, "phases": {k: round(v, 4) for k, v in phases.items()},
                      "probes": spans, "workers": workers,
                      **({"samples": {k: v.most_common(8) for k, v in samples.items()}} if sampler else {})}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
