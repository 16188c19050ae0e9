"""NCCL's environment variables (NCCL User Guide, "Environment Variables":
https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html).

``NCCL_SOCKET_IFNAME`` and ``NCCL_IB_HCA`` are comma lists of name *prefixes* (``eth`` matches ``eth0``); a
leading ``^`` makes the list an exclusion, a leading ``=`` makes the names exact; ``NCCL_IB_HCA`` items
may carry a port (``mlx5_0:1``). ``NCCL_P2P_LEVEL`` is a path type (``LOC`` never uses P2P; ``NVL``, ``PIX``,
``PXB``, ``PHB``, ``SYS``) or its number (0 = LOC ... 5 = SYS).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, List, Tuple

#: Variables that switch a transport off when set to a non-zero number; the transport, for the message.
#: (Names as libnccl.so.2 2.32.3 reads them: `strings libnccl.so.2`.)
TRANSPORT_SWITCHES = {
    "NCCL_P2P_DISABLE": "peer-to-peer (NVLink and PCIe P2P) between GPUs of one node",
    "NCCL_SHM_DISABLE": "shared-memory transport between processes of one node",
    "NCCL_IB_DISABLE": "InfiniBand/RoCE (falls back to TCP sockets)",
}
P2P_LEVELS = ("LOC", "NVL", "PIX", "PXB", "PHB", "SYS")


@dataclass(frozen=True)
class PrefixList:
    """A parsed ``NCCL_SOCKET_IFNAME`` / ``NCCL_IB_HCA`` value."""

    exclude: bool
    exact: bool
    names: Tuple[str, ...]  # without ports

    def matches(self, name: str) -> bool:
        """Whether ``name`` is one of the items (exactly or as a prefix), ignoring ``exclude``."""
        return any(name == n if self.exact else name.startswith(n) for n in self.names)

    def unmatched(self, existing: Iterable[str]) -> List[str]:
        """Items of an inclusion list that name nothing in ``existing`` (an exclusion list: none)."""
        if self.exclude:
            return []
        existing = list(existing)
        return [n for n in self.names
                if not any((e == n) if self.exact else e.startswith(n) for e in existing)]


def parse_prefix_list(value: str) -> PrefixList:
    """``"^docker,lo"`` → exclude docker*, lo*; ``"=mlx5_0:1,mlx5_1:1"`` → exactly mlx5_0, mlx5_1."""
    text = (value or "").strip()
    exclude = text.startswith("^")
    text = text[1:] if exclude else text
    exact = text.startswith("=")
    text = text[1:] if exact else text
    names = tuple(item.split(":", 1)[0].strip() for item in text.split(",") if item.strip())
    return PrefixList(exclude, exact, names)


def is_true(value: str) -> bool:
    """NCCL reads these switches as integers: any non-zero number is on."""
    try:
        return int((value or "").strip()) != 0
    except ValueError:
        return False


def p2p_level(value: str):
    """``NCCL_P2P_LEVEL`` as its name (``"LOC"`` ...), or None when it is neither a name nor 0-5."""
    text = (value or "").strip().upper()
    if text in P2P_LEVELS:
        return text
    if text.isdigit() and int(text) < len(P2P_LEVELS):
        return P2P_LEVELS[int(text)]
    return None


def nccl_version_from_int(code: int) -> str:
    """``ncclGetVersion``'s integer as ``"2.28.3"``: nccl.h's NCCL_VERSION(X,Y,Z) is X*1000+Y*100+Z up to
    2.8 (at most 2899) and X*10000+Y*100+Z from 2.9 (at least 20900)."""
    if code >= 10000:
        return f"{code // 10000}.{code % 10000 // 100}.{code % 100}"
    return f"{code // 1000}.{code % 1000 // 100}.{code % 100}"
