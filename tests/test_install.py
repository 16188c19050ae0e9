"""`gpudoctor install`: solver properties, generated scripts (real shellcheck, real bash), CLI errors.

The property tests re-check every plan against the matrix with their own code
(``_violations``), not the solver's constraint functions.
"""
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from packaging.version import Version

from gpudoctor.cli import main
from gpudoctor.install.formats import FormatError, render
from gpudoctor.install.solver import GpuTarget, Pins, PlanError, Target, solve
from gpudoctor.install.steps import linux_steps
from gpudoctor.matrix import load_matrix

M = load_matrix()
ROOT = Path(__file__).resolve().parent.parent
LINUX_OSES = [o for o in M.oses() if o.family != "windows"]


def _v(text):
    return Version(text.replace(".x", ".999"))


def _in_range(lo, hi, majors, cuda):
    major = int(cuda.split(".")[0])
    if major not in majors or (lo and _v(cuda) < _v(lo)):
        return False
    if hi and hi.endswith(".x"):
        return major <= int(hi.split(".")[0])
    return not hi or _v(cuda) <= _v(hi)


def _smn(sm):
    return int(re.sub(r"[af]$", "", sm.split("_")[1]))


def _torch_runs(build, cc):
    """CUDA's loader rules, written out here: SASS sm_XY runs on CC X.Z for Z >= Y (arch-specific 'a' only on
    X.Y, family 'f' on the same major); PTX compute_XY JITs on any CC >= X.Y ('a' PTX only on X.Y, 'f' PTX within the major)."""
    major, minor = (int(x) for x in cc.split("."))
    for s in build.sass:
        m = re.fullmatch(r"sm_(\d+)(\d)([af]?)", s)
        ma, mi, suf = int(m.group(1)), int(m.group(2)), m.group(3)
        if (suf == "a" and (ma, mi) == (major, minor)) or (suf != "a" and ma == major and minor >= mi):
            return True
    for p in build.ptx:
        m = re.fullmatch(r"compute_(\d+)(\d)([af]?)", p)
        ma, mi, suf = int(m.group(1)), int(m.group(2)), m.group(3)
        if ((suf == "a" and (ma, mi) == (major, minor)) or (suf == "f" and ma == major and minor >= mi)
                or (not suf and (major, minor) >= (ma, mi))):
            return True
    return False


def _violations(plan, pins):
    """Every matrix constraint the plan breaks (empty: the plan is consistent)."""
    t, c, bad = plan.target, plan.cuda, []
    in_archive = plan.archive is not None and plan.archive == t.os.archive_cuda and plan.archive.cuda == c.cuda
    if not in_archive and (_v(c.cuda) < _v(t.os.cuda_min) or (t.os.cuda_max and _v(c.cuda) > _v(t.os.cuda_max))):
        bad.append("CUDA not published for the OS")
    if t.gpu and t.gpu.sm not in c.sms:
        bad.append("nvcc cannot target the GPU")
    drv_os = "windows" if t.os.os in ("windows", "wsl-ubuntu") else "linux"
    pinned = pins.cuda is not None or pins.torch not in (None, "none", "latest")
    ok = {"native", "unknown"} | ({"minor_version_compat"} if pinned else set())
    if t.driver and t.driver_action == "keep":
        for v in [c.cuda] + ([plan.torch_build.cuda] if plan.torch_build else []):
            if M.driver_supports(t.driver, v, drv_os) not in ok:
                bad.append(f"kept driver cannot run CUDA {v}")
    if pins.cuda and not (c.cuda == pins.cuda or ("." not in pins.cuda and c.cuda.split(".")[0] == pins.cuda)):
        bad.append("CUDA pin ignored")
    if plan.cudnn:
        d = plan.cudnn
        if not _in_range(d.cuda_min, d.cuda_max, d.cuda_majors, c.cuda):
            bad.append("cuDNN does not support the CUDA")
        if t.gpu and d.min_sm and t.gpu.sm and _smn(t.gpu.sm) < _smn(d.min_sm):
            bad.append("cuDNN does not support the GPU")
    elif pins.cudnn != "none" and not (in_archive and pins.cudnn is None and not plan.archive.cudnn):
        bad.append("no cuDNN although wanted")
    if plan.tensorrt:
        r = plan.tensorrt
        if not _in_range(r.cuda_min, r.cuda_max, r.cuda_majors, c.cuda):
            bad.append("TensorRT does not support the CUDA")
        if t.gpu and ((r.min_sm and _smn(t.gpu.sm) < _smn(r.min_sm)) or (r.max_sm and _smn(t.gpu.sm) > _smn(r.max_sm))):
            bad.append("TensorRT does not support the GPU")
        if int(r.tensorrt.split(".")[0]) < 10 and r.cudnn and (
                not plan.cudnn or plan.cudnn.cudnn.split(".")[0] != r.cudnn.split(".")[0]):
            bad.append("TensorRT < 10 without its cuDNN major")
    elif pins.tensorrt != "none":
        bad.append("no TensorRT although asked")
    if plan.torch:
        b = plan.torch_build
        if b.cuda.split(".")[0] != str(c.major):
            bad.append("torch wheel of another CUDA major")
        if t.gpu and not _torch_runs(b, t.gpu.cc):
            bad.append("torch has no kernel image for the GPU")
        if t.python and t.python not in plan.torch.python:
            bad.append("torch has no wheel for the OS python")
    elif pins.torch != "none":
        bad.append("no torch although asked")
    return bad


