"""Every KB regex stays linear on a long line: the scanner runs it on any line (up to 4 KiB) that holds
its literal, and a log may repeat that line a million times, so a pattern quadratic in the line's length
is a hang. Python's ``re`` backtracks; two shapes make it quadratic, and this test finds both by reading
the parsed pattern (deterministic, no timing):

* a search that may start with an unbounded class repeat (``\\S*/stubs/``, ``\\w+\\.so``): every start
  position rescans the rest of the line. A lookbehind (``(?<!\\S)``) or a literal first makes it linear;
* two adjacent unbounded repeats whose classes share a character (``\\d+[\\d.]*``): each backtrack step
  of the first retries the whole second. Bound one of them.
"""
import re
import string
from re import _compiler, _constants as C, _parser  # stdlib: the parse tree re itself compiles

import pytest

from gpudoctor.explain.kb import load_kb

_REPEATS = (C.MAX_REPEAT, C.MIN_REPEAT)
_CLASSES = (C.IN, C.ANY, C.CATEGORY, C.NOT_LITERAL)
_PRINTABLE = string.printable


def _unbounded_class(node):
    op, av = node
    if op in _REPEATS:
        _lo, hi, body = av
        return hi == C.MAXREPEAT and len(body) == 1 and body[0][0] in _CLASSES
    if op == C.SUBPATTERN and len(av[3]) == 1:  # (?P<x>\d+)
        return _unbounded_class(av[3][0])
    return False


def _chars(node, state):
    """The printable characters one step of this repeat can consume."""
    while node[0] == C.SUBPATTERN:
        node = node[1][3][0]
    atom = _compiler.compile(_parser.SubPattern(state, [node[1][2][0]]), re.IGNORECASE)
    return {c for c in _PRINTABLE if atom.match(c)}


def _first(seq):
    """The atoms a search can start with (into groups and every branch; a lookbehind guards)."""
    items = list(seq)
    if not items or items[0][0] in (C.ASSERT, C.ASSERT_NOT, C.AT):
        return []
    op, av = items[0]
    if op == C.SUBPATTERN and not _unbounded_class(items[0]):
        return _first(av[3])
    if op == C.BRANCH:
        return [atom for alt in av[1] for atom in _first(alt)]
    return [items[0]]


def _quadratic_shapes(pattern):
    tree = _parser.parse(pattern, re.IGNORECASE)
    found = [f"starts with an unbounded repeat: {node}" for node in _first(tree) if _unbounded_class(node)]

    def walk(seq):
        items = list(seq)
        for a, b in zip(items, items[1:]):
            if _unbounded_class(a) and _unbounded_class(b) and _chars(a, tree.state) & _chars(b, tree.state):
                found.append(f"adjacent unbounded repeats over shared characters: {a} {b}")
        for op, av in items:
            if op == C.SUBPATTERN:
                walk(av[3])
            elif op == C.BRANCH:
                for alt in av[1]:
                    walk(alt)
            elif op in _REPEATS:
                walk(av[2])

    walk(tree)
    return found


def test_the_lint_sees_both_quadratic_shapes():
    assert _quadratic_shapes(r"(?P<p>\S*/stubs/libcuda\.so): undefined")
    assert _quadratic_shapes(r"/c\+\+/(?P<v>\d+)[\d.]*/")
    assert _quadratic_shapes(r"(?:_c|\w+)\.so")
    assert not _quadratic_shapes(r"(?<![^\s'\"])(?P<p>\S*/stubs/libcuda\.so): undefined")
    assert not _quadratic_shapes(r"/c\+\+/(?P<v>\d{1,3})[\d.]*/")
    assert not _quadratic_shapes(r"a[<>=!]+\s*[\w.]+")  # adjacent but disjoint classes: linear


@pytest.mark.parametrize("sig", load_kb(), ids=lambda s: s.id)
def test_kb_regexes_stay_linear_on_long_lines(sig):
    bad = [(v.name, v.regex.pattern, shape) for v in sig.variants if v.regex is not None
           for shape in _quadratic_shapes(v.regex.pattern)]
    assert not bad, bad


def _module_patterns(obj, depth=0):
    if isinstance(obj, re.Pattern):
        yield obj
    elif depth < 4 and isinstance(obj, (list, tuple, set, frozenset)):
        for x in obj:
            yield from _module_patterns(x, depth + 1)
    elif depth < 4 and isinstance(obj, dict):
        for x in obj.values():
            yield from _module_patterns(x, depth + 1)


# the modules whose patterns read a user's log (enumerations.py reads NVIDIA's headers, not logs)
@pytest.mark.parametrize("module", ["facts", "hints", "context", "diagnose", "libraries", "archcheck"])
def test_log_reading_patterns_outside_the_kb_stay_linear(module):
    import importlib
    mod = importlib.import_module(f"gpudoctor.explain.{module}")
    patterns = [p for value in vars(mod).values() for p in _module_patterns(value)]
    assert patterns  # the walk finds them, or this test checks nothing
    bad = [(p.pattern, shape) for p in patterns for shape in _quadratic_shapes(p.pattern)]
    assert not bad, bad
