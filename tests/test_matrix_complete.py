"""Completeness and internal consistency of the SHIPPED compatibility matrix (issue #3).

Issue #3: "CUDA 10.2 -> newest 13.x; cuDNN 7.6 -> 9.x; TensorRT 7.x -> 11.x; PyTorch cu118 ... cu130
wheels, JAX, TensorFlow, ONNX Runtime; GPU model -> compute capability (Kepler -> Blackwell,
data-center, workstation, GeForce, Jetson). Every row cites its source; unconfirmed values are
marked so. A test checks the matrix for internal consistency (no gaps, monotone driver minimums,
every row sourced)."

These tests read only the shipped data (``load_matrix()``); the schema checks that
``load_matrix`` already performs (types, sorting, min_sm in sms, ...) are not repeated here.
Every documented exception below names where the fact comes from.
"""
from __future__ import annotations

import re
from typing import Dict, List, Optional, Set

import pytest
from packaging.version import Version

from gpudoctor.matrix import FILES, Matrix, load_matrix, sm_of
from gpudoctor.matrix.schema import EXTENSION_FIELDS

# CUDA minor releases that never existed. NVIDIA went from 12.6 straight to 12.8 (the CUDA 12.8
# release notes follow 12.6 Update 3; there is no 12.7 toolkit in
# https://developer.nvidia.com/cuda-toolkit-archive), also stated in compat_matrix/README.md.
NEVER_RELEASED_CUDA = {"12.7"}

# Real CUDA releases older than the matrix's first release (10.2, the floor set by issue #3).
# They may appear only as a *cuda_min* ("supported since before the matrix starts"): cuDNN 7.6
# and TensorRT 7.0 support CUDA 9.0, cuDNN 8.0 CUDA 10.1 (cuDNN / TensorRT support matrices).
# Ubuntu 18.04 (CUDA 10.0) and RHEL 8 (CUDA 10.1) in os.json likewise. A cuda_min outside
# cuda.json and outside this set is a typo; a cuda_max must always be in cuda.json (or "N.x").
PRE_MATRIX_CUDA = {"9.0", "9.1", "9.2", "10.0", "10.1"}

# Targets that left nvcc because NVIDIA renamed them, not because support ended: CUDA 13.0 renamed
# Jetson Thor's sm_101 to sm_110 (CUDA 13.0 release notes, "sm_101 is renamed to sm_110").
# target -> (release that drops it, target that replaces it)
RENAMED_SMS = {"sm_101": ("13.0", "sm_110"), "sm_101a": ("13.0", "sm_110a"), "sm_101f": ("13.0", "sm_110f")}

# The one release whose GA driver is below its major's minor-version-compatibility floor
# (Table 2 footnote of the CUDA Toolkit release notes: CUDA 11.0 shipped with an older driver).
MVC_FLOOR_EXCEPTIONS = {"11.0"}

FAMILIES = ("Kepler", "Maxwell", "Pascal", "Volta", "Turing", "Ampere", "Ada Lovelace", "Hopper", "Blackwell")
SEGMENTS = ("data-center", "workstation", "geforce", "jetson")
META = {"source", "unconfirmed", "notes"}


@pytest.fixture(scope="module")
def m() -> Matrix:
    return load_matrix()


def V(text: str) -> Version:
    return Version(text)


def _num(sm: str) -> int:
    return int(re.match(r"^(?:sm|compute)_(\d+)", sm).group(1))


def _plain(sms) -> List[str]:
    return [s for s in sms if s[-1].isdigit()]


def _cuda_versions(m: Matrix) -> List[str]:
    return [r.cuda for r in m.cuda_releases()]


def _cuda_majors(m: Matrix) -> Set[int]:
    return {r.major for r in m.cuda_releases()}


