"""Trust under faults: nothing broken is ever reported as fine (issue 10).

FAKE tools (shell scripts written by these tests, named as fakes) are put first on PATH in place of
nvcc, ptxas, nvidia-smi, gcc/g++ and ldconfig; they hang, die by a signal, exit 127, print garbage,
print non-UTF-8 bytes, or print 100 MB. Each run of the real ``gpudoctor check`` must name the fake's
path in a warn/fail finding and finish within ``--timeout`` + 3 s. Unreadable files are a FIFO, a
directory and a dangling symlink where probes read files (tests run as root, so permission bits
would not stop a read). The stub libcuda is REAL: the CUDA toolkit's own
(/usr/lib/x86_64-linux-gnu/stubs/libcuda.so from Debian's nvidia-cuda-dev).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DEBIAN_STUBS = Path("/usr/lib/x86_64-linux-gnu/stubs")
TIMEOUT = 6.0  # --timeout of the runs with a hanging fake; the check must end within TIMEOUT + 3 s

#: What each FAKE tool does (POSIX sh). "$0" is the fake's own path.
FAULTS = {
    "hang": "exec sleep 600",
    "signal": "kill -SEGV $$",
    "exit127": 'echo "$0: error while loading shared libraries: libfake.so.1: cannot open shared object file: '
               'No such file or directory" >&2; exit 127',
    "garbage": 'echo "hello from a wrapper script"; exit 0',
    "nonutf8": r"printf '\377\376\200 release \377\376\n'; exit 0",
    "huge": "head -c 100000000 /dev/zero | tr '\\0' x; exit 0",
}


def fake_tool(bindir: Path, name: str, fault: str) -> Path:
    """Write the FAKE ``name`` into ``bindir`` behaving as ``FAULTS[fault]``."""
    bindir.mkdir(parents=True, exist_ok=True)
    path = bindir / name
    path.write_text(f"#!/bin/sh\n# FAKE {name} for gpudoctor's fault tests: {fault}\n{FAULTS[fault]}\n")
    path.chmod(0o755)
    return path


def check(tmp_path, env_extra=None, path_first=None, args=(), timeout=TIMEOUT):
    """Run the real ``gpudoctor check --json --timeout T`` in a child; return (report, wall seconds, rc)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1")
    if path_first:
        env["PATH"] = f"{path_first}:{env['PATH']}"
    env.update(env_extra or {})
    out = tmp_path / "report.json"
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "gpudoctor", "check", "--json", "--timeout", str(timeout),
                           "-o", str(out), *args], env=env, capture_output=True, text=True, timeout=timeout + 60)
    wall = time.monotonic() - t0
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    return json.loads(out.read_text()), wall, proc.returncode


def naming(report, path, severities=("warn", "fail")):
    """Findings of these severities whose evidence names ``path``."""
    def strings(v):
        if isinstance(v, str):
            yield v
        elif isinstance(v, dict):
            for k, x in v.items():
                yield k
                yield from strings(x)
        elif isinstance(v, list):
            for x in v:
                yield from strings(x)
    return [f for f in report["findings"] if f["severity"] in severities and str(path) in set(strings(f["evidence"]))]


def ids(findings):
    return sorted({f["id"] for f in findings})


# ----- one FAKE tool first on PATH, every fault ---------------------------------------------------------------

