"""`gpudoctor install` from a distribution's own archive: Debian 12's CUDA 11.8 (os.json ``archive_cuda``).

The plan enables contrib/non-free, installs nvidia-cuda-toolkit g++-11 gcc g++ and never touches NVIDIA's
repository; it is verified against Debian's real bookworm Packages pages (recorded, served on 127.0.0.1).
The plan run for real in a debootstrap root is tests/test_debian_plan_chroot.py.
"""
import json
import lzma
import os
import re
import shutil
import subprocess
import sys

import pytest

from gpudoctor.cli import main
from gpudoctor.install.apt_index import os_requirements, repository_for, served_apt
from gpudoctor.install.formats import render
from gpudoctor.install.solver import GpuTarget, Pins, PlanError, Target, solve
from gpudoctor.install.steps import linux_steps
from gpudoctor.install.verify import SERVED, IndexSession, verify_plan
from gpudoctor.matrix import load_matrix

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from loopback_index import LoopbackIndex  # noqa: E402

M = load_matrix()
DEB12 = M.os_info("debian-12")
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "indexes", "debian", "bookworm")
NVIDIA_WORDS = ("cuda-keyring", "developer.download.nvidia.com", "cuda-toolkit-", "cuda-drivers")


def _plan(**kw):
    target = Target(DEB12, kw.pop("gpu", GpuTarget("NVIDIA GeForce RTX 4090", "8.9")), kw.pop("driver", None),
                    kw.pop("action", "keep"))
    return solve(M, target, Pins(**{"cuda": "11.8", **kw}))


def _root_commands(plan):
    return [c for s in linux_steps(plan) for c in s.root]


def test_the_matrix_row_is_debians_own_cuda():
    a = DEB12.archive_cuda
    assert a is not None and a.cuda == "11.8" and a.suite == "bookworm"
    assert a.packages == ("nvidia-cuda-toolkit", "g++-11", "gcc", "g++") and a.cudnn is None
    assert (a.driver_package, a.driver_branch) == ("nvidia-driver", "535")
    assert all(o.archive_cuda is None for o in M.oses() if o.os != "debian-12")


def test_cuda_11_8_on_debian_12_installs_debians_packages_and_no_nvidia_repository():
    plan = _plan()
    assert plan.archive is DEB12.archive_cuda and plan.cudnn is None and plan.driver_branch is None
    cmds = _root_commands(plan)
    assert "apt-get install -y --no-install-recommends nvidia-cuda-toolkit g++-11 gcc g++" in cmds
    # contrib and non-free enabled (in a sources file of its own) before apt-get update, then the install
    enable = next(i for i, c in enumerate(cmds) if "Components: contrib non-free" in c)
    assert cmds[enable + 1] == "apt-get update" and cmds.index(
        "apt-get install -y --no-install-recommends nvidia-cuda-toolkit g++-11 gcc g++") > enable
    script = render(plan, "sh")
    code = "\n".join(line for line in script.splitlines() if not line.startswith("#"))
    assert not any(w in code for w in NVIDIA_WORDS), [w for w in NVIDIA_WORDS if w in code]
    assert "Debian's own packaging of CUDA 11.8" in script and "/usr/bin/nvcc" in script and "g++-11" in script
    assert any("No cuDNN" in n and "nvidia-cudnn downloads" in n for n in plan.notes)