def _real_cuda(m: Matrix, value: Optional[str], *, is_min: bool, allow_x: bool) -> bool:
    """A cuda_min / cuda_max value names a real CUDA release of the matrix (see PRE_MATRIX_CUDA)."""
    if value is None:
        return True
    if allow_x and re.match(r"^\d+\.x$", value):
        return int(value.split(".")[0]) in _cuda_majors(m)
    if value in _cuda_versions(m):
        return True
    return is_min and value in PRE_MATRIX_CUDA


def _tables(doc) -> Dict[str, list]:
    return {k: v for k, v in doc.items() if isinstance(v, list) and v and isinstance(v[0], dict)}


# =============================================================================== every row


def test_every_row_of_every_table_is_sourced_with_valid_unconfirmed(m):
    bad = []
    for name in FILES:
        tables = _tables(m._docs[name])
        assert tables, f"{name} has no tables"
        for table, rows in tables.items():
            for i, row in enumerate(rows):
                where = f"{name} {table}[{i}]"
                src = row.get("source")
                srcs = [src] if isinstance(src, str) else (src or [])
                if not srcs or not all(isinstance(s, str) and re.match(r"^(https?|file)://\S+$", s) for s in srcs):
                    bad.append(f"{where}: source {src!r}")
                if "unconfirmed" not in row:
                    bad.append(f"{where}: no 'unconfirmed' list")
                    continue
                unconf = row["unconfirmed"]
                if not isinstance(unconf, list):
                    bad.append(f"{where}: unconfirmed is not a list")
                    continue
                for u in unconf:
                    if u in META or u not in row:
                        bad.append(f"{where}: unconfirmed names {u!r}, not a data field of the row")
                if len(set(unconf)) != len(unconf):
                    bad.append(f"{where}: duplicate names in unconfirmed")
    assert not bad, "\n".join(bad)


def test_every_extension_field_is_present_in_shipped_rows(m):
    table_of = {"cuda.json": "releases", "cudnn.json": "releases", "tensorrt.json": "releases", "gpus.json": "gpus"}
    missing = []
    for name, fields in EXTENSION_FIELDS.items():
        for i, row in enumerate(m._docs[name][table_of[name]]):
            for f in fields:
                if f not in row:
                    missing.append(f"{name} {table_of[name]}[{i}] misses {f!r}")
    assert not missing, "\n".join(missing)


def test_gpu_families_source_cited(m):
    src = m._docs["gpus.json"].get("families_source")
    assert src, "gpus.json: the families map cites no source (families_source)"


# =============================================================================== CUDA


def test_cuda_starts_at_10_2_and_reaches_13(m):
    vs = _cuda_versions(m)
    assert vs[0] == "10.2"
    assert max(_cuda_majors(m)) == 13 and vs[-1].startswith("13.")
    assert {10, 11, 12, 13} <= _cuda_majors(m)


def test_cuda_releases_have_no_gaps(m):
    rels = [(r.major, r.minor) for r in m.cuda_releases()]
    missing = []
    for (a_maj, a_min), (b_maj, b_min) in zip(rels, rels[1:]):
        if a_maj == b_maj:
            for minor in range(a_min + 1, b_min):
                if f"{a_maj}.{minor}" not in NEVER_RELEASED_CUDA:
                    missing.append(f"{a_maj}.{minor}")
        else:  # new major: it must start at .0, and majors must not be skipped
            assert b_maj == a_maj + 1, f"CUDA major {a_maj + 1} is missing between {a_maj}.{a_min} and {b_maj}.{b_min}"
            for minor in range(0, b_min):
                if f"{b_maj}.{minor}" not in NEVER_RELEASED_CUDA:
                    missing.append(f"{b_maj}.{minor}")
    assert not missing, f"CUDA releases missing from cuda.json: {missing}"
    for v in NEVER_RELEASED_CUDA:
        assert v not in _cuda_versions(m), f"CUDA {v} never existed but is in cuda.json"


def test_cuda_min_driver_linux_non_decreasing(m):
    rels = m.cuda_releases()
    for a, b in zip(rels, rels[1:]):
        assert V(a.min_driver_linux) <= V(b.min_driver_linux), (
            f"min_driver_linux drops from {a.cuda} ({a.min_driver_linux}) to {b.cuda} ({b.min_driver_linux})")


