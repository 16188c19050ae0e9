#!/usr/bin/env bash
# Each probe alone, in order, for this checkout and for the pre-issue-24 code (.carry/base), three times each,
# interleaved: which probe got slower (no concurrency, so no probe hides behind another).
set -u
. "$(dirname "$0")/device_env.sh"
site=${PYTHONPATH#*:}
cat > /tmp/pt.py <<'PY'
import os, sys, time, importlib
from gpudoctor.process.runner import ProbeContext
names = ["platform","environment","driver","cuda","toolkit","compilers","cudnn","tensorrt","frameworks","nccl",
         "smoke_nvrtc","smoke_nvcc","smoke_tensorrt","engine","smoke_multigpu","loader","process_limits"]
ctx = ProbeContext(env=dict(os.environ), smoke=True, timeout=20)
t0 = time.perf_counter(); mods = {}
for n in names:
    try: mods[n] = importlib.import_module("gpudoctor.probes." + n)
    except ImportError: pass
t1 = time.perf_counter(); out = {}
for n, m in mods.items():
    s = time.perf_counter(); m.probe(ctx); out[n] = round((time.perf_counter() - s) * 1000)
print("import %d ms total %d ms" % ((t1 - t0) * 1000, sum(out.values())), out)
PY
for i in 1 2 3; do
  for root in "$PWD/.carry/base" "$PWD"; do
    (cd "$root" && XDG_CACHE_HOME=/tmp/pc-$(basename "$root") PYTHONPATH="$root:$site" python3 /tmp/pt.py 2>&1 | tail -1 | sed "s|^|$(basename "$root"): |")
  done
done
for root in "$PWD/.carry/base" "$PWD"; do
  for i in 1 2 3; do (cd "$root" && /usr/bin/time -f "$(basename "$root") nvml worker %e s" env PYTHONPATH="$root:$site" python3 -m gpudoctor.process.worker nvml >/dev/null); done
done 2>&1
