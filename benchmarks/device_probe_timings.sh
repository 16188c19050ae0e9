set -u
. benchmarks/device_env.sh
site=${PYTHONPATH#*:}
export NO_COLOR=1
for root in "$PWD/.carry/base" "$PWD"; do (cd $root; export XDG_CACHE_HOME=/tmp/vt-$(basename $root); PYTHONPATH=$root:$site python3 -m gpudoctor check >/dev/null 2>&1; PYTHONPATH=$root:$site python3 -m gpudoctor check >/dev/null 2>&1); done
for i in 1 2 3; do
  for root in "$PWD/.carry/base" "$PWD"; do
    (cd $root; export XDG_CACHE_HOME=/tmp/vt-$(basename $root)
     s=$(date +%s.%N); PYTHONPATH=$root:$site python3 -m gpudoctor check -v > /tmp/v.txt 2>&1; e=$(date +%s.%N)
     echo "$(basename $root) wall=$(python3 -c "print(round($e-$s,3))") $(grep -o 'took [0-9.]* s' /tmp/v.txt) | $(grep 'probe timings' /tmp/v.txt | cut -c1-400)")
  done
done
cd "$PWD"; PYTHONPATH=$PWD:$site XDG_CACHE_HOME=/tmp/vt-main python3 -X importtime -m gpudoctor check --json 2>&1 >/dev/null | sort -t'|' -k2 -n -r | head -25