def test_cuda_min_driver_windows_non_decreasing_where_known(m):
    rels = [r for r in m.cuda_releases() if r.min_driver_windows is not None]
    assert rels and rels[0].cuda == "10.2"
    for a, b in zip(rels, rels[1:]):
        assert V(a.min_driver_windows) <= V(b.min_driver_windows), (
            f"min_driver_windows drops from {a.cuda} ({a.min_driver_windows}) to {b.cuda} ({b.min_driver_windows})")
    # Table 3 says N/A for Windows from 13.0 on; before that, every release has a Windows driver.
    for r in m.cuda_releases():
        if r.major < 13:
            assert r.min_driver_windows is not None, f"CUDA {r.cuda}: Windows driver missing"


def test_cuda_latest_update_and_runfile_driver(m):
    for r in m.cuda_releases():
        assert r.latest_update and r.latest_update.startswith(f"{r.cuda}."), (r.cuda, r.latest_update)
        if r.runfile_driver_linux is not None:
            assert V(r.runfile_driver_linux) >= V(r.min_driver_linux), (
                f"CUDA {r.cuda}: runfile driver {r.runfile_driver_linux} below GA driver {r.min_driver_linux}")
            # An update's runfile bundles a driver of the same branch as the GA driver.
            assert r.runfile_driver_linux.split(".")[0] == r.min_driver_linux.split(".")[0], (
                f"CUDA {r.cuda}: runfile driver {r.runfile_driver_linux} is not of branch {r.min_driver_linux}")


def test_cuda_host_compiler_maxima_non_decreasing(m):
    rels = m.cuda_releases()
    for a, b in zip(rels, rels[1:]):
        assert a.max_gcc <= b.max_gcc, f"max_gcc drops from {a.cuda} ({a.max_gcc}) to {b.cuda} ({b.max_gcc})"
        assert a.max_clang <= b.max_clang, f"max_clang drops from {a.cuda} ({a.max_clang}) to {b.cuda} ({b.max_clang})"


def test_minor_version_compat_covers_majors_and_floors_below_ga_drivers(m):
    for major in sorted(mj for mj in _cuda_majors(m) if mj >= 11):
        mvc = m.minor_version_compat(major)
        assert mvc is not None, f"no minor_version_compat row for CUDA {major}"
        for r in m.cuda_releases():
            if r.major != major or r.cuda in MVC_FLOOR_EXCEPTIONS:
                continue
            assert V(mvc.min_driver_linux) <= V(r.min_driver_linux), (
                f"CUDA {r.cuda}: GA driver {r.min_driver_linux} below the {major}.x floor {mvc.min_driver_linux}")
            if mvc.min_driver_windows is not None and r.min_driver_windows is not None:
                assert V(mvc.min_driver_windows) <= V(r.min_driver_windows), (
                    f"CUDA {r.cuda}: Windows GA driver {r.min_driver_windows} below floor {mvc.min_driver_windows}")
    # The documented exception really is one (else the exception list is stale).
    for v in MVC_FLOOR_EXCEPTIONS:
        r = m.cuda_release(v)
        assert V(r.min_driver_linux) < V(m.minor_version_compat(r.major).min_driver_linux)


def test_cuda_targets_never_vanish_inside_the_range(m):
    """Each release keeps every plain target of the previous one that lies in its own min..max range."""
    rels = m.cuda_releases()
    for a, b in zip(rels, rels[1:]):
        lo, hi = _num(b.min_sm), _num(b.max_sm)
        for s in _plain(a.sms):
            if not (lo <= _num(s) <= hi) or s in b.sms:
                continue
            renamed = RENAMED_SMS.get(s)
            assert renamed and renamed[0] == b.cuda and renamed[1] in b.sms, (
                f"{s} is accepted by CUDA {a.cuda} but missing in {b.cuda} although inside {b.min_sm}..{b.max_sm}")


