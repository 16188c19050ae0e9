#!/usr/bin/env bash
# Issue 10 on the lent GPU machine: a healthy check, every FAKE-tool fault, the real toolkit stub libcuda,
# explain on the stub's own error, and -o under SIGKILL. Carry .whl (distro, ahocorasick-rs) and .carry
# (Debian's stub libcuda.so/libnvidia-ml.so, used only when the machine's toolkit has no stubs/).
set -u
# shellcheck source=benchmarks/device_env.sh
. "$(dirname "$0")/device_env.sh"
gd() { python3 -m gpudoctor "$@"; }
{
  echo "== healthy check (wall, then report)"
  /usr/bin/time -f "wall %e s, max RSS %M KiB" python3 -m gpudoctor check -o "$OUT/healthy.txt"; echo "exit=$?"
  cat "$OUT/healthy.txt"
  STUBS=$(find /usr/local/cuda*/ /usr/lib/x86_64-linux-gnu/ /opt -path '*stubs/libcuda.so' 2>/dev/null | head -1 | xargs -r dirname)
  echo "== toolkit stub found here: ${STUBS:-none (using carried Debian stub)}"
  [ -n "$STUBS" ] || STUBS=$PWD/.carry
  python3 benchmarks/device_faults.py "$OUT/faults" "$STUBS"
  echo "== a real program on the stub, and explain on it"
  mkdir -p /tmp/so1 && ln -sf "$STUBS/libcuda.so" /tmp/so1/libcuda.so.1
  LD_LIBRARY_PATH=/tmp/so1 python3 -c "import ctypes; print('cuInit ->', ctypes.CDLL('libcuda.so.1').cuInit(0))"
  LD_LIBRARY_PATH=/tmp/so1 python3 -c "import torch; torch.zeros(1).cuda()" > "$OUT/torch-stub.log" 2>&1; echo "torch exit=$?"; tail -2 "$OUT/torch-stub.log"
  COLUMNS=200 gd explain "$OUT/torch-stub.log" | head -12
  echo "== -o under SIGKILL"
  gd check --json --no-smoke -o "$OUT/node.json"; prev=$(md5sum < "$OUT/node.json")
  for d in 0.1 0.4 0.8 1.2; do
    python3 -m gpudoctor check --json --no-smoke -o "$OUT/node.json" & pid=$!; sleep "$d"; kill -9 $pid; wait $pid 2>/dev/null
    python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$OUT/node.json" && echo "killed after $d s: node.json complete ($( [ "$(md5sum < "$OUT/node.json")" = "$prev" ] && echo previous || echo new))"
    prev=$(md5sum < "$OUT/node.json")
  done
} > "$OUT/faults-run.txt" 2>&1
cat "$OUT/faults-run.txt"