def test_the_sources_entry_gives_apt_the_contrib_and_non_free_indexes(tmp_path):
    if shutil.which("apt-get") is None:
        pytest.skip("apt-get is not installed here")
    cmd = next(c for c in _root_commands(_plan()) if c.startswith("sh -c"))
    parts = tmp_path / "sources.list.d"
    parts.mkdir()
    subprocess.run(["bash", "-c", cmd.replace("/etc/apt/sources.list.d/", f"{parts}/")], check=True, timeout=30)
    # apt itself reads the entry (no network: indextargets lists what `apt-get update` would fetch)
    out = subprocess.run(["apt-get", "indextargets", "-o", f"Dir::Etc::SourceParts={parts}", "-o",
                          "Dir::Etc::SourceList=/dev/null", "--format", "$(RELEASE) $(COMPONENT)",
                          "Identifier: Packages"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    got = set(out.stdout.split("\n")) - {""}
    assert {"bookworm contrib", "bookworm non-free"} <= got and "bookworm main" not in got, got  # main: the system's


def test_the_plan_is_verified_against_debians_index(tmp_path):
    routes = {f"/debian/dists/bookworm/{c}/binary-amd64/Packages.xz":
              (200, "application/x-xz", lzma.compress(open(os.path.join(DATA, c, "Packages"), "rb").read()))
              for c in ("main", "contrib", "non-free")}
    plan = _plan()
    reqs = os_requirements(plan)
    distro = repository_for(DEB12, "distro")
    assert [r[1] for r in reqs] == ["nvidia-cuda-toolkit", "g++-11", "gcc", "g++"]
    assert all(r[3] == distro for r in reqs)  # Debian's archive only: NVIDIA's repository is never a source
    with LoopbackIndex(routes) as idx:
        def apt(name, source, **kw):  # the real checker, pointed at the recorded pages
            return served_apt(name, source.replace("http://deb.debian.org", idx.url), **kw)
        v = verify_plan(plan, session=IndexSession(checkers={"apt": apt}, cache_dir=str(tmp_path / "c")))
    assert [c.status for c in v.checks] == [SERVED] * 4, [c.to_dict() for c in v.checks]
    toolkit = v.checks[0]
    assert toolkit.matching == ("11.8.89~11.8.0-5~deb12u1",) == (DEB12.archive_cuda.toolkit_version,)
    header = "\n".join(v.summary_lines())
    assert "Verified against 127.0.0.1" in header and "nvidia-cuda-toolkit, g++-11, gcc, g++" in header


def test_driver_install_is_debians_nvidia_driver():
    plan = _plan(action="install")
    assert plan.driver_branch == "535"
    cmds = _root_commands(plan)
    assert "apt-get install -y nvidia-driver" in cmds
    assert not any(w in c for c in cmds for w in NVIDIA_WORDS)
    assert [r[1] for r in os_requirements(plan)][:1] == ["nvidia-driver"]  # linux-headers-$(uname -r) is left out


def test_a_kept_driver_too_old_for_11_8_is_refused():
    with pytest.raises(PlanError) as exc:
        _plan(driver="440.33.01")  # below CUDA 11's minor-version-compatibility floor too
    assert "too old for CUDA 11.8" in str(exc.value)


def test_unpinned_debian_12_stays_on_nvidias_repository():
    plan = solve(M, Target(DEB12, GpuTarget("NVIDIA GeForce RTX 4090", "8.9")))
    assert plan.archive is None and plan.cuda.major >= 12
    assert "cuda-keyring" in render(plan, "sh")


def test_pins_that_leave_only_the_archive_choose_it():
    # driver 525 runs CUDA 12.0 at most natively; NVIDIA publishes 12.3+ for Debian 12; Debian has 11.8
    plan = solve(M, Target(DEB12, None, "525.60.13", "keep"), Pins(cuda="11"))
    assert plan.archive is not None and plan.cuda.cuda == "11.8"
    plan = solve(M, Target(DEB12, None, "520.61.05", "keep"))
    assert plan.archive is not None and plan.cuda.cuda == "11.8"


@pytest.mark.parametrize("os_id,cuda,words", [
    ("debian-12", "11.7", "CUDA 11.7 is not published for debian-12 (NVIDIA ships CUDA 12.3 to the newest there; "
                          "Debian's archive has CUDA 11.8 (nvidia-cuda-toolkit))"),
    ("ubuntu-24.04", "11.8", "CUDA 11.8 is not published for ubuntu-24.04 (NVIDIA ships CUDA"),
])
def test_cuda_neither_channel_has_is_refused_saying_what_each_has(os_id, cuda, words):
    with pytest.raises(PlanError) as exc:
        solve(M, Target(M.os_info(os_id)), Pins(cuda=cuda))
    assert words in str(exc.value)
    if os_id != "debian-12":
        assert "archive" not in str(exc.value)


def test_a_pinned_cudnn_is_refused_with_the_reason():
    with pytest.raises(PlanError) as exc:
        _plan(cudnn="8")
    assert "no cuDNN package that installs without NVIDIA's servers" in str(exc.value)
    assert _plan(cudnn="none").cudnn is None


def test_pip_wheels_on_top_of_the_archive_toolkit():
    plan = _plan(torch="latest")
    assert plan.archive is not None and plan.torch_build.cuda.startswith("11.")
    assert any("download.pytorch.org/whl/cu11" in c for s in linux_steps(plan) for c in s.user)


def test_pip_only_is_unaffected():
    plan = _plan(pip_only=True)
    assert plan.archive is None and plan.pip_suffix == "-cu11" and plan.cudnn is not None
    script = render(plan, "sh")
    assert "nvidia-cuda-toolkit" not in script and "nvidia-cuda-runtime-cu11==11.8.*" in script


def test_environment_lines_drop_usr_local_cuda_so_usr_bin_nvcc_wins():
    env = next(s for s in linux_steps(_plan()) if s.title.startswith("Environment"))
    script = "\n".join(env.user + ['printf "%s\\n%s\\n" "$PATH" "$LD_LIBRARY_PATH"'])
    stale = {"PATH": "/usr/local/cuda-13.0/bin:/usr/bin:/bin", "LD_LIBRARY_PATH": "/usr/local/cuda/lib64:/opt/x/lib"}
    out = subprocess.run(["bash", "-c", script], env=stale, capture_output=True, text=True, timeout=30)
    assert out.stdout.splitlines() == ["/usr/bin:/bin", "/opt/x/lib"]


def test_dockerfile_has_no_cuda_home_and_no_nvidia_repository():
    text = render(_plan(), "dockerfile")
    code = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    assert "FROM debian:12" in text and "CUDA_HOME" not in text
    assert not any(w in code for w in NVIDIA_WORDS)
    assert re.search(r"apt-get install -y --no-install-recommends nvidia-cuda-toolkit g\+\+-11 gcc g\+\+", text)


@pytest.mark.skipif(shutil.which("shellcheck") is None and not os.environ.get("GPUDOCTOR_REQUIRE_REAL"),
                    reason="shellcheck is not installed (.ci/install-real-parts installs it)")
@pytest.mark.parametrize("action", ["keep", "install"])
def test_the_script_passes_shellcheck(tmp_path, action):
    path = tmp_path / "install.sh"
    path.write_text(render(_plan(action=action, torch="latest"), "sh"))
    out = subprocess.run(["shellcheck", "--severity=style", str(path)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout


def test_cli_plans_it_and_says_the_channel(capsys):
    rc = main(["install", "--os", "debian-12", "--cuda", "11.8", "--gpu", "8.9", "--driver-version", "535.104.05",
               "--offline", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert out["cuda"]["channel"] == "distribution archive" and out["cuda"]["package"] == "nvidia-cuda-toolkit"
    assert out["cuda"]["archive_version"] == "11.8.89~11.8.0-5~deb12u1" and out["cudnn"] is None


def test_an_archive_driver_older_than_the_stack_needs_is_refused():
    import dataclasses

    FAKE_old_driver = dataclasses.replace(DEB12, archive_cuda=dataclasses.replace(
        DEB12.archive_cuda, driver_version="510.47.03-1"))  # older than CUDA 11.8's 520.61.05
    with pytest.raises(PlanError) as exc:
        solve(M, Target(FAKE_old_driver, None, None, "install"), Pins(cuda="11.8"))
    assert "Debian's nvidia-driver 510.47.03 is older than the 520.61.05 the stack needs" in str(exc.value)
    assert solve(M, Target(FAKE_old_driver, None, None, "keep"), Pins(cuda="11.8")).archive is not None