# ----------------------------------------------------------------------------- properties

_drivers = st.one_of(st.none(), st.sampled_from(sorted({r.min_driver_linux for r in M.cuda_releases()}
                                                       | {"535.104.05", "470.82.01", "390.48", "580.95.05"})))
_gpus = st.one_of(st.none(), st.sampled_from([GpuTarget(g.example, g.cc) for g in M.gpus()]))
_cuda_pins = st.one_of(st.none(), st.sampled_from([r.cuda for r in M.cuda_releases()] + ["11", "12", "13"]))
_cudnn_pins = st.one_of(st.none(), st.just("none"), st.sampled_from([r.cudnn for r in M.cudnn_releases()] + ["8", "9"]))
_trt_pins = st.one_of(st.just("none"), st.just("latest"), st.sampled_from([r.tensorrt for r in M.tensorrt_releases()]))
_torch_pins = st.one_of(st.just("none"), st.just("latest"), st.sampled_from([r.torch for r in M.torch_releases()]))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(os_=st.sampled_from(M.oses()), gpu=_gpus, driver=_drivers, action=st.sampled_from(["keep", "install"]),
       cuda=_cuda_pins, cudnn=_cudnn_pins, trt=_trt_pins, torch=_torch_pins)
def test_every_plan_satisfies_the_matrix(os_, gpu, driver, action, cuda, cudnn, trt, torch):
    pins = Pins(cuda=cuda, cudnn=cudnn, tensorrt=trt, torch=torch)
    try:
        plan = solve(M, Target(os_, gpu, driver, action), pins)
    except PlanError as exc:
        assert exc.summary and str(exc)  # a refusal always says something
        return
    assert _violations(plan, pins) == []


@settings(max_examples=200, deadline=None)
@given(os_=st.sampled_from(M.oses()), gpu=_gpus, driver=_drivers)
def test_unpinned_plan_is_the_newest_cuda_that_fits(os_, gpu, driver):
    target = Target(os_, gpu, driver, "keep")
    try:
        plan = solve(M, target)
    except PlanError:
        plan = None
    drv_os = "windows" if os_.os in ("windows", "wsl-ubuntu") else "linux"
    for rel in M.cuda_releases():
        if plan is not None and _v(rel.cuda) <= _v(plan.cuda.cuda):
            continue
        fits = (_v(os_.cuda_min) <= _v(rel.cuda) and (not os_.cuda_max or _v(rel.cuda) <= _v(os_.cuda_max))
                and (gpu is None or gpu.sm in rel.sms)
                and (driver is None or M.driver_supports(driver, rel.cuda, drv_os) in ("native", "unknown"))
                and any(_in_range(d.cuda_min, d.cuda_max, d.cuda_majors, rel.cuda)
                        and (gpu is None or not d.min_sm or _smn(gpu.sm) >= _smn(d.min_sm))
                        and not (os_.family == "windows" and d.windows is False)
                        for d in M.cudnn_releases()))
        assert not fits, f"CUDA {rel.cuda} fits but the plan chose {plan.cuda.cuda if plan else 'nothing'}"


