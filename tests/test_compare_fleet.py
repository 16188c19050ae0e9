"""gpudoctor.reports.compare and gpudoctor.reports.fleet over the real H100 reports and variants derived from them
(tests/data/fleet/README.md says how each variant was made)."""
import copy
import json
from pathlib import Path

import pytest

from gpudoctor.reports import compare as cmp
from gpudoctor.reports import fleet

ROOT = Path(__file__).resolve().parents[1]
FLEET = ROOT / "tests" / "data" / "fleet"
H100 = ROOT / "docs" / "examples" / "h100-check.json"
CVD1 = ROOT / "docs" / "examples" / "h100-cuda-visible-devices-1.json"
CPU = ROOT / "docs" / "examples" / "cpu-debian12-check.json"


def load(path):
    return json.loads(Path(path).read_text())


@pytest.fixture(scope="module")
def h100():
    return load(H100)


@pytest.fixture(scope="module")
def fleet_result():
    reports, errors = fleet.load_reports([FLEET])
    return fleet.aggregate(reports, errors)


# ------------------------------------------------------------------------------------------ data

def test_baseline_and_cvd1_are_unmodified_copies_of_the_real_reports():
    assert (FLEET / "h100-baseline.json").read_bytes() == H100.read_bytes()
    assert (FLEET / "h100-cuda-visible-devices-1.json").read_bytes() == CVD1.read_bytes()


def test_derived_variants_differ_from_the_baseline_only_where_documented(h100):
    drv = load(FLEET / "derived-driver-580.95.05.json")
    assert drv["probes"]["driver"]["facts"]["nvml"]["driver_version"] == "580.95.05"
    assert drv["probes"]["platform"] == h100["probes"]["platform"]
    assert drv["probes"]["frameworks"] == h100["probes"]["frameworks"]
    pcie = load(FLEET / "derived-pcie-gen3-x8.json")["probes"]["driver"]["facts"]["nvml"]["gpus"][0]
    assert (pcie["pcie_gen_current"], pcie["pcie_width_current"]) == (3, 8)
    gone = load(FLEET / "derived-gpu-missing.json")
    assert gone["probes"]["driver"]["facts"]["nvml"]["gpus"] == []


# ------------------------------------------------------------------------------------------ compare

def test_compare_ranks_cuda_visible_devices_first(h100):
    res = cmp.compare(h100, load(CVD1))
    top = res["differences"][0]
    assert top["fact"] == "env.CUDA_VISIBLE_DEVICES"
    assert (top["a"], top["b"]) == ("unset", "1")
    assert top["explains"] == ["device.not_visible"]
    assert res["culprit"] is top
    new = [f for f in res["findings"] if f["change"] == "new"]
    assert new[0]["id"] == "device.not_visible" and new[0]["b"] == "fail"
    # smoke findings differ only because B ran with --no-smoke
    smoke = [f for f in res["findings"] if f["id"].startswith("smoke.")]
    assert smoke and not any(f["comparable"] for f in smoke)
    # symptoms rank below the cause; cosmetic facts are not compared
    facts = [d["fact"] for d in res["differences"]]
    assert facts.index("cuda.cuInit") > 0
    assert not any("temperature" in f or "elapsed" in f or "memory_used" in f for f in facts)


def test_compare_ranks_driver_first_when_b_has_driver_too_old(h100):
    res = cmp.compare(h100, load(FLEET / "compare" / "derived-driver-575-too-old.json"))
    assert res["culprit"]["fact"] == "driver.version"
    assert res["culprit"]["b"] == "575.57.08"
    assert "driver.too_old" in res["culprit"]["explains"]
    assert res["differences"][1]["fact"] == "driver.cuda_version"
    assert res["findings"][0] == {**res["findings"][0], "id": "driver.too_old", "change": "new", "b": "fail"}


def test_compare_hardware_variant_points_at_the_gpu(h100):
    res = cmp.compare(h100, load(FLEET / "derived-pcie-gen3-x8.json"))
    assert res["culprit"]["fact"] == "gpu[0].pcie_link"
    assert res["culprit"]["b"] == "Gen3 x8 (max Gen5 x16)"
    assert [f["id"] for f in res["findings"]] == ["gpu.health"]


