"""The process and the GPU it shares (issue 24 item 5): resource limits, and GPUs held by other processes.

Real where this GPU-less machine allows it: `gpudoctor check` runs in a child under a really lowered limit,
the rerun child really raises a limit, /proc is really read. NVML process lists cannot exist here: those
tests feed the rules FAKE facts (named so)."""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys

from gpudoctor.findings import Severity
from gpudoctor.probes import process_limits
from gpudoctor.render.redact import redact
from gpudoctor.rules.sharing import WHERE_SET
from tests.conftest import ROOT, by_id, judge

GiB = 1 << 30


def _check(tmp_path, limits=(), *args):
    """`gpudoctor check --json` in a child whose soft limits ``limits`` [(RLIMIT_*, value)] were lowered."""
    def lower():
        for name, value in limits:
            res = getattr(resource, name)
            resource.setrlimit(res, (value, resource.getrlimit(res)[1]))

    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"), PYTHONPATH=ROOT)
    out = tmp_path / "report.json"
    done = subprocess.run([sys.executable, "-m", "gpudoctor", "check", "--json", "--no-smoke", "--timeout", "60",
                           "-o", str(out), *args], preexec_fn=lower, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    return json.loads(out.read_text())


def _ids(report, prefix):
    return {f["id"]: f for f in report["findings"] if f["id"].startswith(prefix)}


def test_a_lowered_address_space_limit_is_read_from_the_process_and_warned_about(tmp_path):
    report = _check(tmp_path, [("RLIMIT_AS", 6 * GiB)])
    facts = report["probes"]["process_limits"]["facts"]
    assert facts["rlimits"]["RLIMIT_AS"]["soft"] == 6 * GiB
    # No NVIDIA kernel driver here: the CUDA worker's failed cuInit is not rerun (no limit can be its cause) ...
    rerun = report["probes"]["cuda"]["facts"]["api"]["limits_rerun"]
    assert rerun["limits"]["RLIMIT_AS"]["soft"] == 6 * GiB and rerun["skipped"].startswith("no NVIDIA kernel driver")
    # ... and no context was created, so the limit is a warning naming what will fail, with its fix.
    f = _ids(report, "process.")["process.address_space_limit"]
    assert f["severity"] == "warn" and "6.0 GiB" in f["title"] and "out of memory" in f["title"]
    assert any(c.startswith("ulimit -Sv ") for fix in f["fixes"] for c in fix["commands"])


def test_without_a_lowered_limit_or_a_gpu_nothing_is_found_and_nothing_crashes(tmp_path):
    report = _check(tmp_path)
    assert report["probes"]["process_limits"]["status"] == "ok"
    facts = report["probes"]["process_limits"]["facts"]
    assert facts["gpus"] == [] and facts["gpu_processes"] == []  # NVML has no driver here
    assert facts["shm"]["path"] == "/dev/shm"
    assert not _ids(report, "process.") and not {k for k in _ids(report, "gpu.") if k != "gpu.health"}
    assert not _ids(report, "gpudoctor.rule_error")


def test_the_rerun_child_raises_the_limit_it_is_asked_to(tmp_path):
    """The child the differential runs really raises a lowered soft limit before it tries CUDA."""
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]

    def lower():
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, hard))

    out = subprocess.run([sys.executable, "-m", "gpudoctor.process.limits", "RLIMIT_NOFILE"], preexec_fn=lower,
                         capture_output=True, text=True, timeout=60, env=dict(os.environ, PYTHONPATH=ROOT))
    res = json.loads(out.stdout.strip().splitlines()[-1])
    want = None if hard == resource.RLIM_INFINITY else hard
    if process_limits.limits.privileged():
        want = None
    assert res["raised"]["RLIMIT_NOFILE"][0] == want
    assert res["ok"] is False and res["cuInit"] != "CUDA_SUCCESS"  # no GPU here: the steps ran and failed