NVCC_OK = Path("/usr/local/bin/nvcc").exists() or Path("/usr/local/cuda/bin/nvcc").exists()


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_nvcc_first_on_path(tmp_path, fault):
    fake = fake_tool(tmp_path / "fakebin", "nvcc", fault)
    report, wall, rc = check(tmp_path, path_first=tmp_path / "fakebin")
    assert wall <= TIMEOUT + 3, wall
    broken = [f for f in naming(report, fake) if f["id"] == "toolkit.broken"]
    assert broken and broken[0]["severity"] == "fail", ids(naming(report, fake))
    assert "first on PATH" in broken[0]["title"] and str(fake) in broken[0]["title"]
    assert rc == 1
    # Never a ✓ for the toolkit a build would use, never silently replaced by another copy's smoke build.
    inv = [f for f in report["findings"] if f["id"] == "toolkit.inventory"]
    assert all(f["severity"] != "ok" for f in inv)
    if NVCC_OK:
        assert any(f["id"] == "smoke.nvcc" and f["severity"] == "warn" and "not run" in f["title"]
                   for f in naming(report, fake))
    assert not any("None in use" in f["title"] for f in report["findings"])


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_ptxas_first_on_path(tmp_path, fault):
    """Debian's nvcc 11.8 takes ptxas from PATH (its nvcc.profile appends $PATH): the FAKE ptxas is what it runs."""
    if not Path("/usr/bin/nvcc").exists():
        pytest.skip("Debian's nvidia-cuda-toolkit (nvcc 11.8) is not installed (.ci/install-real-parts)")
    fake = fake_tool(tmp_path / "fakebin", "ptxas", fault)
    report, wall, _ = check(tmp_path, path_first=tmp_path / "fakebin")
    assert wall <= TIMEOUT + 3, wall
    assert "toolkit.broken" in ids(naming(report, fake)), [f["title"] for f in report["findings"]]


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_nvidia_smi_first_on_path(tmp_path, fault):
    fake = fake_tool(tmp_path / "fakebin", "nvidia-smi", fault)
    report, wall, _ = check(tmp_path, path_first=tmp_path / "fakebin", args=("--no-smoke",))
    assert wall <= TIMEOUT + 3, wall
    found = naming(report, fake)
    assert found, [f["title"] for f in report["findings"]]
    if fault in ("hang", "signal", "garbage", "nonutf8", "huge"):
        assert "tool.failed" in ids(found)
        what = {"hang": "timed out", "signal": "SIGSEGV", "garbage": "printed no", "nonutf8": "printed no",
                "huge": "printed no"}[fault]
        assert any(what in f["title"] for f in found), [f["title"] for f in found]


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_gcc_first_on_path(tmp_path, fault):
    bindir = tmp_path / "fakebin"
    fakes = [fake_tool(bindir, name, fault) for name in ("gcc", "g++")]
    report, wall, rc = check(tmp_path, path_first=bindir)
    assert wall <= TIMEOUT + 3, wall
    found = [f for fake in fakes for f in naming(report, fake)]
    assert "compiler.broken" in ids(found), [f["title"] for f in report["findings"]]
    assert any(f["severity"] == "fail" for f in found if f["id"] == "compiler.broken")
    assert rc == 1


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_ldconfig_first_on_path(tmp_path, fault):
    fake = fake_tool(tmp_path / "fakebin", "ldconfig", fault)
    report, wall, _ = check(tmp_path, path_first=tmp_path / "fakebin", args=("--no-smoke",))
    assert wall <= TIMEOUT + 3, wall
    assert "tool.failed" in ids(naming(report, fake)), [f["title"] for f in report["findings"]]


# ----- unreadable files and broken installs under a fake root ---------------------------------------------------

def _fake_site(tmp_path) -> Path:
    """A FAKE site-packages: torch/version.py is a FIFO (an open() would block forever), cuDNN's header is a
    directory, a CUDA wheel's dist-info has neither RECORD nor METADATA."""
    sp = tmp_path / "fake-root" / "site-packages"
    (sp / "torch").mkdir(parents=True)
    (sp / "torch" / "__init__.py").write_text("# FAKE torch package (fault test)\n")
    os.mkfifo(sp / "torch" / "version.py")
    (sp / "nvidia" / "cudnn" / "include" / "cudnn_version.h").mkdir(parents=True)
    (sp / "nvidia" / "cudnn" / "lib").mkdir(parents=True)
    (sp / "nvidia_cublas_cu12-12.4.5.8.dist-info").mkdir()
    return sp


def test_unreadable_files_and_broken_dist_info(tmp_path):
    sp = _fake_site(tmp_path)
    report, wall, _ = check(tmp_path, env_extra={"PYTHONPATH": f"{ROOT}:{sp}"}, args=("--no-smoke",))
    assert wall <= TIMEOUT + 3, wall
    fifo = naming(report, str(sp / "torch" / "version.py"))
    assert ids(fifo) == ["file.unreadable"] and "FIFO" in fifo[0]["title"]
    header = naming(report, str(sp / "nvidia" / "cudnn" / "include" / "cudnn_version.h"))
    assert ids(header) == ["file.unreadable"] and "directory" in header[0]["title"]
    dist = naming(report, str(sp / "nvidia_cublas_cu12-12.4.5.8.dist-info"))
    assert ids(dist) == ["python.broken_dist"] and "RECORD" in dist[0]["title"]
    assert any("pip install --force-reinstall --no-deps 'nvidia-cublas-cu12==12.4.5.8'" in c
               for fx in dist[0]["fixes"] for c in fx["commands"])