def test_cuda_targets_once_dropped_never_return(m):
    seen_dropped: Dict[str, str] = {}
    rels = m.cuda_releases()
    for a, b in zip(rels, rels[1:]):
        for s in a.sms:
            if s not in b.sms:
                seen_dropped.setdefault(s, b.cuda)
        for s in b.sms:
            assert s not in seen_dropped, f"{s} was dropped in CUDA {seen_dropped[s]} and is back in {b.cuda}"


def test_cuda_min_max_sm_monotone(m):
    rels = m.cuda_releases()
    for a, b in zip(rels, rels[1:]):
        assert _num(a.min_sm) <= _num(b.min_sm), f"min_sm goes back from {a.cuda} to {b.cuda}"
        assert _num(a.max_sm) <= _num(b.max_sm), f"max_sm goes back from {a.cuda} to {b.cuda}"


def test_cuda_arch_and_family_variants_have_their_plain_target(m):
    for r in m.cuda_releases():
        for s in r.sms:
            if not s[-1].isdigit():
                assert s[:-1] in r.sms, f"CUDA {r.cuda}: {s} without {s[:-1]}"
                if s.endswith("f"):  # family-specific targets arrived with CUDA 12.9
                    assert V(r.cuda) >= V("12.9"), f"CUDA {r.cuda}: family-specific {s} before 12.9"


# Targets nvcc lists without any public product or architecture name: sm_88 appears in
# `nvcc --list-gpu-code` of CUDA 13.0 (checked on /usr/local/cuda here) with no GPU documented for it.
UNDOCUMENTED_SMS = {"sm_88"}


def test_every_cuda_target_has_an_architecture_family(m):
    missing = set()
    for r in m.cuda_releases():
        for s in set(_plain(r.sms)) - UNDOCUMENTED_SMS:
            n = _num(s)
            cc = f"{n // 10}.{n % 10}"
            if m.family(cc) is None:
                missing.add(f"{s} (cc {cc}, CUDA {r.cuda})")
    assert not missing, f"gpus.json families has no architecture for: {sorted(missing)}"


# =============================================================================== cuDNN


def _lines(rows, field) -> Dict[int, List[int]]:
    out: Dict[int, List[int]] = {}
    for r in rows:
        major, minor = (int(x) for x in getattr(r, field).split("."))
        out.setdefault(major, []).append(minor)
    return out


def test_cudnn_lines_complete(m):
    lines = _lines(m.cudnn_releases(), "cudnn")
    assert m.cudnn_releases()[0].cudnn == "7.6"
    assert lines.get(7) == [6], f"cuDNN 7.x lines: {lines.get(7)}"
    assert lines.get(8) == list(range(0, 10)), f"cuDNN 8.x lines: {lines.get(8)} (want 8.0..8.9)"
    assert 9 in lines, "no cuDNN 9.x"
    assert lines[9] == list(range(0, max(lines[9]) + 1)), f"gap in cuDNN 9.x lines: {lines[9]}"
    assert set(lines) == {7, 8, 9}, f"unexpected cuDNN majors {sorted(lines)}"


def test_cudnn_package_names_match_cuda_majors(m):
    for r in m.cudnn_releases():
        pip_majors = set()
        for p in r.pip:
            mt = re.match(r"^nvidia-cudnn-cu(\d+)$", p)
            assert mt, f"cuDNN {r.cudnn}: unexpected pip name {p!r}"
            pip_majors.add(int(mt.group(1)))
            assert int(mt.group(1)) in r.cuda_majors, f"cuDNN {r.cudnn}: {p} but cuda_majors {r.cuda_majors}"
        if pip_majors:  # wheels exist for every CUDA major >= 11 the line supports
            assert pip_majors == {mj for mj in r.cuda_majors if mj >= 11}, (
                f"cuDNN {r.cudnn}: pip {sorted(pip_majors)} vs cuda_majors {r.cuda_majors}")
        if r.major >= 9:
            assert r.apt and all("{cuda_major}" in a for a in r.apt), f"cuDNN {r.cudnn}: apt {r.apt}"
        else:
            assert all("{cuda_major}" not in a for a in r.apt), f"cuDNN {r.cudnn}: apt {r.apt}"
            assert all(a.startswith(f"libcudnn{r.major}") for a in r.apt), f"cuDNN {r.cudnn}: apt {r.apt}"
        for k in r.apt_versions:
            assert int(k) in r.cuda_majors, f"cuDNN {r.cudnn}: apt_versions key {k} not in cuda_majors {r.cuda_majors}"
        assert r.latest and r.latest.startswith(f"{r.cudnn}."), f"cuDNN {r.cudnn}: latest {r.latest}"


