"""The verified on-disk cache, and `check` with it: same findings, no rebuild, never trusting a bad entry.

The smoke-build tests use the real CUDA 13.0 nvcc of this machine (no GPU: the binary is built,
cached and its run reported as skipped).
"""
from __future__ import annotations

import json
import os
import re
import shutil

import pytest

from gpudoctor.process.cache import Cache, cache_root
from gpudoctor.check import run_check
from gpudoctor.matrix import load_matrix
from gpudoctor.probes import frameworks

NVCC = shutil.which("nvcc")


def _payload(tmp_path, text=b"binary"):
    p = tmp_path / "payload"
    p.write_bytes(text)
    return str(p)


def test_roundtrip_and_keys(tmp_path):
    c = Cache("t", root=str(tmp_path / "root"))
    inputs = {"tool": {"path": "/x", "size": 1, "mtime_ns": 2}, "arch": "sm_90"}
    assert c.get_files(inputs) is None
    entry = c.put_files(inputs, {"smoke": _payload(tmp_path)})
    hit = c.get_files(inputs)
    assert hit and hit["dir"] == entry and open(hit["files"]["smoke"], "rb").read() == b"binary"
    assert c.get_files(dict(inputs, arch="sm_80")) is None  # another input, another key
    assert not [n for n in os.listdir(c.dir) if n.endswith(".tmp")]  # nothing half-written left


@pytest.mark.parametrize("damage", ["payload", "meta_garbage", "meta_other_key", "meta_missing_files", "payload_gone"])
def test_a_damaged_or_foreign_entry_is_never_trusted_and_is_removed(tmp_path, damage):
    c = Cache("t", root=str(tmp_path / "root"))
    inputs = {"a": 1}
    entry = c.put_files(inputs, {"smoke": _payload(tmp_path)})
    meta = os.path.join(entry, "meta.json")
    if damage == "payload":
        with open(os.path.join(entry, "smoke"), "ab") as fh:
            fh.write(b"tampered")
    elif damage == "meta_garbage":
        open(meta, "w").write("{not json")
    elif damage == "meta_other_key":
        m = json.load(open(meta))
        m["key"] = "0" * 32
        json.dump(m, open(meta, "w"))
    elif damage == "meta_missing_files":
        m = json.load(open(meta))
        m["files"] = {}
        json.dump(m, open(meta, "w"))
    else:
        os.unlink(os.path.join(entry, "smoke"))
    assert c.get_files(inputs) is None
    assert not os.path.exists(entry)


def test_disabled_and_unwritable_caches_cost_only_a_rebuild(tmp_path):
    off = Cache("t", enabled=False, root=str(tmp_path / "root"))
    assert off.put_files({"a": 1}, {"smoke": _payload(tmp_path)}) is None and off.get_files({"a": 1}) is None
    ro = tmp_path / "ro"
    ro.mkdir()
    os.chmod(ro, 0o500)
    try:
        if os.access(str(ro), os.W_OK):  # root ignores the mode bits
            pytest.skip("running as root: a read-only directory is writable")
        assert Cache("t", root=str(ro)).put_files({"a": 1}, {"smoke": _payload(tmp_path)}) is None
    finally:
        os.chmod(ro, 0o700)


def test_cache_root_honours_xdg_cache_home(tmp_path):
    assert cache_root({"XDG_CACHE_HOME": str(tmp_path)}) == str(tmp_path / "gpudoctor")
    assert cache_root({"XDG_CACHE_HOME": "relative/ignored"}).endswith("gpudoctor")


