"""Issue 10 on a real machine: FAKE tools first on PATH (hang, signal, exit 127, garbage, non-UTF-8, 100 MB)
for nvcc, ptxas, nvidia-smi, gcc/g++ and ldconfig, and the REAL toolkit stub libcuda on LD_LIBRARY_PATH.
Prints, per run: wall seconds against --timeout + 3, the exit code, and the warn/fail findings that name the
fake's path (or the stub). Usage: python3 benchmarks/device_faults.py [OUTDIR] [STUB_DIR]"""
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from test_faults import FAULTS, fake_tool, naming  # noqa: E402  (the same FAKE tools as the test suite)

from pathlib import Path  # noqa: E402

OUT = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
STUBS = sys.argv[2] if len(sys.argv) > 2 else None
TIMEOUT = 8.0


def check(env_extra, args=(), tag="run"):
    env = dict(os.environ, NO_COLOR="1")
    env.update(env_extra)
    out = OUT / f"{tag}.json"
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "gpudoctor", "check", "--json", "--timeout", str(TIMEOUT), "-o", str(out),
                        *args], env=env, capture_output=True, text=True, timeout=TIMEOUT + 60)
    wall = time.monotonic() - t0
    rep = json.loads(out.read_text()) if out.exists() else {"findings": []}
    return rep, wall, p.returncode


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    rows = []
    for tool in ("nvcc", "ptxas", "nvidia-smi", "gcc", "ldconfig"):
        for fault in FAULTS:
            d = Path(tempfile.mkdtemp(prefix=f"fake-{tool}-"))
            fakes = [fake_tool(d, n, fault) for n in (("gcc", "g++") if tool == "gcc" else (tool,))]
            rep, wall, rc = check({"PATH": f"{d}:{os.environ['PATH']}"}, tag=f"{tool}-{fault}")
            named = [f for x in fakes for f in naming(rep, x)]
            ok = wall <= TIMEOUT + 3 and bool(named)
            rows.append((tool, fault, wall, rc, ok, named))
    print(f"{'tool':10} {'fault':8} {'wall s':>6} rc  verdict  findings naming the FAKE (severity id: title)")
    for tool, fault, wall, rc, ok, named in rows:
        first = named[0] if named else None
        print(f"{tool:10} {fault:8} {wall:6.2f} {rc:2}  {'OK' if ok else 'MISSED':7}  "
              + (f"{first['severity']} {first['id']}: {first['title'][:150]}" if first else "-")
              + (f"  (+{len(named) - 1} more)" if len(named) > 1 else ""))
    if STUBS:
        for label, ld in (("stub dir on LD_LIBRARY_PATH", STUBS), ("stub linked as libcuda.so.1", _so1(STUBS))):
            rep, wall, rc = check({"LD_LIBRARY_PATH": ld}, args=("--no-smoke",), tag="stub")
            print(f"\n== {label} (LD_LIBRARY_PATH={ld}): wall {wall:.2f} s, exit {rc}")
            for f in rep["findings"]:
                if f["severity"] in ("warn", "fail"):
                    print(f"  {f['severity']} {f['id']}: {f['title'][:200]}")
                    if f["id"] == "driver.stub_library":
                        print(f"      stub said: {f['evidence'].get('stub_answer')}; fix: {f['fixes'][0]['commands'][0]}")
    print(f"\n{sum(r[4] for r in rows)}/{len(rows)} fault runs named the fake within --timeout {TIMEOUT:g} + 3 s")


def _so1(stubs):
    d = tempfile.mkdtemp(prefix="stub-so1-")
    os.symlink(os.path.join(stubs, "libcuda.so"), os.path.join(d, "libcuda.so.1"))
    return d


if __name__ == "__main__":
    main()
