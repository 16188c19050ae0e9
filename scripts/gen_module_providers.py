#!/usr/bin/env python3
"""Write gpudoctor/probes/providers_table.py: which distribution provides each GPU package's importable
module and shared library, read from the packages' own file lists (never typed by hand).

Inputs (any mix, on the command line):
  * a wheel (``*.whl``): its ``*.dist-info/RECORD``;
  * an sdist (``*.tar.gz``): its ``*.egg-info/SOURCES.txt`` (TensorRT's ``tensorrt-cu13`` and
    ``tensorrt-lean-cu13`` meta packages, which provide ``import tensorrt`` / ``tensorrt_lean``, are sdists);
  * a directory: every ``*.dist-info/RECORD`` in it (a ``site-packages`` the real wheels were installed
    into, e.g. ``.ci/cache/*/site-packages`` written by ``.ci/fetch-real-wheels``).

Module keys: the top-level name, or ``top.second`` where the top level is a namespace shared by several
distributions or has no ``__init__.py`` (``cuda.bindings``, ``nvidia.cudnn``). Library keys: the file name
of every ``lib*.so*`` that is not a Python extension. Regenerate with:

    python scripts/gen_module_providers.py .ci/cache/*/site-packages .venv/lib/python3*/site-packages \\
        /opt/wheels/torch-*.whl DOWNLOADED/*.whl DOWNLOADED/*.tar.gz

(the shipped table: also the nvidia-*, cuda-*, jaxlib wheels of this CI machine's local index, /opt/pypi*/files,
and the tensorrt-cu13 / -lean / -dispatch 11.4 sdists from `pip download --no-deps --no-binary :all:`).
"""
from __future__ import annotations

import glob
import os
import re
import sys
import tarfile
import zipfile
from collections import defaultdict
from pathlib import Path
from typing import Dict, Iterable, List, Set, Tuple

OUT = Path(__file__).resolve().parents[1] / "gpudoctor" / "probes" / "providers_table.py"
# Only GPU-stack distributions go in the table (the inputs may be a whole site-packages).
_GPU_DIST = re.compile(r"^(nvidia-|cuda-|tensorrt|cupy|torch$|jax-cuda|jaxlib|onnxruntime-gpu|tensorflow|pynvml|nvidia-ml-py)")
_LIB = re.compile(r"^lib[\w.+-]*\.so(\.[\d.]+)?$")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _dist_from_dir(dirname: str) -> Tuple[str, str]:
    """(normalised name, version) of ``name-version.dist-info`` / ``.egg-info``."""
    stem = dirname.rsplit(".", 1)[0]
    name, _, version = stem.partition("-")
    return _norm(name), version


def _files_of(path: str) -> Iterable[Tuple[str, str, List[str]]]:
    """(distribution, version, files) for each distribution in ``path`` (wheel, sdist or directory)."""
    if path.endswith(".whl"):
        with zipfile.ZipFile(path) as z:
            for n in z.namelist():
                if n.endswith(".dist-info/RECORD") and n.count("/") == 1:
                    name, ver = _dist_from_dir(n.split("/")[0])
                    yield name, ver, [l.split(",")[0] for l in z.read(n).decode().splitlines() if l]
    elif path.endswith((".tar.gz", ".tgz")):
        with tarfile.open(path) as t:
            for m in t.getmembers():
                if m.name.endswith(".egg-info/SOURCES.txt") and m.name.count("/") == 2:
                    root = m.name.split("/")[0]
                    name, ver = _norm(root.rsplit("-", 1)[0]), root.rsplit("-", 1)[-1]
                    yield name, ver, t.extractfile(m).read().decode().splitlines()
    elif os.path.isdir(path):
        for rec in sorted(glob.glob(os.path.join(path, "*.dist-info", "RECORD"))):
            name, ver = _dist_from_dir(os.path.basename(os.path.dirname(rec)))
            with open(rec, encoding="utf-8") as fh:
                yield name, ver, [l.split(",")[0] for l in fh.read().splitlines() if l]


def build(inputs: List[str]) -> Dict[str, object]:
    tops: Dict[str, Set[str]] = defaultdict(set)  # top-level name -> distributions with files under it
    has_init: Set[Tuple[str, str]] = set()  # (dist, top) with top/__init__.py
    seconds: Dict[Tuple[str, str], Set[str]] = defaultdict(set)  # (dist, top) -> second-level packages/modules
    libraries: Dict[str, Set[str]] = defaultdict(set)
    sources: List[str] = []
    for path in inputs:
        for dist, ver, files in _files_of(path):
            if not _GPU_DIST.match(dist):
                continue
            sources.append(f"{dist} {ver}")
            for f in files:
                parts = [p for p in f.split("/") if p]
                if not parts or parts[0].startswith("..") or parts[0].endswith((".dist-info", ".egg-info", ".data")) \
                        or "__pycache__" in parts:
                    continue
                base = parts[-1]
                if _LIB.match(base) and ".cpython-" not in base:
                    libraries[base].add(dist)
                if len(parts) == 1:  # a top-level module file (pynvml.py, an extension module)
                    if base.endswith((".py", ".so")) and not _LIB.match(base):
                        tops[base.split(".")[0]].add(dist)
                        has_init.add((dist, base.split(".")[0]))
                    continue
                top = parts[0]
                tops[top].add(dist)  # any file: a namespace (nvidia/) is shared by wheels without Python files
                if len(parts) == 2 and base == "__init__.py":
                    has_init.add((dist, top))
                module_file = len(parts) == 2 and base.endswith((".py", ".so"))
                if len(parts) >= 3 or module_file:
                    second = parts[1].split(".")[0] if module_file else parts[1]
                    if not second.startswith("_") and second not in ("include", "lib", "bin"):
                        seconds[(dist, top)].add(second)
    modules: Dict[str, Set[str]] = defaultdict(set)
    for top, dists in tops.items():
        for dist in dists:
            shared = len(dists) > 1 or (dist, top) not in has_init
            if shared and seconds.get((dist, top)):
                for second in seconds[(dist, top)]:
                    modules[f"{top}.{second}"].add(dist)
            else:
                modules[top].add(dist)
    return {"modules": {k: sorted(v) for k, v in sorted(modules.items())},
            "libraries": {k: sorted(v) for k, v in sorted(libraries.items())},
            "sources": sorted(set(sources))}


def main(argv: List[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    table = build(argv)
    import pprint

    OUT.write_text('"""Generated by scripts/gen_module_providers.py from the real packages\' RECORD / SOURCES.txt files:\n'
                   "do not edit. Which distribution provides each GPU module and library (see providers.py).\"\"\"\n"
                   f"MODULES = {pprint.pformat(table['modules'], width=110)}\n"
                   f"LIBRARIES = {pprint.pformat(table['libraries'], width=110)}\n"
                   f"SOURCES = {pprint.pformat(table['sources'], width=110)}\n", encoding="utf-8")
    print(f"{OUT}: {len(table['modules'])} modules, {len(table['libraries'])} libraries from {len(table['sources'])} distributions")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
