"""Record the PyPI simple-API pages the index tests serve from loopback (tests/data/indexes/pypi/), and build
the FAKE PyTorch index page (tests/data/indexes/pytorch/) from PyPI's real torch wheel names.

    .venv/bin/python tests/record_index_pages.py

Pages are PEP 691 JSON exactly as PyPI sends them, trimmed to keep the files small: every version stays in
``versions`` and ``files`` keeps every file of the newest releases (``KEEP_FILES``) and one file of each older
one, so the versions the tests see are PyPI's. download.pytorch.org cannot be reached from the machine that
recorded them: its page is a FAKE in the PEP 503 HTML format the PyTorch index uses, listing PyPI's torch
wheel names with the ``+cuXYZ`` local version the PyTorch index adds, for the torch releases whose builds the
compatibility matrix places on that index.
"""
from __future__ import annotations

import json
import os
import sys
import time

import requests
from packaging.utils import (InvalidSdistFilename, InvalidWheelFilename, parse_sdist_filename,
                             parse_wheel_filename)
from packaging.version import InvalidVersion

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "data", "indexes")
NAMES = ("tensorrt-cu12", "tensorrt-cu13", "nvidia-cudnn-cu12", "nvidia-cuda-runtime-cu12", "nvidia-cuda-nvrtc-cu12",
         "torch", "tensorrt-cu12-libs", "tensorrt-cu12-bindings")
#: Real sdists kept whole (a few KB each) so that the loopback index serves what pip would build: the TensorRT
#: meta package pins its parts in PKG-INFO, and the libs part's pyproject.toml names pypi.nvidia.com (wheel-stub);
#: the bindings part is a wheel.
SDISTS = ("tensorrt_cu12-11.4.0.106.tar.gz", "tensorrt_cu12_libs-11.4.0.106.tar.gz")
KEEP_FILES = 3
FAKE_INDEX = "cu130"


def _version(filename: str):
    """The file's version, or None for a name pip would not parse (kept: it is what PyPI lists)."""
    try:
        if filename.endswith(".whl"):
            return parse_wheel_filename(filename)[1]
        return parse_sdist_filename(filename)[1]
    except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
        return None


def trim(page: dict) -> dict:
    versions = sorted({v for f in page["files"] for v in [_version(f["filename"])] if v is not None})
    newest = set(versions[-KEEP_FILES:])
    seen, files = set(), []
    for f in page["files"]:
        v = _version(f["filename"])
        if v is None or v in newest or v not in seen or f.get("yanked"):
            files.append(f)
            seen.add(v)
    return dict(page, files=files)


def fake_pytorch_page(torch_page: dict) -> str:
    sys.path.insert(0, os.path.dirname(HERE))
    from gpudoctor.matrix import load_matrix

    releases = {r.torch for r in load_matrix().torch_releases()
                if any(b.index_url.endswith("/" + FAKE_INDEX) for b in r.builds)}
    links = []
    for f in torch_page["files"]:
        if not f["filename"].endswith(".whl"):
            continue
        _, v, _, _ = parse_wheel_filename(f["filename"])
        if f"{v.major}.{v.minor}" in releases and ("manylinux" in f["filename"] or "win_amd64" in f["filename"]):
            local = f["filename"].replace(f"-{v}-", f"-{v}+{FAKE_INDEX}-", 1)
            links.append(f'<a href="/whl/{FAKE_INDEX}/{local}">{local}</a><br/>')
    return ("<!DOCTYPE html>\n<!-- FAKE: not recorded from download.pytorch.org (unreachable when recorded); built "
            f"{time.strftime('%Y-%m-%d')} from PyPI's torch wheel names, see tests/record_index_pages.py -->\n"
            "<html><head><title>Links for torch</title></head><body><h1>Links for torch</h1>\n"
            + "\n".join(links) + "\n</body></html>\n")


def main() -> int:
    pages = {}
    for name in NAMES:
        r = requests.get(f"https://pypi.org/simple/{name}/", timeout=30,
                         headers={"Accept": "application/vnd.pypi.simple.v1+json"})
        r.raise_for_status()
        pages[name] = r.json()
        with open(os.path.join(OUT, "pypi", name + ".json"), "w", encoding="utf-8") as fh:
            json.dump(trim(pages[name]), fh, indent=0)
    with open(os.path.join(OUT, "pytorch", f"FAKE-{FAKE_INDEX}-torch.html"), "w", encoding="utf-8") as fh:
        fh.write(fake_pytorch_page(pages["torch"]))
    os.makedirs(os.path.join(OUT, "pypi", "files"), exist_ok=True)
    for page in pages.values():
        for f in page["files"]:
            if f["filename"] in SDISTS:
                r = requests.get(f["url"], timeout=60)
                r.raise_for_status()
                with open(os.path.join(OUT, "pypi", "files", f["filename"]), "wb") as fh:
                    fh.write(r.content)
    return 0


if __name__ == "__main__":
    sys.exit(main())