def test_fake_toolkit_with_unreadable_host_config(tmp_path):
    """A FAKE nvcc that answers like CUDA 12.4 but whose crt/host_config.h is a dangling symlink."""
    root = tmp_path / "fake-cuda"
    (root / "bin").mkdir(parents=True)
    (root / "include" / "crt").mkdir(parents=True)
    os.symlink(root / "nowhere.h", root / "include" / "crt" / "host_config.h")
    nvcc = root / "bin" / "nvcc"
    nvcc.write_text(f"""#!/bin/sh
# FAKE nvcc (fault test): answers like CUDA 12.4
case "$1" in
  --version) echo "Cuda compilation tools, release 12.4, V12.4.131";;
  --dryrun) echo '#$ _HERE_={root}/bin'; echo '#$ INCLUDES="-I{root}/include"';;
  *) exit 1;;
esac
""")
    nvcc.chmod(0o755)
    report, wall, _ = check(tmp_path, path_first=root / "bin", args=("--no-smoke",))
    assert wall <= TIMEOUT + 3, wall
    found = naming(report, str(root / "include" / "crt" / "host_config.h"))
    assert found and "dangling symbolic link" in found[0]["title"], [f["title"] for f in report["findings"]]


# ----- the REAL stub libcuda -------------------------------------------------------------------------------------

needs_stub = pytest.mark.skipif(not (DEBIAN_STUBS / "libcuda.so").exists(),
                                reason="Debian's nvidia-cuda-dev stubs are not installed (.ci/install-real-parts)")


@needs_stub
def test_stub_libcuda_on_ld_library_path(tmp_path):
    other = tmp_path / "lib"
    other.mkdir()
    report, wall, rc = check(tmp_path, env_extra={"LD_LIBRARY_PATH": f"{DEBIAN_STUBS}:{other}"}, args=("--no-smoke",))
    assert wall <= TIMEOUT + 3
    stub = [f for f in report["findings"] if f["id"] == "driver.stub_library" and f["evidence"]["soname"] == "libcuda.so"]
    assert stub and stub[0]["severity"] == "fail" and rc == 1
    ev = stub[0]["evidence"]
    assert ev["path"] == f"{DEBIAN_STUBS}/libcuda.so" and ev["via"] == "LD_LIBRARY_PATH" and ev["entry"] == str(DEBIAN_STUBS)
    assert "CUDA_ERROR_STUB_LIBRARY" in ev["stub_answer"]  # the stub itself answered cuInit with 34
    commands = [c for fx in stub[0]["fixes"] for c in fx["commands"]]
    assert f"export LD_LIBRARY_PATH={other}" in commands
    assert any(c.startswith(f"export LIBRARY_PATH={DEBIAN_STUBS}") for c in commands)
    nvml = [f for f in report["findings"] if f["id"] == "driver.stub_library" and "nvidia-ml" in f["evidence"]["soname"]]
    assert nvml and nvml[0]["severity"] == "warn"


@needs_stub
def test_stub_linked_as_libcuda_so_1(tmp_path):
    """The stub under the driver's soname (a Dockerfile's `ln -s stubs/libcuda.so stubs/libcuda.so.1`): cuda-bindings
    then fails with 'Failed to get cuGetProcAddress_v2'; the report must blame the stub, not hidden GPUs."""
    d = tmp_path / "stubs"
    d.mkdir()
    os.symlink(DEBIAN_STUBS / "libcuda.so", d / "libcuda.so.1")
    report, wall, rc = check(tmp_path, env_extra={"LD_LIBRARY_PATH": str(d)}, args=("--no-smoke",))
    stub = [f for f in report["findings"] if f["id"] == "driver.stub_library"]
    assert [f["evidence"]["soname"] for f in stub] == ["libcuda.so.1"] and stub[0]["severity"] == "fail"
    assert "unset LD_LIBRARY_PATH" in stub[0]["fixes"][0]["commands"]
    assert not any(f["id"] in ("device.not_visible",) for f in report["findings"])
    assert not any(f["id"] == "library.not_found" and "libcuda" in f["title"] for f in report["findings"])