def test_pids_are_resolved_from_proc_and_a_pid_without_a_gpu_open_is_not_blamed():
    """A real process that holds no /dev/nvidia* open is what a PID from another namespace looks like here."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        seen = process_limits._resolve("/proc", child.pid, os.getpid(), os.getuid())
        assert seen["found"] is False and "no GPU open" in seen["why_not_found"]
        assert process_limits._descends_from("/proc", child.pid, os.getpid())
        assert not process_limits._descends_from("/proc", os.getpid(), child.pid)
    finally:
        child.kill()
        child.wait()
    gone = process_limits._resolve("/proc", 2**22 + 7, os.getpid(), os.getuid())
    assert gone["found"] is False and "PID namespace" in gone["why_not_found"]


# --- FAKE NVML facts: no GPU, so no process can hold one here -----------------------------------------

def _fake_facts(mode=0, procs=(), free=2400, total=81559, launch_error=None, rlimits=None, rerun=None):
    """FAKE facts of an H100 with other processes on it, as process_limits, cuda and smoke_nvrtc would return them."""
    gpu = {"index": 0, "name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-11111111-2222-3333-4444-555555555555",
           "compute_mode": mode, "memory_total_mib": total, "memory_free_mib": free, "memory_used_mib": total - free}
    run = {"ordinal": 0, "arch": "sm_90", "launch": {"error": launch_error} if launch_error else
           {"vadd": {"elements": 4096, "mismatches": 0}}}
    if rerun:
        run["limits_rerun"] = rerun
    return {
        "process_limits": {"rlimits": rlimits or {"RLIMIT_AS": {"soft": None, "hard": None}}, "privileged": False,
                           "uid": 1000, "gpus": [gpu], "gpu_processes": [dict(p, gpu=0) for p in procs]},
        "cuda": {"api": {"cuInit": {"result": "CUDA_SUCCESS"}, "devices": [{"ordinal": 0, "uuid": gpu["uuid"]}]}},
        "smoke_nvrtc": {"runs": [run]},
    }


MINE = {"pid": 4242, "found": True, "ours": False, "uid": 1000, "user": "alice", "program": "python3",
        "command": "python3 train.py --lr 3e-4", "used_mib": 78000, "type": "compute"}
THEIRS = {"pid": 777, "found": True, "ours": False, "uid": 1001, "program": "python3", "used_mib": 78000, "type": "compute",
          "user": "bob", "command": "python3 serve.py --token-file /home/bob/secret"}  # as if a probe had stored them


def test_FAKE_memory_held_by_own_job_is_a_warning_with_pid_command_and_kill():
    f = by_id(judge(_fake_facts(procs=[MINE])), "gpu.memory_held")
    assert len(f) == 1 and f[0].severity == Severity.WARN
    assert "PID 4242" in f[0].title and "train.py" in f[0].title and "78000 MiB" in f[0].title
    assert ("kill 4242",) in [fix.commands for fix in f[0].fixes]


def test_FAKE_memory_held_is_the_failure_when_this_checks_context_ran_out_of_memory():
    f = by_id(judge(_fake_facts(procs=[MINE], free=300,
                                launch_error="cuDevicePrimaryCtxRetain: CUDA_ERROR_OUT_OF_MEMORY")), "gpu.memory_held")
    assert len(f) == 1 and f[0].severity == Severity.FAIL and "CUDA_ERROR_OUT_OF_MEMORY" in f[0].title


def test_FAKE_another_users_job_is_named_without_its_command_line_or_user_name():
    f = by_id(judge(_fake_facts(procs=[THEIRS])), "gpu.memory_held")[0]
    text = json.dumps(redact(f.to_dict()))
    assert "PID 777" in text and "another user, uid 1001" in text
    assert "bob" not in text and "serve.py" not in text


def test_FAKE_exclusive_process_gpu_held_by_another_process():
    warn = by_id(judge(_fake_facts(mode=3, procs=[THEIRS], free=3000)), "gpu.compute_mode_blocks")
    assert len(warn) == 1 and warn[0].severity == Severity.WARN and "CUDA_ERROR_DEVICE_UNAVAILABLE" in warn[0].title
    fail = by_id(judge(_fake_facts(mode=3, procs=[THEIRS], free=3000,
                                   launch_error="cuDevicePrimaryCtxRetain: CUDA_ERROR_DEVICE_UNAVAILABLE")),
                 "gpu.compute_mode_blocks")
    assert len(fail) == 1 and fail[0].severity == Severity.FAIL
    assert not by_id(judge(_fake_facts(mode=3, procs=[dict(THEIRS, ours=True)], free=3000)), "gpu.compute_mode_blocks")


def test_FAKE_prohibited_compute_mode_and_a_free_shared_gpu():
    assert by_id(judge(_fake_facts(mode=2)), "gpu.compute_mode_blocks", Severity.WARN)
    small = dict(MINE, used_mib=2000)
    found = judge(_fake_facts(procs=[small], free=70000))
    assert by_id(found, "gpu.shared", Severity.INFO) and not by_id(found, "gpu.memory_held")


def test_FAKE_verified_limit_rerun_names_the_limit_and_its_fix():
    rl = {"RLIMIT_AS": {"soft": 8 * GiB, "hard": 8 * GiB}, "RLIMIT_NOFILE": {"soft": 1024, "hard": 1048576}}
    rerun = {"verified": True, "cause": ["RLIMIT_AS"], "reruns": 2, "all_raised": {"ok": True, "raised": {}},
             "single": {"ok": True, "raised": {"RLIMIT_AS": [None, None]}}}
    f = by_id(judge(_fake_facts(launch_error="cuDevicePrimaryCtxRetain: CUDA_ERROR_OUT_OF_MEMORY", rlimits=rl,
                                rerun=rerun)), "process.limit_breaks_cuda")
    assert len(f) == 1 and f[0].severity == Severity.FAIL and "RLIMIT_AS=8.0 GiB" in f[0].title and "verified" in f[0].title
    assert WHERE_SET in f[0].fixes[0].commands  # soft == hard: no `ulimit` can raise it here, find where it is set
    # A rerun that still failed with every limit raised acquits them: no limit finding at all.
    acquit = {"verified": False, "cause": None, "all_raised": {"ok": False}, "raised": ["RLIMIT_AS"]}
    found = judge(_fake_facts(launch_error="cuDevicePrimaryCtxRetain: CUDA_ERROR_OUT_OF_MEMORY", rlimits=rl, rerun=acquit))
    assert not [x for x in found if x.id.startswith("process.")]


def test_a_step_that_failed_for_a_lowered_descriptor_limit_is_blamed_on_the_limit_not_the_tool():
    """A real command started through subproc in a child whose RLIMIT_NOFILE leaves no room for its pipes."""
    code = (
        "import json, os, resource\n"
        "from gpudoctor.process import subproc, limits\n"
        "n = len(os.listdir('/proc/self/fd'))\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (n + 1, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))\n"
        "res = subproc.run(['/bin/true'], timeout=30)\n"
        "print(json.dumps({'problem': res.problem(), 'rlimits': limits.read()}))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, PYTHONPATH=ROOT))
    child = json.loads(out.stdout.strip().splitlines()[-1])
    assert "Too many open files" in child["problem"]["what"]
    found = judge({"process_limits": {"rlimits": child["rlimits"]}, "toolkit": {"problems": [child["problem"]]}})
    f = by_id(found, "process.limit_hit", Severity.FAIL)
    assert len(f) == 1 and f"RLIMIT_NOFILE={child['rlimits']['RLIMIT_NOFILE']['soft']}" in f[0].title
    assert f[0].evidence["failed"] == ["/bin/true"] and f[0].fixes[0].commands[0].startswith("ulimit -Sn ")
    # The same failure with the limit unlimited (FAKE: such a process could not have hit it) names no limit.
    unlimited = dict(child["rlimits"], RLIMIT_NOFILE={"soft": None, "hard": None})
    assert not by_id(judge({"process_limits": {"rlimits": unlimited}, "toolkit": {"problems": [child["problem"]]}}),
                     "process.limit_hit")


def test_FAKE_a_rerun_that_passes_under_the_same_limits_blames_no_limit():
    """A kernel that failed for another reason (no code for the GPU): cuInit + context pass in the baseline."""
    rl = {"RLIMIT_AS": {"soft": 8 * GiB, "hard": 8 * GiB}}
    rerun = {"verified": False, "cause": None, "baseline": {"ok": True}, "reruns": 1}
    found = judge(_fake_facts(launch_error="cuModuleLoadData: CUDA_ERROR_NO_BINARY_FOR_GPU", rlimits=rl, rerun=rerun))
    assert not [x for x in found if x.id.startswith("process.")]


def test_the_real_differential_acquits_the_limits_of_a_failure_raising_them_does_not_fix(monkeypatch):
    """Real rerun children; FAKE only the kernel-driver presence (none here), so cuInit fails in every rerun."""
    monkeypatch.setattr(process_limits.limits, "driver_present", lambda: True)
    monkeypatch.setenv("PYTHONPATH", ROOT)
    if not process_limits.limits.raisable():
        import pytest

        pytest.skip("every limit here is already at its most")
    res = process_limits.limits.differential("cuInit", "CUDA_ERROR_NO_DEVICE")
    assert res["baseline"]["ok"] is False and res["baseline"]["cuInit"] != "CUDA_SUCCESS"
    assert res["all_raised"]["ok"] is False and res["all_raised"]["raised"]  # raised, and still failing
    assert res["cause"] is None and res["verified"] is False and res["reruns"] == 2
    found = judge({"process_limits": {"rlimits": res["limits"]},
                   "cuda": {"api": {"cuInit": {"result": "CUDA_ERROR_NO_DEVICE"}, "limits_rerun": res}}})
    assert not [x for x in found if x.id in ("process.limit_breaks_cuda", "process.address_space_limit")]


def test_FAKE_an_mps_server_with_a_low_descriptor_limit():
    mps = {"pid": 99, "found": True, "ours": False, "uid": 0, "program": "nvidia-cuda-mps-server", "nofile_soft": 1024,
           "used_mib": 30, "type": "compute"}
    f = by_id(judge(_fake_facts(procs=[mps], free=70000)), "gpu.mps_nofile_low", Severity.WARN)
    assert len(f) == 1 and "16384" in f[0].title and "PID 99" in f[0].title
    assert not by_id(judge(_fake_facts(procs=[dict(mps, nofile_soft=65536)], free=70000)), "gpu.mps_nofile_low")


def test_a_real_process_limit_is_read_from_proc():
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]

    def lower():
        resource.setrlimit(resource.RLIMIT_NOFILE, (77, hard))

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], preexec_fn=lower)
    try:
        assert process_limits._nofile_soft(f"/proc/{child.pid}") == 77
    finally:
        child.kill()
        child.wait()


def test_FAKE_infiniband_node_with_a_finite_memlock_limit():
    facts = _fake_facts(rlimits={"RLIMIT_MEMLOCK": {"soft": 8 << 20, "hard": 8 << 20}})
    facts["nccl"] = {"infiniband_devices": ["mlx5_0"]}
    f = by_id(judge(facts), "process.memlock_low", Severity.WARN)
    assert len(f) == 1 and "8 MiB" in f[0].title and "memlock unlimited" in f[0].fixes[0].commands[0]
    facts["process_limits"]["privileged"] = True  # CAP_IPC_LOCK ignores the limit (FAKE: we are not root here)
    assert not by_id(judge(facts), "process.memlock_low")


# --- a limit the rerun may not raise (soft == hard, no CAP_SYS_RESOURCE): issue 24, H200 run `as_limit` --------

def test_the_rerun_child_tries_to_raise_a_hard_limit_and_says_whether_it_may():
    """`ulimit -v N` in bash sets soft AND hard. Whether the rerun may lift the hard limit is learnt by trying
    setrlimit (EPERM without CAP_SYS_RESOURCE), never from the uid: this machine's root lacks that capability."""
    def lower():
        resource.setrlimit(resource.RLIMIT_AS, (16 * GiB, 16 * GiB))

    out = subprocess.run([sys.executable, "-m", "gpudoctor.process.limits", "RLIMIT_AS"], preexec_fn=lower,
                         capture_output=True, text=True, timeout=60, env=dict(os.environ, PYTHONPATH=ROOT))
    res = json.loads(out.stdout.strip().splitlines()[-1])
    if process_limits.limits.privileged():
        assert res["raised"]["RLIMIT_AS"] == [None, None] and res["hard_raise"] is True
    else:
        assert res["raised"]["RLIMIT_AS"].startswith("not raised") and res["hard_raise"] is False


