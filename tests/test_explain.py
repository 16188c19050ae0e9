"""`gpudoctor explain`: the signature KB, the streaming scanner on hostile input, the command line,
joining with this machine's real facts, and accuracy on the corpus of real public reports."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from gpudoctor.cli import main
from gpudoctor.explain import scan as scan_mod
from gpudoctor.explain.diagnose import diagnose
from gpudoctor.explain.kb import KbError, load_kb
from gpudoctor.explain.scan import MAX_CARRY, Scanner

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus"
KB = load_kb()

# The failure lines the issue names, each as the tool prints it: the class they must map to.
ISSUE_LINES = [
    ("RuntimeError: CUDA error: no kernel image is available for execution on the device", "arch.binary_missing"),
    ("NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation.",
     "arch.binary_missing"),
    ("nvcc fatal   : Unsupported gpu architecture 'compute_35'", "arch.toolkit_unsupported"),
    ("#error -- unsupported GNU version! gcc versions later than 11 are not supported!", "compiler.unsupported"),
    ('kernel.cu(12): error: identifier "__hadd2" is undefined', "arch.half_unsupported"),
    ("CUDA driver version is insufficient for CUDA runtime version", "driver.too_old"),
    ("Failed to initialize NVML: Driver/library version mismatch", "driver.version_mismatch"),
    ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA "
     "driver is installed and running.", "driver.not_loaded"),
    ("CUDA_ERROR_UNSUPPORTED_PTX_VERSION: the provided PTX was compiled with an unsupported toolchain.",
     "driver.ptx_too_new"),
    ("ImportError: libcudnn.so.8: cannot open shared object file: No such file or directory", "library.not_found"),
    ("Loaded runtime CuDNN library: 8.1.0 but source was compiled with: 8.6.0.", "cudnn.mismatch"),
    ("[TRT] [E] 1: [stdArchiveReader.cpp::StdArchiveReader::32] Error Code 1: Serialization (Serialization assertion "
     "magicTagRead == kMAGIC_TAG failed.Magic tag does not match)", "tensorrt.engine_invalid"),
    ("The engine plan file is not compatible with this version of TensorRT, expecting library version 8.6.1.6 got "
     "8.5.3.1, please rebuild.", "tensorrt.engine_mismatch"),
    ("Assertion failed: cublasStatus == CUBLAS_STATUS_SUCCESS", "tensorrt.cublas_tactic"),
    ('docker: Error response from daemon: could not select device driver "" with capabilities: [[gpu]].',
     "container.no_gpu"),
    ("/sbin/ldconfig.real: /usr/lib/wsl/lib/libcuda.so.1 is not a symbolic link", "wsl.libcuda"),
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 7.79 GiB",
     "cuda.out_of_memory"),
]


def _explain(text: str):
    sc = Scanner(KB)
    sc.feed(text.encode())
    sc.close()
    return diagnose(sc)


@pytest.mark.parametrize("line,expected", ISSUE_LINES)
def test_issue_signatures(line, expected):
    ranked = _explain("some unrelated output\n" + line + "\nmore output\n")
    assert ranked and ranked[0].finding.id == expected, [d.finding.id for d in ranked]
    assert ranked[0].finding.fixes and all(f.summary for f in ranked[0].finding.fixes)


def test_variables_fill_title_and_fixes():
    d = _explain("#error -- unsupported GNU version! gcc versions later than 11 are not supported!\n")[0]
    assert any("g++-11" in c for f in d.finding.fixes for c in f.commands)
    d = _explain("NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch "
                 "installation.\n")[0]
    assert "(sm_120)" in d.finding.title
    d = _explain("ImportError: libnvinfer.so.10: cannot open shared object file: No such file or directory\n")[0]
    assert d.finding.title.endswith("libnvinfer.so.10") and d.matches[0].line_no == 1


def test_every_kb_class_is_a_documented_finding_id():
    documented = (ROOT / "docs" / "findings.md").read_text()
    missing = [s.id for s in KB if f"`{s.id}`" not in documented]
    assert not missing, f"document these finding ids in docs/findings.md: {missing}"


def test_kb_rejects_nested_quantifiers_and_bad_files(tmp_path):
    good = json.loads((ROOT / "gpudoctor" / "explain" / "kb" / "driver.too_old.json").read_text())
    bad = dict(good, variants=[dict(good["variants"][0], regex="(a+)+b")])
    (tmp_path / "driver.too_old.json").write_text(json.dumps(bad))
    with pytest.raises(KbError, match="nests quantifiers"):
        load_kb(tmp_path)
    (tmp_path / "driver.too_old.json").write_text("{not json")
    with pytest.raises(KbError, match="cannot be read"):
        load_kb(tmp_path)


# ----------------------------------------------------------------------------- hostile input


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=4096), st.integers(min_value=1, max_value=64))
def test_random_bytes_in_random_chunks(data, step):
    sc = Scanner(KB)
    for i in range(0, len(data), step):
        sc.feed(data[i:i + step])
    sc.close()
    diagnose(sc)  # never raises


def test_chunk_boundaries_do_not_hide_or_duplicate_matches():
    line = b"CUDA driver version is insufficient for CUDA runtime version\n"
    log = b"x" * 1000 + b"\n" + line + b"y\n" * 10 + line
    for step in (1, 7, 64, len(log)):
        sc = Scanner(KB)
        for i in range(0, len(log), step):
            sc.feed(log[i:i + step])
        sc.close()
        assert [m.line_no for m in sc.matches] == [2, 13], step


def test_a_huge_line_without_newline_is_bounded():
    sc = Scanner(KB)
    for _ in range(8):
        sc.feed(b"A" * (MAX_CARRY // 2))  # 4 MiB without a newline
        assert len(sc._carry) <= MAX_CARRY
    sc.feed(b"\nCUDA error: no kernel image is available for execution on the device\n")
    sc.close()
    assert [d.finding.id for d in diagnose(sc)] == ["arch.binary_missing"]


def test_fallback_scanner_agrees(monkeypatch):
    text = "\n".join(line for line, _ in ISSUE_LINES) + "\n"
    fast = [(d.finding.id, [m.line_no for m in d.matches]) for d in _explain(text)]
    monkeypatch.setattr(scan_mod, "_automaton", lambda literals: None)
    slow = [(d.finding.id, [m.line_no for m in d.matches]) for d in _explain(text)]
    assert fast == slow and len(fast) == len({e for _, e in ISSUE_LINES})


# ----------------------------------------------------------------------------- command line


def test_unknown_log_says_so(tmp_path, capsys):
    p = tmp_path / "build.log"
    p.write_text("Traceback (most recent call last):\nValueError: shapes (3,) and (4,) not aligned\n")
    assert main(["explain", str(p)]) == 1
    out = capsys.readouterr().out
    assert "No known signature" in out and "gpudoctor check" in out


@pytest.mark.parametrize("path,message", [("/nonexistent/x.log", "cannot read"), ("/tmp", "is a directory")])
def test_unreadable_input_exits_2(capsys, path, message):
    assert main(["explain", path]) == 2
    out, err = capsys.readouterr()
    assert out == "" and message in err


def _gd(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "gpudoctor", *args], input=stdin, capture_output=True, timeout=300,
                          cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)))


def test_stdin_and_json():
    out = _gd("explain", "-", "--json", stdin=b"Failed to initialize NVML: Driver/library version mismatch\n")
    data = json.loads(out.stdout)
    assert out.returncode == 0 and data["diagnoses"][0]["id"] == "driver.version_mismatch"
    assert data["diagnoses"][0]["confidence"] == "high" and data["diagnoses"][0]["matched"][0]["line"] == 1


def test_run_a_command_and_join_this_machines_facts():
    """The real command fails with the real message this machine's CUDA 13 runtime gives on the real
    driver-535 user space (CUDA 12.2); explain joins it with the live facts."""
    code = ("import sys; print('step 1 ok'); "
            "print('RuntimeError: CUDA driver version is insufficient for CUDA runtime version', file=sys.stderr); "
            "sys.exit(3)")
    out = _gd("explain", "--json", "--", sys.executable, "-c", code)
    data = json.loads(out.stdout)
    assert data["command_exit"] == 3 and b"step 1 ok" in out.stderr
    top = data["diagnoses"][0]
    assert top["id"] == "driver.too_old"
    drv = subprocess.run([sys.executable, "-c", "from cuda.bindings import driver as d; print(d.cuDriverGetVersion())"],
                         capture_output=True, text=True, timeout=60).stdout
    if "12020" in drv:  # this machine's real libcuda (driver 535) reports CUDA 12.2
        assert any("supports CUDA ≤ 12.2" in line for line in top["confirmed_by"]), top["confirmed_by"]


def test_command_that_cannot_start_exits_2():
    out = _gd("explain", "--", "/nonexistent/binary")
    assert out.returncode == 2 and b"cannot run" in out.stderr


# ----------------------------------------------------------------------------- corpus of real reports


def _corpus():
    return [json.loads(p.read_text()) | {"_file": p.name} for p in sorted(CORPUS.glob("*.json"))]


def test_corpus_entries_are_complete_and_sourced():
    entries = _corpus()
    assert len(entries) >= 60, f"the development corpus needs at least 60 real reports, has {len(entries)}"
    ids = {s.id for s in KB}
    for e in entries:
        assert e["source"].startswith("https://") and e["log"].strip() and e["cause_text"], e["_file"]
        assert e["cause"] in ids, f"{e['_file']}: cause {e['cause']} has no signature"
    assert ids <= {e["cause"] for e in entries}, "every signature class must be backed by at least one real report"
    for sig in KB:  # and every variant cites a public thread
        assert all(v.source.startswith("https://github.com/") for v in sig.variants), sig.id


def test_corpus_accuracy():
    """Top-3 over the real reports must stay high; the benchmark prints top-1/top-3 and the confusions."""
    entries = _corpus()
    hits = 0
    for e in entries:
        ranked = [d.finding.id for d in _explain(e["log"])]
        hits += bool({e["cause"], *e.get("also_ok", [])} & set(ranked[:3]))
    assert hits / len(entries) >= 0.85


@pytest.mark.parametrize("capture,confirmed", [
    ("h100-check.json", False),        # driver 580 (CUDA 13.0) with a 13.3 runtime: minor-version compatibility
    ("cpu-debian12-check.json", True),  # driver-535 user space (CUDA 12.2) with CUDA 13 runtimes
])
def test_live_facts_confirm_driver_too_old_only_when_it_is(capture, confirmed):
    """Real captured facts from `gpudoctor check --json` on the H100 and on this CPU machine."""
    from gpudoctor.explain.live import evidence

    report = json.loads((ROOT / "docs" / "examples" / capture).read_text())
    facts = {k: v.get("facts") or {} for k, v in report["probes"].items()}
    assert ("driver.too_old" in evidence(facts, env={})) is confirmed
