"""The layers show and hold: no import circle in gpudoctor/, the formats package stands alone, a small root.

Imports are read with ``ast`` (module-level and inside functions alike: a lazy import is still a
dependency). See docs/architecture.md.
"""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, List, Set

PKG = Path(__file__).resolve().parents[1] / "gpudoctor"


def _module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _modules() -> Dict[str, Path]:
    return {_module_name(p): p for p in PKG.rglob("*.py")}


def _imports(path: Path, name: str, known: Set[str]) -> Set[str]:
    """The gpudoctor modules ``path`` imports (``from gpudoctor.x import y`` counts y when y is a module)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_pkg = path.name == "__init__.py"
    out: Set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("gpudoctor")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_pkg else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if not mod.startswith("gpudoctor"):
                continue
            out.add(mod)
            for a in node.names:
                if f"{mod}.{a.name}" in known:
                    out.add(f"{mod}.{a.name}")
    # importing a.b.c also runs a/__init__ and a.b/__init__: only count the target itself
    return {m for m in out if m in known and m != name}


def _graph() -> Dict[str, Set[str]]:
    mods = _modules()
    return {name: _imports(path, name, set(mods)) for name, path in mods.items()}


def _cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """Strongly connected components with more than one module (Tarjan), each a circle of imports."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _package_parents(graph):
    """A package's __init__ is imported whenever one of its modules is: ignore parent-package edges."""
    return {k: {m for m in v if not k.startswith(m + ".")} for k, v in graph.items()}


def test_no_import_circle_in_gpudoctor():
    cycles = _cycles(_package_parents(_graph()))
    assert not cycles, "import circles (each line: the modules of one circle):\n" + "\n".join(map(str, cycles))


def test_the_formats_package_imports_nothing_else_of_gpudoctor():
    graph = _graph()
    bad = {m: sorted(d for d in deps if not d.startswith("gpudoctor.formats")) for m, deps in graph.items()
           if m.startswith("gpudoctor.formats")}
    bad = {m: d for m, d in bad.items() if d}
    assert not bad, bad


def test_the_root_holds_at_most_six_modules():
    root = sorted(p.name for p in PKG.glob("*.py"))
    assert len(root) <= 6, root


def test_the_circle_finder_finds_circles():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


# One direction, bottom to top (docs/architecture.md). A module may import its own package and any
# package of a lower rank; commands (rank 5) may compose one another (the circle test keeps that a tree).
RANK = {
    "gpudoctor": 0, "formats": 0, "findings": 0, "smoke": 0,  # smoke: the kernel source, data only
    "process": 1,
    "sysroot": 1.2,  # the judged system's files and environment: views, env files, images (may record problems)
    "windows": 1.5,  # a Windows system's facts, read through a view (the probe of a Windows root reads them)
    "probes": 2, "matrix": 2, "render": 2,
    "rules": 3,
    "check": 4,
    "inspect": 5, "install": 5, "explain": 5, "reports": 5, "rootcheck": 5, "cli": 6, "__main__": 7,
}


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _upward_imports(graph):
    out = []
    for a, deps in graph.items():
        for b in deps:
            la, lb = _layer(a), _layer(b)
            if la != lb and RANK[lb] >= RANK[la] and not (RANK[la] == RANK[lb] == 5):
                out.append(f"{a} ({la}) -> {b} ({lb})")
    return sorted(out)


def test_every_package_has_a_layer():
    assert {_layer(m) for m in _modules()} <= set(RANK)


def test_imports_go_one_direction_down_the_layers():
    upward = _upward_imports(_package_parents(_graph()))
    assert not upward, "imports against the layers:\n" + "\n".join(upward)


def test_the_layer_checker_sees_a_probe_reaching_into_a_rule():
    assert _upward_imports({"gpudoctor.probes.x": {"gpudoctor.rules.y"}}) == \
        ["gpudoctor.probes.x (probes) -> gpudoctor.rules.y (rules)"]
    assert _upward_imports({"gpudoctor.rules.y": {"gpudoctor.probes.x"}}) == []
