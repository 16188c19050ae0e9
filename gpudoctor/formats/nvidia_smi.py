"""nvidia-smi: -q -x, -L, --query-gpu CSV, and its error messages.

Pure: text in, plain data out; see gpudoctor.formats._text for the robustness contract."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import List, Optional

from gpudoctor.formats._text import ParseError, _lines, _text, _to_int  # noqa: F401


#: Largest ``nvidia-smi -q -x`` document accepted (an 8-GPU box is ~250 KB).
MAX_XML = 16 << 20

# nvidia-smi -q -x always starts with this (no internal subset, no entities).
_SMI_DOCTYPE_RE = re.compile(r'<!DOCTYPE\s{1,16}nvidia_smi_log\s{1,16}SYSTEM\s{1,16}"[A-Za-z0-9_.\-]{1,64}"\s{0,16}>')

_NA = frozenset(["", "N/A", "[N/A]", "Not Supported", "[Not Supported]", "[Unknown Error]"])

_SMI_ERRORS = (
    ("version_mismatch", "driver/library version mismatch"),
    ("nvml_not_found", "couldn't find libnvidia-ml.so"),
    ("driver_not_loaded", "couldn't communicate with the nvidia driver"),
    ("nvml_unknown_error", "failed to initialize nvml: unknown error"),
    ("no_devices", "no devices were found"),
)

_SMI_VERSION_RE = re.compile(r"^\d{2,4}\.\d{1,3}(?:\.\d{1,3})?$")

def _xt(el, path: str) -> Optional[str]:
    """Stripped text at *path* under *el*; None if absent or N/A-like."""
    if el is None:
        return None
    node = el.find(path)
    if node is None or node.text is None:
        return None
    t = node.text.strip()
    return None if t in _NA else t

def parse_nvidia_smi_xml(text) -> dict:
    """Parse ``nvidia-smi -q -x`` (root element ``<nvidia_smi_log>``).

    Returns::

        {"driver_version": "580.159.04", "cuda_version": "13.0",
         "gpus": [{"name", "uuid", "pci_bus_id", "compute_cap",
                   "memory_total_mib": int, "persistence_mode": "Enabled",
                   "mig_mode": "Disabled", "mig_mode_pending",
                   "ecc_mode": "Enabled", "ecc_mode_pending",
                   "pcie_gen_current": int, "pcie_gen_max": int,
                   "pcie_width_current": int, "pcie_width_max": int,
                   "compute_mode": "Default", "vbios": "96.00.DA.00.0C"}]}

    String values are as nvidia-smi prints them; "N/A"-style values and
    absent elements are ``None``.  ``compute_cap`` ("9.0") is read from a
    ``<compute_cap>`` element where the nvidia-smi version emits one (580.x
    does not; use ``--query-gpu=compute_cap``).  ``pci_bus_id`` falls back to
    the ``<gpu id=...>`` attribute.

    Security: the XML is parsed with ``xml.etree.ElementTree`` after
    rejecting entity tricks.  The one DOCTYPE real nvidia-smi emits,
    ``<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_vNN.dtd">`` (no internal
    subset, nothing fetched), is removed before parsing; any other
    ``<!DOCTYPE`` and any ``<!ENTITY`` is rejected.

    Raises :class:`ParseError` on: non-XML or truncated XML, a root element
    other than ``nvidia_smi_log``, a disallowed DOCTYPE / ENTITY, or input
    larger than :data:`MAX_XML` characters.
    """
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text[: MAX_XML + 1]).decode("utf-8", errors="replace")
    if not isinstance(text, str):
        raise ParseError("nvidia-smi XML: expected text, got %s" % type(text).__name__)
    if len(text) > MAX_XML:
        raise ParseError("nvidia-smi XML: input larger than %d characters" % MAX_XML)
    if "<!ENTITY" in text:
        raise ParseError("nvidia-smi XML: entity declarations are not allowed")
    text = _SMI_DOCTYPE_RE.sub("", text, count=1)
    if "<!DOCTYPE" in text:
        raise ParseError("nvidia-smi XML: DOCTYPE other than nvidia-smi's own is not allowed")
    if not text.strip():
        raise ParseError("nvidia-smi XML: empty input")
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise ParseError("nvidia-smi XML: not well-formed: %s" % exc) from None
    except Exception as exc:  # e.g. lone surrogates, encoding declaration mismatch
        raise ParseError("nvidia-smi XML: cannot parse: %s" % exc) from None
    if root.tag != "nvidia_smi_log":
        raise ParseError("nvidia-smi XML: root element is <%s>, not <nvidia_smi_log>" % str(root.tag)[:64])
    gpus = []
    for g in root.findall("gpu"):
        pci = g.find("pci")
        link = pci.find("pci_gpu_link_info") if pci is not None else None
        gpus.append({
            "name": _xt(g, "product_name"),
            "uuid": _xt(g, "uuid"),
            "pci_bus_id": _xt(pci, "pci_bus_id") or ((g.get("id") or "").strip() or None),
            "compute_cap": _xt(g, "compute_cap") or _xt(g, "cuda_compute_capability"),
            "memory_total_mib": _to_int(_xt(g, "fb_memory_usage/total")),
            "persistence_mode": _xt(g, "persistence_mode"),
            "mig_mode": _xt(g, "mig_mode/current_mig"),
            "mig_mode_pending": _xt(g, "mig_mode/pending_mig"),
            "ecc_mode": _xt(g, "ecc_mode/current_ecc"),
            "ecc_mode_pending": _xt(g, "ecc_mode/pending_ecc"),
            "pcie_gen_current": _to_int(_xt(link, "pcie_gen/current_link_gen")),
            "pcie_gen_max": _to_int(_xt(link, "pcie_gen/max_link_gen")),
            "pcie_width_current": _to_int(_xt(link, "link_widths/current_link_width")),
            "pcie_width_max": _to_int(_xt(link, "link_widths/max_link_width")),
            "compute_mode": _xt(g, "compute_mode"),
            "vbios": _xt(g, "vbios_version"),
        })
    return {
        "driver_version": _xt(root, "driver_version"),
        "cuda_version": _xt(root, "cuda_version"),
        "gpus": gpus,
    }

def parse_nvidia_smi_L(text) -> List[dict]:
    """Parse ``nvidia-smi -L``.

    Input::

        GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-5fd4...)
          MIG 3g.20gb     Device  0: (UUID: MIG-c6d4...)

    Returns one dict per physical GPU, in order: ``{"index": 0, "name":
    "NVIDIA A100-SXM4-40GB", "uuid": "GPU-...", "mig_devices": [{"index": 0,
    "name": "3g.20gb", "uuid": "MIG-..."}]}`` (MIG lines attach to the GPU
    line before them; the uuid may be ``None`` if a line lacks it).  Other
    lines are skipped.  Never raises.
    """
    out: List[dict] = []
    for line in _lines(text):
        s = line.strip()
        colon = s.find(":")
        if colon < 0:
            continue
        head, tail = s[:colon].split(), s[colon + 1:].strip()
        uuid = None
        name = tail
        u = tail.rfind("(UUID:")
        if u >= 0:
            end = tail.find(")", u)
            uuid = (tail[u + 6:end] if end >= 0 else tail[u + 6:]).strip() or None
            name = tail[:u].strip()
        if len(head) == 2 and head[0] == "GPU" and head[1].isdigit() and head[1].isascii():
            out.append({"index": int(head[1]), "name": name or None, "uuid": uuid,
                        "mig_devices": []})
        elif (len(head) == 4 and head[0] == "MIG" and head[2] == "Device"
              and head[3].isdigit() and head[3].isascii() and out):
            out[-1]["mig_devices"].append({"index": int(head[3]), "name": head[1], "uuid": uuid})
    return out

def parse_smi_query_csv(text) -> List[tuple]:
    """Rows of ``nvidia-smi --query-gpu=driver_version,name --format=csv,noheader``:
    ``"580.95.05, NVIDIA H100 80GB HBM3"`` -> ``[("580.95.05", "NVIDIA H100 80GB HBM3")]``.
    Lines whose first field is not a driver version are skipped (so garbage gives ``[]``).
    At most 64 rows are read. Never raises."""
    rows = []
    for line in _text(text).splitlines()[:256]:
        ver, sep, name = line.partition(",")
        if sep and _SMI_VERSION_RE.match(ver.strip()) and name.strip():
            rows.append((ver.strip(), name.strip()[:128]))
            if len(rows) == 64:
                break
    return rows

def parse_nvidia_smi_error(text) -> Optional[str]:
    """Map nvidia-smi failure output (stdout+stderr) to a canonical reason.

    * ``"version_mismatch"``: "Failed to initialize NVML: Driver/library version mismatch"
    * ``"nvml_not_found"``: "NVIDIA-SMI couldn't find libnvidia-ml.so library in your system."
    * ``"driver_not_loaded"``: "NVIDIA-SMI has failed because it couldn't communicate
      with the NVIDIA driver."
    * ``"nvml_unknown_error"``: "Failed to initialize NVML: Unknown Error" (typical of a
      container that lost access to /dev/nvidia* device nodes)
    * ``"no_devices"``: "No devices were found"

    Matching is case-insensitive, checked in the order above.  Returns
    ``None`` for anything else (including successful output).  Never raises.
    """
    low = _text(text).lower()
    for reason, needle in _SMI_ERRORS:
        if needle in low:
            return reason
    return None
