"""A root's toolkits read from their files, checked against what the real tools do on this machine: nvcc.profile
applied as nvcc applies it (its real ``--dryrun`` prints the result), gcc's version from its binary as
``gcc -dumpfullversion`` says it, Debian's gcc wrapper script followed to the gcc it runs."""
import os
import subprocess

import pytest

from gpudoctor.formats.compilers import gcc_version_in_binary
from gpudoctor.formats.nvcc import parse_dryrun
from gpudoctor.formats.nvcc_profile import apply_profile
from gpudoctor.probes.root_toolkit import _release, compilers_facts, toolkit_facts, _toolkits
from gpudoctor.sysroot.view import SystemView
from tests.test_sysroot_libindex import _copy_chain

NVCC13 = "/usr/local/cuda-13.0/bin/nvcc"
DEBIAN_NVCC = "/usr/lib/nvidia-cuda-toolkit/bin/nvcc"
GCCS = [g for g in ("/usr/bin/gcc-12", "/usr/bin/g++-12", "/usr/bin/gcc-11", "/usr/bin/g++-11") if os.path.exists(g)]


@pytest.mark.parametrize("nvcc", [p for p in (NVCC13, DEBIAN_NVCC) if os.path.exists(p)])
def test_nvcc_profile_gives_the_path_and_includes_nvccs_own_dry_run_prints(nvcc, tmp_path):
    (tmp_path / "k.cu").write_text("__global__ void k() {}\n")
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(tmp_path)}
    dry = subprocess.run([nvcc, "--dryrun", "-c", "k.cu"], capture_output=True, text=True, timeout=60, env=env,
                         cwd=tmp_path)
    said = parse_dryrun(dry.stderr + dry.stdout)["vars"]
    here = os.path.dirname(nvcc)
    with open(os.path.join(here, "nvcc.profile")) as fh:
        got = apply_profile(fh.read(), env, here)
    assert got["PATH"] == said["PATH"]
    if "INCLUDES" in said:
        assert got["INCLUDES"].split() == said["INCLUDES"].split()


def test_nvcc_profile_operators_and_bad_text():
    text = "A = x\nA ?= y\nB ?= z\nPATH += /p:\nPATH =+ :/q\n# PATH += /never:\nnot a line\nC = $(A)/$(_HERE_)/$(NOPE)\n"
    got = apply_profile(text, {"PATH": "/usr/bin"}, "/h")
    assert (got["A"], got["B"], got["PATH"], got["C"]) == ("x", "z", "/p:/usr/bin:/q", "x//h/")
    assert apply_profile(None, {"PATH": "/usr/bin"}, "/h") == {"PATH": "/usr/bin"}
    assert apply_profile("\x00\xff" * 1000, {}, "/h") == {}


@pytest.mark.skipif(not GCCS, reason="needs gcc 11 or 12")
@pytest.mark.parametrize("gcc", GCCS)
def test_gccs_version_read_from_its_binary_is_what_it_prints(gcc):
    printed = subprocess.run([gcc, "-dumpfullversion"], capture_output=True, text=True, timeout=30).stdout.strip()
    with open(os.path.realpath(gcc), "rb") as fh:
        said = gcc_version_in_binary(fh.read())
    assert said["version"] == printed
    full = subprocess.run([gcc, "--version"], capture_output=True, text=True, timeout=30).stdout.splitlines()[0]
    assert f"({said['pkgversion']}) {printed}" in full


def test_no_or_several_gcc_version_strings_say_nothing():
    assert gcc_version_in_binary(b"") is None
    assert gcc_version_in_binary(open(NVCC13, "rb").read() if os.path.exists(NVCC13) else b"\x00nvcc\x00") is None
    two = b"\x0012.2.0\x00(Debian 12.2.0-14) \x00" + b"\x0011.3.0\x00(Debian 11.3.0-12) \x00"
    assert gcc_version_in_binary(two) is None
    assert gcc_version_in_binary(two[:30]) == {"version": "12.2.0", "pkgversion": "Debian 12.2.0-14"}


def test_a_gcc_whose_linker_put_the_two_strings_apart_is_read_by_the_version_its_package_string_holds():
    # synthetic bytes (named as such): the shape of a driver binary whose version_string and
    # pkgversion_string are not adjacent; a bare "(GCC) " build says nothing it could be tied to
    apart = b"\x00(Ubuntu 13.3.0-6ubuntu2~24.04) \x00other\x001.2.3\x0013.3.0\x00"
    assert gcc_version_in_binary(apart) == {"version": "13.3.0", "pkgversion": "Ubuntu 13.3.0-6ubuntu2~24.04"}
    assert gcc_version_in_binary(b"\x00(GCC) \x00x\x0013.3.0\x00") is None
    assert gcc_version_in_binary(b"\x00(Ubuntu 13.3.0-6ubuntu2) \x0013.3.0\x0013.3.01\x00")["version"] == "13.3.0"


def test_a_version_files_release_is_what_nvcc_would_say():
    assert _release(None, "12.6.20241114") == "12.6"
    assert _release(None, "13.0.1") == "13.0"
    assert _release({"release": "11.8", "version": "11.8.89"}, "11.8.0") == "11.8"
    assert _release(None, "garbage") is None and _release(None, None) is None


WRAPPER = "/usr/lib/nvidia-cuda-toolkit/bin/gcc"


@pytest.mark.skipif(not (os.path.exists(DEBIAN_NVCC) and os.path.exists(WRAPPER) and os.path.exists("/usr/bin/g++-11")),
                    reason="needs Debian's nvidia-cuda-toolkit and g++-11 (.ci/install-real-parts)")
def test_debians_gcc_wrapper_is_followed_to_the_gcc_it_picks_and_not_past_what_is_there(tmp_path):
    """Debian's real nvcc, nvcc.profile and gcc wrapper script (picks gcc-11 when g++-11 answers), the real gcc 11
    and 12 drivers: with g++-11 in the root the host compiler is gcc 11; without it the wrapper picks nothing
    here and nothing is said of the compiler's version (it would fail to run)."""
    root = tmp_path / "rootfs"
    for f in ("/usr/bin/nvcc", DEBIAN_NVCC, "/usr/lib/nvidia-cuda-toolkit/bin/nvcc.profile", WRAPPER,
              "/usr/include/crt/host_config.h", "/usr/bin/gcc-11", "/usr/bin/g++-11", "/usr/bin/gcc-12", "/usr/bin/gcc"):
        _copy_chain(f, str(root))
    view = SystemView(str(root), env={"PATH": "/usr/bin:/bin"})
    (tk,) = toolkit_facts(view, _toolkits(view))["toolkits"]
    printed = subprocess.run(["/usr/bin/gcc-11", "-dumpfullversion"], capture_output=True, text=True, timeout=30).stdout.strip()
    assert (tk["nvcc"], tk["release"], tk["home"]) == ("/usr/bin/nvcc", "11.8", "/usr/lib/nvidia-cuda-toolkit")
    assert tk["host_compiler"]["path"] == WRAPPER and tk["host_compiler"]["version_seen_by_nvcc"] == printed
    assert tk["host_config"]["max_gcc"] == 11
    os.unlink(root / "usr/bin/g++-11")
    (tk,) = toolkit_facts(view, _toolkits(view))["toolkits"]
    assert tk["host_compiler"]["path"] == WRAPPER and tk["host_compiler"]["version_seen_by_nvcc"] is None
    comp = compilers_facts(view)
    assert comp["default"]["gcc"]["path"] == "/usr/bin/gcc" and comp["versioned"] == []
