#!/usr/bin/env bash
# One batched run on the lent GPU machine (device tool) for `gpudoctor install` / `gpudoctor matrix`:
# plans for the detected machine (OS, GPU, driver, Python), --from-check, matrix queries about the real
# GPU and driver, and the installed torch's real arch list next to frameworks.json's. Outputs under $OUT.
set -u
# shellcheck source=benchmarks/device_env.sh
. "$(dirname "$0")/device_env.sh"
gd() { python3 -m gpudoctor "$@"; }
nvidia-smi -L
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
drv=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)
{
  echo "== gpudoctor check --no-smoke"; COLUMNS=120 gd check --no-smoke; echo "exit=$?"
  echo "== gpudoctor install (auto)"; gd install; echo "exit=$?"
  echo "== gpudoctor install --torch latest --tensorrt latest --json"; gd install --torch latest --tensorrt latest --json; echo "exit=$?"
  echo "== gpudoctor install --from-check --json"; gd install --from-check --json; echo "exit=$?"
  echo "== gpudoctor install --cuda 12.4 --torch latest (minor-version compat on this driver?)"; gd install --cuda 12.4 --torch latest --json; echo "exit=$?"
  echo "== gpudoctor matrix gpu '$name'"; gd matrix gpu "$name"; echo "exit=$?"
  echo "== gpudoctor matrix driver $drv"; gd matrix driver "$drv" | head -4; echo "exit=$?"
  echo "== real torch arch list vs frameworks.json"
  python3 - <<'PY'
import torch
from gpudoctor.matrix import load_matrix
real = torch.cuda.get_arch_list()
print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(), "archs", real)
rel = load_matrix().torch_release(torch.__version__)
b = rel.build(torch.version.cuda) if rel else None
print("matrix build:", b)
if b:
    sass = sorted(a for a in real if a.startswith("sm_")); ptx = sorted(a for a in real if a.startswith("compute_"))
    print("sass equal:", sorted(b.sass) == sass, "ptx equal:", sorted(b.ptx) == ptx)
PY
} > "$OUT/install-run.txt" 2>&1
cat "$OUT/install-run.txt"