FAKE_NVML_2 = {"status": "ok", "gpus": [{"index": i, "name": "NVIDIA H200", "uuid": f"GPU-{i}1111111-2222-3333-4444-555555555555"}
                                        for i in range(2)]}


def _as_limit_facts(rerun, soft=8 * GiB, hard=8 * GiB, init="CUDA_ERROR_OUT_OF_MEMORY"):
    """FAKE facts shaped like the H200 run's `as_limit` state: NVML sees 2 GPUs, cuInit ran out of memory."""
    return {"driver": {"nvml": FAKE_NVML_2},
            "process_limits": {"rlimits": {"RLIMIT_AS": {"soft": soft, "hard": hard}, "RLIMIT_DATA": {"soft": None, "hard": None}},
                               "privileged": False, "uid": 0},
            "cuda": {"api": {"cuInit": {"result": init}, "devices": [], "limits_rerun": rerun}}}


#: The rerun the H200 run recorded (before the child tried hard limits): only RLIMIT_STACK could be raised.
H200_RERUN = {"failed_step": "cuInit", "failure": "CUDA_ERROR_OUT_OF_MEMORY", "privileged": False, "reruns": 2,
              "baseline": {"cuInit": "CUDA_ERROR_OUT_OF_MEMORY", "ok": False}, "cause": None, "verified": False,
              "raised": ["RLIMIT_STACK"], "all_raised": {"cuInit": "CUDA_ERROR_OUT_OF_MEMORY", "ok": False,
                                                          "raised": {"RLIMIT_STACK": [1 << 30, None]}}}


