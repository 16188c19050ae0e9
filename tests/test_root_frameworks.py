"""`check --root`: JAX's kernels, TensorRT and NCCL of a root read from its files (nothing imported or run) in the
live probes' shapes, judged by the live rules, and compared with what the live `check --no-gpu` says of the same
real files on this machine (the real jax-cuda13-plugin, nvidia-nccl-cu13 and TensorRT 11 bindings/lean wheels of
.ci/fetch-real-wheels), or with the real files' own words (nccl.h, the wheels' METADATA)."""
import json
import os
import shutil
import subprocess
import sys

from tests.conftest import need
from tests.test_windows_root import NVINFER_VERSION_H

CACHE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), ".ci", "cache")
JAX = os.path.join(CACHE, "jax-cuda13", "site-packages")
NCCL = os.path.join(CACHE, "nccl-cu13", "site-packages")
NCCL_LIB = os.path.join(NCCL, "nvidia", "nccl", "lib", "libnccl.so.2")
NCCL_H = os.path.join(NCCL, "nvidia", "nccl", "include", "nccl.h")
TRT = [os.path.join(CACHE, d, "site-packages") for d in ("trt-bindings", "trt-lean")]
LEAN_LIB = os.path.join(CACHE, "trt-lean", "site-packages", "tensorrt_lean_libs", "libnvinfer_lean.so.11")
SP = os.path.join("usr", "local", "lib", "python3.12", "dist-packages")


def _gd(*args, env=None) -> dict:
    res = subprocess.run([sys.executable, "-m", "gpudoctor", "check", *args, "--json"], capture_output=True, text=True,
                         timeout=300, env=env)
    return json.loads(res.stdout)


def _live(pythonpath, **env) -> dict:
    """The live `check --no-gpu` of this machine with ``pythonpath``'s packages importable (never imported)."""
    return _gd("--no-gpu", *env.pop("args", ()), env=dict(os.environ, PYTHONPATH=os.pathsep.join(pythonpath), **env))


def _root(tmp_path, *site_dirs):
    root = tmp_path / "rootfs"
    sp = root / SP
    sp.mkdir(parents=True)
    for d in site_dirs:
        shutil.copytree(d, sp, dirs_exist_ok=True, symlinks=True, copy_function=_place)  # NCCL's 340 MB: linked
    return root, sp


def _said(report, ids, here=None):
    """(id, title) of the findings ``ids`` (--no-gpu demotes what needs the GPU host to info: severities differ);
    ``here``: a directory of this machine read as the root's SP."""
    return sorted((f["id"], f["title"].replace("(--no-gpu: needs the GPU host) ", "")
                   .replace(here or "\0", "/" + SP)) for f in report["findings"] if f["id"] in ids)


def _place(src: str, dest) -> None:
    """``src`` at ``dest`` inside a root (a link would point outside it): hard-linked where it can be (340 MB)."""
    try:
        os.link(src, dest)
    except OSError:
        shutil.copy2(src, dest)


def _metadata_version(dist_info: str) -> str:
    with open(os.path.join(dist_info, "METADATA"), encoding="utf-8") as fh:
        return next(l.split(":", 1)[1].strip() for l in fh if l.startswith("Version:"))


def test_jax_cuda_plugins_kernels_in_a_root_are_the_live_probes_and_judged_against_the_target_gpu(tmp_path):
    """The real jax-cuda13-plugin (SASS sm_75..sm_120, PTX compute_120 in its extension modules): the root's
    facts are the live probe's (same libraries, same targets), and a Kepler (3.7) target gets the live
    arch.binary_missing, an H100 the live arch.binary_ok, title for title."""
    need(os.path.isdir(os.path.join(JAX, "jax_cuda13_plugin")), "jax and jax-cuda13-plugin in .ci/cache/jax-cuda13")
    root, sp = _root(tmp_path, JAX)
    for target, verdict in (("3.7", "fail"), ("H100", "ok")):
        said = _gd("--root", str(root), "--target-gpu", target)
        live = _live([JAX], args=("--target-gpu", target))
        jax, live_jax = said["probes"]["root"]["facts"]["frameworks"]["jax"], live["probes"]["frameworks"]["facts"]["jax"]
        for k in ("version", "plugins", "cuda_majors"):
            assert jax[k] == live_jax[k], k
        assert jax["cuda_majors"] == [13] and jax["plugins"] == {"jax-cuda13-plugin": "0.10.2"}
        archs, live_archs = jax["archs"], live_jax["archs"]
        assert (archs["sass"], archs["ptx"]) == (live_archs["sass"], live_archs["ptx"])
        assert archs["libraries"] == [p.replace(JAX, "/" + SP) for p in live_archs["libraries"]]
        assert "sm_90" in archs["sass"] and "sm_37" not in archs["sass"]
        ids = {"arch.binary_missing", "arch.binary_ok"}
        assert _said(said, ids) == _said(live, ids)
        assert [f["severity"] for f in said["findings"] if f["id"] in ids] == [verdict]