def test_fatbin_scan_is_cached_by_file_identity(tmp_path):
    """A real CUDA library (cudart from the nvidia-cuda-runtime wheel) scanned once, then read back."""
    import glob

    from gpudoctor.probes.libfind import site_packages_dirs

    libs = [p for d in site_packages_dirs() for p in glob.glob(os.path.join(d, "nvidia", "*", "lib", "libcudart.so.*"))]
    if not libs:
        pytest.skip("the nvidia-cuda-runtime wheel is not installed")
    lib = tmp_path / "libcudart.so"
    shutil.copy(libs[0], lib)
    cache = Cache("fatbin-scan", root=str(tmp_path / "c"))
    first = frameworks.scan_targets(str(lib), cache)
    second = frameworks.scan_targets(str(lib), cache)
    assert "cached" not in first and second.pop("cached") is True and second == first
    os.utime(lib, ns=(1, 1))  # same bytes, other mtime: another identity, scanned again
    assert "cached" not in frameworks.scan_targets(str(lib), cache)


# ----------------------------------------------------------------------------- check with the smoke cache


def _check(tmp_path, cache=True, extra_env=None):
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "xdg"), **(extra_env or {}))
    report = run_check(load_matrix(), env=env, cache=cache, timeout=120)
    smoke = [f for f in report.findings if f.id == "smoke.nvcc"]
    return report, smoke


def _comparable(report):
    norm = lambda t: re.sub(r"built in [\d.]+ s|build cached \([^)]*\)|compiled in \d+ ms|CUBIN cached", "built", t)  # noqa: E731
    norm2 = lambda t: re.sub(r"\d+(\.\d+)? ?(ms|s)\b", "T", norm(t))  # noqa: E731
    return sorted((f.id, f.severity.value, norm2(f.title)) for f in report.findings)


@pytest.mark.skipif(NVCC is None, reason="no nvcc on PATH")
def test_check_builds_once_then_runs_the_cached_build_with_the_same_findings(tmp_path):
    first, s1 = _check(tmp_path)
    built = [f for f in s1 if "built in" in f.title]
    assert built, [f.title for f in s1]
    nvrtc = lambda r: [f.title for f in r.findings if f.id == "smoke.nvrtc"]  # noqa: E731
    assert any("compiled in" in t for t in nvrtc(first)), nvrtc(first)
    second, s2 = _check(tmp_path)
    assert [f for f in s2 if "build cached" in f.title], [f.title for f in s2]
    assert any("CUBIN cached" in t for t in nvrtc(second)), nvrtc(second)  # NVRTC's CUBIN too
    assert _comparable(first) == _comparable(second)
    forced, s3 = _check(tmp_path, cache=False)  # --no-cache
    assert not [f for f in s3 if "build cached" in f.title] and not any("CUBIN cached" in t for t in nvrtc(forced))
    assert _comparable(forced) == _comparable(first)


@pytest.mark.skipif(NVCC is None, reason="no nvcc on PATH")
def test_a_tampered_cached_binary_is_rebuilt_and_other_flags_are_another_build(tmp_path):
    _check(tmp_path)
    root = tmp_path / "xdg" / "gpudoctor" / "smoke-nvcc"
    entries = [e for e in root.iterdir() if not e.name.startswith(".")]
    assert entries
    for e in entries:
        with open(e / "smoke", "ab") as fh:
            fh.write(b"\0tampered")
    _, smoke = _check(tmp_path)
    assert not [f for f in smoke if "build cached" in f.title] and [f for f in smoke if "built in" in f.title]
    _, smoke = _check(tmp_path, extra_env={"NVCC_APPEND_FLAGS": "-lineinfo"})  # an input of the build changed
    assert not [f for f in smoke if "build cached" in f.title]


def test_the_cache_dir_without_platformdirs(monkeypatch):
    """platformdirs is a dependency, but a check must not fail (it did, with a traceback, in a Python
    without it) because an optimisation cannot find its directory: ~/.cache/gpudoctor then."""
    import os
    import sys

    from gpudoctor.process.cache import cache_root

    monkeypatch.setitem(sys.modules, "platformdirs", None)  # import platformdirs -> ImportError
    assert cache_root({}) == os.path.join(os.path.expanduser("~"), ".cache", "gpudoctor")
    assert cache_root({"XDG_CACHE_HOME": "/x"}) == "/x/gpudoctor"


# ----------------------------------------------------------------------------- what the smoke build's key holds