def test_compare_without_failing_finding_uses_base_weights(h100):
    # A newer driver without new findings: the driver still outranks the library copies
    res = cmp.compare(h100, load(FLEET / "derived-driver-580.95.05.json"))
    assert res["findings"] == []
    assert res["culprit"]["fact"] == "driver.version"
    assert res["culprit"]["weight"] == cmp.BASE_WEIGHT["driver"]


def test_compare_identical_and_cosmetic_only(h100):
    b = copy.deepcopy(h100)
    b["generated_at"] = "2027-01-01T00:00:00Z"
    b["elapsed_s"] = 99.0
    b["probes"]["driver"]["facts"]["nvml"]["gpus"][0]["temperature_c"] = 80
    b["probes"]["driver"]["facts"]["nvml"]["gpus"][0]["memory_used_mib"] = 70000
    b["probes"]["driver"]["elapsed_s"] = 3.0
    res = cmp.compare(h100, b)
    assert res["identical"] and res["culprit"] is None
    assert "No differences" in cmp.render_text(res)


def test_compare_env_and_library_changes(h100):
    b = copy.deepcopy(h100)
    env = b["probes"]["environment"]["facts"]
    env["ld_library_path"].insert(0, {"index": 0, "path": "/usr/local/cuda-12.4/lib64", "exists": True,
                                      "cuda_version": "12.4"})
    env["vars"]["CUDA_HOME"] = "/usr/local/cuda-12.4"
    b["probes"]["frameworks"]["facts"]["torch"]["version"] = "2.10.0+cu128"
    res = cmp.compare(h100, b)
    facts = [d["fact"] for d in res["differences"]]
    assert facts[0] == "frameworks.torch.version"  # library (50) before environment (40)
    assert set(facts[1:3]) == {"env.LD_LIBRARY_PATH", "env.CUDA_HOME"}


def test_compare_probe_that_did_not_finish(h100):
    b = copy.deepcopy(h100)
    b["probes"]["cudnn"] = {"status": "timeout", "error": "timed out after 10 s", "elapsed_s": 10.0, "facts": None}
    res = cmp.compare(h100, b)
    assert res["differences"][0]["fact"] == "probe.cudnn"
    assert not any(d["fact"].startswith("cudnn.") for d in res["differences"])
    assert res["not_compared"] == [{"probe": "cudnn", "a": "ok", "b": "timeout: timed out after 10 s"}]


def test_compare_h100_vs_cpu_box(h100):
    res = cmp.compare(h100, load(CPU), labels=("h100", "cpu"))
    assert res["culprit"]["area"] == "driver"
    text = cmp.render_text(res, limit=5)
    assert text.startswith("gpudoctor compare: A = h100")
    assert "Most likely culprit: driver." in text and "more (use --json for all)" in text


@pytest.mark.parametrize("obj, msg", [
    ([1, 2], "not a gpudoctor report"),
    ({"hello": "world"}, "no schema_version"),
    ({"schema_version": 2, "findings": [], "probes": {}}, "schema_version 2 is not supported"),
    ({"schema_version": 1}, "no findings list or probes object"),
    ("text", "got a JSON str"),
])
def test_compare_rejects_non_reports(h100, obj, msg):
    with pytest.raises(ValueError, match=msg) as exc:
        cmp.compare(h100, obj, labels=("good.json", "bad.json"))
    assert str(exc.value).startswith("bad.json: ")


def test_compare_render_text(h100):
    text = cmp.render_text(cmp.compare(h100, load(CVD1), labels=("working", "broken")))
    assert "Most likely culprit: env.CUDA_VISIBLE_DEVICES: unset (A) → 1 (B)" in text
    assert "NEW" in text and "device.not_visible" in text
    assert "not comparable" in text


# ------------------------------------------------------------------------------------------ fleet

EXPECTED = {
    "derived-driver-580.95.05": {"fingerprint"},
    "derived-pcie-gen3-x8": {"pcie"},
    "derived-ecc-uncorrected": {"ecc"},
    "derived-gpu-missing": {"gpu_count", "fail"},
    "h100-cuda-visible-devices-1": {"fail"},
}


def test_fleet_flags_exactly_the_variants(fleet_result):
    res = fleet_result
    assert res["nodes"] == 6 and res["errors"] == []
    assert {o["node"]: {r["kind"] for r in o["reasons"]} for o in res["outliers"]} == EXPECTED
    assert res["healthy"] == ["h100-baseline"]