def test_FAKE_out_of_memory_under_an_address_space_limit_that_cannot_be_raised_names_the_limit_not_visibility():
    found = judge(_as_limit_facts(H200_RERUN))
    (f,) = by_id(found, "process.address_space_limit")
    assert f.severity == Severity.FAIL and "RLIMIT_AS=8.0 GiB" in f.title and "CUDA_ERROR_OUT_OF_MEMORY" in f.title
    assert WHERE_SET in f.fixes[0].commands and not any(c.startswith("ulimit -Sv ") for c in f.fixes[0].commands)
    assert not by_id(found, "device.not_visible")  # the GPUs are not hidden: the limit explains cuInit
    # The same error with no finite limit: still not "hidden", the error is named as what it is.
    free = judge(_as_limit_facts(dict(H200_RERUN, limits={}), soft=None, hard=None))
    assert not by_id(free, "process.address_space_limit")
    (nv,) = by_id(free, "device.not_visible")
    assert "hidden" not in nv.title and "not a visibility problem" in nv.title
    assert not any("CUDA_VISIBLE_DEVICES" in c for fix in nv.fixes for c in fix.commands)
    # A rerun that did raise RLIMIT_AS and still failed acquits it.
    raised = dict(H200_RERUN, raised=["RLIMIT_AS"], all_raised={"ok": False, "raised": {"RLIMIT_AS": [None, None]}})
    assert not by_id(judge(_as_limit_facts(raised)), "process.address_space_limit")


