#!/usr/bin/env bash
# Issue 24 items 2 (environment differential) and 6 (a cache that cannot lie): states made for real in the
# environment of a subshell, each with ground truth from the real build / run / tool in that same shell, then
# `gpudoctor check` (text and JSON), then undone (the subshell's variables go with it; scratch removed on EXIT).
#   healthy_warm      three healthy checks in a row (the warm path must not get slower: env hash + ~60 stats)
#   cplus_include     CPLUS_INCLUDE_PATH=<dir whose <cstdio> is #error>, right after a healthy check filled the
#                     smoke cache -> smoke.nvcc fail (rebuilt, NOT "build cached") and environment.breaks_step
#                     fail "The nvcc 13.0 smoke build (...) succeeds without CPLUS_INCLUDE_PATH=<dir>: verified"
#   tmpdir_missing    TMPDIR=<a per-job dir that was removed> -> nvcc fatal "Could not open output file";
#                     environment.breaks_step names TMPDIR (the clean base deliberately has no TMPDIR)
#   wrong_gcc_path    a PATH entry whose `gcc` is the preprocessor driver cpp, first on PATH -> host compile fails
#                     "'-c' is not a valid option to the preprocessor"; breaks_step names that PATH entry
#   foreign_cuda_lib  an LD_LIBRARY_PATH entry holding a real but wrong libcuda.so.1 (a copy of the driver's
#                     libnvidia-ml.so.1) -> the smoke binary's run fails; breaks_step names the entry, fix
#                     `export LD_LIBRARY_PATH=<without it>` (or unset)
#   foreign_libgcc    an LD_LIBRARY_PATH entry holding a libgcc_s.so.1 that is another library (libz) -> `nvcc
#                     --version` exits 1 ("version `GCC_3.0' not found"); toolkit.broken stays, and breaks_step
#                     says "nvcc --version (...) succeeds without the LD_LIBRARY_PATH entry <dir>: verified"
# Env: GD (command that runs gpudoctor), OUTDIR (outputs). Each state well under 25 s.
set -u
: "${GD:=python3 -m gpudoctor}" "${OUTDIR:=/tmp/differential-out}"
mkdir -p "$OUTDIR"
SCRATCH=$(mktemp -d /tmp/gd-differential.XXXXXX)
trap 'rm -rf "$SCRATCH"' EXIT
SRC="$PWD/gpudoctor/smoke/vector_add.cu"
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)

truth() {  # STATE LABEL COMMAND...: a real program in the state, its output and exit code
  { echo "\$ $2"; timeout 60 "${@:3}"; echo "exit=$?"; } >> "$OUTDIR/$1.truth.txt" 2>&1
}
build_truth() {  # STATE: the real smoke build (and run) by hand, as gpudoctor would do it, in this shell
  local out="$SCRATCH/truth-$1"
  truth "$1" "nvcc -arch=native vector_add.cu -o smoke" "$NVCC" -arch=native "$SRC" -o "$out"
  [ -x "$out" ] && truth "$1" "./smoke" "$out"
}
check() {  # STATE: gpudoctor in the state, text and JSON; the lines this script is about
  local t0=$(date +%s%N)
  $GD check --timeout 30 > "$OUTDIR/$1.txt" 2>&1; echo "exit=$?" >> "$OUTDIR/$1.txt"
  echo "wall_ms=$(( ($(date +%s%N) - t0) / 1000000 ))" >> "$OUTDIR/$1.txt"
  $GD check --json --timeout 30 -o "$OUTDIR/$1.json" > /dev/null 2>&1
  grep -E '\[environment\.breaks_step\]|\[smoke\.nvcc\]|\[toolkit\.broken\]' "$OUTDIR/$1.txt" | head -6
}
state() { echo "== $1"; echo "# $2" > "$OUTDIR/$1.truth.txt"; }
first_file() { for f in "$@"; do [ -f "$f" ] && { readlink -f "$f"; return; }; done; echo ""; }
loader_file() {  # SONAME: the file the dynamic loader would pick, resolved (empty when none): LD_LIBRARY_PATH
  # entries, then ld.so.cache (`ldconfig -p`, 64-bit entries), then the directories driver installs use (a
  # container's /usr/local/nvidia/lib64 from the NVIDIA Container Toolkit, Debian/Ubuntu multiarch, RHEL lib64).
  local d f ldc
  local IFS=:
  for d in ${LD_LIBRARY_PATH:-}; do [ -n "$d" ] && [ -f "$d/$1" ] && { readlink -f "$d/$1"; return; }; done
  unset IFS
  ldc=$(command -v ldconfig || echo /sbin/ldconfig)
  f=$("$ldc" -p 2>/dev/null | awk -v so="$1" '$1 == so && /64/ { print $NF; exit }')
  [ -n "$f" ] && [ -f "$f" ] && { readlink -f "$f"; return; }
  first_file "/usr/local/nvidia/lib64/$1" "/usr/lib/x86_64-linux-gnu/$1" "/usr/lib64/$1"
}

# ---- healthy_warm ----------------------------------------------------------------------------------------------
state healthy_warm "three healthy checks in a row (the first may rebuild: the cache key changed format)"
for i in 1 2 3; do
  t0=$(date +%s%N); $GD check --timeout 30 > "$OUTDIR/healthy_warm.$i.txt" 2>&1; rc=$?
  echo "run $i exit=$rc wall_ms=$(( ($(date +%s%N) - t0) / 1000000 ))" | tee -a "$OUTDIR/healthy_warm.truth.txt"
