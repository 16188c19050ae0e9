"""Driver states that cannot be produced on this machine without a kernel module: the facts NVML
and /proc would give are injected (named FAKE); the user-space side is the real driver-535 probe."""
from __future__ import annotations

from gpudoctor.findings import Severity
from gpudoctor.probes import driver
from tests.conftest import by_id, ctx, judge


def test_kernel_module_and_user_space_of_different_versions(driver_535_userspace):
    facts = driver.probe(ctx())
    assert facts["user_space_version"].startswith("535.")
    # FAKE: a 580 kernel module still loaded after the 535 user space was installed (reboot pending).
    facts = dict(facts, kernel_module={"version": "580.95.05", "flavor": "open"},
                 nvml={"status": "error", "error": "Driver/library version mismatch", "reason": "version_mismatch", "gpus": []})
    findings = judge({"driver": facts})
    (f,) = by_id(findings, "driver.version_mismatch")
    assert f.severity == Severity.FAIL and "580.95.05" in f.title and "535." in f.title
    assert f.fixes[0].commands == ("sudo reboot",)
    assert not by_id(findings, "driver.not_loaded")


def test_no_driver_at_all():
    # FAKE: what the driver probe reports on a machine without any NVIDIA package.
    facts = {"nvml": {"status": "error", "error": "NVML Shared Library Not Found", "reason": "library_not_found", "gpus": []},
             "kernel_module": None, "libnvidia_ml": [], "libcuda": [], "user_space_version": None}
    ubuntu = {"system": "Linux", "os": {"id": "ubuntu", "version_id": "24.04", "id_like": "debian"},
              "wsl": {"is_wsl": False}, "container": {"is_container": False}}
    (f,) = by_id(judge({"driver": facts}, platform=ubuntu), "driver.missing")
    assert f.severity == Severity.FAIL
    assert "sudo apt-get install -y nvidia-driver-580" in f.fixes[0].commands
    wsl = dict(ubuntu, wsl={"is_wsl": True})
    (w,) = by_id(judge({"driver": facts}, platform=wsl), "driver.missing")
    assert "Never install a Linux driver inside WSL" in w.fixes[0].summary
    win = {"system": "Windows"}
    (x,) = by_id(judge({"driver": facts}, platform=win), "driver.missing")
    assert x.fixes[0].shell == "powershell"