def test_cudnn_cuda_bounds_are_real_releases(m):
    for r in m.cudnn_releases():
        assert _real_cuda(m, r.cuda_min, is_min=True, allow_x=False), f"cuDNN {r.cudnn}: cuda_min {r.cuda_min}"
        assert _real_cuda(m, r.cuda_max, is_min=False, allow_x=True), f"cuDNN {r.cudnn}: cuda_max {r.cuda_max}"
        if r.cuda_min is not None:
            assert int(r.cuda_min.split(".")[0]) == min(r.cuda_majors), f"cuDNN {r.cudnn}: cuda_min vs {r.cuda_majors}"
        if r.cuda_max is not None:
            assert int(r.cuda_max.split(".")[0]) == max(r.cuda_majors), f"cuDNN {r.cudnn}: cuda_max vs {r.cuda_majors}"
            if r.cuda_min is not None and not r.cuda_max.endswith(".x"):
                assert V(r.cuda_min) <= V(r.cuda_max), f"cuDNN {r.cudnn}: cuda_min above cuda_max"


def test_cudnn_reaches_newest_cuda_major(m):
    newest = max(_cuda_majors(m))
    assert any(newest in r.cuda_majors for r in m.cudnn_releases()), f"no cuDNN line for CUDA {newest}"


# =============================================================================== TensorRT


def test_tensorrt_majors_present(m):
    majors = {r.major for r in m.tensorrt_releases()}
    # TensorRT 9 had no general release (only LLM-specific 9.x previews): 8.6 -> 10.0.
    assert {7, 8, 10, 11} <= majors, f"TensorRT majors {sorted(majors)}"
    assert m.tensorrt_releases()[0].major == 7


def test_tensorrt_rows_consistent(m):
    cudnn_lines = {r.cudnn for r in m.cudnn_releases()}
    for r in m.tensorrt_releases():
        if r.min_sm and r.max_sm:
            assert _num(r.min_sm) <= _num(r.max_sm), f"TensorRT {r.tensorrt}: min_sm above max_sm"
        if r.cudnn is not None:
            assert r.cudnn in cudnn_lines, f"TensorRT {r.tensorrt}: cuDNN {r.cudnn} is not a line in cudnn.json"
        assert _real_cuda(m, r.cuda_min, is_min=True, allow_x=False), f"TensorRT {r.tensorrt}: cuda_min {r.cuda_min}"
        assert _real_cuda(m, r.cuda_max, is_min=False, allow_x=True), f"TensorRT {r.tensorrt}: cuda_max {r.cuda_max}"
        cu = set()
        for p in r.pip:
            mt = re.match(r"^tensorrt-cu(\d+)$", p)
            if mt:
                cu.add(int(mt.group(1)))
                assert int(mt.group(1)) in r.cuda_majors, f"TensorRT {r.tensorrt}: {p} but cuda_majors {r.cuda_majors}"
            else:
                assert p in ("tensorrt", "nvidia-tensorrt"), f"TensorRT {r.tensorrt}: unexpected pip name {p!r}"
        if cu:
            assert cu == {mj for mj in r.cuda_majors if mj >= 11}, f"TensorRT {r.tensorrt}: pip {sorted(cu)} vs {r.cuda_majors}"
        for k in r.apt_versions:
            assert int(k) in r.cuda_majors, f"TensorRT {r.tensorrt}: apt_versions key {k} not in {r.cuda_majors}"
        assert r.latest and r.latest.startswith(f"{r.tensorrt}."), f"TensorRT {r.tensorrt}: latest {r.latest}"


