"""The environment differential: a failed step rerun in a clean base, the deltas that break it found by
delta debugging and verified on the user's environment; its finding (environment.breaks_step).

The search itself is tested on Python steps (a predicate of the environment: no process to wait for);
the wiring on real tools of this machine: CUDA 13.0's nvcc with a poisoned CPLUS_INCLUDE_PATH entry,
nvcc --version with a foreign libgcc_s.so.1 first on LD_LIBRARY_PATH, a `gcc` on PATH that is really cpp.
"""
from __future__ import annotations

import json
import os
import shutil

import pytest

from gpudoctor.process import differential as D
from gpudoctor.probes import smoke_nvcc, toolkit as toolkit_probe
from gpudoctor.rules import Facts, RuleContext
from gpudoctor.rules.differential import environment_breaks_step
from gpudoctor.rules.fixes import OsFlavor

NVCC13 = "/usr/local/cuda/bin/nvcc" if os.path.isfile("/usr/local/cuda/bin/nvcc") else None
needs_nvcc = pytest.mark.skipif(NVCC13 is None, reason="CUDA 13.0 is not installed at /usr/local/cuda")


def rule_ctx():
    return RuleContext(matrix=None, os=OsFlavor.from_platform({}))


def _user_env(n=48):
    """An environment like a user's: many variables, PATH and LD_LIBRARY_PATH lists, a token."""
    env = {f"TOOL_SETTING_{i}": f"value{i}" for i in range(n)}
    env.update(HOME="/home/u", USER="u", LANG="C.UTF-8", HF_TOKEN="hf_q8Xk2LmP9zR4tW7yB1nC5vD3",
               PATH="/opt/conda/bin:/usr/local/cuda/bin:/usr/local/bin:/usr/bin:/bin",
               LD_LIBRARY_PATH="/opt/a/lib:/opt/b/lib:/opt/c/lib")
    return env


def test_one_culprit_among_fifty_deltas_costs_two_rounds_and_is_verified():
    env = _user_env()
    bad = lambda e: e.get("TOOL_SETTING_31") == "value31"  # noqa: E731
    out = D.explain_failure(lambda e: not bad(e), env, "the step", workers=16)
    assert out["deltas"] >= 50
    assert out["clean_base_passes"] is True
    assert out["culprits"] == [{"var": "TOOL_SETTING_31", "value": "value31"}]
    assert out["verified"] is True and out["minimal"] is True
    # two rounds: 8 parts of ~7 and their complements with the clean base itself, then the 7 single deltas
    # with the user's environment without each (the verification)
    assert out["rounds"] == 2, out
    assert out["fix"] == {"unset": ["TOOL_SETTING_31"], "set": {}}


def test_a_path_list_entry_is_its_own_delta_and_the_fix_keeps_the_other_entries():
    env = _user_env()
    out = D.explain_failure(lambda e: "/opt/b/lib" not in e.get("LD_LIBRARY_PATH", "").split(":"), env, "x")
    assert out["culprits"] == [{"var": "LD_LIBRARY_PATH", "entry": "/opt/b/lib"}] and out["verified"]
    assert out["fix"]["set"] == {"LD_LIBRARY_PATH": "/opt/a/lib:/opt/c/lib"}
    # a PATH entry: the clean base's own entries are never deltas, only the user's additions
    out = D.explain_failure(lambda e: "/opt/conda/bin" not in e["PATH"].split(":"), env, "x")
    assert out["culprits"] == [{"var": "PATH", "entry": "/opt/conda/bin"}]
    assert out["fix"]["set"] == {"PATH": "/usr/local/cuda/bin:/usr/local/bin:/usr/bin:/bin"}


def test_an_empty_path_entry_is_a_delta_too():
    """An empty LD_LIBRARY_PATH entry means the current directory: a real cause, shown as such."""
    env = dict(_user_env(), LD_LIBRARY_PATH="/opt/a/lib::/opt/c/lib")
    out = D.explain_failure(lambda e: "" not in e.get("LD_LIBRARY_PATH", "x").split(":"), env, "x")
    assert out["culprits"] == [{"var": "LD_LIBRARY_PATH", "entry": ""}] and out["verified"]
    f = environment_breaks_step(Facts({"smoke_nvcc": {"builds": [{"differential": out}]}}), rule_ctx())
    assert "(empty: the current directory)" in f[0].title


