"""Is a GPU architecture that nvcc refused a real one?

"nvcc fatal : Unsupported gpu architecture 'compute_71'" reads like a toolkit too old for the GPU,
but no NVIDIA GPU has compute capability 7.1: the build flags are wrong (a typo in ``-arch``,
``-gencode``, ``TORCH_CUDA_ARCH_LIST`` or CMake's ``CUDA_ARCHITECTURES``), and a newer toolkit would
refuse it as well. The real architectures are the compatibility matrix's ``-arch`` targets of every
CUDA release (10.2 onwards, read from each release's ``nvcc --list-gpu-code``), plus those that
older toolkits alone accepted (:data:`RETIRED`). An architecture newer than every known one may be
a GPU released after this matrix, so it stays the toolkit's problem.
"""
from __future__ import annotations

import re
from typing import Dict, Optional

#: Targets dropped before CUDA 10.2, the matrix's oldest release: Tesla sm_10–13 (last in CUDA 6.5) and
#: Fermi sm_20/21 (last in CUDA 8.0), per the "GPU feature list" of those releases' nvcc documentation.
RETIRED = frozenset({"10", "11", "12", "13", "20", "21"})

_ARCH = re.compile(r"^(?:compute|sm|lto)_(\d{2,3})[af]?$")


def _known() -> Optional[frozenset]:
    from gpudoctor.matrix import MatrixError, load_matrix

    try:
        matrix = load_matrix()
    except MatrixError:
        return None
    out = set(RETIRED)
    for rel in matrix.cuda_releases():
        for sm in rel.sms:
            m = _ARCH.match(sm)
            if m:
                out.add(m.group(1))
    return frozenset(out)


def no_such_architecture(arch: str) -> Optional[Dict[str, object]]:
    """Evidence that ``arch`` ("compute_71", "sm_71") is no NVIDIA GPU architecture, or None when it is
    one, is newer than every known one, cannot be parsed, or the matrix cannot be read."""
    m = _ARCH.match((arch or "").strip().lower())
    if not m:
        return None
    known = _known()
    if not known or m.group(1) in known or int(m.group(1)) > max(int(k) for k in known):
        return None
    near = sorted(known, key=lambda k: (abs(int(k) - int(m.group(1))), int(k)))[:2]
    return {"architecture": arch, "nearest_real": [f"sm_{k}" for k in sorted(near, key=int)]}
