"""Multi-GPU nodes (issue 16): NCCL's environment syntax, the NVML topology collector, the rules on
recorded NVML answers, the probes on this machine, and the multi-GPU smoke test's single-GPU/no-GPU paths.

This machine has no GPU and no multi-GPU NVML: the NVML answers of 2- and 8-GPU nodes are built from the
real H100 answer (docs/examples/h100-check.json) with the shapes nvidia-ml-py returns, and are named FAKE
where they stand in for hardware. NCCL, /dev/shm, /sys/class/net and the worker child are real.
"""
from __future__ import annotations

import copy
import json
import os
import subprocess
import sys

import pytest

from gpudoctor.findings import Severity
from gpudoctor.formats import nccl_env as nccl_env_fmt
from gpudoctor.probes import driver, nccl, smoke_multigpu
from tests.conftest import ROOT, by_id, ctx, judge

H100 = json.load(open(os.path.join(ROOT, "docs", "examples", "h100-check.json")))
H100_GPU = H100["probes"]["driver"]["facts"]["nvml"]["gpus"][0]
BARE_METAL = {"system": "Linux", "os": {"id": "ubuntu", "version_id": "22.04", "id_like": "debian"},
              "wsl": {"is_wsl": False}, "container": {"is_container": False}, "hypervisor": False}
CONTAINER = dict(BARE_METAL, container={"is_container": True, "markers": ["/.dockerenv"]})


def gpus(n, per_index=None):
    """FAKE: n copies of the real H100's NVML facts, each on its own bus; ``per_index`` = {1: {"mig_mode_current": True}}."""
    out = []
    for i in range(n):
        g = copy.deepcopy(H100_GPU)
        g.update(index=i, pci_bus_id=f"00000000:{0x17 + i:02X}:00.0", uuid=f"GPU-{i:08x}-0000-0000-0000-000000000000")
        g.update((per_index or {}).get(i, {}))
        out.append(g)
    return out


def pair(a, b, topology="SINGLE", **p2p):
    status = {"read": "OK", "write": "OK", "nvlink": "NOT_SUPPORTED", "atomics": "OK"}
    status.update(p2p)
    return {"a": a, "b": b, "topology": topology, "topology_level": {"SINGLE": 10, "NODE": 40, "SYSTEM": 50}.get(topology),
            "p2p": status}


def node(gpu_list, pairs=(), pci=None, nccl_facts=None, platform=BARE_METAL, smoke=None):
    results = {"driver": {"nvml": {"status": "ok", "driver_version": "580.159.04", "cuda_driver_version": "13.0",
                                   "gpus": gpu_list, "pairs": list(pairs)},
                          "pci_gpus": pci if pci is not None else
                          [{"bus_id": f"0000:{0x17 + g['index']:02x}:00.0", "driver": "nvidia"} for g in gpu_list]},
               "nccl": nccl_facts or {"vars": {}, "shm": {"path": "/dev/shm", "size_bytes": 64 << 30}}}
    if smoke is not None:
        results["smoke_multigpu"] = smoke
    return judge(results, platform=platform)


MULTI_IDS = ("gpu.missing", "gpu.inconsistent", "p2p.unavailable", "nvlink.down", "nccl.shm_too_small",
             "nccl.transport_disabled", "nccl.device_not_found")


def multi(findings):
    return [f for f in findings if f.id in MULTI_IDS]


# ------------------------------------------------------------------------------------ NCCL's syntax

def test_nccl_prefix_lists_follow_the_documented_syntax():
    p = nccl_env_fmt.parse_prefix_list("mlx5_0:1,mlx5_1:1")
    assert (p.exclude, p.exact, p.names) == (False, False, ("mlx5_0", "mlx5_1"))
    assert p.unmatched(["mlx5_0", "mlx5_1", "mlx5_2"]) == []
    assert p.unmatched(["mlx5_0"]) == ["mlx5_1"]
    assert nccl_env_fmt.parse_prefix_list("eth").unmatched(["eth0", "lo"]) == []  # a prefix
    assert nccl_env_fmt.parse_prefix_list("=eth").unmatched(["eth0", "lo"]) == ["eth"]  # exact
    assert nccl_env_fmt.parse_prefix_list("^docker,lo").unmatched(["eth0"]) == []  # exclusions name nothing needed
    assert nccl_env_fmt.is_true("1") and nccl_env_fmt.is_true("2") and not nccl_env_fmt.is_true("0")
    assert not nccl_env_fmt.is_true("yes")  # NCCL reads an integer
    assert nccl_env_fmt.p2p_level("loc") == "LOC" and nccl_env_fmt.p2p_level("0") == "LOC"
    assert nccl_env_fmt.p2p_level("5") == "SYS" and nccl_env_fmt.p2p_level("bogus") is None