def test_two_variables_needed_together_are_found_together():
    env = _user_env()
    out = D.explain_failure(lambda e: not ("TOOL_SETTING_3" in e and "TOOL_SETTING_40" in e), env, "x", workers=16)
    assert sorted(c["var"] for c in out["culprits"]) == ["TOOL_SETTING_3", "TOOL_SETTING_40"] and out["verified"]


def test_two_independent_breakers_are_both_named_so_the_fix_is_verified():
    env = _user_env()
    out = D.explain_failure(lambda e: "TOOL_SETTING_7" not in e and "TOOL_SETTING_20" not in e, env, "x")
    assert sorted(c["var"] for c in out["culprits"]) == ["TOOL_SETTING_20", "TOOL_SETTING_7"] and out["verified"]


def test_a_secret_is_named_never_shown():
    env = _user_env()
    value = env["HF_TOKEN"]
    out = D.explain_failure(lambda e: "HF_TOKEN" not in e, env, "the step")
    assert out["culprits"] == [{"var": "HF_TOKEN", "secret": True}] and out["fix"]["unset"] == ["HF_TOKEN"]
    assert value not in json.dumps(out)
    findings = environment_breaks_step(Facts({"toolkit": {"differential": out}}), rule_ctx())
    assert findings and all(value not in json.dumps(f.to_dict(), default=str) for f in findings)
    assert "HF_TOKEN (value not shown)" in findings[0].title
    # a credential under an innocent name: the value's shape gives it away
    assert D.looks_secret("MY_URL", "https://bob:hunter2@example.com/x") and D.looks_secret("X", "aB3dE5gH7jK9mN1pQ3sT")
    assert not D.looks_secret("CUDA_HOME", "/usr/local/cuda-13.0") and not D.looks_secret("N", "12345678901234567890123")


def test_a_gpu_uuid_is_an_identifier_and_shown_a_credential_stays_hidden():
    """The 2 x H200 run printed "CUDA_VISIBLE_DEVICES (value not shown)" for a GPU UUID: a UUID (RFC 9562 shape,
    NVIDIA's GPU-/MIG- prefixes) addresses a device and is shown; a credential-like name hides even a UUID."""
    uuid = "GPU-12345678-90ab-cdef-1234-567890abcdef"
    env = dict(_user_env(), CUDA_VISIBLE_DEVICES=uuid)
    out = D.explain_failure(lambda e: "CUDA_VISIBLE_DEVICES" not in e, env, "the step")
    assert out["culprits"] == [{"var": "CUDA_VISIBLE_DEVICES", "value": uuid}] and out["verified"]
    (f,) = environment_breaks_step(Facts({"toolkit": {"differential": out}}), rule_ctx())
    assert f"CUDA_VISIBLE_DEVICES={uuid}" in f.title and "not shown" not in f.title
    for shown in (uuid, "MIG-12345678-90ab-cdef-1234-567890abcdef", "MIG-GPU-12345678-90ab-cdef-1234-567890abcdef/1/0",
                  f"0,{uuid}", "12345678-90ab-cdef-1234-567890abcdef"):
        assert not D.looks_secret("CUDA_VISIBLE_DEVICES", shown), shown
    for hidden in (("HEROKU_API_KEY", "12345678-90ab-cdef-1234-567890abcdef"), ("DB_PASSWORD", uuid),
                   ("X", "GPU-aB3dE5gH7jK9mN1pQ3sTxx"), ("X", f"{uuid}aB3dE5gH7jK9mN1pQ3sT"), ("X", "aB3dE5gH7jK9mN1pQ3sT")):
        assert D.looks_secret(*hidden), hidden


