"""Record Debian bookworm's Packages indexes (main, contrib, non-free; amd64) from deb.debian.org, trimmed to
the stanzas the tests ask about, each kept verbatim: ``python tests/data/indexes/record_debian.py``
(writes tests/data/indexes/debian/bookworm/<component>/Packages and prints the Release file's Date)."""
from __future__ import annotations

import lzma
import os
import re
import sys

import requests

MIRROR = "http://deb.debian.org/debian/dists/bookworm"
#: Packages the Debian 12 plans and the tests name: Debian's CUDA 11.8 and its runtime, the host compilers
#: (gcc/g++ carry epoch 4), cuDNN's installer package, the driver, what the repository step installs.
KEEP = {"nvidia-cuda-toolkit", "nvidia-cuda-dev", "libcudart11.0", "g++-11", "gcc-11", "g++", "gcc",
        "nvidia-cudnn", "nvidia-driver", "libcuda1", "nvidia-cuda-samples", "nvidia-modprobe", "ca-certificates", "curl", "python3-venv", "python3"}
HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "debian", "bookworm")


def main() -> int:
    release = requests.get(f"{MIRROR}/Release", timeout=60).text
    date = re.search(r"^Date: (.*)$", release, re.M).group(1)
    for comp in ("main", "contrib", "non-free"):
        raw = lzma.decompress(requests.get(f"{MIRROR}/{comp}/binary-amd64/Packages.xz", timeout=120).content)
        kept = [s for s in raw.decode().split("\n\n")
                if re.search(r"^Package: (.*)$", s, re.M) and re.search(r"^Package: (.*)$", s, re.M).group(1) in KEEP]
        os.makedirs(os.path.join(HERE, comp), exist_ok=True)
        with open(os.path.join(HERE, comp, "Packages"), "w", encoding="utf-8") as fh:
            fh.write("\n\n".join(kept) + "\n")
        print(comp, len(kept), "stanzas")
    print("Release Date:", date)
    return 0


if __name__ == "__main__":
    sys.exit(main())