def test_FAKE_no_device_is_still_a_visibility_problem():
    (nv,) = by_id(judge(_as_limit_facts(None, soft=None, hard=None, init="CUDA_ERROR_NO_DEVICE")), "device.not_visible")
    assert nv.title.startswith("GPUs hidden from CUDA")


def test_the_real_differential_under_a_hard_address_space_limit_leaves_it_unverified_and_the_rules_name_it():
    """Real rerun children in a child whose RLIMIT_AS is lowered soft and hard (as `ulimit -v` does); FAKE only
    the kernel driver's presence (none here, so cuInit fails in every rerun) and cuInit's out of memory."""
    code = ("import json\nfrom gpudoctor.process import limits\nlimits.driver_present = lambda: True\n"
            "print(json.dumps(limits.differential('cuInit', 'CUDA_ERROR_OUT_OF_MEMORY')))\n")

    def lower():
        resource.setrlimit(resource.RLIMIT_AS, (16 * GiB, 16 * GiB))

    out = subprocess.run([sys.executable, "-c", code], preexec_fn=lower, capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, PYTHONPATH=ROOT))
    rerun = json.loads(out.stdout.strip().splitlines()[-1])
    if rerun["privileged"]:
        import pytest

        pytest.skip("this process may raise hard limits: the rerun raises RLIMIT_AS and can verify")
    assert "RLIMIT_AS" in rerun["not_raised"] and "RLIMIT_AS" not in rerun["raised"] and rerun["verified"] is False
    facts = _as_limit_facts(rerun, soft=rerun["limits"]["RLIMIT_AS"]["soft"], hard=rerun["limits"]["RLIMIT_AS"]["hard"])
    found = judge(facts)
    assert by_id(found, "process.address_space_limit", Severity.FAIL) and not by_id(found, "device.not_visible")