def test_nccl_version_codes_of_both_eras_of_nccl_h():
    # nccl.h: NCCL_VERSION(X,Y,Z) = X*1000+Y*100+Z up to 2.8, X*10000+Y*100+Z from 2.9.
    assert nccl_env_fmt.nccl_version_from_int(22803) == "2.28.3"
    assert nccl_env_fmt.nccl_version_from_int(23203) == "2.32.3"
    assert nccl_env_fmt.nccl_version_from_int(2804) == "2.8.4"


def test_the_nccl_h_version_macro_is_what_the_reader_assumes():
    header = os.path.join(ROOT, ".ci", "cache", "nccl-cu13")
    found = [os.path.join(d, f) for d, _, fs in os.walk(header) for f in fs if f == "nccl.h"]
    if not found:
        pytest.skip("nccl.h (nvidia-nccl-cu13 headers) not fetched: .ci/fetch-real-wheels")
    text = open(found[0]).read()
    assert "(X) * 1000 + (Y) * 100 + (Z) : (X) * 10000 + (Y) * 100 + (Z)" in text
    code = int(text.split("#define NCCL_VERSION_CODE", 1)[1].split()[0])
    major, minor, patch = (int(text.split(f"#define NCCL_{k} ", 1)[1].split()[0]) for k in ("MAJOR", "MINOR", "PATCH"))
    assert nccl_env_fmt.nccl_version_from_int(code) == f"{major}.{minor}.{patch}"


# ------------------------------------------------------------------ the NVML collector (FAKE pynvml)

class FakeNvml:
    """FAKE nvidia-ml-py module for a 2-GPU NVLink node: what the real one would answer. It keeps the real
    module's exception classes, and refuses a P2P index that is not an int as ctypes does (nvidia-ml-py
    13.615 defines NVML_P2P_CAPS_INDEX_READ as the tuple (0,))."""

    def __init__(self, links_up=(18, 18)):
        import pynvml

        self.real = pynvml
        self.NVMLError = pynvml.NVMLError
        self.NVMLError_NotSupported = pynvml.NVMLError_NotSupported
        self.NVMLError_InvalidArgument = pynvml.NVMLError_InvalidArgument
        self.links_up = links_up
        self.NVML_P2P_CAPS_INDEX_READ = (0,)

    def nvmlDeviceGetNvLinkState(self, h, link):
        if link >= 18:
            raise self.real.NVMLError(self.real.NVML_ERROR_INVALID_ARGUMENT)
        return 1 if link < self.links_up[h] else 0

    def nvmlDeviceGetNvLinkVersion(self, h, link):
        return 4

    def nvmlDeviceGetNvLinkRemotePciInfo_v2(self, h, link):
        class Pci:
            busId = b"00000000:18:00.0" if h == 0 else b"00000000:17:00.0"
        return Pci()

    def nvmlDeviceGetNvLinkRemoteDeviceType(self, h, link):
        return 0

    def nvmlDeviceGetTopologyCommonAncestor(self, a, b):
        return 40

    def nvmlDeviceGetP2PStatus(self, a, b, index):
        if not isinstance(index, int):
            raise TypeError("Don't know how to convert parameter 3")
        return 0 if index != 2 else 0


def test_nvml_collector_reads_links_and_pairs(monkeypatch):
    from gpudoctor.process import nvml_topology

    fake = FakeNvml(links_up=(18, 17))
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    links0, links1 = nvml_topology.nvlinks(0), nvml_topology.nvlinks(1)
    assert len(links0) == 18 and all(link["active"] for link in links0)
    assert links0[0] == {"link": 0, "active": True, "version": 4, "remote_bus_id": "00000000:18:00.0", "remote_type": "GPU"}
    assert [link["link"] for link in links1 if not link["active"]] == [17]
    (p,) = nvml_topology.pairs({0: 0, 1: 1})
    assert p["topology"] == "NODE" and p["topology_level"] == 40
    assert p["p2p"] == {"read": "OK", "write": "OK", "nvlink": "OK", "atomics": "OK"}


def test_nvml_collector_on_a_gpu_without_nvlink(monkeypatch):
    from gpudoctor.process import nvml_topology

    fake = FakeNvml()

    def not_supported(h, link):  # what the real H100 PCIe answered for every link (device_exp12.sh)
        raise fake.real.NVMLError(fake.real.NVML_ERROR_NOT_SUPPORTED)

    fake.nvmlDeviceGetNvLinkState = not_supported
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    assert nvml_topology.nvlinks(0) is None


# ------------------------------------------------------------------------ rules on recorded answers

def test_a_healthy_two_gpu_node_has_no_multi_gpu_finding():
    assert multi(node(gpus(2), [pair(0, 1)])) == []