def _key_before_issue_24(env) -> dict:
    """The smoke build's key until issue 24 held only these variables of the environment (kept here to show
    the break it missed): anything else the compiler reads could change without a rebuild."""
    return {k: env.get(k) for k in ("NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS", "NVCC_CCBIN") if env.get(k)}


def test_the_key_holds_the_whole_environment_but_the_session_variables():
    from gpudoctor.probes.smoke_nvcc import env_key

    env = {"PATH": "/usr/bin:/bin", "HOME": "/home/u"}
    same = [{"PWD": "/elsewhere"}, {"OLDPWD": "/x"}, {"SHLVL": "3"}, {"_": "/usr/bin/env"}, {"SSH_TTY": "/dev/pts/3"},
            {"SSH_CONNECTION": "10.0.0.1 22 10.0.0.2 5555"}, {"XDG_CACHE_HOME": "/tmp/c"}, {"TERM": "xterm-256color"}]
    for extra in same:
        assert env_key(dict(env, **extra)) == env_key(env), extra
    # any other variable, named by nobody in advance: a tool's own, GCC's, one no one has heard of
    for extra in ({"CPLUS_INCLUDE_PATH": "/x"}, {"GCC_EXEC_PREFIX": "/opt/gcc/"}, {"COMPILER_PATH": "/opt/bin"},
                  {"SOME_NEW_TOOL_SETTING": "1"}, {"TMPDIR": "/scratch"}):
        assert env_key(dict(env, **extra)) != env_key(env), extra


@pytest.mark.skipif(NVCC is None, reason="no nvcc on PATH")
def test_a_break_only_an_unlisted_variable_makes_is_rebuilt_and_named(tmp_path):
    """CPLUS_INCLUDE_PATH naming a directory whose <cstdio> is #error: a real nvcc 13.0 build in that
    environment fails. The old key (NVCC_* only) would have found the healthy build and said "build
    cached"; the new one rebuilds, reports the failure, and the differential names the variable."""
    from gpudoctor.process.differential import command_step
    from gpudoctor.probes.smoke_nvcc import SOURCE

    _check(tmp_path)  # the healthy build, cached
    poison = tmp_path / "include"
    poison.mkdir()
    (poison / "cstdio").write_text('#error "a foreign <cstdio>"\n')
    bad = {"CPLUS_INCLUDE_PATH": str(poison)}
    env = dict(os.environ, **bad)
    nvcc13 = os.path.realpath(NVCC)
    assert command_step([nvcc13, SOURCE, "-o", "smoke"], timeout=120, in_temp_dir=True)(env) is False  # ground truth
    assert _key_before_issue_24(env) == _key_before_issue_24(os.environ)  # what would have said "build cached"
    report, smoke = _check(tmp_path, extra_env=bad)
    mine = [f for f in smoke if f.evidence.get("command", "").startswith(NVCC)]
    assert mine and not [f for f in mine if "build cached" in f.title], [f.title for f in smoke]
    assert mine[0].severity.value == "fail" and "foreign <cstdio>" in mine[0].evidence["first_error"]
    named = [f for f in report.findings if f.id == "environment.breaks_step" and f.evidence.get("path") == NVCC]
    assert named and named[0].title.endswith(f"succeeds without CPLUS_INCLUDE_PATH={poison}: verified"), \
        [(f.id, f.title) for f in report.findings]


