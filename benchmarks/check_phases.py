"""Where one warm `gpudoctor check` spends its wall time: the main thread's phases and each probe thread's
span, in one process, for whichever gpudoctor is first on sys.path (so that the same harness measures this
checkout and an older one).

Prints one JSON object: ``phases`` (seconds from the harness's start: ``import`` of gpudoctor.cli, ``setup``,
``matrix``, ``rules_import``, ``wait`` for the probes, ``evaluate``, ``annotate``, ``render`` = the rest to
``main``'s return) and ``probes`` ({name: [start, end, thread CPU seconds]}, from the probes' start). Phases
an older checkout lacks are absent. Usage: python benchmarks/check_phases.py [check options]
"""
from __future__ import annotations

import dataclasses
import json
import sys
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

    import gpudoctor.cli as cli
    import gpudoctor.check as check
    import gpudoctor.rules as rules

    phases["import"] = time.perf_counter() - T0
    spans = {}
    started = {}

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
    out = sys.stdout
    sys.stdout = open("/dev/null", "w")
    t = time.perf_counter()
    try:
        code = cli.main(["check"] + sys.argv[1:])
    finally:
        sys.stdout.close()
        sys.stdout = out
    total = time.perf_counter() - T0
    known = sum(v for k, v in phases.items() if k not in ("import",))
    phases["main"] = time.perf_counter() - t
    phases["render_and_rest"] = phases["main"] - known
    print(json.dumps({"exit": code, "total": round(total, 4), "phases": {k: round(v, 4) for k, v in phases.items()},
                      "probes": spans}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
