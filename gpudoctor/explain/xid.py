"""What an Xid in the kernel log means, per NVIDIA's Xid catalogue.

Source: "XID Errors", NVIDIA GPU deployment and management documentation
(https://docs.nvidia.com/deploy/xid-errors/index.html), whose table gives each Xid's possible causes.
An Xid is not by itself a sick GPU: the catalogue lists some as caused, in the common case, by the
application (a kernel that faults on a bad address, an exception in the graphics engine, a process
killed mid-work), and says to debug the application first. Those are :data:`APPLICATION_XIDS`; any
other Xid (ECC, row remapping, NVLink, fallen off the bus, GSP timeouts...) keeps ``gpu.health``.
"""
from __future__ import annotations

from typing import Dict, Iterable, List

#: Xid -> its name in the catalogue, for the Xids whose usual cause is the user application.
APPLICATION_XIDS: Dict[int, str] = {
    13: "Graphics Engine Exception",
    31: "GPU memory page fault",
    43: "GPU stopped processing",
    45: "Preemptive cleanup, due to previous errors",
}


def application_only(xids: Iterable[str]) -> List[int]:
    """The Xids of a log (as captured: "31", " 43") when every one of them is an application Xid,
    else an empty list (one hardware Xid is enough to keep the GPU suspect)."""
    out = []
    for x in xids:
        try:
            n = int(str(x).strip())
        except ValueError:
            return []
        if n not in APPLICATION_XIDS:
            return []
        out.append(n)
    return sorted(set(out))
