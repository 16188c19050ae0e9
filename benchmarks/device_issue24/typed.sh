#!/usr/bin/env bash
# Issue 24 item 4 (typed facts): a damaged driver library that answers implausible values, made for real with
# FAKE shim libraries (built here with gcc) that the loader picks through LD_LIBRARY_PATH. Each shim is named
# libnvidia-ml.so.1 / libcuda.so.1, forwards every call to the real driver library (a DT_NEEDED on its absolute
# path) and overrides one answer. Ground truth: nvidia-smi, pynvml, cuda-python and PyTorch in the same env.
# Expected in every state: probe.implausible_value naming the shim, and NO driver.version_mismatch /
# driver.too_old / framework.cuda_mismatch / arch.* finding built on the garbage value.
# Env: GD (runs gpudoctor), OUTDIR (outputs). States undo themselves (a temp dir only; trap on EXIT).
set -u
W=$(mktemp -d /tmp/FAKE-typed.XXXXXX)
trap 'rm -rf "$W"' EXIT
OUTDIR=${OUTDIR:-/tmp/typed-out}; mkdir -p "$OUTDIR"

real_of() {  # the real driver library the loader would pick (ldconfig cache), resolved
  readlink -f "$(ldconfig -p | awk -v s="$1" '$1 == s && /x86-64/ {print $NF; exit}')"
}

# build_shim SONAME REAL C_FILE DIR: libSONAME in DIR with DT_NEEDED = REAL's absolute path (via a helper whose
# soname is that path), so every symbol the shim does not define is the real library's.
build_shim() {
  local soname=$1 real=$2 src=$3 dir=$4
  mkdir -p "$dir"
  : > "$W/empty.c"
  gcc -shared -fPIC -o "$W/libFAKEreal_${soname%%.so*}.so" "$W/empty.c" -Wl,-soname,"$real" &&
  gcc -shared -fPIC -DREAL="\"$real\"" -o "$dir/$soname" "$src" -Wl,-soname,"$soname" \
      -Wl,--no-as-needed -L"$W" -l"FAKEreal_${soname%%.so*}" -ldl
}

check() {  # state name, the garbage value as it would show in a version finding's title
  $GD check --timeout 30 > "$OUTDIR/$1.txt" 2>&1; echo "exit=$?" >> "$OUTDIR/$1.txt"
  $GD check --json --timeout 30 -o "$OUTDIR/$1.json" > /dev/null 2>&1
  python3 - "$OUTDIR/$1.json" "$2" <<'PY' | tee "$OUTDIR/$1.verdict.txt"
import json, sys
r = json.load(open(sys.argv[1]))
imp = [f for f in r["findings"] if f["id"] == "probe.implausible_value"]
ver = [f for f in r["findings"] if f["id"] in ("driver.version_mismatch", "driver.too_old", "framework.cuda_mismatch",
       "driver.minor_version_compat", "driver.runtimes_ok", "driver.ptx_too_new") or f["id"].startswith("arch.")]
bad = [f for f in ver if sys.argv[2] in f["title"] or sys.argv[2] in json.dumps(f["evidence"])]
for f in imp: print("IMPLAUSIBLE:", f["title"])
for f in ver: print("version finding:", f["id"], f["severity"], f["title"])
for f in bad: print("BUILT ON THE GARBAGE (should be none):", f["id"], f["title"])
print("verdict:", "OK" if imp and not bad else "CHECK BY HAND")
PY
}

NVML_REAL=$(real_of libnvidia-ml.so.1)
CUDA_REAL=$(real_of libcuda.so.1)
echo "real libnvidia-ml: $NVML_REAL; real libcuda: $CUDA_REAL"

# --- state 1: libnvidia-ml says the driver version is "1" (the issue's garbage) ------------------------------
state_nvml_driver_version() {
  cat > "$W/nvml_version.c" <<'C'
/* FAKE damaged libnvidia-ml: nvmlSystemGetDriverVersion answers "1"; every other call is the real NVML. */
#include <string.h>
int nvmlSystemGetDriverVersion(char *b, unsigned n) { if (n) strncpy(b, "1", n); return 0; }
C
  build_shim libnvidia-ml.so.1 "$NVML_REAL" "$W/nvml_version.c" "$W/nvml1" || return 1
  (
    export LD_LIBRARY_PATH="$W/nvml1${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    { echo "# ground truth (same env)"
      echo "\$ nvidia-smi --query-gpu=driver_version --format=csv,noheader"; timeout 20 nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>&1
      echo "\$ pynvml"; timeout 20 python3 -c 'import pynvml; pynvml.nvmlInit(); print("driver", pynvml.nvmlSystemGetDriverVersion(), "nvml", pynvml.nvmlSystemGetNVMLVersion())' 2>&1
    } > "$OUTDIR/nvml-driver-version-1.truth.txt"
    cat "$OUTDIR/nvml-driver-version-1.truth.txt"
    check nvml-driver-version-1 "Driver 1 "
  )
}

