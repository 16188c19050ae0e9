"""Loader integrity (issue 24 item 3): the file the dynamic loader picks, checked against what it really is.

Every damaged file here is a real library of this machine, copied and then damaged (cut short, replaced by
a Git LFS pointer made from its own hash and size, emptied); the 32-bit library is assembled from source with
binutils (`as --32`, `ld -m elf_i386`): this machine has no 32-bit libc to link against. Where the loader's
pick matters, the real ld.so answers first (a child loads the library and reads /proc/self/maps)."""
from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import need
from gpudoctor.formats import elf_check
from gpudoctor.probes import loader as loader_probe
from gpudoctor.probes.libfind import LibraryIndex

ROOT = Path(__file__).resolve().parents[1]
NVML = "/usr/lib/x86_64-linux-gnu/nvidia/current/libnvidia-ml.so.1"  # Debian's libnvidia-ml1 (driver 535)
CUDA = "/usr/lib/x86_64-linux-gnu/nvidia/current/libcuda.so.1"


def real_copy(src: str, dest: Path) -> Path:
    need(os.path.isfile(src), src)
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(os.path.realpath(src), dest)
    return dest


def truncated(src: str, dest: Path, fraction: float = 0.5) -> Path:
    real_copy(src, dest)
    os.truncate(dest, int(os.path.getsize(dest) * fraction))
    return dest


def lfs_pointer(src: str, dest: Path) -> Path:
    """What `git clone` without `git lfs pull` leaves in place of ``src`` (the Git LFS pointer format, v1)."""
    need(os.path.isfile(src), src)
    data = Path(os.path.realpath(src)).read_bytes()
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(f"version https://git-lfs.github.com/spec/v1\noid sha256:{hashlib.sha256(data).hexdigest()}\n"
                    f"size {len(data)}\n")
    return dest


def i386_library(dest: Path, soname: str) -> Path:
    """A real 32-bit i386 shared library with ``soname``, assembled and linked with binutils."""
    need(shutil.which("as") and shutil.which("ld"), "binutils (as, ld)")
    dest.parent.mkdir(parents=True, exist_ok=True)
    src = dest.parent / "f.s"
    src.write_text(".globl f\n.type f,@function\nf:\n movl $1,%eax\n ret\n")
    subprocess.run(["as", "--32", "-o", str(dest) + ".o", str(src)], check=True)
    subprocess.run(["ld", "-m", "elf_i386", "-shared", "-soname", soname, "-o", str(dest), str(dest) + ".o"], check=True)
    os.unlink(str(dest) + ".o")
    src.unlink()
    return dest