def test_a_step_that_fails_in_the_clean_base_too_blames_no_variable():
    out = D.explain_failure(lambda e: False, _user_env(), "x")
    assert out["clean_base_passes"] is False and out["culprits"] == [] and out["rounds"] == 1
    assert environment_breaks_step(Facts({"toolkit": {"differential": out}}), rule_ctx()) == []


def test_the_differential_stops_at_its_limits_and_says_so():
    out = D.explain_failure(lambda e: "TOOL_SETTING_9" not in e, _user_env(), "x", max_reruns=2, workers=2)
    assert out["stopped"] and out["minimal"] is False and out["verified"] is None
    f = environment_breaks_step(Facts({"toolkit": {"differential": out}}), rule_ctx())
    assert f and f[0].severity.value == "warn" and "not verified" in f[0].title


def test_nothing_names_a_variable_as_a_detector():
    """The clean base is the only list of variable names in the module (TMPDIR is left out on purpose;
    the credential pattern only hides values, it never picks a culprit)."""
    import ast
    import inspect
    import re

    names = {n.value for n in ast.walk(ast.parse(inspect.getsource(D))) if isinstance(n, ast.Constant)
             and isinstance(n.value, str) and re.fullmatch(r"[A-Z][A-Z0-9_]{2,}", n.value)}
    assert names <= set(D.BASE_KEPT) | {"PATH"}, names - set(D.BASE_KEPT)
    assert "TMPDIR" not in D.BASE_KEPT


# ----------------------------------------------------------------------------- real tools


def _poisoned_include(tmp_path):
    """A directory whose <cstdio> stops every C++ compile, like a stale copy in a project's include dir."""
    d = tmp_path / "poison"
    d.mkdir()
    (d / "cstdio").write_text('#error "a foreign <cstdio>"\n')
    return str(d)


@needs_nvcc
def test_real_nvcc_build_broken_by_one_cplus_include_path_entry(tmp_path):
    good = tmp_path / "good"
    good.mkdir()
    env = dict(os.environ, CPLUS_INCLUDE_PATH=f"{good}:{_poisoned_include(tmp_path)}")
    step = D.command_step([NVCC13, smoke_nvcc.SOURCE, "-o", "smoke"], timeout=120, in_temp_dir=True)
    assert step(env) is False  # ground truth: the real build fails in this environment
    out = D.explain_failure(step, env, "the nvcc 13.0 smoke build", paths=[NVCC13], command="nvcc vector_add.cu -o smoke",
                            max_seconds=120)
    assert out["culprits"] == [{"var": "CPLUS_INCLUDE_PATH", "entry": str(tmp_path / "poison")}], out
    assert out["verified"] is True and out["fix"]["set"] == {"CPLUS_INCLUDE_PATH": str(good)}
    f = environment_breaks_step(Facts({"smoke_nvcc": {"builds": [{"differential": out}]}}), rule_ctx())
    assert [x.id for x in f] == ["environment.breaks_step"] and f[0].severity.value == "fail"
    assert f[0].title == (f"The nvcc 13.0 smoke build ({NVCC13}) succeeds without the CPLUS_INCLUDE_PATH entry "
                          f"{tmp_path / 'poison'}: verified")
    assert f[0].fixes[0].commands == (f"export CPLUS_INCLUDE_PATH={good}",) and f[0].evidence["path"] == NVCC13


