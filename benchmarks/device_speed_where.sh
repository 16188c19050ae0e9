#!/usr/bin/env bash
# Where the warm check's time goes, this checkout against others (every .carry/*/ with a gpudoctor/: base is
# `git archive bedf95a`, from before issue 24; others are variants to compare), on one machine, interleaved: each
# round runs benchmarks/check_phases.py once per checkout, with and without the smoke tests. Then the healthy
# report of this checkout (-v and JSON) and the interleaved wall-clock bench. Outputs under $OUT.
set -u
. "$(dirname "$0")/device_env.sh"
site=${PYTHONPATH#*:}
here=$PWD
roots=()
for d in "$PWD"/.carry/*/; do [ -d "$d/gpudoctor" ] && roots+=("${d%/}"); done  # base first: sorted by name
roots+=("$PWD")
for root in "${roots[@]}"; do  # fill every cache (smoke builds, worker answers) and the .pyc files
  (cd "$root" && PYTHONPATH="$root:$site" python3 -m gpudoctor check >/dev/null 2>&1; PYTHONPATH="$root:$site" python3 -m gpudoctor check >/dev/null 2>&1)
done
for round in $(seq "${ROUNDS:-5}"); do
  for root in "${roots[@]}"; do
    name=$(basename "$root"); [ "$root" = "$PWD" ] && name=this
    for opt in "" "--no-smoke"; do
      (cd "$root" && PYTHONPATH="$root:$site" python3 "$here/benchmarks/check_phases.py" $opt) \
        | sed "s/^{/{\"root\": \"$name\", \"opt\": \"$opt\", /" >> "$OUT/phases.jsonl"
    done
  done
done
python3 - "$OUT/phases.jsonl" <<'PY' | tee "$OUT/phases_summary.txt"
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
for opt in ("", "--no-smoke"):
    print(f"== check {opt or '(warm, smoke)'}: medians (s)")
    names = sorted({r["root"] for r in rows})
    keys = sorted({k for r in rows for k in r["phases"]})
    print(f"{'phase':18}" + "".join(f"{n:>10}" for n in names))
    med = lambda n, f: statistics.median([f(r) for r in rows if r["root"] == n and r["opt"] == opt] or [float('nan')])
    print(f"{'total':18}" + "".join(f"{med(n, lambda r: r['total']):10.3f}" for n in names))
    print(f"{'mean total':18}" + "".join(f"{statistics.mean([r['total'] for r in rows if r['root'] == n and r['opt'] == opt]):10.3f}" for n in names))
    print(f"{'cpu self':18}" + "".join(f"{med(n, lambda r: r.get('cpu', {}).get('self', 0)):10.3f}" for n in names))
    for k in keys:
        print(f"{k:18}" + "".join(f"{med(n, lambda r: r['phases'].get(k, 0)):10.3f}" for n in names))
    tasks = sorted({t for r in rows for t in r.get("workers", {})})
    for t in tasks:  # each worker task's first answer: its end, from the probes' start
        print(f"worker {t:11}" + "".join(f"{med(n, lambda r: (r.get('workers', {}).get(t) or [[0, 0]])[0][1]):10.3f}" for n in names))
    probes = sorted({p for r in rows for p in r["probes"]})
    for p in probes:
        print(f"probe {p:12}" + "".join(f"{med(n, lambda r: r['probes'].get(p, [0, 0, 0])[1]):10.3f}" for n in names)
              + "   (end; start, cpu of this: " + ", ".join(f"{med('this', lambda r: r['probes'].get(p, [0, 0, 0])[i]):.3f}" for i in (0, 2)) + ")")
PY
for round in $(seq "${SAMPLED:-2}"); do  # the same with a sampling profile of every thread (slower: not for timing)
  for root in "${roots[@]}"; do
    name=$(basename "$root"); [ "$root" = "$PWD" ] && name=this
    (cd "$root" && PHASES_SAMPLE=1 PYTHONPATH="$root:$site" python3 "$here/benchmarks/check_phases.py") \
      | sed "s/^{/{\"root\": \"$name\", /" >> "$OUT/sampled.jsonl"
  done
done
python3 -m gpudoctor check -v > "$OUT/healthy_this_v.txt" 2>&1
python3 -m gpudoctor check --json -o "$OUT/healthy_this.json" > /dev/null 2>&1
(cd .carry/base && PYTHONPATH="$PWD:$site" python3 -m gpudoctor check -v > "$OUT/healthy_base_v.txt" 2>&1)
RUNS=${RUNS:-5} bash benchmarks/device_bench_interleaved.sh
