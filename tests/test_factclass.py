"""``@factclass`` (gpudoctor/probes/record.py) keeps what the typed facts used of ``@dataclass``, without per-class
code generation at import (the warm check's critical path)."""
from __future__ import annotations

from typing import Dict, Optional

import pytest

from gpudoctor.probes.record import factclass, field


@factclass
class Gpu:
    index: int
    name: Optional[str] = None
    extra: Dict[str, object] = field(default_factory=dict)
    raw: Dict[str, object] = field(default_factory=dict, repr=False)


def test_fields_in_order_positional_keyword_defaults_and_fresh_factories():
    a, b = Gpu(0), Gpu(1, "H100", extra={"x": 1})
    assert (a.index, a.name, a.extra, a.raw) == (0, None, {}, {})
    assert (b.index, b.name, b.extra) == (1, "H100", {"x": 1})
    a.extra["k"] = 1
    assert Gpu(2).extra == {}  # a factory's default is never shared between instances


def test_equality_repr_and_errors_as_dataclass_gives_them():
    assert Gpu(0, "a") == Gpu(0, "a") and Gpu(0, "a") != Gpu(0, "b")
    assert repr(Gpu(0, "a")) == "Gpu(index=0, name='a', extra={})"  # repr=False hides raw
    with pytest.raises(TypeError):
        Gpu()  # a required field missing
    with pytest.raises(TypeError):
        Gpu(0, index=1)  # given twice
    with pytest.raises(TypeError):
        Gpu(0, colour="red")  # unknown
    with pytest.raises(TypeError):
        Gpu(0, "a", {}, {}, 5)  # too many
    with pytest.raises(TypeError):
        hash(Gpu(0))


def test_a_required_field_after_a_default_is_refused_when_the_class_is_made():
    with pytest.raises(TypeError):
        @factclass
        class Bad:
            a: int = 0
            b: int