done
grep -E 'smoke\.nvcc|took' "$OUTDIR/healthy_warm.3.txt" | head -3

# ---- cplus_include ---------------------------------------------------------------------------------------------
state cplus_include "CPLUS_INCLUDE_PATH names a dir whose <cstdio> is #error, after a healthy check cached the build"
( mkdir -p "$SCRATCH/include" && printf '#error "a stale <cstdio> from a project include dir"\n' > "$SCRATCH/include/cstdio"
  $GD check --timeout 30 > "$OUTDIR/cplus_include.before.txt" 2>&1  # fills (or confirms) the smoke cache
  grep -E '\[smoke\.nvcc\]' "$OUTDIR/cplus_include.before.txt" | head -2
  export CPLUS_INCLUDE_PATH="$SCRATCH/include"
  build_truth cplus_include
  check cplus_include ) || echo "cplus_include: state failed"

# ---- tmpdir_missing --------------------------------------------------------------------------------------------
state tmpdir_missing "TMPDIR names a per-job scratch dir that no longer exists"
( export TMPDIR="$SCRATCH/job-4242-tmp-removed"
  build_truth tmpdir_missing
  check tmpdir_missing ) || echo "tmpdir_missing: state failed"

# ---- wrong_gcc_path --------------------------------------------------------------------------------------------
CPP=$(command -v cpp || true)
state wrong_gcc_path "a PATH entry whose gcc is really cpp (the preprocessor driver), first on PATH"
if [ -n "$CPP" ]; then
  ( mkdir -p "$SCRATCH/wrongtool/bin" && ln -s "$CPP" "$SCRATCH/wrongtool/bin/gcc"
    export PATH="$SCRATCH/wrongtool/bin:$PATH"
    truth wrong_gcc_path "gcc --version" gcc --version
    build_truth wrong_gcc_path
    check wrong_gcc_path ) || echo "wrong_gcc_path: state failed"
else
  echo "wrong_gcc_path: no cpp on this machine" | tee -a "$OUTDIR/wrong_gcc_path.truth.txt"
fi

# ---- foreign_cuda_lib ------------------------------------------------------------------------------------------
NVML_LIB=$(loader_file libnvidia-ml.so.1)  # where this machine keeps it (a container: /usr/local/nvidia/lib64)
state foreign_cuda_lib "an LD_LIBRARY_PATH entry whose libcuda.so.1 is a copy of $NVML_LIB"
if [ -n "$NVML_LIB" ]; then
  ( mkdir -p "$SCRATCH/vendor/lib" && cp "$NVML_LIB" "$SCRATCH/vendor/lib/libcuda.so.1"
    "$NVCC" -arch=native "$SRC" -o "$SCRATCH/smoke-clean" > /dev/null 2>&1  # built before the state, as a user would
    export LD_LIBRARY_PATH="$SCRATCH/vendor/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    truth foreign_cuda_lib "./smoke (built before)" "$SCRATCH/smoke-clean"
    truth foreign_cuda_lib "torch cuda tensor" python3 -c 'import torch; print((torch.ones(4, device="cuda") * 2).sum().item())'
    build_truth foreign_cuda_lib
    check foreign_cuda_lib ) || echo "foreign_cuda_lib: state failed"
else
  echo "foreign_cuda_lib: the loader finds no libnvidia-ml.so.1 (LD_LIBRARY_PATH, ldconfig -p, /usr/local/nvidia/lib64, /usr/lib/x86_64-linux-gnu, /usr/lib64)" | tee -a "$OUTDIR/foreign_cuda_lib.truth.txt"
fi

# ---- foreign_libgcc --------------------------------------------------------------------------------------------
LIBZ=$(first_file /lib/x86_64-linux-gnu/libz.so.1 /usr/lib/x86_64-linux-gnu/libz.so.1 /usr/lib64/libz.so.1)
state foreign_libgcc "an LD_LIBRARY_PATH entry whose libgcc_s.so.1 is a copy of $LIBZ"
if [ -n "$LIBZ" ]; then
  ( mkdir -p "$SCRATCH/toolchain/lib" && cp "$LIBZ" "$SCRATCH/toolchain/lib/libgcc_s.so.1"
    export LD_LIBRARY_PATH="$SCRATCH/toolchain/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    truth foreign_libgcc "nvcc --version" "$NVCC" --version
    check foreign_libgcc ) || echo "foreign_libgcc: state failed"
else
  echo "foreign_libgcc: no libz.so.1 found" | tee -a "$OUTDIR/foreign_libgcc.truth.txt"
fi

# ---- summary: each state's differential facts (culprits, verified, reruns, seconds) from the JSON ---------------
python3 - "$OUTDIR" <<'EOF' | tee "$OUTDIR/differential.summary.txt"
import json, os, sys
out = sys.argv[1]
for name in ("cplus_include", "tmpdir_missing", "wrong_gcc_path", "foreign_cuda_lib", "foreign_libgcc"):
    try:
        rep = json.load(open(os.path.join(out, name + ".json")))
    except (OSError, ValueError) as exc:
        print(f"{name}: no report ({exc})")
        continue
    found = [f for f in rep.get("findings", []) if f.get("id") == "environment.breaks_step"]
    smoke = [f["title"] for f in rep.get("findings", []) if f.get("id") == "smoke.nvcc"]
    print(f"{name}: {len(found)} breaks_step; smoke: {smoke}")
    for f in found:
        ev = f.get("evidence", {})
        print(f"   {f['severity']}: {f['title']} (reruns {ev.get('reruns')}, {ev.get('seconds')} s)")
EOF