# =============================================================================== os.json


def test_os_ids_present(m):
    ids = {o.os for o in m.oses()}
    want = {"ubuntu-20.04", "ubuntu-22.04", "ubuntu-24.04", "debian-12", "rhel-9", "wsl-ubuntu", "windows"}
    assert want <= ids, f"os.json misses {sorted(want - ids)}"


def test_os_cuda_bounds_are_releases(m):
    # Same rule as cuDNN/TensorRT: a cuda_min may predate the matrix (Ubuntu 18.04: CUDA 10.0,
    # RHEL 8: CUDA 10.1) but must then be a real release from PRE_MATRIX_CUDA.
    bad = [f"{o.os}: cuda_min {o.cuda_min}" for o in m.oses() if not _real_cuda(m, o.cuda_min, is_min=True, allow_x=False)]
    bad += [f"{o.os}: cuda_max {o.cuda_max}" for o in m.oses()
            if not _real_cuda(m, o.cuda_max, is_min=False, allow_x=False)]
    assert not bad, "os.json bounds that are not CUDA releases in cuda.json: " + "; ".join(bad)


def test_os_rows_consistent(m):
    for o in m.oses():
        if o.repo is not None:
            assert o.keyring and f"/repos/{o.repo}/" in o.keyring, f"{o.os}: keyring {o.keyring} not under /repos/{o.repo}/"
    assert m.os_info("wsl-ubuntu").driver_package is None  # WSL: the Windows driver provides libcuda
    assert m.os_info("windows").driver_package is None
    assert m.os_info("windows").repo is None and m.os_info("windows").family == "windows"
    for oid in ("ubuntu-22.04", "ubuntu-24.04", "debian-12", "rhel-9"):
        assert m.os_info(oid).driver_package, f"{oid}: no driver package"
        assert "{branch}" in m.os_info(oid).driver_package


# =============================================================================== frameworks.json


def test_torch_builds_cover_cu118_to_cu130(m):
    cudas = {b.cuda for t in m.torch_releases() for b in t.builds}
    want = {"11.8", "12.1", "12.4", "12.6", "12.8", "13.0"}
    assert want <= cudas, f"frameworks.json torch misses CUDA wheel variants {sorted(want - cudas)}"
    assert len(m.torch_releases()) >= 5, f"only {len(m.torch_releases())} torch release line(s)"


def test_torch_builds_consistent_with_cuda_and_cudnn(m):
    cudnn = {r.cudnn: r for r in m.cudnn_releases()}
    for t in m.torch_releases():
        assert t.default_cuda is None or t.build(t.default_cuda) is not None, f"torch {t.torch}: default_cuda"
        for b in t.builds:
            tag = f"torch {t.torch}+cu{b.cuda.replace('.', '')}"
            assert m.cuda_release(b.cuda) is not None and b.cuda in _cuda_versions(m), f"{tag}: CUDA {b.cuda} not in cuda.json"
            assert b.index_url.rstrip("/").endswith("cu" + b.cuda.replace(".", "")), f"{tag}: index_url {b.index_url}"
            assert b.sass, f"{tag}: no SASS targets"
            for s in b.sass:
                assert m.toolkit_accepts_sm(b.cuda, s) is True, f"{tag}: nvcc {b.cuda} cannot build SASS {s}"
            for p in b.ptx:
                assert m.toolkit_accepts_sm(b.cuda, p) is True, f"{tag}: nvcc {b.cuda} cannot build PTX {p}"
            if b.cudnn is not None:
                assert b.cudnn in cudnn, f"{tag}: cuDNN {b.cudnn} is not a line in cudnn.json"
                assert int(b.cuda.split(".")[0]) in cudnn[b.cudnn].cuda_majors, f"{tag}: cuDNN {b.cudnn} has no CUDA {b.cuda} build"