def test_fleet_majority_and_reasons(fleet_result):
    res = fleet_result
    m = res["majority"]
    assert (m["nodes"], m["of"], m["clear"], m["gpu_count"]) == (5, 6, True, 1)
    assert m["facts"]["driver.version"] == "580.159.04"
    assert m["facts"]["frameworks.torch"] == "2.11.0+cu130 CUDA 13.0"
    assert len(res["groups"]) == 2
    by = {o["node"]: {r["kind"]: r for r in o["reasons"]} for o in res["outliers"]}
    fp = by["derived-driver-580.95.05"]["fingerprint"]
    assert fp["facts"] == [{"fact": "driver.version", "node": "580.95.05", "majority": "580.159.04"}]
    assert "driver.version 580.95.05 (majority 580.159.04)" in fp["detail"]
    pcie = by["derived-pcie-gen3-x8"]["pcie"]
    assert pcie["gpus"] == [{"index": 0, "current": "Gen3 x8", "max": "Gen5 x16", "width_degraded": True}]
    ecc = by["derived-ecc-uncorrected"]["ecc"]
    assert ecc["gpus"][0]["issues"][:2] == ["2 uncorrected ECC errors since the last reset", "row remap pending"]
    assert by["derived-gpu-missing"]["gpu_count"]["gpus"] == 0
    assert by["derived-gpu-missing"]["fail"]["ids"] == ["container.no_gpu"]
    assert by["h100-cuda-visible-devices-1"]["fail"]["ids"] == ["device.not_visible"]


def test_fleet_finding_counts(fleet_result):
    counts = {c["id"]: c for c in fleet_result["finding_counts"]}
    assert counts["cudnn.mismatch"]["nodes"] == 6 and counts["cudnn.mismatch"]["severity"] == {"warn": 6}
    assert counts["device.not_visible"]["node_names"] == ["h100-cuda-visible-devices-1"]
    assert counts["gpu.health"]["severity"] == {"ok": 3, "warn": 2}
    assert fleet_result["finding_counts"][0]["worst"] == "fail"


def test_fleet_render_text(fleet_result):
    text = fleet.render_text(fleet_result)
    assert text.startswith("gpudoctor fleet: 6 reports\n")
    assert "Majority software (5 of 6 nodes" in text
    assert "Outliers (5 nodes in 5 groups):" in text
    assert "  1 node: derived-pcie-gen3-x8\n    - [pcie] degraded PCIe link: GPU 0 Gen3 x8 (max Gen5 x16)" in text
    assert "Healthy (1): h100-baseline" in text


def test_fleet_hostname_is_not_part_of_fingerprint_and_names_the_node(h100):
    a, b = copy.deepcopy(h100), copy.deepcopy(h100)
    a["host"], b["host"] = "gpu-001", "gpu-002"
    b["probes"]["cudnn"]["facts"]["libraries"][0]["path"] = "/elsewhere/libcudnn.so"  # paths neither
    res = fleet.aggregate([a, b])
    assert res["outliers"] == [] and res["healthy"] == ["gpu-001", "gpu-002"]
    assert len(res["groups"]) == 1


def test_fleet_gen_only_drop_is_flagged_with_idle_note(h100):
    r = copy.deepcopy(h100)
    r["probes"]["driver"]["facts"]["nvml"]["gpus"][0]["pcie_gen_current"] = 1
    res = fleet.aggregate({"base": h100, "idle": r})
    (o,) = res["outliers"]
    assert o["node"] == "idle" and "idle power saving" in o["reasons"][0]["detail"]


def test_fleet_no_clear_majority(h100):
    r = copy.deepcopy(h100)
    r["probes"]["driver"]["facts"]["nvml"]["driver_version"] = "580.95.05"
    res = fleet.aggregate({"n1": h100, "n2": r})
    assert res["majority"]["clear"] is False
    assert len(res["outliers"]) == 1
    assert "NO clear majority" in fleet.render_text(res)


def test_fleet_duplicate_hosts_stay_separate(h100):
    a = dict(h100, host="gpu-001")
    res = fleet.aggregate([a, a])
    assert res["healthy"] == ["gpu-001", "gpu-001 (2)"]


