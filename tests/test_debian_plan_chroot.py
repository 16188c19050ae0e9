"""The Debian 12 plan executed for real: a fresh bookworm root (debootstrap, minbase), the plan's steps run in it
as root, then ``gpudoctor check --no-gpu --no-smoke`` inside it must report no problem the plan should have
prevented: no toolkit.broken, no compiler.unsupported, no other fail, no missing library the plan installs.
Findings that only say there is no GPU (driver.*, the smoke tests skipped) are expected.

The plan is `gpudoctor install --os debian-12 --cuda 11.8 --offline`, the stack Debian's own archive has (CUDA 11.8
from nvidia-cuda-toolkit, g++-11 as its host compiler; os.json ``archive_cuda``): the planner's own script runs in a
root whose sources list main only, as debootstrap writes it, so the plan's own step enables contrib and non-free.
Skips with the reason when this is not root, debootstrap cannot run or the mirror is unreachable;
fails instead when GPUDOCTOR_REQUIRE_REAL is set. Prints its duration (.ci/run runs it on its own for that).
Takes about 2-3 minutes and ~6 GB under tmp_path (removed after).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import debian_chroot as dc  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLAN_ARGS = ["--os", "debian-12", "--cuda", "11.8", "--driver", "keep", "--format", "sh"]
#: What the plan from Debian's archive must install for CUDA 11.8 (the test checks that the planner's script does): the toolkit, g++-11 (nvcc 11.8 accepts gcc <= 11;
#: Debian's nvcc wrapper picks it), and Debian's default gcc and g++: nvcc 11.8 runs `gcc -E -x c++` from PATH
#: to read the host compiler's properties before its profile's PATH (the wrapper) applies, so without a `gcc`
#: every nvcc call fails ("gcc: No such file or directory ... Failed to preprocess host compiler properties"),
#: and without `g++` that gcc has no C++ front end (toolkit.broken and compiler.unsupported gnu 12.2.0). Found
#: by this test.
DEBIAN_ARCHIVE_PACKAGES = ("nvidia-cuda-toolkit", "g++-11", "gcc", "g++")
#: Problems a plan exists to prevent.
PREVENTABLE = ("toolkit.broken", "toolkit.missing", "compiler.unsupported", "compiler.missing", "library.broken")


def _unavailable(reason: str):
    if os.environ.get("GPUDOCTOR_REQUIRE_REAL"):
        pytest.fail(f"GPUDOCTOR_REQUIRE_REAL is set but the Debian 12 chroot cannot run: {reason}")
    pytest.skip(f"Debian 12 chroot: {reason}")


def _plan_script() -> str:
    """The planner's sh script (--offline: the chroot run, not the index check, is what this test is about)."""
    cmd = [sys.executable, "-m", "gpudoctor", "install", *PLAN_ARGS, "--offline"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=REPO)
    assert out.returncode == 0, f"gpudoctor install {' '.join(PLAN_ARGS)} refused: {out.stderr.strip()}"
    assert " ".join(DEBIAN_ARCHIVE_PACKAGES) in out.stdout, out.stdout
    assert "cuda-keyring" not in "".join(line for line in out.stdout.splitlines() if not line.startswith("#"))
    return out.stdout


@pytest.fixture
def root(tmp_path):
    if os.environ.get("GPUDOCTOR_CHROOT_RAN"):
        pytest.skip("run on its own earlier by .ci/run (GPUDOCTOR_CHROOT_RAN)")
    try:
        dc.can_make_root()
    except dc.ChrootUnavailable as exc:
        _unavailable(str(exc))
    path = str(tmp_path / "bookworm")
    yield path
    # Never delete through a mount (the bind-mounted apt cache is this machine's).
    if not any(os.path.ismount(os.path.join(path, m)) for m in ("proc", "var/cache/apt/archives")):
        shutil.rmtree(path, ignore_errors=True)


def _problems(report):
    bad = []
    for f in report.get("findings") or []:
        fid, sev = f.get("id", ""), f.get("severity")
        if fid in PREVENTABLE or (sev == "fail" and not fid.startswith(("driver.", "gpu.", "smoke."))):
            bad.append(f"{sev} {fid}: {f.get('title')}")
        elif fid == "library.not_found" and not (f.get("evidence") or {}).get("provided_by"):
            bad.append(f"{sev} {fid}: {f.get('title')}")  # a system library, not a pip module: the plan's job
    return bad


def test_debian12_plan_runs_in_a_fresh_chroot_and_checks_clean(root, tmp_path):
    log = str(tmp_path / "chroot.log")
    script = _plan_script()
    t0 = time.monotonic()
    try:
        dc.debootstrap(root, log)
    except (dc.ChrootUnavailable, subprocess.TimeoutExpired) as exc:
        _unavailable(str(exc))
    t1 = time.monotonic()
    with open(os.path.join(root, "etc", "apt", "sources.list"), "w") as fh:  # main only: the plan enables the rest
        fh.write(f"deb {dc.MIRROR} {dc.SUITE} main\n")
    dc.add_gpudoctor(root)
    with dc.mounted(root):
        assert dc.run_in(root, ["apt-get", "update", "-q"], log) == 0, open(log).read()[-3000:]
        # gpudoctor's own need (it runs on python3), not the plan's: installed first so the plan's Verify runs.
        assert dc.run_in(root, ["apt-get", "install", "-y", "-q", "--no-install-recommends", "python3"], log) == 0
        with open(os.path.join(root, "tmp", "plan.sh"), "w") as fh:
            fh.write(script)
        rc = dc.run_in(root, ["bash", "/tmp/plan.sh"], log)
        what = "the planner's plan (gpudoctor install " + " ".join(PLAN_ARGS) + " --offline)"
        t2 = time.monotonic()
        tail = open(log, errors="replace").read()[-4000:]
        assert rc == 0, f"{what} failed in the chroot (exit {rc}):\n{tail}"
        report = dc.check(root, log)
    t3 = time.monotonic()
    print(f"\ndebian-12 chroot: {what}: {t3 - t0:.0f} s in all (debootstrap {t1 - t0:.0f} s, "
          f"install {t2 - t1:.0f} s, gpudoctor check {t3 - t2:.1f} s)")
    assert not _problems(report), "\n".join(_problems(report))
    ids = {f["id"]: f for f in report["findings"]}
    assert ids.get("compiler.ok", {}).get("severity") == "ok", sorted(ids)
    assert "11.8" in ids["toolkit.inventory"]["title"]