def test_tensorflow_rows_name_existing_cuda_and_cudnn(m):
    assert m.tensorflow_releases()
    cudnn = {r.cudnn: r for r in m.cudnn_releases()}
    for t in m.tensorflow_releases():
        if t.cuda is not None:
            assert t.cuda in _cuda_versions(m), f"tensorflow {t.tensorflow}: CUDA {t.cuda} not in cuda.json"
        if t.cudnn is not None:
            assert t.cudnn in cudnn, f"tensorflow {t.tensorflow}: cuDNN {t.cudnn} not in cudnn.json"
            if t.cuda is not None:
                assert int(t.cuda.split(".")[0]) in cudnn[t.cudnn].cuda_majors, f"tensorflow {t.tensorflow}"


def test_jax_rows_consistent(m):
    assert m.jax_releases()
    cudnn = {r.cudnn for r in m.cudnn_releases()}
    for j in m.jax_releases():
        assert set(j.cuda_majors) <= _cuda_majors(m), f"jax {j.jax}: cuda_majors {j.cuda_majors}"
        if j.cuda_min is not None:
            assert j.cuda_min in _cuda_versions(m), f"jax {j.jax}: cuda_min {j.cuda_min} not in cuda.json"
            assert int(j.cuda_min.split(".")[0]) in j.cuda_majors, f"jax {j.jax}: cuda_min vs cuda_majors"
        if j.cudnn_min is not None:
            assert j.cudnn_min in cudnn, f"jax {j.jax}: cudnn_min {j.cudnn_min} not in cudnn.json"
        for mj in re.findall(r"cuda(\d+)", j.pip):
            assert int(mj) in j.cuda_majors, f"jax {j.jax}: pip {j.pip} vs cuda_majors {j.cuda_majors}"


def test_onnxruntime_rows_consistent(m):
    assert m.onnxruntime_releases()
    cudnn = {r.cudnn for r in m.cudnn_releases()}
    for o in m.onnxruntime_releases():
        for c in o.cuda:
            assert _real_cuda(m, c, is_min=False, allow_x=True), f"onnxruntime {o.onnxruntime}: CUDA {c}"
        for c in o.cudnn:
            assert c in cudnn, f"onnxruntime {o.onnxruntime}: cuDNN {c} not in cudnn.json"


# =============================================================================== gpus.json


def test_gpu_families_and_segments_present(m):
    fams = {g.family for g in m.gpus()}
    segs = {g.segment for g in m.gpus()}
    assert set(FAMILIES) <= fams, f"gpus.json misses families {sorted(set(FAMILIES) - fams)}"
    assert set(SEGMENTS) <= segs, f"gpus.json misses segments {sorted(set(SEGMENTS) - segs)}"
    jetson = {g.family for g in m.gpus() if g.segment == "jetson"}
    assert len(jetson) >= 3, f"Jetson rows only for {sorted(jetson)}"


def test_gpu_examples_resolve_and_families_agree(m):
    bad = []
    for g in m.gpus():
        hit = m.gpu_by_name(g.example)
        if hit is None or hit.cc != g.cc:
            bad.append(f"{g.example!r} (cc {g.cc}) resolves to {hit.cc if hit else None} ({hit.pattern if hit else None})")
        if m.family(g.cc) != g.family:
            bad.append(f"{g.example!r}: family {g.family!r} but families map says {m.family(g.cc)!r} for {g.cc}")
    assert not bad, "\n".join(bad)


def test_every_gpu_is_targetable_by_some_cuda_release(m):
    for g in m.gpus():
        assert m.cuda_range_for_sm(sm_of(g.cc)) is not None, f"{g.example} ({sm_of(g.cc)}): no CUDA release targets it"
