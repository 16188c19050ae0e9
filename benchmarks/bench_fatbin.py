"""Benchmark gpudoctor.formats.fatbin.read_cuda_binary.

Usage:
    python benchmarks/bench_fatbin.py [--repeat N] [--target-s S] [PATH ...]

With no PATH it builds a few binaries with nvcc (13.0 at /usr/local/cuda,
or whatever nvcc is on PATH) in a temporary directory and times those.
Prints, per file: size, fatbins, entries, best/median seconds per call and
entries/second.  The speed target (default: under 1 s per file, the budget
for scanning a ~1 GB libtorch_cuda.so during `gpudoctor check`) is checked
here, not in the test suite; exit status 1 if a file misses it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpudoctor.formats.fatbin import CudaBinaryError, read_cuda_binary  # noqa: E402

KERNEL = r"""
template <int N> __global__ void k(float *a) { a[threadIdx.x] *= N; }
template __global__ void k<1>(float *); template __global__ void k<2>(float *);
template __global__ void k<3>(float *); template __global__ void k<4>(float *);
"""


def _nvcc():
    for cand in ("/usr/local/cuda/bin/nvcc", shutil.which("nvcc")):
        if cand and os.path.exists(cand):
            return cand
    return None


def build_samples(d: Path):
    nvcc = _nvcc()
    if not nvcc:
        sys.exit("no PATH given and no nvcc found to build samples")
    src = d / "k.cu"
    src.write_text(KERNEL)
    gencode = []
    for sm in ("75", "80", "86", "89", "90", "100", "120"):
        gencode += ["-gencode", f"arch=compute_{sm},code=[sm_{sm},compute_{sm}]"]
    out = []
    for name, extra in (("sample.so", ["-shared", "-Xcompiler", "-fPIC"]),
                        ("sample.fatbin", ["-fatbin"])):
        dst = d / name
        subprocess.run([nvcc, *extra, *gencode, str(src), "-o", str(dst)], check=True)
        out.append(dst)
    return out


def bench(path: str, repeat: int):
    t0 = time.perf_counter()
    first = read_cuda_binary(path)  # includes page-cache warm-up of headers
    cold = time.perf_counter() - t0
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        read_cuda_binary(path)
        times.append(time.perf_counter() - t0)
    return first, cold, min(times), statistics.median(times)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--target-s", type=float, default=1.0,
                    help="fail if the median call takes longer (default 1.0 s)")
    args = ap.parse_args(argv)

    tmp = None
    paths = list(args.paths)
    if not paths:
        tmp = tempfile.TemporaryDirectory(prefix="bench_fatbin_")
        paths = [str(p) for p in build_samples(Path(tmp.name))]

    ok = True
    print(f"{'file':<48} {'MB':>8} {'fatbins':>8} {'entries':>8} "
          f"{'first_s':>9} {'best_s':>9} {'median_s':>9} {'entries/s':>11}")
    for p in paths:
        try:
            b, cold, best, med = bench(p, args.repeat)
        except CudaBinaryError as exc:
            print(f"{p}: {exc}")
            ok = False
            continue
        n = len(b.entries)
        rate = n / med if med > 0 else float("inf")
        print(f"{os.path.basename(p):<48} {os.path.getsize(p) / 1e6:8.1f} "
              f"{b.fatbin_count:8d} {n:8d} {cold:9.4f} {best:9.4f} {med:9.4f} {rate:11.0f}")
        print(f"    sass={','.join(b.sass) or '-'} ptx={','.join(b.ptx) or '-'} "
              f"compressed={b.compressed_entries}")
        if med > args.target_s:
            print(f"    SLOW: median {med:.3f}s > target {args.target_s}s")
            ok = False
    if tmp:
        tmp.cleanup()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