def test_jax_built_for_cuda_13_is_judged_against_the_hosts_driver_as_live(tmp_path):
    """The plugin's name says CUDA 13: with the host's driver given, the root gets the live framework.cuda_mismatch
    (and jax among driver.too_old's runtimes) for this machine's driver 535, whose CUDA is 12.2."""
    need(os.path.isdir(os.path.join(JAX, "jax_cuda13_plugin")), "jax and jax-cuda13-plugin in .ci/cache/jax-cuda13")
    live = _live([JAX])
    drv = (live["probes"]["driver"]["facts"] or {}).get("user_space_version")
    need(bool(drv), "an NVIDIA driver user space on this machine (the live check's driver)")
    root, _ = _root(tmp_path, JAX)
    said = _gd("--root", str(root), "--driver", drv)
    ids = {"framework.cuda_mismatch"}
    assert _said(said, ids) == _said(live, ids)
    if drv.startswith("535."):  # the CI machine's: CUDA ≤ 12.2
        assert [t for _, t in _said(said, ids)] == [f"jax 0.10.2 is built for CUDA 13.0, which driver {drv} (CUDA ≤ 12.2) cannot run"]


def test_a_roots_nccl_wheel_has_the_version_ncclgetversion_answers_live_and_its_variables_are_judged(tmp_path):
    """The real nvidia-nccl-cu13 wheel: the root's libnccl.so.2 has its wheel's version, the one the live probe's
    ncclGetVersion answers; NCCL_P2P_DISABLE=1 in the image's environment is the live nccl.transport_disabled,
    while NCCL_SOCKET_IFNAME names an interface of the host, which files don't show: unsaid."""
    need(os.path.isfile(NCCL_LIB) and os.path.isfile(NCCL_H), "libnccl.so.2 and nccl.h of nvidia-nccl-cu13 (.ci/fetch-real-wheels)")
    root, _ = _root(tmp_path, NCCL)
    env = tmp_path / "image.env"
    env.write_text("PATH=/usr/bin:/bin\nNCCL_P2P_DISABLE=1\nNCCL_SOCKET_IFNAME=ib9\n")
    said = _gd("--root", str(root), "--env", str(env))
    live = _live([NCCL], NCCL_P2P_DISABLE="1", NCCL_SOCKET_IFNAME="ib9")
    (lib,) = said["probes"]["nccl"]["facts"]["libraries"]
    (live_lib,) = live["probes"]["nccl"]["facts"]["libraries"]
    dist = next(os.path.join(NCCL, d) for d in os.listdir(NCCL) if d.startswith("nvidia_nccl_cu13-"))
    assert lib["version"] == live_lib["api_version"] == _metadata_version(dist)
    assert lib["package"] == live_lib["package"] == "nvidia-nccl-cu13" and lib["api_version"] is None
    assert said["probes"]["nccl"]["facts"]["vars"] == live["probes"]["nccl"]["facts"]["vars"]
    assert _said(said, {"nccl.transport_disabled"}) == _said(live, {"nccl.transport_disabled"}) != []
    assert "nccl.device_not_found" in {f["id"] for f in live["findings"]}
    assert "nccl.device_not_found" not in {f["id"] for f in said["findings"]}


def test_a_system_nccl_named_by_its_soname_alone_takes_its_installs_nccl_h(tmp_path):
    """The same real libnccl.so.2 where a distribution's package puts it (/usr/lib/x86_64-linux-gnu), no wheel
    owning it: its file name says only "2"; the real nccl.h of that install (/usr/include) says the full version
    (its NCCL_MAJOR/MINOR/PATCH: the wheel's version); without the header, "2"."""
    need(os.path.isfile(NCCL_LIB) and os.path.isfile(NCCL_H), "libnccl.so.2 and nccl.h of nvidia-nccl-cu13 (.ci/fetch-real-wheels)")
    from gpudoctor.formats.nccl_header import parse_nccl_header_version

    root = tmp_path / "rootfs"
    (root / "usr" / "lib" / "x86_64-linux-gnu").mkdir(parents=True)
    _place(NCCL_LIB, root / "usr" / "lib" / "x86_64-linux-gnu" / "libnccl.so.2")
    facts = _gd("--root", str(root))["probes"]["nccl"]["facts"]
    assert [(l["path"], l["version"]) for l in facts["libraries"]] == [("/usr/lib/x86_64-linux-gnu/libnccl.so.2", "2")]
    assert facts["loader_pick"] == "/usr/lib/x86_64-linux-gnu/libnccl.so.2"
    (root / "usr" / "include").mkdir()
    shutil.copy2(NCCL_H, root / "usr" / "include" / "nccl.h")
    (lib,) = _gd("--root", str(root))["probes"]["nccl"]["facts"]["libraries"]
    with open(NCCL_H, encoding="utf-8") as fh:
        text = fh.read()
    assert (lib["version"], lib["version_from"]) == (parse_nccl_header_version(text), "/usr/include/nccl.h")
    dist = next(os.path.join(NCCL, d) for d in os.listdir(NCCL) if d.startswith("nvidia_nccl_cu13-"))
    assert lib["version"] == _metadata_version(dist)


