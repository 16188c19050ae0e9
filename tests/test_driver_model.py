"""Windows GPU driver models (NVML's nvmlDeviceGetDriverModel: WDDM, TCC, MCDM; current and pending). No
Windows GPU is at hand: the NVML answers below are FAKE facts in the worker's shape; the worker asks NVML on
Windows only (on Linux NVML answers NOT_SUPPORTED)."""
import pytest

from gpudoctor.rules import Facts
from gpudoctor.rules.devices import driver_model
from tests.conftest import judge, rule_context


def _facts(*models):
    gpus = [{"index": i, "name": "NVIDIA RTX A4000", "compute_capability": "8.6", "driver_model_current": now,
             "driver_model_pending": later} for i, (now, later) in enumerate(models)]
    return {"driver": {"nvml": {"gpus": gpus}}}


@pytest.mark.parametrize("now, later, fid, severity, words", [
    ("WDDM", "WDDM", "gpu.driver_model", "ok", "GPU 0 (NVIDIA RTX A4000) runs the WDDM driver model"),
    ("MCDM", "MCDM", "gpu.driver_model", "ok", "GPU 0 (NVIDIA RTX A4000) runs the MCDM driver model"),
    ("TCC", "TCC", "gpu.driver_model", "info", "runs the TCC (WDM) driver model, which NVIDIA deprecates"),
    ("WDDM", "TCC", "gpu.driver_model_pending", "warn", "runs the WDDM driver model; TCC takes effect only after a reboot"),
])
def test_each_driver_model_and_a_pending_change(now, later, fid, severity, words):
    (f,) = driver_model(Facts(_facts((now, later))), rule_context())
    assert (f.id, f.severity.value, words in f.title) == (fid, severity, True)
    assert f.evidence["driver_model_current"] == now and f.evidence["driver_model_pending"] == later
    if fid == "gpu.driver_model_pending":
        assert f.fixes[0].commands == ("shutdown /r /t 0",)


def test_linux_gpus_without_a_driver_model_say_nothing_and_the_live_rules_run_it():
    assert driver_model(Facts({"driver": {"nvml": {"gpus": [{"index": 0, "name": "H100"}]}}}), rule_context()) == []
    assert [f.id for f in judge(_facts(("WDDM", "TCC"), ("TCC", "TCC"))) if f.id.startswith("gpu.driver_model")] == \
        ["gpu.driver_model_pending", "gpu.driver_model"]