def loaded_by_ld_so(target: str, fragment: str, env: dict) -> str:
    """Ground truth: the file of ``fragment`` the real loader maps when a child dlopens ``target``."""
    code = ("import ctypes, sys; ctypes.CDLL(sys.argv[1]); "
            "print(next(l.split()[-1] for l in open('/proc/self/maps') if sys.argv[2] in l.split()[-1]))")
    res = subprocess.run([sys.executable, "-c", code, target, fragment], env=env, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr[-1500:]
    return res.stdout.strip()


# ----- what a file is -----------------------------------------------------------------------------------------

def test_elf_check_names_what_a_library_file_really_is(tmp_path):
    need(os.path.isfile(NVML), NVML)
    good = elf_check.check_file(NVML)
    assert (good["kind"], good["elf_class"], good["machine"], good["truncated"]) == ("elf", 64, "x86-64", False)
    assert good["soname"] == "libnvidia-ml.so.1" and good["needs_bytes"] == os.path.getsize(os.path.realpath(NVML))

    cut = elf_check.check_file(str(truncated(NVML, tmp_path / "cut.so")))
    assert cut["kind"] == "elf" and cut["truncated"] and cut["needs_bytes"] == good["size"] > cut["size"]
    assert "cut short" in elf_check.what_it_is(cut)

    header_only = tmp_path / "header.so"
    header_only.write_bytes(Path(os.path.realpath(NVML)).read_bytes()[:40])
    assert elf_check.check_file(str(header_only))["truncated"]

    lfs = elf_check.check_file(str(lfs_pointer(NVML, tmp_path / "lfs.so")))
    assert lfs["kind"] == "git_lfs_pointer" and lfs["lfs_size"] == good["size"]
    assert elf_check.what_it_is(lfs).startswith("a Git LFS pointer")

    (tmp_path / "empty.so").write_bytes(b"")
    (tmp_path / "page.so").write_text("<!DOCTYPE html>\n<html><head><title>404 Not Found</title></head></html>\n")
    (tmp_path / "zeros.so").write_bytes(b"\0" * 8192)
    (tmp_path / "note.so").write_text("placeholder: download the driver from nvidia.com\n")
    kinds = {n: elf_check.check_file(str(tmp_path / n)) for n in ("empty.so", "page.so", "zeros.so", "note.so")}
    assert [kinds[n]["kind"] for n in ("empty.so", "page.so", "zeros.so", "note.so")] == ["empty", "html", "zeros", "text"]
    assert kinds["page.so"]["title"] == "404 Not Found"
    assert elf_check.check_file("/usr/lib/x86_64-linux-gnu/libc.so")["kind"] == "linker_script"  # glibc's own

    foreign = elf_check.check_file(str(i386_library(tmp_path / "i386.so", "libnvidia-ml.so.1")))
    assert (foreign["kind"], foreign["elf_class"], foreign["machine"], foreign["truncated"]) == ("elf", 32, "i386", False)


# ----- which file the loader picks, against the real loader ----------------------------------------------------

def _env(**kw) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD")}
    env.update(kw)
    return env


def test_loader_trace_agrees_with_ld_so_on_ld_library_path_and_foreign_class(tmp_path):
    need(os.path.isfile(NVML), NVML)
    mine = real_copy(NVML, tmp_path / "mine" / "libnvidia-ml.so.1")
    foreign = i386_library(tmp_path / "i386" / "libnvidia-ml.so.1", "libnvidia-ml.so.1")
    env = _env(LD_LIBRARY_PATH=f"{foreign.parent}:{mine.parent}")
    trace = LibraryIndex(env).loader_trace("libnvidia-ml.so.1")
    assert trace["path"] == str(mine) == loaded_by_ld_so("libnvidia-ml.so.1", "libnvidia-ml", env)
    assert trace["via"] == "LD_LIBRARY_PATH" and trace["entry"] == str(mine.parent)
    assert trace["skipped"] == [{"path": str(foreign), "via": "LD_LIBRARY_PATH", "entry": str(foreign.parent),
                                 "elf_class": 32, "machine": "i386"}]


@pytest.mark.parametrize("tag", ["rpath", "runpath"])
def test_loader_trace_follows_the_loading_objects_rpath_and_runpath(tmp_path, tag):
    """DT_RPATH is searched before LD_LIBRARY_PATH, DT_RUNPATH after it (ld.so(8)); $ORIGIN is the object's dir."""
    need(os.path.isfile(NVML) and shutil.which("gcc"), "gcc and Debian's libnvidia-ml1")
    beside = real_copy(NVML, tmp_path / "app" / "sub" / "libnvidia-ml.so.1")
    on_path = real_copy(NVML, tmp_path / "llp" / "libnvidia-ml.so.1")
    src = tmp_path / "app" / "user.c"
    src.write_text("int nvmlInit_v2(void);\nint user(void) { return nvmlInit_v2(); }\n")
    lib = tmp_path / "app" / "libuser.so"
    dtags = "--disable-new-dtags" if tag == "rpath" else "--enable-new-dtags"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib), str(src), f"-L{beside.parent}", "-l:libnvidia-ml.so.1",
                    "-Wl,-rpath,$ORIGIN/sub", f"-Wl,{dtags}"], check=True)
    env = _env(LD_LIBRARY_PATH=str(on_path.parent))
    trace = LibraryIndex(env).loader_trace("libnvidia-ml.so.1", loader=str(lib))
    assert trace["path"] == loaded_by_ld_so(str(lib), "libnvidia-ml", env)
    if tag == "rpath":
        assert (trace["path"], trace["via"], trace["loader"]) == (str(beside), "DT_RPATH", str(lib))
    else:
        assert (trace["path"], trace["via"]) == (str(on_path), "LD_LIBRARY_PATH")
        assert LibraryIndex(_env()).loader_trace("libnvidia-ml.so.1", loader=str(lib))["via"] == "DT_RUNPATH"