def test_p2p_refused_between_gpus_on_one_switch():
    findings = node(gpus(2), [pair(0, 1, "SINGLE", read="CHIPSET_NOT_SUPPORTED", write="CHIPSET_NOT_SUPPORTED")])
    (f,) = by_id(findings, "p2p.unavailable")
    assert f.severity == Severity.WARN and "GPU 0-1 (PIX: CHIPSET_NOT_SUPPORTED)" in f.title
    assert "sudo lspci -vvv | grep ACSCtl" in f.fixes[-1].commands
    assert not any("virtual machine" in x.summary for x in f.fixes)
    vm = dict(BARE_METAL, hypervisor=True)
    (g,) = by_id(node(gpus(2), [pair(0, 1, "SINGLE", read="NOT_SUPPORTED")], platform=vm), "p2p.unavailable")
    assert "virtual machine" in g.fixes[0].summary


def test_p2p_refused_across_sockets_is_expected_and_not_reported():
    assert by_id(node(gpus(2), [pair(0, 1, "SYSTEM", read="NOT_SUPPORTED", write="NOT_SUPPORTED")]), "p2p.unavailable") == []


def test_p2p_refused_between_nvlink_peers_is_reported_whatever_the_pcie_distance():
    links = [{"link": i, "active": True, "version": 4, "remote_bus_id": "00000000:18:00.0", "remote_type": "GPU"} for i in range(4)]
    back = [dict(link, remote_bus_id="00000000:17:00.0") for link in links]
    g = gpus(2, {0: {"nvlinks": links}, 1: {"nvlinks": back}})
    (f,) = by_id(node(g, [pair(0, 1, "SYSTEM", read="DISABLED_BY_REGKEY")]), "p2p.unavailable")
    assert "NVLink x4" in f.title and "NVreg_RegistryDwords" in " ".join(f.fixes[0].commands)


def test_gpus_that_differ_in_mig_ecc_or_model():
    findings = node(gpus(4, {2: {"mig_mode_current": True}, 3: {"ecc_mode_current": False}}),
                    [pair(a, b) for a in range(4) for b in range(a + 1, 4)])
    titles = {f.evidence["property"]: f.title for f in by_id(findings, "gpu.inconsistent")}
    assert set(titles) == {"mig_mode_current", "ecc_mode_current"}
    assert "True on GPU 2" in titles["mig_mode_current"] and "False on GPU 3" in titles["ecc_mode_current"]
    mixed = node(gpus(2, {1: {"name": "NVIDIA A100-SXM4-80GB", "memory_total_mib": 81920}}), [pair(0, 1)])
    (m,) = by_id(mixed, "gpu.inconsistent")  # the model, not also its memory
    assert m.evidence["property"] == "name"


def test_an_nvlink_down_on_one_gpu_of_an_nvswitch_node():
    def links(up, total=18):
        return [{"link": i, "active": i < up, "version": 4, "remote_type": "SWITCH", "remote_bus_id": "00000000:a1:00.0"}
                for i in range(total)]
    g = gpus(8, {i: {"nvlinks": links(18 if i != 5 else 16)} for i in range(8)})
    (f,) = by_id(node(g, [pair(a, b, "SYSTEM") for a in range(8) for b in range(a + 1, 8)]), "nvlink.down")
    assert f.severity == Severity.FAIL and "GPU 5: 16 of 18 active (down: 16, 17)" in f.title
    assert "sudo systemctl restart nvidia-fabricmanager" in f.fixes[1].commands
    assert by_id(node(gpus(8, {i: {"nvlinks": links(18)} for i in range(8)})), "nvlink.down") == []


def test_a_gpu_on_the_bus_that_the_driver_dropped():
    pci = [{"bus_id": "0000:17:00.0", "driver": "nvidia"}, {"bus_id": "0000:18:00.0", "driver": "nvidia"}]
    (f,) = by_id(node(gpus(1), pci=pci), "gpu.missing")
    assert f.severity == Severity.FAIL and "0000:18:00.0" in f.title and "Xid" in f.fixes[0].commands[0]
    assert by_id(node(gpus(1), pci=pci, platform=CONTAINER), "gpu.missing") == []  # a container gets a subset
    vfio = [pci[0], {"bus_id": "0000:18:00.0", "driver": "vfio-pci"}]  # passed through to a VM on purpose
    assert by_id(node(gpus(1), pci=vfio), "gpu.missing") == []


def test_small_dev_shm_in_a_multi_gpu_container():
    shm = {"vars": {}, "shm": {"path": "/dev/shm", "size_bytes": 64 << 20}}
    (f,) = by_id(node(gpus(2), [pair(0, 1)], nccl_facts=shm, platform=CONTAINER), "nccl.shm_too_small")
    assert "64 MiB" in f.title and any("--shm-size=1g" in c for c in f.fixes[0].commands)
    assert by_id(node(gpus(2), [pair(0, 1)], nccl_facts=shm), "nccl.shm_too_small") == []  # bare metal
    assert by_id(node(gpus(1), nccl_facts=shm, platform=CONTAINER), "nccl.shm_too_small") == []  # one GPU