def test_fleet_bad_files_are_errors_not_crashes(tmp_path, h100):
    good = tmp_path / "node1.json"
    good.write_text(json.dumps(h100))
    (tmp_path / "empty.json").write_text("")
    (tmp_path / "blank.json").write_text("  \n")
    (tmp_path / "garbage.json").write_bytes(b"\x00\xff\xfe garbage")
    (tmp_path / "text.json").write_text("gpudoctor: error: unknown option\n")
    (tmp_path / "truncated.json").write_text(json.dumps(h100)[:500])
    (tmp_path / "other.json").write_text(json.dumps({"kind": "Pod"}))
    (tmp_path / "list.json").write_text("[]")
    (tmp_path / "v2.json").write_text(json.dumps(dict(h100, schema_version=2)))
    (tmp_path / "notes.txt").write_text("ignored: not *.json")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "deep.json").write_text(json.dumps(h100))  # directories are not recursed
    emptydir = tmp_path / "emptydir"
    emptydir.mkdir()
    reports, errors = fleet.load_reports([tmp_path, emptydir, tmp_path / "missing.json"])
    assert [r["node"] for r in reports] == ["node1"]
    err = {Path(e["path"]).name: e["error"] for e in errors}
    assert err["empty.json"].startswith("empty file") and err["blank.json"].startswith("empty file")
    assert err["garbage.json"] == "not JSON (not UTF-8 text)"
    assert err["text.json"].startswith("not JSON (") and "was it written with --json?" in err["text.json"]
    assert err["truncated.json"].startswith("not JSON (") and "--json?" not in err["truncated.json"]
    assert "not a gpudoctor report" in err["other.json"] and "no schema_version" in err["other.json"]
    assert "got a JSON list" in err["list.json"]
    assert "schema_version 2 is not supported" in err["v2.json"]
    assert err["emptydir"] == "no *.json files in this directory"
    assert err["missing.json"] == "no such file or directory"
    assert len(errors) == 10
    res = fleet.aggregate(reports, errors)
    assert res["nodes"] == 1 and len(res["errors"]) == 10
    text = fleet.render_text(res)
    assert "10 unusable files" in text and "Unusable files:" in text


def test_fleet_unreadable_file(tmp_path, h100):
    import os
    p = tmp_path / "locked.json"
    p.write_text(json.dumps(h100))
    p.chmod(0)
    try:
        if os.access(p, os.R_OK):
            pytest.skip("running as root: permissions are not enforced")
        _, errors = fleet.load_reports([p])
        assert errors[0]["error"].startswith("cannot read")
    finally:
        p.chmod(0o644)


def test_fleet_aggregate_rejects_bad_in_memory_reports(h100):
    res = fleet.aggregate([h100, {"nope": 1}, "x"])
    assert res["nodes"] == 1 and res["healthy"] == ["node-1"]
    assert [e["path"] for e in res["errors"]] == ["report #2", "report #3"]


def test_fleet_host_key_names_nodes_from_files(tmp_path, h100):
    (tmp_path / "file-name.json").write_text(json.dumps(dict(h100, host="gpu-042")))
    reports, errors = fleet.load_reports([tmp_path / "file-name.json"])
    assert errors == [] and reports[0]["node"] == "gpu-042"


def test_fleet_empty_input():
    res = fleet.aggregate([])
    assert res["nodes"] == 0 and res["majority"] is None and res["outliers"] == []
    assert fleet.render_text(res).startswith("gpudoctor fleet: 0 reports")


def test_fleet_node_whose_driver_probe_failed(h100):
    r = copy.deepcopy(h100)
    r["probes"]["driver"] = {"status": "timeout", "error": "timed out", "elapsed_s": 10.0, "facts": None}
    res = fleet.aggregate({"a": h100, "b": h100, "c": r})
    (o,) = res["outliers"]
    kinds = {x["kind"]: x for x in o["reasons"]}
    assert o["node"] == "c" and set(kinds) == {"fingerprint", "gpu_count"}
    assert "unknown number of GPUs" in kinds["gpu_count"]["detail"]


# ------------------------------------------------------------------------------------------ deploy/

