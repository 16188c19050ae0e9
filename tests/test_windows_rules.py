"""`check --root C --os windows`: the Windows layouts of tests/test_windows_root.py (real win_amd64 NVIDIA DLLs,
real headers, laid out as the CUDA installer and copied zips leave them) judged end to end: each broken layout
gets its finding, with the file or variable it rests on and a fix."""
import json
import os
import subprocess
import sys

from tests.test_windows_root import TK, Root, _real, _toolkit, broken, CUDART_130, CUDA13_INC, NVCC_130  # noqa: F401


def _check(root: Root, env: dict, tmp_path, *extra):
    env_file = tmp_path / "win.env"
    env_file.write_text("".join(f"{k}={v}\n" for k, v in env.items()))
    r = subprocess.run([sys.executable, "-m", "gpudoctor", "check", "--root", root.base, "--os", "windows",
                        "--env", str(env_file), "--json", *extra], capture_output=True, text=True, timeout=120)
    assert r.returncode in (0, 1), r.stderr
    return {f["id"]: f for f in json.loads(r.stdout)["findings"]}, r.returncode


def _env(view):
    return dict(view.env)


def test_the_broken_layout_gets_each_finding_with_its_file(broken, tmp_path):
    root, view = broken
    ids, code = _check(root, _env(view), tmp_path, "--driver", "535.104.05")
    assert code == 1
    assert ids["windows.cuda_path_stale"]["title"] == (
        f"CUDA_PATH names CUDA 11.8 ({TK}\\v11.8) while nvcc on PATH is CUDA 13.0 ({TK}\\v13.0\\bin\\nvcc.exe)")
    assert ids["windows.cuda_path_dangling"]["title"] == (
        f"CUDA_PATH_V12_1 points to {TK}\\v12.1, which does not exist (a toolkit uninstalled since)")
    assert ids["windows.runtime_dll_shadowed"]["title"] == (
        f"Programs built with nvcc 13.0 load cudart64_13.dll 13.5.37 from {TK}\\v13.5\\bin, earlier on PATH, not its own 13.0.96")
    assert ids["windows.runtime_dll_shadowed"]["severity"] == "info"  # a newer minor of the same major works
    assert ids["windows.driver_missing"]["severity"] == "fail"
    assert ids["windows.driver_missing"]["title"] == "No NVIDIA driver in this system: C:\\Windows\\System32\\nvcuda.dll is missing"
    assert ids["windows.cudnn8_zlibwapi_missing"]["title"].startswith("cuDNN 8 in C:\\tools\\cudnn8\\bin needs zlibwapi.dll")
    assert ids["windows.msvc_missing"]["severity"] == "warn"  # no Visual Studio C++ toolset at all
    assert ids["driver.too_old"]["title"].startswith("Driver 535.104.05 (CUDA ≤ 12.1) is too old for 13.0, 13.5 runtimes")  # 12.2 needs 536.25 on Windows
    assert ids["driver.too_old"]["evidence"]["driver"] == "535.104.05 (from --driver)"
    assert "root.needs_live_system" in ids


def test_a_healthy_layout_has_none_of_them_and_an_msvc_outside_nvccs_range_fails(tmp_path):
    _real()
    root = Root(tmp_path / "c")
    root.mkdir("C:\\Windows\\System32")
    v130 = _toolkit(root, "13.0", CUDA13_INC, nvcc=NVCC_130, cudart=CUDART_130)
    vs = "C:\\Program Files\\Microsoft Visual Studio\\2022\\Community\\VC\\Tools\\MSVC\\"
    root.mkdir(vs + "14.38.33130\\bin\\Hostx64\\x64")
    env = {"PATH": f"{v130}\\bin;C:\\Windows\\system32", "CUDA_PATH": v130, "CUDA_PATH_V13_0": v130,
           "SystemRoot": "C:\\Windows"}
    ids, _ = _check(root, env, tmp_path, "--driver", "580.95.05")
    assert not [i for i in ids if i.startswith("windows.") and i != "windows.driver_missing"], list(ids)
    assert "driver.too_old" not in ids
    # the only toolset is VS 2017's 14.16 (_MSC_VER 1916): below nvcc 13.0's 1920
    os.rename(root.host(vs + "14.38.33130"), root.host(vs + "14.16.27023"))
    ids, code = _check(root, env, tmp_path, "--driver", "580.95.05")
    assert code == 1 and ids["windows.msvc_unsupported"]["title"] == (
        "nvcc 13.0 accepts MSVC _MSC_VER 1920–1949; Visual Studio C++ toolsets here: 14.16.27023 (1916)")


def test_the_live_check_registers_the_windows_probe_on_windows_only_and_its_rules_judge_its_facts(broken, monkeypatch):
    """The live check on Windows runs the same probe over this machine (a live view) and the same rules; on
    Linux the probe is not run and the rules find no facts."""
    import importlib

    import gpudoctor.probes as probes
    from gpudoctor.rules import Facts, RuleContext, _rules, evaluate
    from gpudoctor.rules.fixes import OsFlavor
    from gpudoctor.windows.install import windows_facts

    assert "windows" not in [p.name for p in probes.ALL]
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.delattr(probes, "ALL")
    try:
        assert [p.name for p in probes.ALL][-1] == "windows"
    finally:
        monkeypatch.undo()
        importlib.reload(probes)
    _root, view = broken
    rules = _rules()
    found = {f.id for f in evaluate(Facts({"windows": windows_facts(view)}), RuleContext(None, OsFlavor.from_platform(
        {"system": "Windows"})), rules=[r for r in rules if r.__module__ == "gpudoctor.rules.windows"])}
    assert {"windows.cuda_path_stale", "windows.driver_missing", "windows.cudnn8_zlibwapi_missing"} <= found
    assert not [f for f in evaluate(Facts({}), RuleContext(None, OsFlavor.from_platform({"system": "Linux"})),
                                    rules=[r for r in rules if r.__module__ == "gpudoctor.rules.windows"])]