def test_nccl_variables_that_disable_transports_or_name_missing_devices():
    facts = {"vars": {"NCCL_P2P_DISABLE": "1", "NCCL_IB_HCA": "mlx5_9:1", "NCCL_SOCKET_IFNAME": "eth"},
             "infiniband_devices": ["mlx5_0", "mlx5_1"], "net_interfaces": ["eth0", "lo"], "shm": {}}
    findings = node(gpus(2), [pair(0, 1)], nccl_facts=facts)
    (t,) = by_id(findings, "nccl.transport_disabled")
    assert t.severity == Severity.WARN and "NCCL_P2P_DISABLE=1" in t.title and t.fixes[0].commands[0] == "unset NCCL_P2P_DISABLE"
    (d,) = by_id(findings, "nccl.device_not_found")
    assert "mlx5_9" in d.title and d.evidence["present"] == ["mlx5_0", "mlx5_1"]
    fine = dict(facts, vars={"NCCL_P2P_DISABLE": "0", "NCCL_IB_HCA": "^mlx5_9", "NCCL_DEBUG": "INFO"})
    assert multi(node(gpus(2), [pair(0, 1)], nccl_facts=fine)) == []
    loc = dict(facts, vars={"NCCL_P2P_LEVEL": "LOC"})
    assert by_id(node(gpus(2), [pair(0, 1)], nccl_facts=loc), "nccl.transport_disabled")


# ------------------------------------------------------------------------------- smoke test findings

def test_smoke_findings_from_recorded_results():
    skipped = node(gpus(1), smoke={"skipped": "1 GPU on this node: peer copies and an NCCL all-reduce need two or more"})
    (s,) = by_id(skipped, "smoke.p2p")
    assert s.severity == Severity.INFO and "two or more" in s.title
    copies = [{"src": 0, "dst": 1, "ok": True, "can_access_peer": True, "gb_per_s": 48.1},
              {"src": 1, "dst": 0, "ok": True, "can_access_peer": True, "gb_per_s": 47.9}]
    nccl_ok = {"library": "/x/libnccl.so.2", "devices": [0, 1], "ok": True, "bytes": 64 << 20, "algbw_gb_per_s": 40.0,
               "busbw_gb_per_s": 40.0, "nccl_log": []}
    good = node(gpus(2), [pair(0, 1)], smoke={"device_count": 2, "copies": copies, "nccl": nccl_ok})
    (p,) = by_id(good, "smoke.p2p")
    (n,) = by_id(good, "smoke.nccl")
    assert p.severity == Severity.OK and "47.9–48.1 GB/s" in p.title
    assert n.severity == Severity.OK and "40.0 GB/s" in n.title
    staged = [dict(c, can_access_peer=False, gb_per_s=9.5) for c in copies]
    warned = dict(nccl_ok, nccl_log=["host:1:2 [0] NCCL WARN P2P is disabled between GPU 0 and GPU 1"])
    slow = node(gpus(2), [pair(0, 1)], smoke={"device_count": 2, "copies": staged, "nccl": warned})
    assert by_id(slow, "smoke.p2p")[0].severity == Severity.WARN
    assert "P2P is disabled" in by_id(slow, "smoke.nccl")[0].title
    broken = node(gpus(2), smoke={"device_count": 2, "copies": [dict(copies[0], ok=False, error="cudaMemcpyPeer: cudaErrorPeerAccessUnsupported")],
                                  "nccl": dict(nccl_ok, ok=False, error="ncclCommInitAll: ncclResult_t 2 (unhandled system error)")})
    assert by_id(broken, "smoke.p2p")[0].severity == Severity.FAIL
    assert "unhandled system error" in by_id(broken, "smoke.nccl")[0].title
    hung = node(gpus(2), smoke={"worker_error": "timed out after 90 s", "nccl_library": "/x/libnccl.so.2"})
    assert by_id(hung, "smoke.p2p")[0].severity == Severity.FAIL


# ---------------------------------------------------------------------------------- real probes here

def test_pci_gpus_from_a_sysfs_tree(tmp_path):
    """FAKE sysfs (a directory tree shaped like /sys/bus/pci/devices): two GPUs, an NVSwitch, a NIC."""
    def dev(bus, vendor, cls, drv=None):
        d = tmp_path / bus
        d.mkdir()
        (d / "vendor").write_text(vendor + "\n")
        (d / "class").write_text(cls + "\n")
        if drv:
            (d / "driver").symlink_to(tmp_path / ".." / "drivers" / drv)
    dev("0000:17:00.0", "0x10de", "0x030200", "nvidia")
    dev("0000:18:00.0", "0x10de", "0x030200")  # no driver bound
    dev("0000:a1:00.0", "0x10de", "0x068000", "nvidia")  # NVSwitch: a bridge, not a GPU
    dev("0000:3b:00.0", "0x15b3", "0x020700", "mlx5_core")
    assert driver.pci_gpus(str(tmp_path)) == [{"bus_id": "0000:17:00.0", "driver": "nvidia"},
                                              {"bus_id": "0000:18:00.0", "driver": None}]
    assert driver.pci_gpus(str(tmp_path / "absent")) == []