@needs_nvcc
def test_real_nvcc_version_broken_by_a_foreign_libgcc_first_on_ld_library_path(tmp_path):
    """nvcc needs libgcc_s.so.1's GCC_3.0 symbols; a directory whose libgcc_s.so.1 is another library
    (here a copy of libz) makes `nvcc --version` exit 1 with the loader's 'version not found'."""
    libz = next((p for p in ("/lib/x86_64-linux-gnu/libz.so.1", "/usr/lib/x86_64-linux-gnu/libz.so.1") if os.path.exists(p)), None)
    if libz is None:
        pytest.skip("no libz.so.1 to copy")
    bad = tmp_path / "toolchain" / "lib"
    bad.mkdir(parents=True)
    shutil.copy(libz, bad / "libgcc_s.so.1")
    env = dict(os.environ, LD_LIBRARY_PATH=f"/usr/local/cuda/lib64:{bad}")
    facts = toolkit_probe.describe_nvcc(NVCC13, "PATH", env, 10)
    assert not facts.get("release") and facts["problems"][0]["path"] == NVCC13  # the real failure
    d = facts["differential"]
    assert d["culprits"] == [{"var": "LD_LIBRARY_PATH", "entry": str(bad)}] and d["verified"], d
    f = environment_breaks_step(Facts({"toolkit": {"toolkits": [facts]}}), rule_ctx())
    assert f[0].title == f"nvcc --version ({NVCC13}) succeeds without the LD_LIBRARY_PATH entry {bad}: verified"
    assert f[0].fixes[0].commands == ("export LD_LIBRARY_PATH=/usr/local/cuda/lib64",)
    from gpudoctor.rules.faults import named_paths

    assert NVCC13 in named_paths(f)  # the problem record is reported by this finding
    from gpudoctor.rules.toolkit import toolkit_broken

    broken = toolkit_broken(Facts({"toolkit": {"toolkits": [facts], "on_path": NVCC13}}), rule_ctx())
    assert broken and "could not be asked" not in broken[0].title  # nvcc is fine: the environment is named instead
    assert f"fails only because of the LD_LIBRARY_PATH entry {bad}" in broken[0].title


@needs_nvcc
def test_check_names_a_wrong_gcc_first_on_path(tmp_path):
    """A PATH entry whose `gcc` is the preprocessor driver (cpp): nvcc's host compile fails with
    "'-c' is not a valid option to the preprocessor"; the check names that PATH entry, verified."""
    cpp = shutil.which("cpp")
    if cpp is None:
        pytest.skip("no cpp")
    from gpudoctor.check import run_check
    from gpudoctor.matrix import load_matrix

    wrong = tmp_path / "wrong" / "bin"
    wrong.mkdir(parents=True)
    os.symlink(cpp, wrong / "gcc")
    env = dict(os.environ, PATH=f"{wrong}:{os.environ['PATH']}", XDG_CACHE_HOME=str(tmp_path / "xdg"))
    report = run_check(load_matrix(), env=env, timeout=120)
    ours = [f for f in report.findings if f.id == "environment.breaks_step" and f.evidence.get("path") == shutil.which("nvcc", path=env["PATH"])]
    assert ours, [(f.id, f.title) for f in report.findings]
    assert ours[0].title.endswith(f"succeeds without the PATH entry {wrong}: verified")
    smoke = [f for f in report.findings if f.id == "smoke.nvcc" and f.evidence.get("command", "").startswith(ours[0].evidence["path"])]
    assert smoke and smoke[0].severity.value == "fail"  # the smoke finding still says the build failed
    assert f"fails only because of the PATH entry {wrong}" in smoke[0].title or "see " in smoke[0].title, smoke[0].title


def test_a_smoke_run_that_fails_only_with_a_variable_is_explained(tmp_path):
    """The run of the smoke binary gets the differential too. No GPU here: the binary is a FAKE script that
    passes like the real one unless CUDA_VISIBLE_DEVICES hides every device."""
    exe = tmp_path / "FAKE_smoke"
    exe.write_text('#!/bin/sh\n[ "$CUDA_VISIBLE_DEVICES" = "-1" ] && { echo "GPUDOCTOR_SMOKE_FAIL cudaMalloc: no CUDA-capable device"; exit 1; }\n'
                   'echo GPUDOCTOR_SMOKE_OK\n')
    exe.chmod(0o755)
    out = smoke_nvcc._run_binary(str(exe), dict(os.environ, CUDA_VISIBLE_DEVICES="-1"), 10, label="the FAKE smoke binary's run")
    assert out["ok"] is False
    assert out["differential"]["culprits"] == [{"var": "CUDA_VISIBLE_DEVICES", "value": "-1"}]
    assert smoke_nvcc._run_binary(str(exe), dict(os.environ), 10).get("differential") is None  # a pass pays nothing


