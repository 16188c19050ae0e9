"""An installed gpudoctor holds every data file the checkout has: each non-Python file under gpudoctor/
matches a package-data glob of pyproject.toml (a missing glob once left `explain` without the tool
messages read from NVIDIA's binaries, in a wheel only)."""
from __future__ import annotations

import re
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]


def _glob_matches(pattern: str, path: str) -> bool:
    """setuptools' package-data globs: '*' and '?' stop at '/', '**' crosses directories."""
    rx = "".join(".*" if tok == "**" else "[^/]*" if tok == "*" else "[^/]" if tok == "?" else re.escape(tok)
                 for tok in re.split(r"(\*\*|\*|\?)", pattern))
    return re.fullmatch(rx, path) is not None


def test_every_data_file_of_the_package_is_in_package_data():
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    globs = cfg["package-data"]
    missing = []
    for f in (ROOT / "gpudoctor").rglob("*"):
        if not f.is_file() or f.suffix in (".py", ".pyc") or "__pycache__" in f.parts:
            continue
        rel = f.relative_to(ROOT)
        # the package that holds it: the deepest listed package whose directory contains it
        pkgs = [p for p in cfg["packages"] if p != "gpudoctor.compat_matrix"
                and rel.parts[: len(p.split("."))] == tuple(p.split("."))]
        pkg = max(pkgs, key=lambda p: len(p.split(".")))
        inside = "/".join(rel.parts[len(pkg.split(".")):])
        if not any(_glob_matches(g, inside) for g in globs.get(pkg, [])):
            missing.append(str(rel))
    assert not missing, f"data files no package-data glob ships: {missing}"
