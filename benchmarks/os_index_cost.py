"""What asking an OS package index costs (issue 26): Debian bookworm's main/contrib/non-free Packages.xz through
gpudoctor.install.apt_index, cold (an empty cache: download, decompress, parse, store) and warm (a new process
reading the verified cache entry), printed in seconds. Needs deb.debian.org; run: python benchmarks/os_index_cost.py
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

SRC = "http://deb.debian.org/debian/dists/bookworm/{main,contrib,non-free}/binary-amd64/Packages.xz"
ONE = ("import sys, time; t = time.perf_counter(); from gpudoctor.install.apt_index import served_apt; "
       "a = served_apt(sys.argv[1], sys.argv[2], timeout=60); "
       "print(f'{time.perf_counter() - t:.3f} {a.from_cache} {a.versions} {a.error}')")


def main() -> int:
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, XDG_CACHE_HOME=cache)
        for label, name in (("cold", "nvidia-cuda-toolkit"), ("warm", "g++-11"), ("warm", "nvidia-driver")):
            t = time.perf_counter()
            out = subprocess.run([sys.executable, "-c", ONE, name, SRC], env=env, capture_output=True, text=True,
                                 timeout=300)
            wall = time.perf_counter() - t
            print(f"{label}: {name}: served_apt {out.stdout.strip() or out.stderr.strip()[-300:]} "
                  f"(process {wall:.2f} s)")
        size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(cache) for f in fs)
        print(f"cache: {size / 1e6:.1f} MB for the three indexes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