# ----------------------------------------------------------------------------- known cases


def _os(name):
    return M.os_info(name)


def test_kept_driver_535_gets_cuda_12_2():
    plan = solve(M, Target(_os("ubuntu-22.04"), GpuTarget("NVIDIA A100-SXM4-80GB", "8.0"), "535.104.05"))
    assert plan.cuda.cuda == "12.2" and plan.driver_verdict == "native" and plan.driver_branch is None


def test_pinned_cuda_above_the_driver_runs_through_minor_version_compat():
    plan = solve(M, Target(_os("ubuntu-22.04"), None, "535.104.05"), Pins(cuda="12.4"))
    assert plan.driver_verdict == "minor_version_compat"
    assert any("minor-version compatibility" in n for n in plan.notes)
    with pytest.raises(PlanError, match="too old for CUDA 13"):
        solve(M, Target(_os("ubuntu-22.04"), None, "535.104.05"), Pins(cuda="13"))


def test_cudnn_9_for_cuda_10_2_is_refused_with_the_reason():
    with pytest.raises(PlanError) as err:
        solve(M, Target(_os("rhel-8")), Pins(cuda="10.2", cudnn="9"))
    assert "cuDNN 9.x supports CUDA 11.0 and newer; CUDA 10.2 is outside that" in str(err.value)
    with pytest.raises(PlanError, match=r"TensorRT 11\.x supports CUDA 12\.0 and newer; CUDA 11\.8"):
        solve(M, Target(_os("ubuntu-22.04")), Pins(cuda="11.8", tensorrt="11"))


def test_blackwell_needs_cuda_12_8():
    rtx5090 = GpuTarget("NVIDIA GeForce RTX 5090", M.gpu_by_name("NVIDIA GeForce RTX 5090").cc)
    with pytest.raises(PlanError) as err:
        solve(M, Target(_os("ubuntu-22.04"), rtx5090), Pins(cuda="11.8"))
    assert "cannot build for NVIDIA GeForce RTX 5090 (sm_120)" in str(err.value)
    assert _v(solve(M, Target(_os("ubuntu-22.04"), rtx5090)).cuda.cuda) >= _v("12.8")


def test_unknown_pins_are_refused():
    for pins in (Pins(cuda="12.7"), Pins(cudnn="6"), Pins(tensorrt="9"), Pins(torch="0.4")):
        with pytest.raises(PlanError, match="not in the compatibility matrix"):
            solve(M, Target(_os("ubuntu-22.04")), pins)


def test_driver_install_picks_a_branch_that_runs_the_toolkit():
    plan = solve(M, Target(_os("ubuntu-24.04"), GpuTarget("NVIDIA L4", "8.9"), None, "install"))
    # the release's own floor when a source confirms it, else the major's confirmed (minor-version) floor
    need = (plan.cuda.min_driver_linux if "min_driver_linux" not in plan.cuda.unconfirmed
            else M.minor_version_compat(plan.cuda.major).min_driver_linux)
    assert int(plan.driver_branch) >= int(need.split(".")[0])
    script = render(plan, "sh")
    assert f"apt-get install -y nvidia-driver-{plan.driver_branch}-open" in script
    assert "mokutil --sb-state" in script


def test_pre_turing_gpu_gets_the_proprietary_driver():
    v100 = GpuTarget("Tesla V100-SXM2-16GB", "7.0")
    script = render(solve(M, Target(_os("ubuntu-22.04"), v100, None, "install")), "sh")
    commands = [ln for ln in script.splitlines() if ln.startswith("$SUDO")]
    assert any(re.fullmatch(r"\$SUDO apt-get install -y nvidia-driver-\d+", ln) for ln in commands), commands
    assert not any("-open" in ln for ln in commands)


# ----------------------------------------------------------------------------- generated scripts

_CASES = [(o.os, major) for o in LINUX_OSES for major in sorted({r.major for r in M.cuda_releases()})
          if any(r.major == major and _v(o.cuda_min) <= _v(r.cuda) and (not o.cuda_max or _v(r.cuda) <= _v(o.cuda_max))
                 for r in M.cuda_releases())]