def test_FAKE_the_smoke_binarys_out_of_memory_under_that_limit_points_at_the_limit():
    facts = _as_limit_facts(H200_RERUN)
    text = "GPUDOCTOR_SMOKE_FAIL cudaMalloc(&da, n * sizeof(float)): out of memory (cudaErrorMemoryAllocation)"
    facts["smoke_nvcc"] = {"builds": [{"nvcc": "/usr/local/cuda/bin/nvcc", "release": "13.0", "arch": "sm_90",
                                       "compile_ok": True, "compile_seconds": 0.0,
                                       "run": {"ok": False, "output": text, "returncode": 1}}]}
    (f,) = by_id(judge(facts), "smoke.nvcc")
    assert "process.address_space_limit" in f.title and f.evidence["cause"]["id"] == "process.address_space_limit"
    # Without the limit the same words stay the GPU's memory (explain reads them later).
    facts["process_limits"]["rlimits"]["RLIMIT_AS"] = {"soft": None, "hard": None}
    (g,) = by_id(judge(facts), "smoke.nvcc")
    assert "process." not in g.title


def test_an_nvml_function_missing_from_the_library_costs_one_fact_not_the_worker(monkeypatch):
    """pynvml raises NVMLLibraryMismatchError (not an NVMLError) when libnvidia-ml lacks a versioned symbol such
    as nvmlDeviceGetComputeRunningProcesses_v3. Real pynvml over a real library without the symbol (libc)."""
    import ctypes
    import ctypes.util

    import pynvml

    from gpudoctor.process import worker

    monkeypatch.setattr(pynvml, "nvmlLib", ctypes.CDLL(ctypes.util.find_library("c")))
    monkeypatch.setattr(pynvml, "_nvmlGetFunctionPointer_cache", {})
    assert worker._q(pynvml.nvmlDeviceGetComputeRunningProcesses, None) is None
    assert worker._gpu_processes(None) == []


def test_check_under_a_very_low_descriptor_limit_says_so_in_one_line_and_exits_2(tmp_path):
    """The real CLI with RLIMIT_NOFILE so low that gpudoctor's own imports fail with EMFILE."""
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]

    def lower():
        resource.setrlimit(resource.RLIMIT_NOFILE, (8, hard))

    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"), PYTHONPATH=ROOT)
    done = subprocess.run([sys.executable, "-m", "gpudoctor", "check", "--no-smoke", "--timeout", "30"],
                          preexec_fn=lower, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    want = "unlimited" if hard == resource.RLIM_INFINITY else str(hard)
    assert "ulimit -n = 8" in lines[0] and f"ulimit -Sn {want}" in lines[0]
