"""The toolkit and compilers probes' facts are typed and validated where parsed (issue 24 item 4): an nvcc,
ptxas or host compiler that prints an implausible version is a probe error (``probe.implausible_value`` naming
that tool), never an input to a toolkit or compiler version rule.

Real probes throughout: the real CUDA 13.0 nvcc runs a FAKE gcc first on PATH (a shell script that answers
version questions with garbage and hands every other call to the real gcc); FAKE nvcc / ptxas scripts print a
release no CUDA has."""
from __future__ import annotations

import os
import re

import pytest

from gpudoctor.probes import compilers, toolkit
from gpudoctor.probes import facts as typed
from gpudoctor.probes import facts_toolkit as ft
from tests.conftest import by_id, clean_path, ctx, judge, need

CUDA13 = "/usr/local/cuda/bin/nvcc"
VERSION_RULES = ("compiler.ok", "compiler.unsupported", "toolkit.mixed", "toolkit.inventory", "arch.toolkit_unsupported")


def _script(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return str(path)


def _fake_gcc(bin_dir, name="gcc", version="0.0.0"):
    return _script(bin_dir / name, f"""#!/bin/sh
# FAKE {name}: answers version questions with a version no compiler has; compiles with the real gcc
case "$*" in
  *dumpfullversion*|*dumpversion*) echo '{version}' ;;
  *--version*) echo '{name} (FAKE) {version}'; echo 'Copyright (C) nobody' ;;
  *) exec /usr/bin/{name} "$@" ;;
esac
""")


# --- the validators -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("good", ["12.2.0", "12", "14.0.6", "2.95.3", "24.5", "15.1.0"])
def test_plausible_compiler_versions_pass(good):
    assert ft.compiler_version(good) == good


@pytest.mark.parametrize("bad", ["0.0.0", "", "100.1", "12.2.0.1", "12.x", "4294967295.0", None, 12, "v12"])
def test_implausible_compiler_versions_are_rejected(bad):
    with pytest.raises(typed.Implausible):
        ft.compiler_version(bad)


def test_nvcc_releases_and_host_config_bounds():
    assert ft.nvcc_release("13.0") == "13.0" and ft.nvcc_release("11.8") == "11.8"
    for bad in ("0.0", "99.9", "13.10", "13", None):
        with pytest.raises(typed.Implausible):
            ft.nvcc_release(bad)
    problems: list = []
    hc = ft.HostConfig.parse({"max_gcc": 0, "min_gcc": None, "max_clang": 20, "min_clang": 3, "max_msvc": 99,
                              "min_msvc": 1920, "path": "/x/crt/host_config.h"}, typed.Origin("/x/crt/host_config.h", "nvcc", problems))
    assert hc.to_dict() == {"max_gcc": None, "min_gcc": None, "max_clang": 20, "min_clang": 3, "max_msvc": None,
                            "min_msvc": 1920, "path": "/x/crt/host_config.h"}
    assert sorted(r["call"] for r in problems) == ["crt/host_config.h (max_gcc)", "crt/host_config.h (max_msvc)"]


# --- the JSON shape is today's --------------------------------------------------------------------------------

def test_real_toolkit_and_compiler_facts_keep_their_shape():
    need(os.path.isfile(CUDA13), "CUDA 13.0 at /usr/local/cuda")
    c = ctx(PATH=f"/usr/local/cuda/bin:{clean_path()}")
    tk = next(t for t in toolkit.probe(c)["toolkits"] if t["nvcc"] == CUDA13)
    assert tk["release"] == "13.0" and not tk["problems"]
    assert set(tk["host_compiler"]) == {"command", "path", "kind", "version_seen_by_nvcc", "version_in_dryrun",
                                        "ccbin_from_env", "extra_flags"}  # no "problems" key when none was rejected
    assert tk["host_compiler"]["version_seen_by_nvcc"].startswith("12.")
    assert set(tk["ptxas"]) == {"path", "realpath", "release", "version", "build"} and tk["ptxas"]["release"] == "13.0"
    assert tk["host_config"]["max_gcc"] == 15 and tk["host_config"]["max_msvc"] == 1949
    comp = compilers.probe(c)
    assert set(comp) == {"default", "versioned", "env"}
    gcc = comp["default"]["gcc"]
    assert set(gcc) == {"path", "version", "error", "kind", "problems"} and gcc["version"].startswith("12.")


# --- a FAKE nvcc that says "release 0.0" on PATH --------------------------------------------------------------

def test_a_fake_nvcc_release_0_0_on_path_is_a_probe_error(tmp_path):
    nvcc = _script(tmp_path / "bin" / "nvcc", "#!/bin/sh\n# FAKE nvcc: a wrapper that answers a release no CUDA has\n"
                   "echo 'Cuda compilation tools, release 0.0, V0.0.0'\necho 'Build cuda_0.0.r0.0/compiler.0_0'\n")
    c = ctx(PATH=f"{tmp_path / 'bin'}:{clean_path()}", CUDA_HOME=None, CUDA_PATH=None, CUDA_ROOT=None)
    facts = toolkit.probe(c)
    assert facts["on_path"] == nvcc
    fake = next(t for t in facts["toolkits"] if t["nvcc"] == nvcc)
    assert fake["release"] is None
    (rec,) = [r for r in fake["problems"] if r["kind"] == "implausible"]
    assert rec["path"] == nvcc and rec["value"] == "0.0"
    findings = judge({"toolkit": facts, "compilers": compilers.probe(c)})
    (f,) = [f for f in by_id(findings, "probe.implausible_value") if nvcc in f.title]
    assert f.severity.value == "fail"
    # toolkit.inventory still says builds would run it (see toolkit.broken); nothing says "nvcc 0.0" or judges it.
    built_on_it = [g for g in findings if re.search(r"\b(nvcc|CUDA|release) 0\.0\b", g.title)
                   or g.id in VERSION_RULES and g.id != "toolkit.inventory" and nvcc in g.title]
    assert not built_on_it, [g.title for g in built_on_it]
    assert not by_id(findings, "gpudoctor.rule_error")


# --- a FAKE gcc printing a garbage version, run by the real nvcc 13.0 ----------------------------------------

def test_a_fake_gcc_garbage_version_is_a_probe_error_and_no_compiler_finding(tmp_path):
    need(os.path.isfile(CUDA13), "CUDA 13.0 at /usr/local/cuda")
    bin_dir = tmp_path / "bin"
    gcc, gxx = _fake_gcc(bin_dir, "gcc"), _fake_gcc(bin_dir, "g++")
    c = ctx(PATH=f"{bin_dir}:/usr/local/cuda/bin:{clean_path()}", NVCC_CCBIN=None, NVCC_PREPEND_FLAGS=None,
            NVCC_APPEND_FLAGS=None, CUDA_HOME=None)
    facts = {"toolkit": toolkit.probe(c), "compilers": compilers.probe(c)}
    tk = next(t for t in facts["toolkit"]["toolkits"] if t["nvcc"] == CUDA13)
    host = tk["host_compiler"]
    assert host["path"] == gcc and tk["release"] == "13.0"
    # Neither its garbage nor the dry run's version of the same compiler is taken as the version nvcc sees.
    assert host["version_seen_by_nvcc"] is None
    assert [(r["path"], r["value"], r["kind"]) for r in host["problems"]] == [(gcc, "0.0.0", "implausible")]
    default = facts["compilers"]["default"]
    assert default["gcc"]["version"] is None and "0.0.0" in default["gcc"]["error"]
    assert {(r["path"], r["value"]) for r in facts["compilers"]["problems"]} == {(gcc, "0.0.0"), (gxx, "0.0.0")}

    findings = judge(facts)
    rejected = {f.evidence["path"]: f for f in by_id(findings, "probe.implausible_value")}
    assert set(rejected) == {gcc, gxx}  # one finding per file that printed it, both of gcc's answers in it
    assert {r["call"] for r in rejected[gcc].evidence["rejected"]} == {"gcc -dumpfullversion -dumpversion", "gcc --version"}
    assert all(f.severity.value == "fail" for f in rejected.values())
    on_fake = [f for f in findings if f.id.startswith("compiler.") and (gcc in str(f.evidence) or gxx in str(f.evidence)
                                                                       or CUDA13 in f.title)]
    assert not on_fake, [f.title for f in on_fake]
    assert not by_id(findings, "gpudoctor.rule_error")


def test_a_plausible_fake_gcc_version_is_still_judged(tmp_path):
    """The other side: a compiler that says a real (too new) version is judged by compiler.unsupported as before."""
    need(os.path.isfile(CUDA13), "CUDA 13.0 at /usr/local/cuda")
    bin_dir = tmp_path / "bin"
    _fake_gcc(bin_dir, "gcc", "16.1.0")
    c = ctx(PATH=f"{bin_dir}:/usr/local/cuda/bin:{clean_path()}", NVCC_CCBIN=None, NVCC_PREPEND_FLAGS=None,
            NVCC_APPEND_FLAGS=None, CUDA_HOME=None)
    facts = {"toolkit": toolkit.probe(c), "compilers": compilers.probe(c)}
    assert next(t for t in facts["toolkit"]["toolkits"] if t["nvcc"] == CUDA13)["host_compiler"]["version_seen_by_nvcc"] == "16.1.0"
    (f,) = [f for f in by_id(judge(facts), "compiler.unsupported") if CUDA13 in f.title]
    assert "16.1.0" in f.title and "15" in f.title


# --- a FAKE ptxas first on PATH, and a versioned compiler whose name gives no plausible major -----------------

def test_a_fake_ptxas_release_and_a_g_plus_plus_0_are_probe_errors(tmp_path):
    bin_dir = tmp_path / "bin"
    ptxas = _script(bin_dir / "ptxas", "#!/bin/sh\n# FAKE ptxas: a release no CUDA has\n"
                    "echo 'Cuda compilation tools, release 0.0, V0.0.0'\n")
    gxx0 = _script(bin_dir / "g++-0", "#!/bin/sh\n# FAKE g++-0: a name no gcc has\nexit 0\n")
    c = ctx(PATH=f"{bin_dir}:{clean_path()}", CUDA_HOME=None, CUDA_PATH=None, CUDA_ROOT=None)
    p = toolkit._ptxas_on_path(c, toolkits=[])
    assert p["path"] == ptxas and p["release"] is None
    assert [(r["path"], r["value"]) for r in p["problems"]] == [(ptxas, "0.0")]
    comp = compilers.probe(c)
    assert gxx0 not in [v["path"] for v in comp["versioned"]]
    assert [(r["path"], r["value"]) for r in comp["problems"]] == [(gxx0, "0")]
    ids = {(f.id, f.evidence.get("path")) for f in judge({"toolkit": {"toolkits": [], "on_path": None, "ptxas_on_path": p},
                                                          "compilers": comp})}
    assert ("probe.implausible_value", ptxas) in ids and ("probe.implausible_value", gxx0) in ids