def test_a_roots_tensorrt_facts_are_the_live_probes_less_what_an_import_says(tmp_path):
    """The real TensorRT 11.4 bindings and lean/dispatch wheels: distributions, libnvinfer copies, loader picks
    and trtexec as the live tensorrt probe has them; the modules' import results (tensorrt.ok, tensorrt.libs_missing)
    need the root's Python: unsaid (root.dependency_missing names the libraries the full bindings lack)."""
    need(all(os.path.isdir(d) for d in TRT), "the TensorRT 11 bindings and lean wheels (.ci/fetch-real-wheels)")
    root, _ = _root(tmp_path, *TRT)
    said = _gd("--root", str(root))
    live = _live(TRT)
    t, lt = said["probes"]["tensorrt"]["facts"], live["probes"]["tensorrt"]["facts"]
    for k in ("distributions", "libnvinfer", "libnvinfer_loaded", "trtexec"):
        assert t[k] == lt[k], k
    assert t["distributions"]["tensorrt-cu13-bindings"] == "11.4.0.106" and t["modules"] == []
    assert not [f for f in said["findings"] if f["id"].startswith("tensorrt.")]
    missing = {f["evidence"]["needed"] for f in said["findings"] if f["id"] == "root.dependency_missing"}
    assert "libnvinfer.so.11" in missing and "tensorrt.libs_missing" in {f["id"] for f in live["findings"]}


def test_the_lean_runtimes_libraries_loaded_by_their_packages_import_are_no_missing_dependency(tmp_path):
    """The real lean and dispatch bindings' extension modules need libnvinfer_lean/dispatch.so.11, which no RPATH
    reaches: their __init__.py imports tensorrt_lean_libs, whose __init__.py ctypes-loads every library of its
    directory first. The live check imports them (tensorrt.ok); the root names only what the full bindings lack,
    as the live tensorrt.libs_missing does."""
    need(all(os.path.isdir(d) for d in TRT), "the TensorRT 11 bindings and lean wheels (.ci/fetch-real-wheels)")
    from tests.test_sysroot_check import _base_libs

    root, sp = _root(tmp_path, *TRT)
    _base_libs(root)
    said, live = _gd("--root", str(root)), _live(TRT)
    missing = {f["evidence"]["needed"]: f["evidence"]["needed_by"] for f in said["findings"] if f["id"] == "root.dependency_missing"}
    assert missing == {n: ["/" + SP + "/tensorrt_bindings/tensorrt.so"]
                       for n in ("libnvinfer.so.11", "libnvinfer_plugin.so.11", "libnvonnxparser.so.11")}
    live_ok = {f["evidence"]["path"].rsplit("/", 1)[-1] for f in live["findings"] if f["id"] == "tensorrt.ok"}
    assert live_ok == {"tensorrt_lean_bindings", "tensorrt_dispatch_bindings"}
    assert [f["evidence"]["module"].rsplit("/", 1)[-1] for f in live["findings"] if f["id"] == "tensorrt.libs_missing"] == ["tensorrt_bindings"]


