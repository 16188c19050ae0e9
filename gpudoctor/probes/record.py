"""``@factclass``: the part of ``@dataclasses.dataclass`` the typed facts use, without generating code per class.

``dataclass`` builds ``__init__``, ``__repr__`` and ``__eq__`` of every class by ``exec``-ing generated source:
about a millisecond a class on the lent H100's host, and the 41 fact types are imported before the probes
start, on the warm check's critical path (docs/faults.md, issue 24's speed). ``factclass`` installs one shared
``__init__``, ``__repr__`` and ``__eq__`` that read the class's field list instead.

Semantics kept (all the fact types rely on): fields are the class's own annotations in order (subclasses are
not used); a class attribute is the default; ``field(default_factory=...)`` (from :mod:`dataclasses`) gives a
fresh default per instance, and ``repr=False`` leaves the field out of ``repr``; ``__init__`` takes the fields
positionally or by keyword and raises ``TypeError`` for a missing, repeated or unknown one; ``==`` compares the
fields of two instances of the same class. Not provided: ``dataclasses.fields``/``asdict``/``replace``,
``__post_init__``, ordering, frozen instances, ``__hash__`` (instances are unhashable, as with ``eq=True``).
"""
from __future__ import annotations

import dataclasses
from typing import Dict, Tuple

__all__ = ["factclass", "field"]

field = dataclasses.field
_MISSING = dataclasses.MISSING


def _init(self, *args, **kwargs) -> None:
    names, defaults, factories = type(self)._record_spec
    if len(args) > len(names):
        raise TypeError(f"{type(self).__name__}() takes {len(names)} positional arguments but {len(args)} were given")
    for name, value in zip(names, args):
        if name in kwargs:
            raise TypeError(f"{type(self).__name__}() got multiple values for argument {name!r}")
        setattr(self, name, value)
    for name in names[len(args):]:
        if name in kwargs:
            setattr(self, name, kwargs.pop(name))
        elif name in factories:
            setattr(self, name, factories[name]())
        elif name in defaults:
            setattr(self, name, defaults[name])
        else:
            raise TypeError(f"{type(self).__name__}() missing required argument: {name!r}")
    unknown = set(kwargs) - set(names[len(args):])
    if unknown:
        raise TypeError(f"{type(self).__name__}() got an unexpected keyword argument {sorted(unknown)[0]!r}")


def _repr(self) -> str:
    shown = ", ".join(f"{n}={getattr(self, n)!r}" for n in type(self)._record_repr)
    return f"{type(self).__qualname__}({shown})"


def _eq(self, other) -> bool:
    if other.__class__ is not self.__class__:
        return NotImplemented
    return all(getattr(self, n) == getattr(other, n) for n in type(self)._record_spec[0])


def factclass(cls):
    """Make ``cls`` a record of its annotated fields (see the module's docstring)."""
    names = tuple(cls.__dict__.get("__annotations__", {}))
    defaults: Dict[str, object] = {}
    factories: Dict[str, object] = {}
    hidden = set()
    for name in names:
        value = cls.__dict__.get(name, _MISSING)
        if isinstance(value, dataclasses.Field):
            if value.default_factory is not _MISSING:
                factories[name] = value.default_factory
            elif value.default is not _MISSING:
                defaults[name] = value.default
            if not value.repr:
                hidden.add(name)
            delattr(cls, name)
        elif value is not _MISSING:
            defaults[name] = value
    required_after_default = [n for i, n in enumerate(names) if n not in defaults and n not in factories
                              and any(m in defaults or m in factories for m in names[:i])]
    if required_after_default:
        raise TypeError(f"non-default argument {required_after_default[0]!r} follows default argument")
    spec: Tuple = (names, defaults, factories)
    cls._record_spec = spec
    cls._record_repr = tuple(n for n in names if n not in hidden)
    cls.__init__ = _init
    cls.__repr__ = _repr
    cls.__eq__ = _eq
    cls.__hash__ = None
    return cls