def test_deploy_yaml_parses_and_targets_gpu_nodes():
    yaml = pytest.importorskip("yaml")
    docs = {}
    for f in ("kubernetes/daemonset.yaml", "kubernetes/job.yaml", "github/gpudoctor.yml"):
        docs[f] = list(yaml.safe_load_all((ROOT / "deploy" / f).read_text()))
    ds = docs["kubernetes/daemonset.yaml"][1]["spec"]["template"]["spec"]
    assert ds["runtimeClassName"] == "nvidia" and ds["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    assert ds["volumes"][0]["hostPath"]["path"] == "/var/log/gpudoctor"
    job = docs["kubernetes/job.yaml"][1]["spec"]["template"]["spec"]
    assert job["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 1
    wf = docs["github/gpudoctor.yml"][0]
    assert wf["jobs"]["check"]["runs-on"] == ["self-hosted", "linux", "gpu"]


def test_deploy_shell_scripts_pass_shellcheck():
    import shutil
    import subprocess
    if not shutil.which("shellcheck"):
        pytest.skip("shellcheck not installed")
    scripts = ["slurm/gpudoctor-fleet.sbatch", "slurm/prolog-gpudoctor.sh", "kubernetes/collect.sh"]
    r = subprocess.run(["shellcheck", "-s", "bash"] + [str(ROOT / "deploy" / s) for s in scripts],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout


def test_cli_compare_and_fleet_exit_codes(tmp_path, capsys):
    from gpudoctor.cli import main

    root = Path(__file__).resolve().parent.parent
    a, b = root / "docs/examples/h100-check.json", root / "docs/examples/h100-cuda-visible-devices-1.json"
    assert main(["compare", str(a), str(b)]) == 0
    assert "Most likely culprit: env.CUDA_VISIBLE_DEVICES" in capsys.readouterr().out
    junk = tmp_path / "junk.json"
    junk.write_text("not json")
    assert main(["compare", str(a), str(junk)]) == 2
    assert main(["fleet", str(root / "tests/data/fleet")]) == 1  # the derived outliers
    assert main(["fleet", str(a)]) == 0
    assert main(["fleet", str(junk)]) == 2


def test_host_is_in_reports_and_redacted():
    import socket

    from gpudoctor.check import run_check
    from gpudoctor.matrix import load_matrix
    from gpudoctor.probes import ALL
    from gpudoctor.render.redact import redact

    data = run_check(load_matrix(), smoke=False, probes=[p for p in ALL if p.name == "platform"]).to_dict()
    assert data["host"] == socket.gethostname()
    red = redact(data)
    assert red["host"] == "<host>"
    if len(socket.gethostname()) >= 3:  # shorter names are only removed from host fields, not from all text
        assert socket.gethostname() not in json.dumps(red)


# ------------------------------------------------------------------------------------------ fleet streams


def _write_fleet(directory, h100, n, odd_every=50):
    """n compact copies of the real H100 report, host gpuNNNN; every odd_every-th has another driver."""
    directory.mkdir(parents=True, exist_ok=True)
    odd = copy.deepcopy(h100)
    odd["probes"]["driver"]["facts"]["nvml"]["driver_version"] = "580.95.05"
    for i in range(n):
        rep = odd if i % odd_every == 7 else h100
        (directory / f"gpu{i:04d}.json").write_text(json.dumps(dict(rep, host=f"gpu{i:04d}"), separators=(",", ":")))
    return directory


def _essence(res):
    return (res["nodes"], res["healthy"], [(o["node"], [r["detail"] for r in o["reasons"]]) for o in res["outliers"]],
            [(c["id"], c["nodes"], c["severity"]) for c in res["finding_counts"]], res["errors"])


def test_fleet_streams_in_parallel_with_the_same_result(tmp_path, h100):
    d = _write_fleet(tmp_path / "r", h100, 300)  # over the parallel threshold
    parallel = fleet.stream([d], jobs=2).result()
    inline = fleet.stream([d], jobs=1).result()
    reports, errors = fleet.load_reports([d])
    assert _essence(parallel) == _essence(inline) == _essence(fleet.aggregate(reports, errors))
    assert parallel["nodes"] == 300 and len(parallel["outliers"]) == 6
    (g,) = parallel["outlier_groups"]
    assert g["hostlist"] == "gpu[0007,0057,0107,0157,0207,0257]"
    assert parallel["healthy_hostlist"].startswith("gpu[0000-0006,0008-0056,")


def test_fleet_reads_globs_and_tar_archives(tmp_path, h100):
    import tarfile

    d = _write_fleet(tmp_path / "r", h100, 12, odd_every=5)
    for mode, name in (("w", "all.tar"), ("w:gz", "all.tar.gz")):
        with tarfile.open(tmp_path / name, mode) as tar:
            for f in sorted(d.iterdir()):
                tar.add(f, arcname=f"reports/{f.name}")
    want = _essence(fleet.stream([d]).result())
    assert _essence(fleet.stream([str(d / "gpu00*.json")]).result())[0] == 12
    for name in ("all.tar", "all.tar.gz"):
        res = fleet.stream([tmp_path / name]).result()
        assert _essence(res)[1:4] == want[1:4]
    (tmp_path / "bad.tar.gz").write_bytes(b"\x1f\x8b not really")
    res = fleet.stream([tmp_path / "bad.tar.gz", str(tmp_path / "nomatch-*.json")]).result()
    assert [e["error"].split(" (")[0] for e in res["errors"]] == ["not a readable tar archive", "no file matches this pattern"]


def test_fleet_reads_json_lines_and_concatenated_reports_on_stdin(h100):
    import io

    a, b = dict(h100, host="gpu-a"), dict(h100, host="gpu-b")
    jsonl = (json.dumps(a) + "\n" + json.dumps(b) + "\n").encode()
    pretty = (json.dumps(a, indent=2) + "\n" + json.dumps(b, indent=2) + "\n").encode()
    for data in (jsonl, pretty):
        res = fleet.stream(["-"], stdin=io.BytesIO(data)).result()
        assert res["healthy"] == ["gpu-a", "gpu-b"] and res["errors"] == []
    broken = jsonl + b"srun: error: node gpu-c: task 2 exited\n" + json.dumps(dict(h100, host="gpu-d")).encode() + b"\n[1]\n"
    res = fleet.stream(["-"], stdin=io.BytesIO(broken)).result()
    assert res["healthy"] == ["gpu-a", "gpu-b", "gpu-d"]
    assert [e["path"] for e in res["errors"]] == ["<stdin> line 3", "<stdin> report 4 (line 5)"]
    assert "got a JSON list" in res["errors"][1]["error"]


def test_fleet_output_is_folded_and_bounded(h100):
    """300 nodes odd in 30 different ways: the text stays short, --json keeps everything."""
    reps = {}
    for i in range(300):
        r = copy.deepcopy(h100) if i % 10 == 0 else h100
        if i % 10 == 0:
            r["probes"]["driver"]["facts"]["nvml"]["driver_version"] = f"580.{i}.01"
        reps[f"n{i:03d}"] = r
    res = fleet.aggregate(reps)
    assert len(res["outlier_groups"]) == 30 and len(res["outliers"]) == 30 and len(res["healthy"]) == 270
    text = fleet.render_text(res)
    assert f"and {30 - fleet.MAX_GROUPS} more groups" in text and len(text.splitlines()) < 200
    assert "Healthy (270): n[001-009,011-019," in text


def test_cli_fleet_from_stdin(h100):
    import subprocess
    import sys

    data = "\n".join(json.dumps(dict(h100, host=f"gpu{i}")) for i in range(3)) + "\n"
    p = subprocess.run([sys.executable, "-m", "gpudoctor", "fleet", "-"], input=data, capture_output=True, text=True,
                       cwd=str(Path(__file__).resolve().parents[1]))
    assert p.returncode == 0, p.stderr
    assert "Healthy (3): gpu[0-2]" in p.stdout
    p = subprocess.run([sys.executable, "-m", "gpudoctor", "fleet", "-"], input="garbage\n", capture_output=True, text=True,
                       cwd=str(Path(__file__).resolve().parents[1]))
    assert p.returncode == 2 and "no usable gpudoctor report" in p.stderr


def test_fleet_names_the_report_file_when_hostnames_collide(tmp_path, h100):
    for name in ("a.json", "b.json"):
        (tmp_path / name).write_text(json.dumps(dict(h100, host="vm")))
    (tmp_path / "c.json").write_text(json.dumps(dict(h100, host="other")))
    res = fleet.stream([tmp_path]).result()
    assert res["healthy"] == ["vm (a.json)", "vm (b.json)", "other"]
