"""Random install plans checked against the indexes they fetch from (issue 26): counts and generation times.

N seeded random plans (GPU x OS x driver x pins x pip-only x format, all formats) are solved with the index
oracle and verified (gpudoctor.install.verify) against the indexes this machine reaches (PyPI, Debian's
archive; download.pytorch.org and NVIDIA's repositories are unverified here, and the plans say so). Printed:
how many requirements were checked, served, not served (refused plans are counted apart: a pin the index does
not serve is refused on purpose), unverified with their reasons; then the wall time of `gpudoctor install`
for a sample of the plans as a fresh process with --offline (what a plan cost before the checks), a warm cache
and a cold (empty) cache bounded by --index-timeout. Exit 1 when a printed plan holds a requirement a
reachable index does not serve.

Usage: python benchmarks/plans_verified.py [--plans 200] [--seed 26] [--sample 8] [--index-timeout 5]
"""
from __future__ import annotations

import argparse
import collections
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from gpudoctor.install.command import plan_to_dict  # noqa: E402
from gpudoctor.install.formats import FormatError, render  # noqa: E402
from gpudoctor.install.solver import GpuTarget, Pins, PlanError, Target, solve  # noqa: E402
from gpudoctor.install.verify import NOT_SERVED, SERVED, UNVERIFIED, IndexSession, verify_plan  # noqa: E402
from gpudoctor.matrix import load_matrix  # noqa: E402

M = load_matrix()


def random_request(rng: random.Random) -> dict:
    """One user's request: the CLI options of `gpudoctor install` (mostly ones the matrix can satisfy)."""
    from gpudoctor.install.formats import _BASE_IMAGES

    os_ = rng.choice(M.oses())
    gpu = rng.choice(M.gpus())
    req = {"os": os_.os, "gpu": (gpu.example, gpu.cc), "driver": rng.choice(["keep", "install", "install"]),
           "driver_version": rng.choice(sorted({r.min_driver_linux for r in M.cuda_releases() if r.min_driver_linux})),
           "cuda": rng.choice([None] * 6 + ["11", "12", "13"] + [r.cuda for r in M.cuda_releases()[-6:]]),
           "cudnn": rng.choice([None, None, "none", "9", "8"]),
           "tensorrt": rng.choice(["none", "latest", "latest", "11", "10"] + [r.tensorrt for r in M.tensorrt_releases()[-3:]]),
           "torch": rng.choice(["none", "latest", "latest"] + [r.torch for r in M.torch_releases()[-3:]]),
           "pip_only": rng.random() < 0.4}
    linux = ["sh", "json"] + (["dockerfile"] if os_.os in _BASE_IMAGES else [])
    req["format"] = rng.choice(["ps1", "json"]) if os_.family == "windows" else rng.choice(linux)
    return req


def argv(req: dict) -> list:
    out = ["install", "--os", req["os"], "--gpu", req["gpu"][1], "--driver", req["driver"],
           "--driver-version", req["driver_version"], "--cudnn", req["cudnn"] or "auto",
           "--tensorrt", req["tensorrt"], "--torch", req["torch"]]
    out += ["--cuda", req["cuda"]] if req["cuda"] else []
    out += ["--pip-only"] if req["pip_only"] else []
    out += ["--json"] if req["format"] == "json" else ["--format", req["format"]]
    return out


def plan_of(req: dict, session: IndexSession):
    target = Target(M.os_info(req["os"]), GpuTarget(*req["gpu"]), req["driver_version"], req["driver"])
    pins = Pins(cuda=req["cuda"], cudnn=req["cudnn"], tensorrt=req["tensorrt"], torch=req["torch"],
                pip_only=req["pip_only"])
    plan = solve(M, target, pins, served=session.unserved)
    verification = verify_plan(plan, session=session)
    if req["format"] == "json":
        plan_to_dict(plan, verification)
    else:
        render(plan, req["format"], verification)
    return plan, verification