@needs_nvcc
def test_real_nvcc_dry_run_broken_by_a_missing_tmpdir_names_tmpdir(tmp_path):
    """TMPDIR naming a removed per-job dir: nvcc answers --version but its dry run stops with "Could not
    open output file"; TMPDIR is deliberately not in the clean base, so it is a delta like any other."""
    gone = tmp_path / "job-tmp-removed"
    facts = toolkit_probe.describe_nvcc(NVCC13, "PATH", dict(os.environ, TMPDIR=str(gone)), 10)
    assert facts.get("release") and any(p["path"] == NVCC13 for p in facts["problems"])  # the real failure
    assert facts["differential"]["culprits"] == [{"var": "TMPDIR", "value": str(gone)}]
    assert facts["differential"]["verified"] is True


def test_copies_failing_alike_are_one_finding_naming_every_path():
    out = D.explain_failure(lambda e: "TOOL_SETTING_5" not in e, _user_env(), "nvcc --version", paths=["/a/nvcc"])
    other = dict(out, paths=["/b/nvcc"])
    f = environment_breaks_step(Facts({"toolkit": {"toolkits": [{"differential": out}, {"differential": other}]}}), rule_ctx())
    assert len(f) == 1 and f[0].evidence["paths"] == ["/a/nvcc", "/b/nvcc"]
    assert f[0].title == "nvcc --version (/a/nvcc and 1 other copy) succeeds without TOOL_SETTING_5=value5: verified"


def test_a_library_that_fails_to_load_on_a_foreign_libgcc_names_the_ld_library_path_entry(tmp_path):
    """The libversions child loads the real libcudart.so.13 of the nvidia-cuda-runtime wheel; an LD_LIBRARY_PATH
    entry whose libgcc_s.so.1 is another library (a copy of libz) makes dlopen fail with the loader's "version
    `GCC_3.0' not found". The load's differential names that entry, verified (the library alone would be blamed)."""
    import glob
    import sys

    from conftest import need
    from gpudoctor.probes._worker import ask_libraries
    from gpudoctor.process.runner import ProbeContext

    import nvidia

    found = [p for d in nvidia.__path__ for p in glob.glob(os.path.join(d, "cu13", "lib", "libcudart.so.13"))]
    need(bool(found), "the nvidia-cuda-runtime wheel (README's test command)")
    cudart = found[0]
    libz = next((p for p in ("/lib/x86_64-linux-gnu/libz.so.1", "/usr/lib/x86_64-linux-gnu/libz.so.1") if os.path.exists(p)), None)
    if libz is None:
        pytest.skip("no libz.so.1 to copy")
    bad = tmp_path / "toolchain" / "lib"
    bad.mkdir(parents=True)
    shutil.copy(libz, bad / "libgcc_s.so.1")
    env = dict(os.environ, LD_LIBRARY_PATH=str(bad))
    ctx = ProbeContext(env=env, smoke=False, timeout=20.0, python=sys.executable)
    answer = ask_libraries(ctx, [cudart])[cudart]
    assert "libgcc_s.so.1: version" in (answer.get("load_error") or ""), answer  # ground truth: the loader refuses it
    d = answer["differential"]
    (c,) = d["culprits"]  # the variable (its only entry is the whole value)
    assert c["var"] == "LD_LIBRARY_PATH" and str(bad) in (c.get("entry"), c.get("value")) and d["verified"], d
    (f,) = environment_breaks_step(Facts({"cuda": {"libcudart": [answer]}}), rule_ctx())
    assert f.severity.value == "fail" and "LD_LIBRARY_PATH" in f.title and f.title.endswith(": verified"), f.title
    assert ask_libraries(ProbeContext(env=dict(os.environ), smoke=False, timeout=20.0), [cudart])[cudart].get(
        "load_error") is None  # and without the entry it loads: nothing to explain


