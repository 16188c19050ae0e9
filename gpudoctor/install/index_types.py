"""What a package index says it serves: the one shape every index checker answers in (pip indexes, apt and dnf
repositories, winget), so that a plan's verification and `check`'s fixes read them alike."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Tuple

#: Kinds of index: a Python package index (PEP 503/691), a Debian-style apt repository (Packages), an RPM
#: repository (repodata), the winget community source.
KINDS = ("pip", "apt", "dnf", "winget")


@dataclass(frozen=True)
class IndexAnswer:
    """What one index serves of one name.

    ``kind``: one of :data:`KINDS`; ``name``: the distribution or package asked; ``index``: the URL asked (the
    simple page, the Packages file, the repodata); ``versions``: every version it serves, oldest first, or None
    when the answer is not known; ``error``: why it is not known (unreachable, timed out, ``--offline``, a page
    that is not an index), one line; ``fetched_at``: epoch seconds of the index's answer (a cached answer keeps
    its own time); ``from_cache``: whether it came from the user cache."""

    kind: str
    name: str
    index: str
    versions: Optional[Tuple[str, ...]]
    error: Optional[str] = None
    fetched_at: Optional[float] = None
    from_cache: bool = False
    extra: dict = field(default_factory=dict, compare=False)

    @property
    def known(self) -> bool:
        return self.versions is not None

    def to_dict(self) -> dict:
        return {"kind": self.kind, "name": self.name, "index": self.index,
                "versions": list(self.versions) if self.versions is not None else None, "error": self.error,
                "fetched_at": self.fetched_at, "from_cache": self.from_cache, **self.extra}