def test_nccl_probe_on_this_machine():
    facts = nccl.probe(ctx(NCCL_SOCKET_IFNAME="=nosuchif0", NCCL_P2P_DISABLE="1"))
    assert facts["vars"] == {"NCCL_P2P_DISABLE": "1", "NCCL_SOCKET_IFNAME": "=nosuchif0"} | \
        {k: v for k, v in os.environ.items() if k.startswith("NCCL_")}
    assert "lo" in facts["net_interfaces"]
    assert facts["shm"]["size_bytes"] > 0
    findings = judge({"nccl": facts, "driver": {"nvml": {"status": "ok", "gpus": gpus(2), "pairs": [pair(0, 1)]}}},
                     platform=BARE_METAL)
    (d,) = by_id(findings, "nccl.device_not_found")
    assert "nosuchif0" in d.title and "lo" in d.evidence["present"]


def test_the_smoke_probe_skips_one_gpu_without_starting_a_child():
    c = ctx()
    c.memo("nvml", lambda: {"status": "ok", "gpus": gpus(1)})  # FAKE: NVML's answer on a one-GPU node
    res = smoke_multigpu.probe(c)
    assert res == {"skipped": "1 GPU on this node: peer copies and an NCCL all-reduce need two or more", "device_count": 1}


def test_the_worker_child_without_a_gpu_says_so():
    """Real: the multigpu-smoke child on this GPU-less machine (cuda-python's runtime, the real libcuda if any)."""
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-m", "gpudoctor.process.worker", "multigpu-smoke", "--self-test"],
                         capture_output=True, text=True, timeout=60, env=env)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res.get("device_count") == 0 and res["skipped"].startswith("no CUDA device (cuda"), res


def test_check_reports_the_multi_gpu_area_without_a_gpu():
    out = subprocess.run([sys.executable, "-m", "gpudoctor", "check", "--json"], capture_output=True, text=True,
                         timeout=120, env=dict(os.environ, PYTHONPATH=ROOT))
    report = json.loads(out.stdout)
    assert report["probes"]["nccl"]["status"] == "ok"
    assert "shm" in report["probes"]["nccl"]["facts"]
    (s,) = [f for f in report["findings"] if f["id"] == "smoke.p2p"]
    assert s["severity"] == "info" and "skipped" in s["title"]


# ------------------------------------------------------------------------------------------- fleet

def _report(host, links_up=(18,) * 4, p2p_refused=False):
    """The real H100 report, turned into a 4-GPU NVSwitch node (FAKE NVML answers for the other GPUs)."""
    r = copy.deepcopy(H100)
    r["host"] = {"hostname": host}
    nv = r["probes"]["driver"]["facts"]["nvml"]
    nv["gpus"] = gpus(4, {i: {"nvlinks": [{"link": k, "active": k < up, "remote_type": "SWITCH"} for k in range(18)]}
                          for i, up in enumerate(links_up)})
    nv["pairs"] = [pair(a, b, "NODE", **({"read": "NOT_SUPPORTED"} if p2p_refused and (a, b) == (0, 1) else {}))
                   for a in range(4) for b in range(a + 1, 4)]
    return r


def test_fleet_singles_out_the_node_with_a_link_down_or_p2p_refused():
    from gpudoctor.reports.fleet import aggregate, render_text

    reports = {f"gpu{i:02d}": _report(f"gpu{i:02d}") for i in range(10)}
    reports["gpu03"] = _report("gpu03", links_up=(18, 18, 17, 18))
    reports["gpu07"] = _report("gpu07", p2p_refused=True)
    res = aggregate(reports)
    assert res["majority"]["topology"] == "4 GPUs; NVLink active 18x4; pairs NODE x6; P2P refused 0/6"
    odd = {o["node"]: [r for r in o["reasons"] if r["kind"] == "topology"] for o in res["outliers"]}
    assert set(odd) == {"gpu03", "gpu07"}
    assert "NVLink active 18x3, 17x1" in odd["gpu03"][0]["topology"]
    assert "P2P refused 1/6" in odd["gpu07"][0]["topology"]
    text = render_text(res)
    assert "Majority GPU wiring: 4 GPUs; NVLink active 18x4" in text and "[topology]" in text


def test_the_wiring_of_a_healthy_node_is_shown_pair_by_pair():
    links = [{"link": i, "active": True, "remote_bus_id": "00000000:18:00.0", "remote_type": "GPU"} for i in range(4)]
    g = gpus(3, {0: {"nvlinks": links}, 1: {"nvlinks": [dict(x, remote_bus_id="00000000:17:00.0") for x in links]}})
    (t,) = by_id(node(g, [pair(0, 1, "SYSTEM"), pair(0, 2, "NODE"), pair(1, 2, "SYSTEM", read="NOT_SUPPORTED")]),
                 "gpu.topology")
    assert t.severity == Severity.OK
    assert t.title == "3 GPUs: 1 of 3 pairs joined by NVLink, P2P read/write OK for 2 of 3 pairs"
    assert t.evidence == {"GPU 0-1": "NV4, P2P OK", "GPU 0-2": "NODE, P2P OK", "GPU 1-2": "SYS, P2P NOT_SUPPORTED/OK"}
    assert by_id(node(gpus(1)), "gpu.topology") == []