def _cli_seconds(args: list, cache: str) -> float:
    env = dict(os.environ, XDG_CACHE_HOME=cache)
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "gpudoctor"] + args, cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=600)
    took = time.perf_counter() - t
    if out.returncode != 0:
        raise RuntimeError(f"gpudoctor {' '.join(args)}: exit {out.returncode}: {out.stderr.strip()[:300]}")
    return took


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--plans", type=int, default=200, help="printed plans to reach (requests refused by the "
                                                           "matrix or the index do not count)")
    ap.add_argument("--seed", type=int, default=26)
    ap.add_argument("--sample", type=int, default=8, help="plans timed as fresh processes")
    ap.add_argument("--index-timeout", type=float, default=5.0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    cache = tempfile.mkdtemp(prefix="plans-verified-cache-")
    os.environ["XDG_CACHE_HOME"] = cache  # the run's own cache: cold at the start

    status = collections.Counter()
    reasons = collections.Counter()
    refused = collections.Counter()
    bad_plans = []
    requirements = set()
    planned, formats = [], collections.Counter()
    t0 = time.perf_counter()
    asked = 0
    while len(planned) < args.plans and asked < 20 * args.plans:
        asked += 1
        req = random_request(rng)
        session = IndexSession(timeout=args.index_timeout)
        try:
            plan, ver = plan_of(req, session)
        except PlanError as exc:
            why = exc.reasons[0] if exc.reasons else exc.summary
            refused["not served" if " is not on " in why else "matrix conflict"] += 1
            continue
        except FormatError:
            refused["format impossible for the OS"] += 1
            continue
        planned.append(req)
        formats[req["format"]] += 1
        for c in ver.checks:
            status[c.status] += 1
            requirements.add((c.kind, c.requirement, c.index))
            if c.status == UNVERIFIED:
                reasons[f"{c.kind}: {c.reason}"[:160]] += 1
            if c.status == NOT_SERVED:
                bad_plans.append((argv(req), c.reason))
    took = time.perf_counter() - t0
    print(f"plans: {asked} requested (seed {args.seed}), {len(planned)} printed "
          f"({', '.join(f'{k} {v}' for k, v in sorted(formats.items()))}), refused: "
          + (", ".join(f"{k} {v}" for k, v in refused.items()) or "none") + f"; {took:.1f} s in all")
    print(f"requirements checked: {sum(status.values())} ({len(requirements)} distinct): served {status[SERVED]}, "
          f"not served {status[NOT_SERVED]}, unverified {status[UNVERIFIED]}")
    for reason, n in reasons.most_common(12):
        print(f"  unverified x{n}: {reason}")
    for a, reason in bad_plans[:10]:
        print(f"  NOT SERVED in a printed plan: gpudoctor {' '.join(a)}: {reason}")

    sample = rng.sample(planned, min(args.sample, len(planned)))
    rows = []
    for req in sample:
        a = argv(req)
        with tempfile.TemporaryDirectory() as empty, tempfile.TemporaryDirectory() as cold:
            offline = _cli_seconds(a + ["--offline"], empty)
            c = _cli_seconds(a + ["--index-timeout", str(args.index_timeout)], cold)
            w = _cli_seconds(a + ["--index-timeout", str(args.index_timeout)], cold)
        rows.append((offline, w, c))
        print(f"  {offline:5.2f} s offline  {w:5.2f} s warm  {c:5.2f} s cold   gpudoctor {' '.join(a)}")
    if rows:
        extra = [w - o for o, w, _ in rows]
        print(f"generation, {len(rows)} plans as fresh processes: offline (today's) median "
              f"{statistics.median(r[0] for r in rows):.2f} s; warm cache median {statistics.median(r[1] for r in rows):.2f} s "
              f"(+{statistics.median(extra):.2f} s median, +{max(extra):.2f} s worst; target < +0.30 s); cold median "
              f"{statistics.median(r[2] for r in rows):.2f} s, worst {max(r[2] for r in rows):.2f} s "
              f"(index budget {args.index_timeout:g} s)")
    return 1 if bad_plans else 0


if __name__ == "__main__":
    sys.exit(main())
