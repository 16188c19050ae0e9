#!/usr/bin/env python3
"""Build the matrix bundle a release publishes: compat_matrix/'s files and manifest.json (SHA-256 of each)
in OUT_DIR, to be served as a directory URL for `gpudoctor matrix update --from URL`.

Usage: python scripts/build_matrix_bundle.py OUT_DIR [--from DIR]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gpudoctor.matrix import MatrixError  # noqa: E402
from gpudoctor.matrix.bundle import build_bundle  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--from", dest="src", default=str(ROOT / "compat_matrix"), help="matrix directory (default compat_matrix/)")
    a = ap.parse_args(argv)
    try:
        manifest = build_bundle(a.src, a.out_dir)
    except MatrixError as exc:
        print(f"error: the matrix in {a.src} is invalid: {exc}", file=sys.stderr)
        return 2
    print(f"bundle {manifest['data_version']} written to {a.out_dir} ({len(manifest['files'])} files + manifest.json)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