# --- state 2: libnvidia-ml says every GPU has compute capability 0.0 ----------------------------------------
state_nvml_cc() {
  cat > "$W/nvml_cc.c" <<'C'
/* FAKE damaged libnvidia-ml: nvmlDeviceGetCudaComputeCapability answers 0.0; the rest is the real NVML. */
int nvmlDeviceGetCudaComputeCapability(void *h, int *major, int *minor) { *major = 0; *minor = 0; return 0; }
C
  build_shim libnvidia-ml.so.1 "$NVML_REAL" "$W/nvml_cc.c" "$W/nvmlcc" || return 1
  (
    export LD_LIBRARY_PATH="$W/nvmlcc${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    { echo "# ground truth (same env)"
      echo "\$ nvidia-smi --query-gpu=compute_cap --format=csv,noheader"; timeout 20 nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>&1
      echo "\$ pynvml"; timeout 20 python3 -c 'import pynvml; pynvml.nvmlInit(); h = pynvml.nvmlDeviceGetHandleByIndex(0); print("cc", pynvml.nvmlDeviceGetCudaComputeCapability(h))' 2>&1
    } > "$OUTDIR/nvml-cc-0.0.truth.txt"
    cat "$OUTDIR/nvml-cc-0.0.truth.txt"
    check nvml-cc-0.0 "sm_00"
  )
}

# --- state 3: libcuda says cuDriverGetVersion = 0 (also through cuGetProcAddress, which cuda-python and cudart use)
state_cuda_driver_version() {
  cat > "$W/cuda_version.c" <<'C'
/* FAKE damaged libcuda: cuDriverGetVersion answers 0; every other entry point is the real driver's. */
#include <dlfcn.h>
#include <string.h>
static void *real(void) { static void *h; if (!h) h = dlopen(REAL, RTLD_NOW | RTLD_GLOBAL); return h; }
int cuDriverGetVersion(int *v) { *v = 0; return 0; }
typedef int (*gpa_t)(const char *, void **, int, unsigned long long, int *);
int cuGetProcAddress_v2(const char *s, void **p, int ver, unsigned long long fl, int *st) {
  if (!strcmp(s, "cuDriverGetVersion")) { *p = (void *)cuDriverGetVersion; if (st) *st = 0; return 0; }
  return ((gpa_t)dlsym(real(), "cuGetProcAddress_v2"))(s, p, ver, fl, st);
}
typedef int (*gpa1_t)(const char *, void **, int, unsigned long long);
int cuGetProcAddress(const char *s, void **p, int ver, unsigned long long fl) {
  if (!strcmp(s, "cuDriverGetVersion")) { *p = (void *)cuDriverGetVersion; return 0; }
  return ((gpa1_t)dlsym(real(), "cuGetProcAddress"))(s, p, ver, fl);
}
C
  build_shim libcuda.so.1 "$CUDA_REAL" "$W/cuda_version.c" "$W/cuda0" || return 1
  (
    export LD_LIBRARY_PATH="$W/cuda0${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    { echo "# ground truth (same env)"
      echo "\$ cuda-python cuDriverGetVersion"; timeout 20 python3 -c 'from cuda.bindings import driver as d; print(d.cuDriverGetVersion())' 2>&1
      echo "\$ torch"; timeout 25 python3 -c 'import torch; print(torch.zeros(1).cuda())' 2>&1 | tail -3
    } > "$OUTDIR/cuda-driver-version-0.truth.txt"
    cat "$OUTDIR/cuda-driver-version-0.truth.txt"
    check cuda-driver-version-0 "CUDA 0.0"
  )
}

for s in state_nvml_driver_version state_nvml_cc state_cuda_driver_version; do
  echo "== $s"; $s || echo "$s: could not make the state"
done