@pytest.mark.skipif(NVCC is None, reason="no nvcc on PATH")
def test_a_header_dropped_into_an_include_dir_changes_the_key_and_a_warm_key_runs_nothing(tmp_path, monkeypatch):
    """The include dirs' mtimes are in the key (a header added, or replaced by rename as package managers
    do, changes its directory). The host compiler's program and include dirs are looked up once (two
    commands) and kept under the compiler's identity and the environment: a warm key runs no command."""
    from gpudoctor.probes import smoke_nvcc, toolkit as toolkit_probe

    inc = tmp_path / "include"
    inc.mkdir()
    env = dict(os.environ, CPLUS_INCLUDE_PATH=str(inc))
    tk = toolkit_probe.describe_nvcc(NVCC, "PATH", env, 20)
    cache = Cache("smoke-nvcc", root=str(tmp_path / "c"))
    first = smoke_nvcc.cache_inputs(tk, None, env, cache)
    assert str(inc) in first["host_compiler"]["include_dirs"]
    assert os.path.basename(next(iter(first["host_compiler"]["programs"]))) in smoke_nvcc.HOST_PROGRAMS
    assert any(p.endswith("/cc1plus") for p in first["host_compiler"]["programs"])
    assert any(p.endswith("/nvcc.profile") for p in first["toolkit"]["files"])
    assert any(p.endswith("/cicc") for p in first["toolkit"]["files"])

    def no_command(*a, **k):
        raise AssertionError(f"a warm key ran {a[0]}")

    monkeypatch.setattr(smoke_nvcc, "run", no_command)
    assert Cache.key(smoke_nvcc.cache_inputs(tk, None, env, cache)) == Cache.key(first)
    (inc / "cstdio").write_text('#error "dropped in later"\n')
    os.utime(inc, ns=(1, 1))  # the same second as the first key on a coarse clock: an mtime that surely differs
    assert Cache.key(smoke_nvcc.cache_inputs(tk, None, env, cache)) != Cache.key(first)


@pytest.mark.skipif(NVCC is None, reason="no nvcc on PATH")
def test_a_header_edited_in_place_is_a_rebuild_though_the_key_is_unchanged(tmp_path):
    """A header the build reads, edited in place (its directory's mtime unchanged, so the key is the same):
    the cached build's read set (nvcc -M) no longer matches, so the check rebuilds, and the real build fails
    as a real build in that shell does."""
    from gpudoctor.process.differential import command_step
    from gpudoctor.probes import smoke_nvcc, toolkit as toolkit_probe

    inc = tmp_path / "include"
    inc.mkdir()
    header = inc / "cstdio"
    header.write_text("#include_next <cstdio>\n")
    extra = {"CPLUS_INCLUDE_PATH": str(inc)}
    env = dict(os.environ, **extra)
    _, smoke = _check(tmp_path, extra_env=extra)
    assert [f for f in smoke if "built in" in f.title], [f.title for f in smoke]
    entry = next(e for e in (tmp_path / "xdg" / "gpudoctor" / "smoke-nvcc").iterdir() if (e / smoke_nvcc.READ_SET).is_file())
    assert str(header) in json.loads((entry / smoke_nvcc.READ_SET).read_text())  # the build read it
    _, smoke = _check(tmp_path, extra_env=extra)
    assert [f for f in smoke if "build cached" in f.title], [f.title for f in smoke]
    tk = toolkit_probe.describe_nvcc(NVCC, "PATH", env, 20)
    key = Cache.key(smoke_nvcc.cache_inputs(tk, None, env, Cache("smoke-nvcc", root=str(tmp_path / "k"))))
    dir_mtime = inc.stat().st_mtime_ns
    with open(header, "r+") as fh:  # in place: same inode, same directory
        fh.write('#error "edited in place"\n')
    os.utime(header, ns=(1, 1))  # an mtime that surely differs on a coarse clock
    os.utime(inc, ns=(dir_mtime, dir_mtime))
    assert Cache.key(smoke_nvcc.cache_inputs(tk, None, env, Cache("smoke-nvcc", root=str(tmp_path / "k")))) == key
    assert command_step([os.path.realpath(NVCC), smoke_nvcc.SOURCE, "-o", "smoke"], timeout=120,
                        in_temp_dir=True)(env) is False  # ground truth: a real build in that shell fails
    _, smoke = _check(tmp_path, extra_env=extra)
    mine = [f for f in smoke if f.evidence.get("command", "").startswith(NVCC)]
    assert mine and not [f for f in mine if "build cached" in f.title], [f.title for f in smoke]
    assert mine[0].severity.value == "fail" and "edited in place" in mine[0].evidence["first_error"]
    assert mine[0].evidence["cache_stale"] == f"{header} changed since that build"