def test_no_stub_finding_on_a_clean_environment(tmp_path):
    report, _, _ = check(tmp_path, env_extra={"LD_LIBRARY_PATH": ""}, args=("--no-smoke",))
    assert not [f for f in report["findings"] if f["id"] == "driver.stub_library"]


# ----- the invariant, walked over every probe in-process ---------------------------------------------------------

@pytest.mark.parametrize("fault", ["signal", "exit127", "garbage", "nonutf8", "hang"])
def test_every_command_any_probe_runs_reaches_the_report(monkeypatch, fault):
    """Every command every probe runs is made to fail (a FAKE Popen runs the fault script in its place); every
    path that failed must be named by a warn/fail finding. A new probe that swallows a failure breaks this."""
    import subprocess as real

    from gpudoctor.process import subproc
    from gpudoctor.check import run_check
    from gpudoctor.matrix import load_matrix

    seen = []

    def fake_popen(argv, **kw):
        seen.append(argv[0])
        return real.Popen(["sh", "-c", FAULTS[fault]], **kw)

    monkeypatch.setattr(subproc, "subprocess", types.SimpleNamespace(
        Popen=fake_popen, PIPE=real.PIPE, DEVNULL=real.DEVNULL, TimeoutExpired=real.TimeoutExpired))
    t0 = time.monotonic()
    report = run_check(load_matrix(), smoke=True, timeout=4.0 if fault == "hang" else 30.0)
    assert time.monotonic() - t0 <= (4.0 if fault == "hang" else 30.0) + 3
    named = set()
    for f in report.findings:
        if f.severity.rank >= 2:
            named |= {str(v) for v in _flat(f.evidence)}
    probes_failed = {n for n, r in report.probes.items() if r.status != "ok"}
    missing = sorted({p for p in seen if p not in named})
    assert seen and not missing, (missing, probes_failed, [f.title for f in report.findings])


def _flat(v):
    if isinstance(v, dict):
        for k, x in v.items():
            yield k
            yield from _flat(x)
    elif isinstance(v, (list, tuple)):
        for x in v:
            yield from _flat(x)
    else:
        yield v


# ----- -o FILE is atomic ------------------------------------------------------------------------------------------

def test_output_file_survives_sigkill(tmp_path):
    """A check killed with SIGKILL at any moment leaves the previous complete report, never a partial one."""
    out = tmp_path / "node.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    first = subprocess.run([sys.executable, "-m", "gpudoctor", "check", "--json", "--no-smoke", "-o", str(out)],
                           env=env, capture_output=True, timeout=120)
    assert first.returncode in (0, 1) and json.loads(out.read_text())["schema_version"]
    previous = out.read_bytes()
    for delay in (0.05, 0.3, 0.6, 0.9, 1.2, 1.6):
        p = subprocess.Popen([sys.executable, "-m", "gpudoctor", "check", "--json", "--no-smoke", "-o", str(out)],
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        p.send_signal(signal.SIGKILL)
        p.wait()
        data = out.read_bytes()
        assert data == previous or json.loads(data)["schema_version"], delay
        previous = data
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".json") and p.name != "node.json"]