@pytest.mark.parametrize("os_id,major", _CASES)
def test_script_package_names_come_from_the_matrix(os_id, major):
    os_ = _os(os_id)
    plan = solve(M, Target(os_), Pins(cuda=str(major)))
    script = render(plan, "sh")
    assert plan.cuda.major == major
    assert f"install -y{' --no-install-recommends' if os_.family == 'debian' else ''} cuda-toolkit-{major}-{plan.cuda.minor}\n" in script
    assert os_.keyring in script and f"/repos/{os_.repo}/" in os_.keyring
    for name in plan.cudnn.apt:
        name = name.replace("{cuda_major}", str(major))
        if os_.family == "rhel":
            name = name.replace("-dev", "-devel")
        assert re.search(rf"\s{re.escape(name)}(=|\s)", script), name
    # never the meta-packages that bring a driver along
    assert not re.search(r"install -y[^\n]*\s(cuda|cuda-drivers)(\s|$)", script)
    if os_id == "wsl-ubuntu":
        assert not re.search(r"^\$SUDO [^#\n]*(nvidia-driver|cuda-drivers)", script, re.M)


@pytest.mark.skipif(shutil.which("shellcheck") is None and not os.environ.get("GPUDOCTOR_REQUIRE_REAL"),
                    reason="shellcheck is not installed (.ci/install-real-parts installs it)")
