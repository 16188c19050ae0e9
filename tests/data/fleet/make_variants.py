"""Regenerate the derived fleet/compare test reports from the real H100 report.

Every ``derived-*.json`` here is docs/examples/h100-check.json with a few probe facts changed
(see README.md); its findings and summary are then re-judged by gpudoctor's own rules against
the bundled compatibility matrix, so each variant is what ``gpudoctor check --json`` would
have written on such a node. ``h100-baseline.json`` and ``h100-cuda-visible-devices-1.json``
are unmodified copies of the real reports in docs/examples/.

Run from the repository root:  .venv/bin/python tests/data/fleet/make_variants.py
"""
from __future__ import annotations

import copy
import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from gpudoctor.rules.fixes import OsFlavor  # noqa: E402
from gpudoctor.matrix import load_matrix  # noqa: E402
from gpudoctor.rules import Facts, RuleContext, evaluate  # noqa: E402

HERE = Path(__file__).resolve().parent
REAL = ROOT / "docs" / "examples" / "h100-check.json"
REAL_CVD1 = ROOT / "docs" / "examples" / "h100-cuda-visible-devices-1.json"


def rejudge(report: dict) -> dict:
    """Recompute findings and summary from the (edited) probe facts, as `check` would."""
    probes = report["probes"]
    facts = Facts({n: p["facts"] for n, p in probes.items() if p["status"] == "ok"},
                  {n: {"status": p["status"], "error": p["error"]} for n, p in probes.items()})
    findings = evaluate(facts, RuleContext(matrix=load_matrix(), os=OsFlavor.from_platform(facts["platform"])))
    findings.sort(key=lambda f: -f.severity.rank)
    report["findings"] = [f.to_dict() for f in findings]
    report["summary"] = {s: sum(1 for f in findings if f.severity.value == s) for s in ("ok", "info", "warn", "fail")}
    return report


def set_driver(r: dict, version: str, cuda: str, cuda_int: int) -> None:
    old = r["probes"]["driver"]["facts"]["nvml"]["driver_version"]
    d = r["probes"]["driver"]["facts"]
    d["nvml"]["driver_version"] = version
    d["nvml"]["cuda_driver_version"] = cuda
    d["nvml"]["nvml_version"] = f"{cuda.split('.')[0]}.{version}"
    d["kernel_module"]["version"] = version
    d["user_space_version"] = version
    for lib in d["libnvidia_ml"] + d["libcuda"]:
        lib["realpath"] = lib["realpath"].replace(old, version)
        lib["version"] = version
    c = r["probes"]["cuda"]["facts"]
    c["api"]["cuDriverGetVersion"]["value"] = cuda_int
    c["driver_cuda_version"] = cuda


def gpu0(r: dict) -> dict:
    return r["probes"]["driver"]["facts"]["nvml"]["gpus"][0]


def main() -> None:
    base = json.loads(REAL.read_text())
    shutil.copyfile(REAL, HERE / "h100-baseline.json")
    shutil.copyfile(REAL_CVD1, HERE / "h100-cuda-visible-devices-1.json")
    out = {}

    # Another R580 driver (still CUDA 13.0): only the software fingerprint differs.
    r = copy.deepcopy(base)
    set_driver(r, "580.95.05", "13.0", 13000)
    out["derived-driver-580.95.05.json"] = r

    # The GPU trained its link at PCIe Gen3 x8 instead of Gen5 x16 (reseat / riser / slot).
    r = copy.deepcopy(base)
    gpu0(r).update(pcie_gen_current=3, pcie_width_current=8)
    out["derived-pcie-gen3-x8.json"] = r

    # Uncorrected ECC errors since the last reset and a row remap pending.
    r = copy.deepcopy(base)
    gpu0(r)["ecc_uncorrected_volatile"] = 2
    gpu0(r)["remapped_rows"] = {"correctable": 0, "uncorrectable": 1, "pending": True, "failure": False}
    out["derived-ecc-uncorrected.json"] = r

    # The GPU fell off the bus: NVML lists none, CUDA finds none, the smoke tests cannot run on one.
    r = copy.deepcopy(base)
    r["probes"]["driver"]["facts"]["nvml"]["gpus"] = []
    api = r["probes"]["cuda"]["facts"]["api"]
    api["cuInit"] = {"result": "CUDA_ERROR_NO_DEVICE", "seconds": 0.0147}
    api.pop("device_count", None)
    api["devices"] = []
    api["cudaGetDeviceCount"] = {"result": "cudaErrorNoDevice", "value": None}
    r["probes"]["platform"]["facts"]["dev_nodes"] = [
        "/dev/nvidia-caps", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidiactl"]
    r["probes"]["smoke_nvrtc"]["facts"]["cuInit"] = "CUDA_ERROR_NO_DEVICE"
    r["probes"]["smoke_nvrtc"]["facts"]["runs"] = []
    r["probes"]["smoke_nvcc"]["facts"]["builds"][0]["run"] = {"skipped": "no GPU visible to NVML"}
    r["probes"]["smoke_nvcc"]["facts"]["device_ccs"] = []
    out["derived-gpu-missing.json"] = r

    # For compare only (tests/data/fleet/compare/): an R575 driver (CUDA 12.9) below what the
    # CUDA 13 runtimes and torch cu130 need.
    r = copy.deepcopy(base)
    set_driver(r, "575.57.08", "12.9", 12090)
    out["compare/derived-driver-575-too-old.json"] = r

    for name, rep in out.items():
        (HERE / name).write_text(json.dumps(rejudge(rep), indent=2) + "\n")
        print(name, rep["summary"], [(f["id"], f["severity"]) for f in rep["findings"] if f["severity"] != "ok"])


if __name__ == "__main__":
    main()