def test_loader_trace_sees_ld_preload(tmp_path):
    need(os.path.isfile(NVML), NVML)
    pre = real_copy(NVML, tmp_path / "pre" / "libnvidia-ml-custom.so")  # found by its SONAME, not its file name
    env = _env(LD_PRELOAD=str(pre))
    trace = LibraryIndex(env).loader_trace("libnvidia-ml.so.1")
    assert (trace["path"], trace["via"]) == (str(pre), "LD_PRELOAD")
    assert trace["path"] == loaded_by_ld_so("libnvidia-ml.so.1", "libnvidia-ml", env)


# ----- the real check -----------------------------------------------------------------------------------------

def check(tmp_path, env_extra) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1", XDG_CACHE_HOME=str(tmp_path / "cache"))
    env.update(env_extra)
    out = tmp_path / "report.json"
    proc = subprocess.run([sys.executable, "-m", "gpudoctor", "check", "--json", "--no-smoke", "--timeout", "30",
                           "-o", str(out)], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    return json.loads(out.read_text())


def _blames(report, path) -> list:
    """Warn/fail findings other than library.damaged whose title or evidence path is ``path``."""
    return [f for f in report["findings"] if f["severity"] in ("warn", "fail") and f["id"] != "library.damaged"
            and (f["evidence"].get("path") == path or f["title"].startswith(os.path.basename(path) + " "))]


def test_check_names_a_git_lfs_pointer_picked_as_libcuda(tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    pointer = lfs_pointer(CUDA, tmp_path / "lfs" / "libcuda.so.1")
    report = check(tmp_path, {"LD_LIBRARY_PATH": f"{pointer.parent}:{other}"})
    hits = [f for f in report["findings"] if f["id"] == "library.damaged" and f["evidence"]["path"] == str(pointer)]
    assert hits and hits[0]["severity"] == "fail", [f["title"] for f in report["findings"]]
    f = hits[0]
    assert f["title"].startswith(f"libcuda.so.1 picked from LD_LIBRARY_PATH entry {pointer.parent} is a Git LFS pointer")
    ev = f["evidence"]
    assert ev["via"] == "LD_LIBRARY_PATH" and ev["entry"] == str(pointer.parent) and ev["kind"] == "git_lfs_pointer"
    assert ev["expected_bytes"] == os.path.getsize(os.path.realpath(CUDA)) > ev["size_bytes"]
    commands = [c for fx in f["fixes"] for c in fx["commands"]]
    assert f"export LD_LIBRARY_PATH={other}" in commands and any("git lfs pull" in c for c in commands)
    assert not _blames(report, sys.executable)
    # cuda-python's "libcuda not found" is the pointer's doing, said once by library.damaged
    assert not [x for x in report["findings"] if x["id"] == "library.not_found" and "libcuda" in x["title"]]


def test_truncated_libnvidia_ml_crash_is_blamed_on_the_file_not_on_python(tmp_path):
    cut = truncated(NVML, tmp_path / "cut" / "libnvidia-ml.so.1")
    env = dict(os.environ, LD_LIBRARY_PATH=str(cut.parent))
    # Ground truth: a real program loading the library in this environment dies of SIGBUS.
    real = subprocess.run([sys.executable, "-c", "import ctypes; ctypes.CDLL('libnvidia-ml.so.1')"], env=env,
                          capture_output=True, timeout=60)
    assert real.returncode == -signal.SIGBUS
    report = check(tmp_path, {"LD_LIBRARY_PATH": str(cut.parent)})
    hits = [f for f in report["findings"] if f["id"] == "library.damaged" and f["evidence"]["path"] == str(cut)]
    assert hits and hits[0]["severity"] == "fail", [f["title"] for f in report["findings"]]
    f = hits[0]
    assert "cut short" in f["title"] and "nvml worker crash" in f["title"]
    crashed = f["evidence"]["crashed"]
    assert any("gpudoctor.process.worker nvml" in c["command"] and c["kind"] == "signal" for c in crashed)
    assert not [x for x in report["findings"] if x["id"] == "tool.failed" and "SIGBUS" in x["title"]]
    assert not _blames(report, sys.executable)


# ----- the probe's list of what the probes load comes from the code --------------------------------------------

_LOADS = re.compile(r"""(?:copies|loader_pick|loader_trace|_loaded_library|CDLL)\(\s*f?["'](lib[A-Za-z_+-]+?)[."'{]""")
_ASKED = re.compile(r"""startswith\(\s*["'](lib[A-Za-z_+-]+)["']""")


def test_loader_probe_covers_every_library_the_probes_load():
    """Every library name the probes and their children look up, dlopen or ask about (and the names
    pynvml and cuda.bindings dlopen) is one the loader probe checks: a new load without a row here fails."""
    covered = [(stem, more) for stem, more, *_ in loader_probe.LOADED]
    sources = [Path(p) for p in glob.glob(str(ROOT / "gpudoctor" / "process" / "*.py"))
               + glob.glob(str(ROOT / "gpudoctor" / "probes" / "*.py"))]
    found = set()
    for src in sources:
        if src.name == "loader.py":
            continue
        text = src.read_text()
        found.update(_LOADS.findall(text))
        if src.name == "worker.py":  # task_libversions / task_stubcheck branch on the library's name
            found.update(_ASKED.findall(text))
    import importlib.util

    spec = importlib.util.find_spec("pynvml")  # nvidia-ml-py, which the NVML worker imports
    need(spec is not None and spec.origin, "nvidia-ml-py")
    found.update(re.findall(r'CDLL\("(lib[a-z-]+)\.so', Path(spec.origin).read_text()))
    found -= {"libtorch_cuda"}  # frameworks.py reads its fatbinaries; nothing loads it
    assert found >= {"libcuda", "libnvidia-ml", "libcudart", "libcudnn", "libnvinfer", "libnccl", "libnvrtc"}
    missing = sorted(s for s in found if not any(s == c or (more == "*" and s.startswith(c)) for c, more in covered))
    assert not missing, f"the probes load {missing}; add them to gpudoctor.probes.loader.LOADED"


def test_a_pointer_the_loader_never_reaches_is_a_warning_not_a_failure(tmp_path):
    """NVIDIA's libnvrtc carries DT_RPATH $ORIGIN: its own libnvrtc-builtins wins over one on LD_LIBRARY_PATH.
    The real NVRTC compiles in this environment, so the pointer is a warning, and the pick is the wheel's file."""
    from gpudoctor.probes.libfind import site_packages_dirs

    wheel = next((Path(d) / "nvidia" / "cu13" / "lib" for d in site_packages_dirs()
                  if (Path(d) / "nvidia" / "cu13" / "lib" / "libnvrtc.so.13").exists()), None)
    need(wheel is not None, "the nvidia-cuda-nvrtc 13 wheel")
    builtins = next(wheel.glob("libnvrtc-builtins.so.13.*"))
    pointer = lfs_pointer(str(builtins), tmp_path / "lfs" / builtins.name)
    env = _env(LD_LIBRARY_PATH=str(pointer.parent))
    code = ("from cuda.bindings import nvrtc; e, p = nvrtc.nvrtcCreateProgram(b'__global__ void k(){}', b'k.cu', 0, [], []);"
            "print(nvrtc.nvrtcCompileProgram(p, 0, [])[0].name)")
    real = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert real.stdout.strip() == "NVRTC_SUCCESS", real.stderr[-1500:]

    from conftest import ctx
    from gpudoctor.rules import Facts, RuleContext
    from gpudoctor.rules.fixes import OsFlavor
    from gpudoctor.rules.loader import loader_integrity

    facts = loader_probe.probe(ctx(LD_LIBRARY_PATH=str(pointer.parent)))
    pick = next(p for p in facts["libraries"] if p["soname"] == builtins.name)
    assert (pick["path"], pick["via"]) == (str(builtins), "DT_RPATH")
    found = [f for f in loader_integrity(Facts({"loader": facts}), RuleContext(None, OsFlavor("debian", "debian", "12")))
             if f.evidence.get("path") == str(pointer)]
    assert [(f.id, f.severity.value) for f in found] == [("library.damaged", "warn")]
    assert found[0].title.startswith(f"{builtins.name} found in LD_LIBRARY_PATH ({pointer.parent}) is a Git LFS pointer")


def judge_loader(**env) -> list:
    """The loader rule's findings on the real loader probe's facts in ``env`` (on top of this environment)."""
    from conftest import ctx
    from gpudoctor.rules import Facts, RuleContext
    from gpudoctor.rules.fixes import OsFlavor
    from gpudoctor.rules.loader import loader_integrity

    facts = loader_probe.probe(ctx(**env))
    return loader_integrity(Facts({"loader": facts}), RuleContext(None, OsFlavor("debian", "debian", "12")))


def test_a_preload_ld_so_ignores_is_a_warning_with_its_unset_line(tmp_path):
    cudart = "/usr/local/cuda/lib64/libcudart.so.13"
    pointer = lfs_pointer(cudart, tmp_path / "pre" / "libcudart.so.13")
    real = subprocess.run([sys.executable, "-c", "print('ran')"], env=_env(LD_PRELOAD=str(pointer)),
                          capture_output=True, text=True, timeout=60)
    assert real.stdout.strip() == "ran" and "cannot be preloaded (invalid ELF header): ignored" in real.stderr
    found = [f for f in judge_loader(LD_PRELOAD=str(pointer), LD_LIBRARY_PATH=None) if f.evidence.get("path") == str(pointer)]
    assert [(f.id, f.severity.value) for f in found] == [("library.damaged", "warn")]
    assert found[0].title.startswith(f"libcudart.so.13 preloaded by LD_PRELOAD ({pointer}) is a Git LFS pointer")
    assert "unset LD_PRELOAD" in [c for fx in found[0].fixes for c in fx.commands]


def test_a_foreign_class_library_alone_on_the_path_is_named_once(tmp_path):
    foreign = i386_library(tmp_path / "i386" / "libnccl.so.2", "libnccl.so.2")
    env = _env(LD_LIBRARY_PATH=str(foreign.parent))
    real = subprocess.run([sys.executable, "-c", "import ctypes; ctypes.CDLL('libnccl.so.2')"], env=env,
                          capture_output=True, text=True, timeout=60)
    if "wrong ELF class" not in real.stderr:
        pytest.skip(f"another libnccl.so.2 is on this machine's search path: {real.stderr[-200:]}")
    found = [f for f in judge_loader(LD_LIBRARY_PATH=str(foreign.parent)) if f.id == "library.wrong_arch"]
    assert len(found) == 1 and found[0].severity.value == "warn"  # NCCL is loaded by path too (a wheel's copy)
    assert found[0].title.startswith(f"libnccl.so.2: the only file the loader finds, {foreign} (LD_LIBRARY_PATH), "
                                     "is a 32-bit i386 library")


def test_a_cut_wheel_copy_that_crashes_its_version_child_is_blamed(tmp_path):
    """A copy no loader search picks (a wheel's, found through sys.path) but that a probe's child loads by path:
    the child's SIGBUS is the file's, and the copy's warning becomes a failure."""
    cudart = "/usr/local/cuda/lib64/libcudart.so.13"
    site = tmp_path / "site-packages"
    cut = truncated(cudart, site / "nvidia" / "cuda_runtime" / "lib" / "libcudart.so.13")
    report = check(tmp_path, {"PYTHONPATH": f"{ROOT}:{site}", "LD_LIBRARY_PATH": ""})
    hits = [f for f in report["findings"] if f["id"] == "library.damaged" and f["evidence"]["path"] == str(cut)]
    assert hits and hits[0]["severity"] == "fail", [f["title"] for f in report["findings"]]
    assert hits[0]["title"].startswith(f"libcudart.so.13 found in pip ({cut.parent}) is an ELF file cut short")
    assert ["SIGBUS" in c["what"] for c in hits[0]["evidence"]["crashed"]] == [True]  # the version child it killed
    assert not _blames(report, str(cut)) and not _blames(report, sys.executable)


# ----- a damaged pick's failure is the file's, not the driver's or the library's ------------------------------

def test_an_html_page_as_libnvidia_ml_is_the_files_fault_not_a_missing_driver(tmp_path):
    """NVML loads an HTML error page saved as libnvidia-ml.so.1: pynvml says "NVML Shared Library Not Found",
    but an intact libnvidia-ml is installed. The report names the file; it never says the driver is missing
    (this machine has no kernel module: that, and only that, is the driver's finding)."""
    need(os.path.isfile(NVML), NVML)
    page = tmp_path / "html" / "libnvidia-ml.so.1"
    page.parent.mkdir()
    page.write_text("<html><head><title>404 Not Found</title></head><body>404 Not Found</body></html>\n")
    real = subprocess.run([sys.executable, "-c", "import ctypes; ctypes.CDLL('libnvidia-ml.so.1')"],
                          env=_env(LD_LIBRARY_PATH=str(page.parent)), capture_output=True, text=True, timeout=60)
    assert "invalid ELF header" in real.stderr  # ground truth: the loader stops at the page
    report = check(tmp_path, {"LD_LIBRARY_PATH": str(page.parent)})
    ids = {(f["id"], f["severity"]) for f in report["findings"]}
    hits = [f for f in report["findings"] if f["id"] == "library.damaged" and f["evidence"]["path"] == str(page)]
    assert hits and hits[0]["severity"] == "fail", ids
    assert not [f for f in report["findings"] if f["id"] in ("driver.missing", "driver.nvml_error")], ids
    if not os.path.exists("/proc/driver/nvidia/version"):
        drv = [f for f in report["findings"] if f["id"] == "driver.not_loaded"]
        assert drv and "user space is installed" in drv[0]["title"], ids
        assert "nvidia-smi" not in drv[0]["title"]  # it failed on the page too: library.damaged says so


def test_a_cut_cudnn_is_reported_once_as_the_file(tmp_path):
    """A cut libcudnn.so.9 first on LD_LIBRARY_PATH kills the version child with SIGBUS: library.damaged says
    so; no cuDNN finding blames the interpreter or counts the cut file's name as a cuDNN version."""
    from gpudoctor.probes.libfind import site_packages_dirs

    sites = site_packages_dirs() + glob.glob(str(ROOT / ".ci" / "cache" / "*" / "site-packages"))  # .ci/fetch-real-wheels
    src = next((str(p) for d in sites for p in (Path(d) / "nvidia" / "cudnn" / "lib").glob("libcudnn.so.9")), None)
    need(src, "the nvidia-cudnn wheel")
    cut = truncated(src, tmp_path / "cut" / "libcudnn.so.9")
    real = subprocess.run([sys.executable, "-c", "import ctypes; ctypes.CDLL('libcudnn.so.9')"],
                          env=_env(LD_LIBRARY_PATH=str(cut.parent)), capture_output=True, timeout=60)
    assert real.returncode == -signal.SIGBUS
    report = check(tmp_path, {"LD_LIBRARY_PATH": str(cut.parent)})
    hits = [f for f in report["findings"] if f["id"] == "library.damaged" and f["evidence"]["path"] == str(cut)]
    assert hits and hits[0]["severity"] == "fail", [f["title"] for f in report["findings"]]
    cudnn = [f for f in report["findings"] if f["id"].startswith("cudnn.")]
    assert not [f for f in cudnn if f["id"] == "cudnn.broken" or "SIGBUS" in f["title"]], [f["title"] for f in cudnn]
    listed = [v for f in cudnn if f["title"].startswith(("2 cuDNN", "3 cuDNN")) for v in f["title"].split(": ", 1)[1].split(", ")]
    assert "9" not in listed  # the cut file has no version: its name's "9" is none


def test_empty_builtins_before_a_plain_libnvrtc_are_passed_over_by_the_wheels_libnvrtc(tmp_path):
    """The GPU machine's state: empty libnvrtc-builtins.so.13.X and .so.13 first on LD_LIBRARY_PATH, and a
    libnvrtc.so.13 a plain dlopen finds after them (the toolkit's, in the ldconfig cache there; a copy of the
    wheel's here). The workers load libnvrtc through cuda.pathfinder, which opens the wheel's copy; its DT_RPATH
    $ORIGIN is searched before LD_LIBRARY_PATH, so NVRTC gets the wheel's builtins and compiles: the empty
    files are warnings, and the builtins pick is the wheel's file via DT_RPATH."""
    from gpudoctor.probes.libfind import site_packages_dirs

    wheel = next((Path(d) / "nvidia" / "cu13" / "lib" for d in site_packages_dirs()
                  if (Path(d) / "nvidia" / "cu13" / "lib" / "libnvrtc.so.13").exists()), None)
    need(wheel is not None, "the nvidia-cuda-nvrtc 13 wheel")
    builtins = next(wheel.glob("libnvrtc-builtins.so.13.*"))
    empty = tmp_path / "empty"
    empty.mkdir()
    for name in (builtins.name, "libnvrtc-builtins.so.13"):
        (empty / name).write_bytes(b"")
    plain = real_copy(str(wheel / "libnvrtc.so.13"), tmp_path / "plain" / "libnvrtc.so.13")
    ldp = f"{empty}:{plain.parent}"
    code = ("from cuda.bindings import nvrtc; e, p = nvrtc.nvrtcCreateProgram(b'__global__ void k(){}', b'k.cu', 0, [], []);"
            "print(nvrtc.nvrtcCompileProgram(p, 0, [])[0].name)")
    real = subprocess.run([sys.executable, "-c", code], env=_env(LD_LIBRARY_PATH=ldp), capture_output=True, text=True,
                          timeout=120)
    assert real.stdout.strip() == "NVRTC_SUCCESS", real.stderr[-1500:]  # ground truth: the worker's way compiles

    from conftest import ctx

    facts = loader_probe.probe(ctx(LD_LIBRARY_PATH=ldp))
    nvrtc = [p for p in facts["libraries"] if p["soname"] == "libnvrtc.so.13"]
    assert {(p["path"], p["via"]) for p in nvrtc} == {(str(wheel / "libnvrtc.so.13"), "cuda.pathfinder"),
                                                       (str(plain), "LD_LIBRARY_PATH")}
    pick = next(p for p in facts["libraries"] if p["soname"] == builtins.name)
    assert (pick["path"], pick["via"]) == (str(builtins), "DT_RPATH")
    found = [f for f in judge_loader(LD_LIBRARY_PATH=ldp) if f.id == "library.damaged"]
    assert sorted((f.evidence["path"], f.severity.value) for f in found) == \
        sorted((str(empty / n), "warn") for n in (builtins.name, "libnvrtc-builtins.so.13"))


def test_an_lfs_libnvrtc_the_workers_pass_over_still_fails_a_dlopen_by_name(tmp_path):
    """An LFS pointer as libnvrtc.so.13 first on LD_LIBRARY_PATH: a dlopen by name fails ("invalid ELF header":
    the GPU run's ground truth too), so it stays a failure, but it is not what the NVRTC worker loads (the
    wheel's copy, through cuda.pathfinder): the title says so and a worker failure is never pinned on it."""
    from gpudoctor.probes.libfind import site_packages_dirs

    wheel = next((Path(d) / "nvidia" / "cu13" / "lib" for d in site_packages_dirs()
                  if (Path(d) / "nvidia" / "cu13" / "lib" / "libnvrtc.so.13").exists()), None)
    need(wheel is not None, "the nvidia-cuda-nvrtc 13 wheel")
    pointer = lfs_pointer(str(wheel / "libnvrtc.so.13"), tmp_path / "lfs" / "libnvrtc.so.13")
    real = subprocess.run([sys.executable, "-c", "import ctypes; ctypes.CDLL('libnvrtc.so.13')"],
                          env=_env(LD_LIBRARY_PATH=str(pointer.parent)), capture_output=True, text=True, timeout=60)
    assert "invalid ELF header" in real.stderr
    found = [f for f in judge_loader(LD_LIBRARY_PATH=str(pointer.parent)) if f.id == "library.damaged"]
    assert [(f.evidence["path"], f.severity.value) for f in found] == [(str(pointer), "fail")]
    assert f"cuda.pathfinder loads {wheel / 'libnvrtc.so.13'}" in found[0].title
    assert "worker nvrtc-smoke" not in (found[0].evidence.get("loaded_by") or [])


def test_the_differentials_culprit_for_a_crash_a_damaged_file_explains_is_that_file(tmp_path):
    """The NVML worker's SIGBUS on a cut libnvidia-ml goes away without the LD_LIBRARY_PATH entry holding it (the
    differential verifies that for real): damaged_explains says library.damaged already names that cause."""
    from gpudoctor.rules import Facts
    from gpudoctor.rules.differential import _walk
    from gpudoctor.rules.loader import damaged_explains

    cut = truncated(NVML, tmp_path / "cut" / "libnvidia-ml.so.1")
    report = check(tmp_path, {"LD_LIBRARY_PATH": str(cut.parent)})
    facts = Facts({k: v.get("facts") for k, v in report["probes"].items()})
    diffs = [d for _, f in facts.items() for d in _walk(f) if d.get("culprits")]
    if not diffs:
        pytest.skip("no probe reran a failed step in a clean environment here")
    assert all(damaged_explains(facts, d["culprits"]) for d in diffs), [d["culprits"] for d in diffs]
    assert not damaged_explains(facts, [{"var": "CUDA_VISIBLE_DEVICES", "value": "0"}])


def test_a_damaged_pick_only_gpudoctors_workers_would_load_and_ran_past_is_a_warning():
    """The H100 run's state: empty libnvrtc-builtins.so.13.0 first on LD_LIBRARY_PATH; the NVRTC worker's loader
    found the wheel's own copy (CuPy's NVRTC compile worked, ground truth), so no step crashed or quoted the file.
    The pick is shown (warn), never a failure; the same pick that a plain dlopen by name gets stays a failure."""
    from gpudoctor.rules import Facts
    from gpudoctor.rules.loader import loader_integrity
    from conftest import rule_context

    empty = {"path": "/tmp/x/empty/libnvrtc-builtins.so.13.0", "realpath": "/tmp/x/empty/libnvrtc-builtins.so.13.0",
             "via": "LD_LIBRARY_PATH", "entry": "/tmp/x/empty", "soname": "libnvrtc-builtins.so.13.0",
             "loaded_by": ["worker nvrtc-smoke"], "file": {"size": 0, "kind": "empty"}}
    loader = {"process": {"elf_class": 64, "machine": "x86-64"}, "libraries": [empty], "copies": []}
    (f,) = loader_integrity(Facts({"loader": loader, "smoke_nvrtc": {"compiled": True}}), rule_context())
    assert f.severity.value == "warn" and "ran without loading it" in f.title, f.title
    by_name = dict(empty, loaded_by=["programs that dlopen it by name"])
    (f,) = loader_integrity(Facts({"loader": dict(loader, libraries=[by_name])}), rule_context())
    assert f.severity.value == "fail", f.title


def test_another_library_saved_under_libcudas_name_is_named_by_its_soname(tmp_path):
    """The real driver-535 libnvidia-ml.so.1 copied as libcuda.so.1 into a directory first on LD_LIBRARY_PATH (a
    hand-made 'fix'): ground truth, the real loader opens it and cuInit is not there; the report names the file
    and what it really is, from its own DT_SONAME."""
    import ctypes

    fake = tmp_path / "vendor" / "libcuda.so.1"
    fake.parent.mkdir()
    shutil.copy(os.path.realpath(NVML), fake)
    env = dict(os.environ, LD_LIBRARY_PATH=str(fake.parent))
    real = subprocess.run([sys.executable, "-c", "import ctypes; ctypes.CDLL('libcuda.so.1').cuInit"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert real.returncode != 0 and "cuInit" in real.stderr  # undefined symbol: the name hides another library
    report = check(tmp_path, {"LD_LIBRARY_PATH": str(fake.parent)})
    hits = [f for f in report["findings"] if f["id"] == "library.misnamed" and f["evidence"]["path"] == str(fake)]
    assert hits and hits[0]["severity"] == "fail", [f["title"] for f in report["findings"]]
    assert "is libnvidia-ml.so.1 (its DT_SONAME), not libcuda.so.1" in hits[0]["title"]
    assert any(c.startswith("unset LD_LIBRARY_PATH") or c.startswith("export LD_LIBRARY_PATH")
               for fx in hits[0]["fixes"] for c in fx["commands"])


def test_a_title_that_names_a_verified_environment_cause_points_at_the_finding_that_says_it():
    """The H100 run's ldscript_libcuda state: the smoke binary's run failed only because of an LD_LIBRARY_PATH
    entry whose libcuda.so.1 is a linker script; environment.breaks_step defers to library.damaged there, so the
    smoke title must point at library.damaged, not at a finding the report does not hold."""
    from gpudoctor.rules import Facts
    from gpudoctor.rules.differential import verified_cause

    entry = "/tmp/x/script"
    script = {"path": f"{entry}/libcuda.so.1", "realpath": f"{entry}/libcuda.so.1", "via": "LD_LIBRARY_PATH", "entry": entry,
              "soname": "libcuda.so.1", "loaded_by": ["worker cuda"], "file": {"size": 60, "kind": "linker_script"}}
    facts = Facts({"loader": {"process": {"elf_class": 64, "machine": "x86-64"}, "libraries": [script], "copies": []}})
    diff = {"verified": True, "clean_base_passes": True, "culprits": [{"var": "LD_LIBRARY_PATH", "value": entry}]}
    assert verified_cause(diff, facts).endswith("(see library.damaged)")
    assert verified_cause(diff, Facts({})).endswith("(see environment.breaks_step)")
