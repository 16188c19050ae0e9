#!/usr/bin/env bash
# What importing gpudoctor costs on the GPU machine, this checkout against .carry/base: (1) the probe and rule
# modules imported alone, single-threaded, fresh process each time; (2) -X importtime of a warm
# `check --json --no-smoke` (contended: the probe threads run meanwhile), summed per module; (3) the file
# system: opening and reading this checkout's .pyc files. Outputs under $OUT.
set -u
. "$(dirname "$0")/device_env.sh"
site=${PYTHONPATH#*:}
here=$PWD
for root in "$PWD/.carry/base" "$PWD"; do
  (cd "$root" && PYTHONPATH="$root:$site" python3 -m gpudoctor check --json >/dev/null 2>&1; PYTHONPATH="$root:$site" python3 -m gpudoctor check --json --no-smoke >/dev/null 2>&1)
done
for i in $(seq "${ROUNDS:-5}"); do
  for root in "$PWD/.carry/base" "$PWD"; do
    name=base; [ "$root" = "$PWD" ] && name=this
    (cd "$root" && PYTHONPATH="$root:$site" python3 -c "
import sys, time
t = time.perf_counter(); import gpudoctor.check, gpudoctor.cli; a = time.perf_counter() - t
import gpudoctor.probes as p; p.ALL; b = time.perf_counter() - t - a
import gpudoctor.rules as r; r._rules(); c = time.perf_counter() - t - a - b
n = sum(m.startswith('gpudoctor') for m in sys.modules)
print('$name', 'cli+check %.4f probes %.4f rules %.4f modules %d' % (a, b, c, n))") | tee -a "$OUT/imports_alone.txt"
    (cd "$root" && PYTHONPATH="$root:$site" python3 -X importtime -m gpudoctor check --json --no-smoke 2>"$OUT/importtime_${name}_$i.txt" >/dev/null)
  done
done
python3 - "$OUT" <<'PY' | tee "$OUT/importtime_summary.txt"
import glob, re, statistics, sys
out = sys.argv[1]
for name in ("base", "this"):
    runs = []
    for f in sorted(glob.glob(f"{out}/importtime_{name}_*.txt")):
        d = {}
        for line in open(f):
            m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|(\s+)(\S+)", line)
            if m:
                d[m.group(4)] = int(m.group(1))
        runs.append(d)
    ours = [sum(v for k, v in r.items() if k.startswith("gpudoctor")) / 1e6 for r in runs]
    print(name, "gpudoctor modules self time (s):", " ".join(f"{x:.3f}" for x in ours), "count", len([k for k in runs[0] if k.startswith("gpudoctor")]))
    keys = {k for r in runs for k in r}
    med = sorted(((statistics.median([r.get(k, 0) for r in runs]), k) for k in keys), reverse=True)
    print("  top:", ", ".join(f"{k} {v/1000:.1f}ms" for v, k in med[:25]))
PY
python3 - <<'PY' | tee "$OUT/fs.txt"
import glob, os, time
files = glob.glob("gpudoctor/**/__pycache__/*.pyc", recursive=True)
t = time.perf_counter()
for f in files:
    with open(f, "rb") as fh:
        fh.read()
dt = time.perf_counter() - t
print(f"{len(files)} .pyc files opened and read in {dt*1000:.1f} ms ({dt/len(files)*1e6:.0f} us each); filesystem:", os.popen("df -T . | tail -1").read().strip())
PY