def test_output_into_a_missing_directory_is_an_error(tmp_path):
    r = subprocess.run([sys.executable, "-m", "gpudoctor", "check", "--no-smoke", "-o", str(tmp_path / "no" / "r.json")],
                       env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "cannot write" in r.stderr


@pytest.mark.parametrize("fault", ["hang", "signal", "garbage"])
def test_ptxas_on_path_that_no_nvcc_runs(tmp_path, fault):
    """Seen on the H100: CUDA 13's nvcc runs its own ptxas, so a FAKE one first on PATH is never asked by a
    build, yet JAX/XLA and Triton run it: it is probed on its own and reported (warn)."""
    from gpudoctor.rules.fixes import OsFlavor
    from gpudoctor.probes.toolkit import _ptxas_on_path
    from gpudoctor.rules import Facts, RuleContext
    from gpudoctor.rules.toolkit import ptxas_on_path_broken
    from gpudoctor.process.runner import ProbeContext

    fake = fake_tool(tmp_path / "fakebin", "ptxas", fault)
    env = {"PATH": f"{tmp_path / 'fakebin'}:/usr/bin:/bin"}  # the fakes need sh, sleep, head, tr
    facts = _ptxas_on_path(ProbeContext(env=env, timeout=1.0), toolkits=[])
    assert facts["path"] == str(fake) and facts["problems"][0]["kind"] in ("timeout", "signal", "unparsable")
    found = ptxas_on_path_broken(Facts({"toolkit": {"ptxas_on_path": facts}}), RuleContext(None, OsFlavor("debian", "debian", "12")))
    assert [f.id for f in found] == ["toolkit.broken"] and str(fake) in found[0].title and found[0].severity.value == "warn"


def test_real_nvidia_smi_failing_with_the_driver_is_evidence_not_a_second_fault(tmp_path):
    """The REAL driver-535 nvidia-smi without a kernel module exits 9 "couldn't communicate with the NVIDIA
    driver": driver.not_loaded cites it; it is not reported again as a broken tool."""
    if not Path("/usr/bin/nvidia-smi").exists():
        pytest.skip("Debian's nvidia-smi is not installed (.ci/install-real-parts)")
    report, _, _ = check(tmp_path, args=("--no-smoke",))
    named = naming(report, "/usr/bin/nvidia-smi")
    if not any(f["id"] == "driver.not_loaded" for f in report["findings"]):
        pytest.skip("the NVIDIA kernel module is loaded here")
    assert ids(named) == ["driver.not_loaded"]
    assert "couldn't communicate" in named[0]["evidence"]["nvidia-smi said"]


def test_library_that_does_not_load_is_reported(tmp_path):
    """A garbage file named libcudart.so.13 on LD_LIBRARY_PATH: the real dynamic loader refuses it
    ("invalid ELF header"), and the report says so with its path."""
    d = tmp_path / "lib"
    d.mkdir()
    (d / "libcudart.so.13").write_bytes(b"this is not an ELF file\n" * 10)
    report, wall, _ = check(tmp_path, env_extra={"LD_LIBRARY_PATH": str(d)}, args=("--no-smoke",))
    found = naming(report, str(d / "libcudart.so.13"))
    # The loader's pick is read first (library.damaged names what the file is); the loader's own refusal stays quoted.
    assert {"library.damaged", "library.load_failed"} & set(ids(found)), [f["title"] for f in report["findings"]]
    assert any("ELF" in f["title"] for f in found)
    assert any(f["severity"] == "fail" for f in found)


def test_one_explained_worker_crash_hides_no_other_worker_crash():
    """gpudoctor's workers share one interpreter path: a finding that explains the nvml worker's crash (it names
    the interpreter and that command) must not hide the cuda worker's crash, which it does not name."""
    from gpudoctor.findings import Finding, Severity
    from gpudoctor.rules.faults import unreported_problems

    py = "/opt/venv/bin/python3"
    nvml = {"path": py, "kind": "signal", "what": "python3 was killed by SIGBUS", "command": f"{py} -m gpudoctor.process.worker nvml"}
    cuda = {"path": py, "kind": "signal", "what": "python3 was killed by SIGSEGV", "command": f"{py} -m gpudoctor.process.worker cuda"}
    facts = {"driver": {"nvml": {"problems": [nvml]}}, "cuda": {"api": {"problems": [cuda]}}}
    explained = Finding("library.damaged", Severity.FAIL, "driver", "libnvidia-ml.so.1 ... is cut short",
                        evidence={"crashed": [{"path": py, "command": nvml["command"]}]})
    left = unreported_problems(facts, [explained], "debian")
    assert [f.evidence.get("command") for f in left] == [cuda["command"]], [f.title for f in left]
    assert unreported_problems(facts, [explained, Finding("x.y", Severity.FAIL, "cuda", "t", evidence={
        "path": py, "command": cuda["command"]})], "debian") == []