def test_a_verified_environment_cause_outranks_the_reading_of_the_smoke_binarys_words():
    """The H100 run's foreign_cuda_lib state: the smoke binary said 'CUDA driver version is insufficient for CUDA
    runtime version' because an LD_LIBRARY_PATH entry's libcuda.so.1 was another library; the differential
    verified the entry. The smoke finding names the entry, not an old driver (the reading stays evidence)."""
    from gpudoctor.rules.smoke import nvcc_smoke

    entry = "/tmp/job/lib"
    build = {"nvcc": NVCC13 or "/usr/local/cuda/bin/nvcc", "release": "13.0", "arch": "sm_90", "compile_ok": True,
             "command": "nvcc vector_add.cu -o smoke -arch sm_90",
             "run": {"ok": False, "returncode": 1, "output": "GPUDOCTOR_SMOKE_FAIL cudaMalloc(&da, n * sizeof(float)): CUDA "
                     "driver version is insufficient for CUDA runtime version (cudaErrorInsufficientDriver)",
                     "differential": {"clean_base_passes": True, "verified": True,
                                      "culprits": [{"var": "LD_LIBRARY_PATH", "entry": entry}]}}}
    (f,) = nvcc_smoke(Facts({"smoke_nvcc": {"builds": [build]}}), rule_ctx())
    assert f.severity.value == "fail" and f"fails only because of the LD_LIBRARY_PATH entry {entry}" in f.title, f.title
    assert "driver" not in f.title.split("failed", 1)[1], f.title


def test_cudnn_that_fails_to_load_only_in_this_environment_is_not_blamed():
    """The H100 run's foreign_libgcc state: cuDNN 9.14 failed its version child with the loader's "libgcc_s.so.1:
    version `GCC_3.0' not found"; its load's differential verified an LD_LIBRARY_PATH entry. cudnn.broken names
    the entry, and offers no reinstall of cuDNN; environment.breaks_step carries the verified fix."""
    from gpudoctor.rules.libraries import cudnn_mismatch as cudnn_rules

    entry, lib = "/tmp/job/toolchain/lib", "/usr/lib/x86_64-linux-gnu/libcudnn.so.9.14.0"
    err = f"{entry}/libgcc_s.so.1: version `GCC_3.0' not found (required by {lib})"
    diff = {"step": f"loading libcudnn.so.9.14.0 ({lib})", "paths": [lib], "clean_base_passes": True, "verified": True,
            "culprits": [{"var": "LD_LIBRARY_PATH", "entry": entry}], "fix": {"set": {"LD_LIBRARY_PATH": "/usr/local/cuda/lib64"}}}
    facts = Facts({"cudnn": {"libraries": [{"path": lib, "realpath": lib, "version": "9.14.0", "origin": "ldconfig",
                                            "api": {"load_error": err, "differential": diff}}]},
                   "cuda": {}, "frameworks": {}})
    (f,) = [x for x in cudnn_rules(facts, rule_ctx()) if x.id == "cudnn.broken"]
    assert f"fails only because of the LD_LIBRARY_PATH entry {entry}" in f.title and not f.fixes, f.title
    (g,) = environment_breaks_step(facts, rule_ctx())
    assert g.title.endswith(": verified") and g.fixes[0].commands == ("export LD_LIBRARY_PATH=/usr/local/cuda/lib64",)


def test_a_differential_that_cannot_start_its_threads_says_so_and_costs_the_step_nothing(tmp_path):
    """The H100 run's soft_as state (ulimit -Sv 4 GiB): the differential's threads could not start, and the
    RuntimeError had cost the cuda probe all its facts. Real: a child whose address space leaves room for almost
    no thread stack runs a differential; it returns facts that say why it stopped, never raises."""
    import subprocess
    import sys

    code = r'''
import json, os, resource, sys
sys.path.insert(0, os.environ["ROOT"])
from gpudoctor.process import differential as D
vm = int(next(l for l in open("/proc/self/status") if l.startswith("VmSize:")).split()[1]) * 1024
resource.setrlimit(resource.RLIMIT_AS, (vm + (6 << 20), resource.RLIM_INFINITY))
env = dict({f"V{i}": str(i) for i in range(12)}, X="1")
out = D.explain_failure(lambda e: e.get("X") != "1", env, label="a FAKE step", max_seconds=5)
print(json.dumps(out))
'''
    r = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, ROOT=os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["clean_base_passes"] is None and "could not rerun the step" in out["stopped"], out