# ------------------------------------------- the smoke test's code paths on several (FAKE) GPUs

class _Err:
    def __init__(self, name):
        self.name = name


class FakeRuntime:
    """FAKE cuda.bindings.runtime with ``n`` GPUs whose memory is host memory (ctypes buffers): lets the
    multi-GPU smoke test's pair loop, verification and NCCL calls run here. ``corrupt``: every peer copy
    flips one byte (what a broken link would do); ``peer``: what cudaDeviceCanAccessPeer answers."""

    class cudaMemcpyKind:
        cudaMemcpyHostToDevice = 1
        cudaMemcpyDeviceToHost = 2

    def __init__(self, n, corrupt=False, peer=1):
        import ctypes

        self.ctypes, self.n, self.corrupt, self.peer = ctypes, n, corrupt, peer
        self.bufs, self.ok = {}, _Err("cudaSuccess")

    def cudaGetDeviceCount(self):
        return self.ok, self.n

    def cudaDeviceCanAccessPeer(self, a, b):
        return self.ok, self.peer

    def cudaSetDevice(self, d):
        return (self.ok if 0 <= d < self.n else _Err("cudaErrorInvalidDevice"),)

    def cudaDeviceEnablePeerAccess(self, peer, flags):
        return (self.ok,)

    def cudaMalloc(self, size):
        buf = self.ctypes.create_string_buffer(size)
        self.bufs[self.ctypes.addressof(buf)] = buf
        return self.ok, self.ctypes.addressof(buf)

    def cudaFree(self, ptr):
        self.bufs.pop(ptr, None)
        return (self.ok,)

    def cudaMemset(self, ptr, value, size):
        self.ctypes.memset(ptr, value, size)
        return (self.ok,)

    def cudaDeviceSynchronize(self):
        return (self.ok,)

    def cudaMemcpyPeer(self, dst, dst_dev, src, src_dev, size):
        self.ctypes.memmove(dst, src, size)
        if self.corrupt:
            self.ctypes.memset(dst + size // 2, 0, 1)
        return (self.ok,)

    def cudaMemcpy(self, dst, src, size, kind):
        self.ctypes.memmove(dst, src, size)
        return (self.ok,)

    def cudaStreamCreate(self):
        return self.ok, 0

    def cudaStreamSynchronize(self, stream):
        return (self.ok,)


@pytest.fixture(scope="module")
def fake_nccl(tmp_path_factory):
    """The FAKE libnccl.so.2 (tests/fakes/fake_nccl/fake_nccl.c), built with the machine's C compiler."""
    import shutil

    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler to build the fake NCCL")
    out = tmp_path_factory.mktemp("nccl") / "libnccl.so.2"
    src = os.path.join(ROOT, "tests", "fakes", "fake_nccl", "fake_nccl.c")
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", str(out), src], check=True, timeout=60)
    return str(out)


@pytest.fixture
def small_smoke(monkeypatch):
    from gpudoctor.process import multigpu_smoke

    monkeypatch.setattr(multigpu_smoke, "COPY_BYTES", (6 << 20) + 12)  # a partial last chunk
    monkeypatch.setattr(multigpu_smoke, "NCCL_FLOATS", (5 << 20) // 4)
    for var in ("NCCL_DEBUG", "NCCL_DEBUG_FILE", "FAKE_NCCL_FAIL", "FAKE_NCCL_WARN"):
        monkeypatch.delenv(var, raising=False)  # the smoke test sets NCCL_DEBUG(_FILE): undone after
    return multigpu_smoke


def _run(smoke, monkeypatch, runtime, args):
    monkeypatch.setattr(smoke, "binding", lambda name: runtime)
    return smoke.multigpu_smoke_main(args)


def test_multigpu_smoke_on_four_fake_gpus_with_a_real_c_abi(small_smoke, monkeypatch, fake_nccl):
    res = _run(small_smoke, monkeypatch, FakeRuntime(4), ["--nccl", fake_nccl])
    assert res["device_count"] == 4 and len(res["copies"]) == 12  # every ordered pair
    assert all(c["ok"] and c["can_access_peer"] and c["peer_enabled"] and c["gb_per_s"] > 0 for c in res["copies"])
    n = res["nccl"]
    assert n["ok"], n
    assert n["version_code"] == 22809 and n["devices"] == [0, 1, 2, 3]
    assert n["busbw_gb_per_s"] == pytest.approx(n["algbw_gb_per_s"] * 2 * 3 / 4, rel=0.02)
    findings = node(gpus(4), [pair(a, b) for a in range(4) for b in range(a + 1, 4)], smoke=res)
    assert by_id(findings, "smoke.p2p")[0].severity == Severity.OK
    assert by_id(findings, "smoke.nccl")[0].severity == Severity.OK


def test_multigpu_smoke_failures_are_caught(small_smoke, monkeypatch, fake_nccl):
    bad = _run(small_smoke, monkeypatch, FakeRuntime(2, corrupt=True), [])
    assert bad["nccl"] is None
    assert [c["error"] for c in bad["copies"]] == ["1 of 6291468 bytes differ after the copy"] * 2
    staged = _run(small_smoke, monkeypatch, FakeRuntime(2, peer=0), [])
    assert all(c["ok"] and not c["can_access_peer"] for c in staged["copies"])
    monkeypatch.setenv("FAKE_NCCL_FAIL", "1")
    failed = _run(small_smoke, monkeypatch, FakeRuntime(2), ["--nccl", fake_nccl])["nccl"]
    assert not failed["ok"] and failed["error"] == "ncclCommInitAll: ncclResult_t 2 (unhandled system error (FAKE))"
    monkeypatch.delenv("FAKE_NCCL_FAIL")
    monkeypatch.setenv("FAKE_NCCL_WARN", "1")
    warned = _run(small_smoke, monkeypatch, FakeRuntime(2), ["--nccl", fake_nccl])
    assert warned["nccl"]["ok"] and any("NCCL WARN P2P is disabled" in line for line in warned["nccl"]["nccl_log"])
    (f,) = by_id(node(gpus(2), [pair(0, 1)], smoke=warned), "smoke.nccl")
    assert f.severity == Severity.WARN and "P2P is disabled" in f.title
    missing = _run(small_smoke, monkeypatch, FakeRuntime(2), ["--nccl", "/nonexistent/libnccl.so.2"])["nccl"]
    assert not missing["ok"] and missing["error"].startswith("cannot load /nonexistent/libnccl.so.2")


def test_an_nvswitch_node_whose_fabric_manager_is_not_running():
    """cuInit's CUDA_ERROR_SYSTEM_NOT_READY (802) on an HGX node: the fabric, not CUDA_VISIBLE_DEVICES."""
    switches = [{"bus_id": f"0000:{b:02x}:00.0", "driver": "nvidia"} for b in (0xa1, 0xa2)]
    down = [{"link": i, "active": False} for i in range(18)]
    results = {"driver": {"nvml": {"status": "ok", "gpus": gpus(8, {i: {"nvlinks": down} for i in range(8)}),
                                   "pairs": [pair(a, b, "SYSTEM") for a in range(8) for b in range(a + 1, 8)]},
                          "pci_gpus": [], "pci_nvswitches": switches},
               "cuda": {"api": {"cuInit": {"result": "CUDA_ERROR_SYSTEM_NOT_READY"}, "devices": []}},
               "nccl": {"vars": {}, "shm": {}}}
    findings = judge(results, platform=BARE_METAL)
    (f,) = by_id(findings, "nvlink.fabric_down")
    assert f.severity == Severity.FAIL and "CUDA_ERROR_SYSTEM_NOT_READY" in f.title and "2 NVSwitches" in f.title
    assert "sudo systemctl enable --now nvidia-fabricmanager" in f.fixes[0].commands
    assert by_id(findings, "device.not_visible") == []  # not a visibility problem
    assert by_id(findings, "nvlink.down") == []  # every GPU alike: the fabric finding says it
    healthy = dict(results, cuda={"api": {"cuInit": {"result": "CUDA_SUCCESS"}, "devices": []}})
    healthy["driver"] = dict(results["driver"], nvml=dict(results["driver"]["nvml"],
                             gpus=gpus(8, {i: {"nvlinks": [dict(x, active=True) for x in down]} for i in range(8)})))
    assert by_id(judge(healthy, platform=BARE_METAL), "nvlink.fabric_down") == []


def test_nvswitches_are_found_in_sysfs_apart_from_gpus(tmp_path):
    """FAKE sysfs tree: an NVSwitch bridge beside a GPU."""
    for bus, cls in (("0000:17:00.0", "0x030200"), ("0000:a1:00.0", "0x068000")):
        d = tmp_path / bus
        d.mkdir()
        (d / "vendor").write_text("0x10de\n")
        (d / "class").write_text(cls + "\n")
    assert [g["bus_id"] for g in driver.pci_gpus(str(tmp_path))] == ["0000:17:00.0"]
    assert driver.pci_nvswitches(str(tmp_path)) == [{"bus_id": "0000:a1:00.0", "driver": None}]


# --- The real 2-GPU answer: an H200 ×2 VM (NVSwitch not on the guest's bus), recorded by
# benchmarks/device_multigpu.sh into docs/examples/h200x2-check.json; nvidia-smi topo -m printed NV18.

H200X2 = json.load(open(os.path.join(ROOT, "docs", "examples", "h200x2-check.json")))


def _h200x2_facts():
    return {n: copy.deepcopy(p["facts"]) for n, p in H200X2["probes"].items() if p["status"] == "ok"}


def test_real_h200_pair_on_nvswitch_links_is_nv18_as_nvidia_smi_says():
    """NVML's common ancestor is the PCIe host bridge (PHB) and every link's remote is the switch at
    ffffffff:ff:ff.0: the pair is still joined by 18 NVLinks, as nvidia-smi topo -m printed."""
    findings = judge(_h200x2_facts())
    (topo,) = by_id(findings, "gpu.topology")
    assert "1 of 1 pairs joined by NVLink" in topo.title
    assert topo.evidence == {"GPU 0-1": "NV18, P2P OK"}
    # the image's real second cuDNN (apt 9.14 beside torch's 9.19), as on the H100
    assert [f.id for f in findings if f.severity.rank >= Severity.WARN.rank] == ["cudnn.mismatch"]
    assert by_id(findings, "smoke.p2p", Severity.OK) and by_id(findings, "smoke.nccl", Severity.OK)


def test_switch_links_do_not_join_a_pair_whose_nvlink_p2p_is_refused():
    """Recorded answer, changed: NVML says NVLink P2P is not supported between the two (two fabric partitions)."""
    facts = _h200x2_facts()
    facts["driver"]["nvml"]["pairs"][0]["p2p"]["nvlink"] = "NOT_SUPPORTED"
    (topo,) = by_id(judge(facts), "gpu.topology")
    assert "0 of 1 pairs joined by NVLink" in topo.title and topo.evidence["GPU 0-1"].startswith("PHB")


def _hide_second_gpu(facts, env_vars=None):
    """The real answer as CUDA_VISIBLE_DEVICES=0 left it on that machine (its text run is in
    docs/examples/h200x2-multigpu.txt): the variable parsed by the real parser, CUDA listing GPU 0 only."""
    from gpudoctor.formats.cuda_env import parse_cuda_visible_devices
    facts["environment"]["cuda_visible_devices"] = parse_cuda_visible_devices("0")
    facts["environment"]["scheduler_vars"] = env_vars or {}
    facts["cuda"]["api"]["devices"] = facts["cuda"]["api"]["devices"][:1]
    return facts


def test_cuda_visible_devices_hiding_one_of_two_gpus_is_a_warning_naming_it():
    (f,) = by_id(judge(_hide_second_gpu(_h200x2_facts())), "device.partly_hidden")
    assert f.severity == Severity.WARN
    assert f.title.startswith("CUDA_VISIBLE_DEVICES=0 hides 1 of 2 GPUs from CUDA: GPU 1 (NVIDIA H200, 00000000:00:07.0)")
    assert f.evidence["hidden"] == ["GPU-e1f4d00b-97a2-dd56-55f7-dd592b87d7c6"]
    assert "unset CUDA_VISIBLE_DEVICES" in f.fixes[0].commands
    assert not by_id(judge(_hide_second_gpu(_h200x2_facts())), "device.visible")


def test_a_scheduler_hiding_gpus_for_its_job_is_not_a_warning():
    (f,) = by_id(judge(_hide_second_gpu(_h200x2_facts(), {"SLURM_JOB_ID": "4242"})), "device.partly_hidden")
    assert f.severity == Severity.OK and "batch scheduler" in f.title and not f.fixes


def test_a_gpu_missing_from_cuda_without_the_variable_is_a_warning():
    facts = _h200x2_facts()
    facts["cuda"]["api"]["devices"] = facts["cuda"]["api"]["devices"][1:]
    (f,) = by_id(judge(facts), "device.partly_hidden")
    assert f.severity == Severity.WARN and f.title.startswith("CUDA sees 1 of the 2 GPUs NVML sees; missing: GPU 0")


def test_fleet_names_the_real_h200_pair_nv18_and_singles_out_a_node_with_links_down():
    from gpudoctor.reports.fleet import topology_fingerprint

    healthy = copy.deepcopy(H200X2)
    degraded = copy.deepcopy(H200X2)
    for link in degraded["probes"]["driver"]["facts"]["nvml"]["gpus"][1]["nvlinks"][:4]:
        link["active"] = False  # the recorded answer, changed: 4 of GPU 1's 18 links down
    assert topology_fingerprint(healthy) == "2 GPUs; NVLink active 18x2; pairs NV18 x1; P2P refused 0/1"
    assert topology_fingerprint(degraded) == "2 GPUs; NVLink active 18x1, 14x1; pairs NV14 x1; P2P refused 0/1"


def test_links_down_on_one_gpu_of_the_real_h200_pair():
    facts = _h200x2_facts()
    for link in facts["driver"]["nvml"]["gpus"][1]["nvlinks"][:4]:
        link["active"] = False  # the recorded answer, changed
    findings = judge(facts)
    (f,) = by_id(findings, "nvlink.down")
    assert f.severity == Severity.FAIL and "GPU 1: 14 of 18 active" in f.title
    assert by_id(findings, "gpu.topology")[0].evidence == {"GPU 0-1": "NV14, P2P OK"}