def test_a_libnvinfer_named_by_its_soname_alone_takes_its_installs_nvinferversion_h(tmp_path):
    """FAKE in one respect: the real lean runtime's ELF stands in a libnvinfer.so.10 (no real full libnvinfer is
    fetched: its wheel is over 1 GB); NVIDIA's NvInferVersion.h of TensorRT 10.14.1.48 where Debian's
    libnvinfer-headers-dev puts it. The copy takes the header's version; the root's loader picks it."""
    need(os.path.isfile(LEAN_LIB), "the TensorRT lean wheel (.ci/fetch-real-wheels)")
    root = tmp_path / "rootfs"
    lib = root / "usr" / "lib" / "x86_64-linux-gnu"
    lib.mkdir(parents=True)
    shutil.copy2(LEAN_LIB, lib / "libnvinfer.so.10")
    t = _gd("--root", str(root))["probes"]["tensorrt"]["facts"]
    assert [c["version"] for c in t["libnvinfer"]] == ["10"]
    inc = root / "usr" / "include" / "x86_64-linux-gnu"
    inc.mkdir(parents=True)
    (inc / "NvInferVersion.h").write_text(NVINFER_VERSION_H)
    t = _gd("--root", str(root))["probes"]["tensorrt"]["facts"]
    (c,) = t["libnvinfer"]
    assert (c["version"], c["version_from"]) == ("10.14.1.48", "/usr/include/x86_64-linux-gnu/NvInferVersion.h")
    assert t["libnvinfer_loaded"] == {"libnvinfer.so.10": "/usr/lib/x86_64-linux-gnu/libnvinfer.so.10"}


def test_an_implausible_tensorrt_version_in_a_root_is_the_live_implausible_value(tmp_path):
    """FAKE in one respect: the real tensorrt-cu13-bindings dist-info renamed and its METADATA saying 99.1.0 (no
    TensorRT major is 99): the root and the live check both leave it out and say probe.implausible_value."""
    need(os.path.isdir(TRT[0]), "the real tensorrt-cu13-bindings wheel (.ci/fetch-real-wheels)")
    site = tmp_path / "site"
    shutil.copytree(TRT[0], site)
    old = next(d for d in os.listdir(site) if d.endswith(".dist-info"))
    new = site / "tensorrt_cu13_bindings-99.1.0.dist-info"
    os.rename(site / old, new)
    meta = (new / "METADATA").read_text()
    (new / "METADATA").write_text(meta.replace("Version: 11.4.0.106", "Version: 99.1.0"))
    root, _ = _root(tmp_path, str(site))
    said, live = _gd("--root", str(root)), _live([str(site)])
    assert said["probes"]["tensorrt"]["facts"]["distributions"] == {"tensorrt-cu13-bindings": None}
    ids = {"probe.implausible_value"}
    live_said = [(i, t.replace("(the tensorrt probe)", "(the root's files)")) for i, t in _said(live, ids, here=str(site))]
    assert _said(said, ids) == live_said != []  # the same file, value and words; who read it differs


def test_nccl_h_version_is_its_version_code_and_garbage_is_none():
    """The real nccl.h: NCCL_MAJOR/MINOR/PATCH say what its NCCL_VERSION_CODE encodes; a header without them,
    with a non-number or cut short says nothing."""
    need(os.path.isfile(NCCL_H), "nccl.h of nvidia-nccl-cu13 (.ci/fetch-real-wheels)")
    import re

    from gpudoctor.formats.nccl_env import nccl_version_from_int
    from gpudoctor.formats.nccl_header import parse_nccl_header_version

    with open(NCCL_H, encoding="utf-8") as fh:
        text = fh.read()
    code = int(re.search(r"#define NCCL_VERSION_CODE (\d+)", text).group(1))
    assert parse_nccl_header_version(text) == nccl_version_from_int(code)
    for bad in ("", None, "\x00\xff", text.replace("#define NCCL_PATCH", "#define NCCL_PATCH_X"),
                re.sub(r"#define NCCL_MINOR \d+", "#define NCCL_MINOR abc", text), text[:text.find("#define NCCL_MINOR")]):
        assert parse_nccl_header_version(bad) is None


def test_a_plugin_whose_record_is_garbage_or_gone_has_no_kernels_and_the_check_goes_on(tmp_path):
    """FAKE in one respect: the real jax-cuda13-plugin's RECORD replaced by bytes that are no CSV, then removed.
    The root's JAX has no kernels read (no arch finding, as the live probe without RECORD), nothing raises."""
    need(os.path.isdir(os.path.join(JAX, "jax_cuda13_plugin")), "jax and jax-cuda13-plugin in .ci/cache/jax-cuda13")
    root, sp = _root(tmp_path, JAX)
    record = next(sp / d for d in os.listdir(sp) if d.startswith("jax_cuda13_plugin-")) / "RECORD"
    for garbage in (b'\x00\xff"\xfe,' * 5000, None):
        record.unlink()  # a hard link to the cache's file: never written through
        if garbage is not None:
            record.write_bytes(garbage)
        said = _gd("--root", str(root), "--target-gpu", "H100")
        assert said["probes"]["root"]["status"] == "ok"
        assert said["probes"]["root"]["facts"]["frameworks"]["jax"]["archs"] is None
        assert not [f for f in said["findings"] if f["id"].startswith("arch.") or f["id"] == "gpudoctor.rule_error"]

