"""Each probe alone, one after another, in this process: CPU and wall seconds (where a check's time goes
when the probes are not competing for the interpreter). Usage: python benchmarks/probe_costs.py [--smoke]"""
from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    t = time.process_time()
    w = time.perf_counter()
    import gpudoctor.probes as probes
    from gpudoctor.probes.libfind import index_for
    from gpudoctor.process.runner import ProbeContext

    print(f"{'import probes':16} cpu {time.process_time() - t:6.3f}  wall {time.perf_counter() - w:6.3f}")
    ctx = ProbeContext(smoke="--smoke" in sys.argv, timeout=10)
    t, w = time.process_time(), time.perf_counter()
    index_for(ctx)
    print(f"{'library index':16} cpu {time.process_time() - t:6.3f}  wall {time.perf_counter() - w:6.3f}")
    for p in probes.ALL:
        t, w = time.process_time(), time.perf_counter()
        try:
            p.func(ctx)
        except Exception as exc:  # noqa: BLE001 - a benchmark: show it and go on
            print(p.name, "error:", exc)
        print(f"{p.name:16} cpu {time.process_time() - t:6.3f}  wall {time.perf_counter() - w:6.3f}")
    t, w = time.process_time(), time.perf_counter()
    from gpudoctor.matrix import load_matrix

    load_matrix()
    print(f"{'matrix':16} cpu {time.process_time() - t:6.3f}  wall {time.perf_counter() - w:6.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
