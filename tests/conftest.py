"""Shared helpers. Real components first: tests run the real probes against the real NVIDIA parts
that .ci/install-real-parts and .ci/fetch-real-wheels put on this CPU machine. Where a test
needs a GPU that cannot exist here, it says FAKE in the name of the fact it injects."""
from __future__ import annotations

import os
import shutil

import pytest

from gpudoctor.rules.fixes import OsFlavor
from gpudoctor.matrix import load_matrix
from gpudoctor.rules import Facts, RuleContext, evaluate
from gpudoctor.process.runner import ProbeContext

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.path.join(ROOT, ".ci", "cache")
CAPTURES = os.path.join(ROOT, "tests", "data", "captures", "h100-cuda13")
# CI sets this: a missing real part is then a failure, not a skip.
REQUIRE_REAL = os.environ.get("GPUDOCTOR_REQUIRE_REAL") == "1"


#: Variables a test run must not inherit from the developer's shell: gpudoctor's own settings and the
#: per-user directories where earlier `gpudoctor check` runs left caches, a downloaded matrix or a policy.
_USER_DIRS = ("XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME")


def _isolate(setenv, delenv, base) -> None:
    for var in _USER_DIRS:
        d = os.path.join(base, var.lower())
        os.makedirs(d, exist_ok=True)
        setenv(var, d)
    for var in [v for v in os.environ if v.startswith("GPUDOCTOR_") and v != "GPUDOCTOR_REQUIRE_REAL"]:
        delenv(var)
    # `check` asks no package index about its fixes' packages (tests/test_fix_wheels.py asks on purpose):
    # every test has its own cache, and would otherwise fetch Debian's 9 MB package index again
    setenv("GPUDOCTOR_OFFLINE", "1")


@pytest.fixture(scope="session", autouse=True)
def _session_user_dirs(tmp_path_factory):
    """Session fixtures (built binaries, reports) get their own user dirs too, never the developer's."""
    mp = pytest.MonkeyPatch()
    _isolate(mp.setenv, mp.delenv, str(tmp_path_factory.mktemp("user-dirs")))
    yield
    mp.undo()


@pytest.fixture(autouse=True)
def _own_user_dirs(tmp_path, monkeypatch):
    """Every test runs with its own empty cache, data and config dirs and without GPUDOCTOR_* settings,
    so a machine where `gpudoctor check` ran before (a filled cache) gives the same results as a new one."""
    _isolate(monkeypatch.setenv, monkeypatch.delenv, str(tmp_path / "user-dirs"))


def need(condition: bool, what: str):
    """Skip (locally) or fail (CI) when a real component is not installed."""
    if condition:
        return
    if REQUIRE_REAL:
        pytest.fail(f"real component missing: {what} (run .ci/install-real-parts and .ci/fetch-real-wheels)")
    pytest.skip(f"real component missing: {what}")


def clean_path() -> str:
    """PATH with only system dirs (no /usr/local/cuda/bin, no wrappers in /usr/local/bin)."""
    return "/usr/sbin:/usr/bin:/sbin:/bin"


def ctx(**env) -> ProbeContext:
    base = dict(os.environ)
    base.update({k: v for k, v in env.items() if v is not None})
    for k, v in env.items():
        if v is None:
            base.pop(k, None)
    return ProbeContext(env=base, smoke=True, timeout=20.0)


def judge(results: dict, platform: dict = None):
    """Evaluate every rule on ``results`` (probe name → facts) with the shipped matrix."""
    results = dict(results)
    if platform is not None:
        results["platform"] = platform
    facts = Facts(results)
    return evaluate(facts, RuleContext(matrix=load_matrix(), os=OsFlavor.from_platform(results.get("platform") or {})))


def by_id(findings, fid, severity=None):
    out = [f for f in findings if f.id == fid and (severity is None or f.severity == severity)]
    return out


@pytest.fixture(scope="session")
def matrix():
    return load_matrix()


@pytest.fixture
def debian_118():
    need(os.path.isfile("/usr/bin/nvcc") and os.path.isdir("/usr/lib/nvidia-cuda-toolkit"), "Debian nvidia-cuda-toolkit (CUDA 11.8)")
    need(shutil.which("g++-11") is not None, "g++-11")
    return "/usr/bin/nvcc"


@pytest.fixture
def driver_535_userspace():
    import glob

    need(bool(glob.glob("/usr/lib/x86_64-linux-gnu/nvidia/current/libnvidia-ml.so.535*")), "libnvidia-ml1 (driver 535)")
    need(bool(glob.glob("/usr/lib/x86_64-linux-gnu/nvidia/current/libcuda.so.535*")), "libcuda1 (driver 535)")
    if os.path.exists("/proc/driver/nvidia/version"):
        pytest.skip("a real NVIDIA kernel module is loaded here: the 'not loaded' state cannot be reproduced")


def rule_context(os_platform: dict = None) -> RuleContext:
    """A RuleContext with the shipped matrix (for calling one rule directly)."""
    return RuleContext(matrix=load_matrix(), os=OsFlavor.from_platform(os_platform or {}))