@pytest.mark.parametrize("os_id", [o.os for o in LINUX_OSES])
@pytest.mark.parametrize("action", ["keep", "install"])
def test_generated_scripts_pass_shellcheck(tmp_path, os_id, action):
    plan = solve(M, Target(_os(os_id), GpuTarget("NVIDIA L4", "8.9"), None, action),
                 Pins(tensorrt="latest" if os_id != "rhel-8" else "none"))
    path = tmp_path / "install.sh"
    path.write_text(render(plan, "sh"))
    out = subprocess.run(["shellcheck", "--severity=style", str(path)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout


def test_environment_lines_drop_a_stale_cuda(tmp_path):
    plan = solve(M, Target(_os("ubuntu-22.04")), Pins(cuda="12.4"))
    env = next(s for s in linux_steps(plan) if s.title.startswith("Environment"))
    script = "\n".join(env.user + ['printf "%s\\n%s\\n" "$PATH" "$LD_LIBRARY_PATH"'])
    stale = {"PATH": "/usr/local/cuda-11.8/bin:/usr/bin:/bin", "LD_LIBRARY_PATH": "/usr/local/cuda-11.8/lib64:/opt/x/lib"}
    out = subprocess.run(["bash", "-c", script], env=stale, capture_output=True, text=True, timeout=30)
    path, ld = out.stdout.splitlines()
    assert path == "/usr/local/cuda-12.4/bin:/usr/bin:/bin"
    assert ld == "/usr/local/cuda-12.4/lib64:/opt/x/lib"
    out = subprocess.run(["bash", "-c", script], env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=30)
    assert out.stdout.splitlines()[1] == "/usr/local/cuda-12.4/lib64"  # no empty entry (= current directory)


def test_dockerfile_and_powershell():
    plan = solve(M, Target(_os("debian-12"), GpuTarget("NVIDIA H100 80GB HBM3", "9.0")), Pins(cuda="12"))
    df = render(plan, "dockerfile")
    assert df.splitlines()[0] == "# syntax=docker/dockerfile:1" and "FROM debian:12" in df
    assert "nvidia-driver" not in df and "cuda-drivers" not in df
    assert df.index("ENV CUDA_HOME") < df.index("RUN nvcc --version")
    win = solve(M, Target(_os("windows"), GpuTarget("NVIDIA GeForce RTX 4090", "8.9")), Pins(cuda="12.4"))
    ps1 = render(win, "ps1")
    assert f"cuda_{win.cuda.latest_update}_windows_network.exe" in ps1
    assert f"Microsoft.VisualStudio.{win.cuda.msvc[-1]}.BuildTools" in ps1
    assert "Display.Driver" not in ps1.split("-ArgumentList")[1].split("\n")[0]
    with pytest.raises(FormatError):
        render(win, "dockerfile")
    with pytest.raises(FormatError):
        render(win, "sh")
    with pytest.raises(FormatError):
        render(plan, "ps1")


def test_wsl_never_installs_a_linux_driver():
    script = render(solve(M, Target(_os("wsl-ubuntu"), None, None, "install")), "sh")
    commands = [ln for ln in script.splitlines() if ln and not ln.startswith("#")]
    assert not any(re.search(r"nvidia-driver|cuda-drivers|linux-headers", ln) for ln in commands)
    assert "never install a Linux driver" in script


# ----------------------------------------------------------------------------- command line


@pytest.mark.parametrize("argv,message", [
    (["--os", "ubuntu-22.04", "--cuda", "twelve"], "is not a version"),
    (["--os", "ubuntu-22.04", "--cuda", "12.7"], "not in the compatibility matrix"),
    (["--os", "plan9"], "not a supported target"),
    (["--os", "ubuntu-22.04", "--gpu", "RTX 9999"], "no GPU in the matrix matches"),
    (["--os", "windows", "--format", "dockerfile"], "builds Linux images"),
    (["--os", "ubuntu-22.04", "--cuda", "10.2"], "not published for ubuntu-22.04"),
    (["--os", "rhel-8", "--cuda", "10.2", "--cudnn", "9"], "cuDNN 9."),
    (["--os", "ubuntu-22.04", "--driver-version", "470.82.01", "--cuda", "12.4"], "too old for CUDA 12.4"),
])
def test_bad_requests_exit_2(capsys, argv, message):
    assert main(["install", "--driver-version", "550.54.14"] + argv if "--driver-version" not in argv
                else ["install"] + argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and message in err


def test_from_check_garbage_report_exits_2(tmp_path, capsys):
    bad = tmp_path / "report.json"
    bad.write_bytes(b"\x00\xff not json")
    assert main(["install", "--from-check", str(bad)]) == 2
    assert "cannot read a gpudoctor JSON report" in capsys.readouterr().err
    bad.write_text(json.dumps({"findings": []}))
    assert main(["install", "--from-check", str(bad)]) == 2


def test_from_check_plans_for_the_h100_report(capsys):
    report = ROOT / "docs" / "examples" / "h100-check.json"
    assert main(["install", "--from-check", str(report), "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["os"] == "ubuntu-24.04" and plan["gpu"]["sm"] == "sm_90"
    assert plan["driver"]["installed"] == "580.159.04" and plan["driver"]["action"] == "keep"
    assert plan["cuda"]["version"].startswith("13.") and plan["torch"] is not None  # torch was installed there
    assert any("cudnn.mismatch" in n for n in plan["notes"])


def test_plan_for_this_machine(capsys):
    assert main(["install", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["os"] == "debian-12"  # CI and this machine are Debian 12


# ----------------------------------------------------------------------------- pip-only stacks


@pytest.mark.parametrize("cuda,names", [
    ("11.8", ["nvidia-cuda-runtime-cu11==11.8.*", "nvidia-cudnn-cu11=="]),
    ("12.4", ["nvidia-cuda-runtime-cu12==12.4.*", "nvidia-cuda-nvrtc-cu12==12.4.*", "nvidia-cudnn-cu12=="]),
    ("13.0", ["nvidia-cuda-runtime==13.0.*", "nvidia-cuda-nvrtc==13.0.*", "nvidia-cudnn-cu13=="]),
])
def test_pip_only_wheel_names_follow_the_matrix(cuda, names):
    plan = solve(M, Target(_os("ubuntu-22.04"), GpuTarget("NVIDIA L4", "8.9")), Pins(cuda=cuda, pip_only=True))
    script = render(plan, "sh")
    for name in names:
        assert f"install '{name}" in script, name
    commands = "\n".join(ln for ln in script.splitlines() if not ln.startswith("#"))
    assert "-cu13" not in commands.replace("nvidia-cudnn-cu13", "")  # CUDA 13 wheels have no suffix (placeholders)
    assert "cuda-toolkit" not in script and "cuda-keyring" not in script


def test_pip_only_refuses_cuda_without_wheels():
    with pytest.raises(PlanError, match="no nvidia-cuda-runtime wheels"):
        solve(M, Target(_os("ubuntu-20.04")), Pins(cuda="11.2", pip_only=True))


def test_pip_only_with_torch_leaves_cuda_wheels_to_torch():
    plan = solve(M, Target(_os("ubuntu-22.04"), GpuTarget("NVIDIA L4", "8.9")), Pins(torch="latest", pip_only=True))
    script = render(plan, "sh")
    assert f"--index-url {plan.torch_build.index_url}" in script
    commands = "\n".join(ln for ln in script.splitlines() if not ln.startswith("#"))
    assert "nvidia-cuda-runtime" not in commands and "nvidia-cudnn" not in commands


def test_inside_a_container_the_driver_is_the_hosts():
    # The lent H100 ran in a container (/.dockerenv): its saved report drives this plan.
    report = json.loads((ROOT / "docs" / "examples" / "h100-check.json").read_text())
    from gpudoctor.install.target import target_from

    facts = {k: v.get("facts") or {} for k, v in report["probes"].items()}
    target = target_from(M, facts, None, None, "install")
    assert target.container and target.driver == "580.159.04"
    plan = solve(M, target)
    assert plan.driver_branch is None
    script = render(plan, "sh")
    assert "comes from the host" in script and "nvidia-driver" not in script.replace("# ", "")


def test_windows_plan_places_cudnn_and_tensorrt_zips_on_path():
    plan = solve(M, Target(_os("windows"), GpuTarget("NVIDIA GeForce RTX 4090", "8.9")), Pins(cuda="12.6", tensorrt="10"))
    ps1 = render(plan, "ps1")
    build = plan.cudnn.apt_versions.get("12", plan.cudnn.latest).split("-")[0]
    assert f"cudnn-windows-x86_64-{build}_cuda12-archive.zip" in ps1
    assert f"TensorRT-{plan.tensorrt.latest}" in ps1 and "$new += $trtLib" in ps1 and "$new += $cudnnBin" in ps1
    assert f"py -m pip install 'tensorrt-cu12=={plan.tensorrt.tensorrt}.*'" in ps1


# ----------------------------------------------------------------------------- "latest" and unconfirmed values


def _newest(field):
    rows = getattr(M, {"tensorrt": "tensorrt_releases", "torch": "torch_releases"}[field])()
    return [getattr(r, field) for r in rows]


def test_latest_tensorrt_is_the_newest_release_that_fits():
    """RTX 4090 on Ubuntu 22.04: TensorRT 11.x rows fit, so 'latest' must not stop at 10.x."""
    target = Target(M.os_info("ubuntu-22.04"), GpuTarget("RTX 4090", "8.9"), None, "install")
    plan = solve(M, target, Pins(tensorrt="latest"))
    fitting = []
    for version in _newest("tensorrt"):
        try:
            solve(M, target, Pins(tensorrt=version))
            fitting.append(version)
        except PlanError:
            pass
    assert plan.tensorrt.tensorrt == max(fitting, key=Version)
    assert plan.tensorrt.tensorrt == solve(M, target, Pins(tensorrt="11")).tensorrt.tensorrt


def test_latest_says_why_a_newer_release_was_passed_over():
    """With CUDA pinned to 12.2 (kept driver 535), the newest TensorRT lines do not fit: the plan says so."""
    target = Target(M.os_info("ubuntu-22.04"), GpuTarget("RTX 4090", "8.9"), "535.104.05", "keep")
    plan = solve(M, target, Pins(tensorrt="latest"))
    newest = max(_newest("tensorrt"), key=Version)
    if plan.tensorrt.tensorrt != newest:
        assert any(f"TensorRT {newest} (newer) does not fit" in n for n in plan.notes), plan.notes


def test_an_unconfirmed_driver_floor_is_not_presented_as_a_requirement():
    rel = next(r for r in reversed(M.cuda_releases()) if "min_driver_linux" in r.unconfirmed)
    target = Target(M.os_info("ubuntu-24.04"), None, None, "install")
    plan = solve(M, target, Pins(cuda=rel.cuda))
    floor = M.minor_version_compat(rel.major).min_driver_linux
    assert plan.driver_min == floor and plan.driver_min != rel.min_driver_linux
    assert any("not confirmed by a source yet" in n and floor in n for n in plan.notes)
    script = "\n".join(s for step in linux_steps(plan) for s in (step.notes or []))
    assert rel.min_driver_linux not in script
