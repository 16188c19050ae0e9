"""CUDA environment variables: CUDA_VISIBLE_DEVICES.

Pure: text in, plain data out; see gpudoctor.formats._text for the robustness contract."""
from __future__ import annotations

from typing import List, Optional

from gpudoctor.formats._text import _text  # noqa: F401


_HEXDASH = frozenset("0123456789abcdefABCDEF-")

def _is_hexdash(s: str) -> bool:
    return bool(s) and any(c != "-" for c in s) and all(c in _HEXDASH for c in s)

def _cvd_kind(entry: str) -> Optional[str]:
    """'index' | 'uuid' | 'mig' | None (invalid) for one CUDA_VISIBLE_DEVICES entry."""
    if entry.isdigit() and entry.isascii():
        return "index"
    if entry.startswith("GPU-"):
        return "uuid" if _is_hexdash(entry[4:]) else None
    if entry.startswith("MIG-"):
        rest = entry[4:]
        if rest.startswith("GPU-"):                       # MIG-GPU-<uuid>/<gi>/<ci>
            parts = rest[4:].split("/")
            if len(parts) == 3 and _is_hexdash(parts[0]) and all(
                    p.isdigit() and p.isascii() for p in parts[1:]):
                return "mig"
            return None
        return "mig" if _is_hexdash(rest) else None        # MIG-<uuid> (R470+)
    return None

def parse_cuda_visible_devices(value) -> dict:
    """Parse ``CUDA_VISIBLE_DEVICES`` the way the CUDA runtime reads it.

    Semantics (CUDA C Programming Guide, "CUDA Environment Variables"): a
    comma-separated sequence of GPU identifiers, each a device index (``0``),
    a GPU UUID as printed by nvidia-smi (``GPU-8932f937-...``; any unique
    prefix such as ``GPU-8932f937`` is allowed) or a MIG device
    (``MIG-<uuid>``, or the older ``MIG-GPU-<uuid>/<gi>/<ci>``).  Devices are
    enumerated in that order; parsing stops at the first invalid entry, so
    ``0,2,-1,1`` makes devices 0 and 2 visible and hides 1.  An empty value
    hides every device.  Surrounding whitespace of each entry is stripped.
    Whether an index/UUID exists on this machine is not checked here.

    Returns::

        {"set": bool, "raw": value, "entries": [all entries, stripped],
         "visible": [entries CUDA honours, i.e. before the first invalid one],
         "kind": "unset" | "empty" | "none" | "invalid" | "indices" | "uuids" | "mig" | "mixed",
         "invalid": [the entry that stopped parsing] or [],
         "ignored": [entries after it, which CUDA never looks at]}

    ``kind``: ``unset`` (``None``), ``empty`` (empty/blank: no devices),
    ``none`` (first entry is ``-1``/another negative number or
    ``NoDevFiles``: the deliberate "no GPU" markers, no devices visible),
    ``invalid`` (first entry is other garbage: no devices visible), otherwise
    the type of the visible entries (``mixed`` if they differ).  Never raises.
    """
    if value is None:
        return {"set": False, "raw": None, "entries": [], "visible": [], "kind": "unset",
                "invalid": [], "ignored": []}
    raw = value
    text = _text(value)
    if not text.strip():
        return {"set": True, "raw": raw, "entries": [], "visible": [], "kind": "empty",
                "invalid": [], "ignored": []}
    entries = [e.strip() for e in text.split(",")]
    visible: List[str] = []
    kinds = []
    invalid: List[str] = []
    ignored: List[str] = []
    for i, entry in enumerate(entries):
        k = _cvd_kind(entry)
        if k is None:
            invalid = [entry]
            ignored = entries[i + 1:]
            break
        visible.append(entry)
        kinds.append(k)
    if not visible:
        first = entries[0]
        is_neg = first.startswith("-") and first[1:].isdigit() and first[1:].isascii()
        kind = "none" if (is_neg or first == "NoDevFiles") else "invalid"
    elif len(set(kinds)) > 1:
        kind = "mixed"
    else:
        kind = {"index": "indices", "uuid": "uuids", "mig": "mig"}[kinds[0]]
    return {"set": True, "raw": raw, "entries": entries, "visible": visible, "kind": kind,
            "invalid": invalid, "ignored": ignored}
