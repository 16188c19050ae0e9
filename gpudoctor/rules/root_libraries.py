"""Live rules on a root's TensorRT and NCCL facts (:mod:`gpudoctor.probes.root_frameworks`), less what only the
live node can say."""
from __future__ import annotations

from typing import List

from gpudoctor.findings import Finding
from gpudoctor.rules import multigpu


def nccl_env(facts, ctx) -> List[Finding]:
    """:func:`gpudoctor.rules.multigpu.nccl_env` on the NCCL variables of the root's environment (a transport
    switched off), without ``nccl.device_not_found``: the InfiniBand devices and network interfaces a variable
    names are the host's, which a root's files do not show."""
    return [f for f in multigpu.nccl_env(facts, ctx) if f.id != "nccl.device_not_found"]
