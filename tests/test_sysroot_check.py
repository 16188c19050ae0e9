"""`gpudoctor check --root DIR`: a Linux root laid out from real files of this machine (Debian's driver 535
libraries with their /etc/alternatives links, the CUDA 13.0 toolkit's libcudart and header, Debian's CUDA 11.8
libcudart, the real cuDNN wheel) judged from its files by the live check's rules, nothing in it executed;
bad options are one line and exit 2."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.test_sysroot_libindex import CUDNN, LIBCUDA, _copy_chain

CUDART13 = "/usr/local/cuda/lib64/libcudart.so.13"
CUDART11 = "/usr/lib/x86_64-linux-gnu/libcudart.so.11.0"
HEADER = "/usr/local/cuda/include/cuda_runtime_api.h"
needs_parts = pytest.mark.skipif(not all(os.path.exists(p) for p in (LIBCUDA, CUDART13, HEADER, CUDNN)),
                                 reason="needs .ci/install-real-parts, the CUDA 13.0 toolkit and .ci/fetch-real-wheels")


def _gd(*args, env=None):
    return subprocess.run([sys.executable, "-m", "gpudoctor", "check", *args], capture_output=True, text=True,
                          timeout=120, env=env)


#: What every real image holds and the CUDA libraries need (DT_NEEDED): glibc, libstdc++, libgcc_s.
BASE_SONAMES = ("libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1", "libstdc++.so.6",
                "libgcc_s.so.1", "libz.so.1")


def _base_libs(root):
    """This machine's real glibc, libstdc++ and libgcc_s copied into ``root`` where Debian keeps them."""
    lib = root / "usr" / "lib" / "x86_64-linux-gnu"
    lib.mkdir(parents=True, exist_ok=True)
    for soname in BASE_SONAMES:
        src = os.path.join("/usr/lib/x86_64-linux-gnu", soname)
        if os.path.exists(src):
            shutil.copy2(os.path.realpath(src), lib / soname)
    (root / "lib64").mkdir(exist_ok=True)
    shutil.copy2(os.path.realpath("/lib64/ld-linux-x86-64.so.2"), root / "lib64" / "ld-linux-x86-64.so.2")


def _root(tmp_path, cuda11=False):
    root = tmp_path / "rootfs"
    (root / "etc").mkdir(parents=True)
    _base_libs(root)
    (root / "etc" / "os-release").write_text('PRETTY_NAME="Ubuntu 22.04.4 LTS"\nID=ubuntu\nID_LIKE=debian\nVERSION_ID="22.04"\n')
    _copy_chain(LIBCUDA, str(root))
    tk = root / "usr" / "local" / "cuda-13.0"
    (tk / "lib64").mkdir(parents=True)
    (tk / "include").mkdir()
    shutil.copy2(CUDART13, tk / "lib64" / "libcudart.so.13")
    shutil.copy2(HEADER, tk / "include" / "cuda_runtime_api.h")
    (tk / "bin").mkdir()
    marker = tmp_path / "EXECUTED"
    nvcc = tk / "bin" / "nvcc"  # if anything ran the image's programs, this would say so
    nvcc.write_text(f"#!/bin/sh\ntouch {marker}\n")
    nvcc.chmod(0o755)
    os.symlink("cuda-13.0", root / "usr" / "local" / "cuda")
    shutil.copytree(CUDNN, root / "usr" / "local" / "lib" / "python3.10" / "dist-packages")
    if cuda11:
        shutil.copy2(CUDART11, root / "usr" / "local" / "lib" / "libcudart.so.11.0")
    env = tmp_path / "image.env"
    env.write_text("PATH=/usr/local/cuda/bin:/usr/bin:/bin\nLD_LIBRARY_PATH=/usr/local/lib\n")
    return root, env, marker


@needs_parts
def test_a_root_is_judged_by_the_live_rules_against_the_hosts_driver_and_nothing_in_it_runs(tmp_path):
    root, env, marker = _root(tmp_path)
    old = _gd("--root", str(root), "--env", str(env), "--driver", "535.104.05", "--target-gpu", "H100", "--json")
    assert old.returncode == 1, old.stderr
    report = json.loads(old.stdout)
    ids = {f["id"]: f for f in report["findings"]}
    assert ids["driver.too_old"]["title"].startswith("Driver 535.104.05 (CUDA ≤ 12.2) is too old for 13.0 runtimes")
    assert "13.0" in ids["root.inventory"]["title"] and "libcudnn 9." in ids["root.inventory"]["title"]
    assert report["options"]["driver"] == "535.104.05" and report["options"]["target_gpus"] == ["H100 (9.0)"]
    new = _gd("--root", str(root), "--env", str(env), "--driver", "580.95.05")
    shown = " ".join(new.stdout.split())  # prose may wrap where the environment sets COLUMNS
    assert "driver.too_old" not in shown and f"Ubuntu 22.04.4 LTS in {root} (read from its files)" in shown
    # its one failure is the real one: the CI cuDNN wheel is cut to libcudnn.so.9 (see the cuDNN test below)
    failed = [f["id"] for f in json.loads(_gd("--root", str(root), "--env", str(env), "--driver", "580.95.05",
                                             "--json").stdout)["findings"] if f["severity"] == "fail"]
    assert new.returncode == 1 and failed == ["cudnn.broken"], new.stdout
    assert not marker.exists()


@needs_parts
@pytest.mark.skipif(not os.path.exists(CUDART11), reason="needs Debian's CUDA 11.8 (.ci/install-real-parts)")
def test_cuda_runtimes_of_two_majors_in_one_root_are_named(tmp_path):
    root, env, _ = _root(tmp_path, cuda11=True)
    out = _gd("--root", str(root), "--env", str(env), "--json")
    (f,) = [f for f in json.loads(out.stdout)["findings"] if f["id"] == "root.cuda_majors_mixed"]
    assert f["severity"] == "warn" and f["title"] == "CUDA libraries of 2 majors in one root: CUDA 11: libcudart; CUDA 13: libcudart"
    assert f["evidence"]["cuda_11"] == ["/usr/local/lib/libcudart.so.11.0"]


@pytest.mark.parametrize("args, words", [
    (["--root", "/nonexistent-gd-root"], "--root /nonexistent-gd-root: not a directory"),
    (["--root", ".", "--image", "x.tar"], "give one of --root DIR or --image FILE"),
    (["--driver", "535.104.05"], "give one of --root DIR or --image FILE"),
    (["--root", ".", "--driver", "latest"], "--driver 'latest' is not an NVIDIA driver version"),
    (["--root", ".", "--engine", "x.plan"], "--engine needs a live system"),
    (["--image", "/nonexistent-gd.tar"], "--image /nonexistent-gd.tar: no such file"),
])
def test_bad_root_options_are_one_line_and_exit_2(args, words):
    r = _gd(*args)
    assert r.returncode == 2 and r.stderr.strip() == f"gpudoctor: error: {words}" or words in r.stderr, r.stderr
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and r.stdout == ""


def test_a_bad_env_file_is_one_line_and_exit_2(tmp_path):
    bad = tmp_path / "bad.env"
    bad.write_text("PATH=/bin\nnot an assignment\n")
    r = _gd("--root", str(tmp_path), "--env", str(bad))
    assert r.returncode == 2 and r.stderr.strip() == f"gpudoctor: error: {bad}, line 2: not KEY=VALUE: 'not an assignment'"


def _docker_save(root, path, env_list):
    """A `docker save` archive (classic layout) of ``root`` as one layer, with an image config holding Env."""
    import hashlib
    import io
    import tarfile

    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w") as t:
        for name in sorted(os.listdir(root)):
            t.add(os.path.join(root, name), arcname=name)  # links are stored as links
    data = layer.getvalue()
    config = json.dumps({"architecture": "amd64", "os": "linux", "config": {"Env": env_list},
                         "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(data).hexdigest()]}}).encode()
    cfg_name = hashlib.sha256(config).hexdigest() + ".json"
    with tarfile.open(path, "w") as out:
        for name, blob in (("abc/layer.tar", data), (cfg_name, config),
                           ("manifest.json", json.dumps([{"Config": cfg_name, "RepoTags": ["cuda-app:test"],
                                                          "Layers": ["abc/layer.tar"]}]).encode())):
            info = tarfile.TarInfo(name)
            info.size = len(blob)
            out.addfile(info, io.BytesIO(blob))


def _judged(stdout):
    return sorted((f["id"], f["severity"], f["title"]) for f in json.loads(stdout)["findings"])


@needs_parts
def test_an_image_archive_gets_the_findings_of_its_root_and_leaves_nothing_behind(tmp_path):
    root, env, marker = _root(tmp_path, cuda11=os.path.exists(CUDART11))
    archive = tmp_path / "image.tar"
    _docker_save(root, archive, ["PATH=/usr/local/cuda/bin:/usr/bin:/bin", "LD_LIBRARY_PATH=/usr/local/lib"])
    by_root = _gd("--root", str(root), "--env", str(env), "--driver", "535.104.05", "--json")
    tmp = tmp_path / "tmpdir"
    tmp.mkdir()
    by_image = _gd("--image", str(archive), "--driver", "535.104.05", "--json", env=dict(os.environ, TMPDIR=str(tmp)))
    assert by_image.returncode == by_root.returncode == 1, by_image.stderr
    assert _judged(by_image.stdout) == _judged(by_root.stdout)
    assert json.loads(by_image.stdout)["options"]["root"] == f"image {archive}"
    with open(archive, "rb") as fh:  # docker save IMAGE | gpudoctor check --image -
        piped = subprocess.run([sys.executable, "-m", "gpudoctor", "check", "--image", "-", "--driver", "535.104.05",
                                "--json"], stdin=fh, capture_output=True, text=True, timeout=120,
                               env=dict(os.environ, TMPDIR=str(tmp)))
    assert _judged(piped.stdout) == _judged(by_root.stdout), piped.stderr
    assert list(tmp.iterdir()) == [] and not marker.exists()  # the temporary root is gone; nothing ran


def test_a_crafted_image_is_refused_with_exit_2_and_nothing_written_outside(tmp_path):
    import io
    import tarfile

    archive = tmp_path / "evil.tar"
    with tarfile.open(archive, "w") as t:
        info = tarfile.TarInfo("../../escaped")
        info.size = 4
        t.addfile(info, io.BytesIO(b"evil"))
    tmp = tmp_path / "tmpdir"
    tmp.mkdir()
    r = _gd("--image", str(archive), env=dict(os.environ, TMPDIR=str(tmp)))
    assert r.returncode == 2 and r.stderr.startswith(f"gpudoctor: error: --image {archive}: ") and r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1 and "escaped" in r.stderr
    assert list(tmp.iterdir()) == [] and not (tmp_path.parent / "escaped").exists()


VENV_CU13 = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), ".venv", "lib")
CURAND = os.path.join(os.path.dirname(CUDNN), "..", "curand-cu12", "site-packages", "nvidia", "curand", "lib", "libcurand.so.10")


def _real_cu13_lib():
    import glob

    hits = glob.glob(os.path.join(VENV_CU13, "python3*", "site-packages", "nvidia", "cu13", "lib", "libcudart.so.13"))
    return hits[0] if hits else None


@pytest.mark.skipif(_real_cu13_lib() is None or not os.path.exists(CURAND),
                    reason="needs the nvidia-cuda-runtime (13) wheel of the README's test command and the curand wheel")
def test_a_math_librarys_own_soname_major_is_not_a_cuda_major(tmp_path):
    """CUDA 13's wheels share nvidia/cu13/lib, where cuRAND is libcurand.so.10 (its own major, as on the H100):
    one CUDA major, nothing mixed. The real H100's `check --root /` said "3 majors" before this."""
    root = tmp_path / "rootfs"
    lib = root / "usr" / "local" / "lib" / "python3.12" / "dist-packages" / "nvidia" / "cu13" / "lib"
    lib.mkdir(parents=True)
    shutil.copy2(_real_cu13_lib(), lib / "libcudart.so.13")
    shutil.copy2(CURAND, lib / "libcurand.so.10")
    out = _gd("--root", str(root), "--json")
    report = json.loads(out.stdout)
    assert not [f for f in report["findings"] if f["id"] == "root.cuda_majors_mixed"], out.stdout
    libs = report["probes"]["root"]["facts"]["libraries"]
    assert [(c["cuda_major"], c["cuda_major_from"]) for c in libs["libcurand"]] == [("13", "its directory cu13")]


@needs_parts
def test_the_live_cudnn_probe_reads_a_roots_cudnn_without_running_it(tmp_path):
    root, env, marker = _root(tmp_path)
    report = json.loads(_gd("--root", str(root), "--env", str(env), "--json").stdout)
    cudnn = report["probes"]["cudnn"]["facts"]
    (lib,) = cudnn["libraries"]
    wheel = lib["version_from"].split()[-1]  # e.g. 9.28.0.42: the wheel's build number is not cuDNN's version
    assert lib["package"] == "nvidia-cudnn-cu12" and lib["version"] == ".".join(wheel.split(".")[:3])
    assert lib["built_for_cuda_major"] == 12 and "api_version" not in lib  # never asked: nothing in the root ran
    (header,) = cudnn["headers"]
    assert header["path"] == "/usr/local/lib/python3.10/dist-packages/nvidia/cudnn/include/cudnn_version.h"
    assert header["version"] == lib["version"]
    # The CI copy of the wheel keeps libcudnn.so.9 alone; its RECORD lists the sub-libraries that libcudnn.so.9
    # loads on first use (asking this copy its version aborts: "Invalid handle. Cannot load symbol"). From the
    # files the root check names the cause, as the live check does for the same copy.
    site = root / "usr/local/lib/python3.10/dist-packages"
    record = next(site.glob("nvidia_cudnn_cu12-*.dist-info")) / "RECORD"
    listed = sorted(line.split(",")[0] for line in record.read_text().splitlines() if ".so" in line.split(",")[0])
    absent = ["/usr/local/lib/python3.10/dist-packages/" + r for r in listed if not (site / r).exists()]
    assert absent and lib["wheel_libraries_missing"] == absent
    (f,) = [f for f in report["findings"] if f["id"].startswith("cudnn.")]
    assert f["id"] == "cudnn.broken" and f["evidence"]["missing"] == absent and not marker.exists()
    assert f["title"].startswith(f"cuDNN at {lib['realpath']} is incomplete: ")


def test_this_machine_read_from_its_files_gets_the_findings_the_live_check_gets(tmp_path):
    """`check --root /` with this process's environment and the live driver's version, against the live
    `check --no-gpu` (which runs nvcc and asks the libraries): every finding both judge is the same, title
    for title (on the CI machine: driver.too_old for the 13.x runtimes and driver.ptx_too_new for nvcc 13.0,
    whose version is read from the nvcc binary behind /usr/local/bin/nvcc's launcher script; compiler.ok for
    nvcc 13.0 with gcc 12 and for Debian's nvcc 11.8, whose nvcc.profile puts its gcc wrapper script first, which
    picks gcc-11; toolkit.mixed for that nvcc 11.8 running /usr/local/bin/ptxas of CUDA 13.0; the inventory)."""
    live = json.loads(_gd("--no-gpu", "--json").stdout)
    drv = (live["probes"]["driver"]["facts"] or {}).get("user_space_version")
    if not drv:
        pytest.skip("no NVIDIA driver user space on this machine")
    env = dict(os.environ, **({"VIRTUAL_ENV": sys.prefix} if sys.prefix != sys.base_prefix else {}))
    env_file = tmp_path / "env.txt"
    env_file.write_text("".join(f"{k}={v}\n" for k, v in env.items() if "\n" not in v))
    root = json.loads(_gd("--root", "/", "--env", str(env_file), "--driver", drv, "--json").stdout)
    both = {"driver.too_old", "driver.ptx_too_new", "driver.minor_version_compat", "cudnn.mismatch", "env.ld_library_path",
            "env.cuda_home", "compiler.unsupported", "compiler.ok", "toolkit.mixed", "toolkit.inventory",
            "arch.binary_missing", "library.damaged", "framework.cpu_build"}
    strip = "(--no-gpu: needs the GPU host) "
    said_live = sorted((f["id"], f["title"].replace(strip, "")) for f in live["findings"] if f["id"] in both)
    said_root = sorted((f["id"], f["title"]) for f in root["findings"] if f["id"] in both)
    assert said_root == said_live
    if shutil.which("nvcc") and os.path.realpath("/usr/bin/gcc").endswith("gcc-12"):  # the CI machine
        assert [i for i, _ in said_root] == ["compiler.ok", "compiler.ok", "driver.ptx_too_new", "driver.too_old",
                                             "toolkit.inventory", "toolkit.mixed"]


@needs_parts
def test_a_roots_environment_is_judged_in_the_root_not_on_this_machine(tmp_path):
    """LD_LIBRARY_PATH and CUDA_HOME of the image name directories of the image: /usr/local/cuda-13.0/lib64
    exists there (not necessarily here), /opt/gone does not; CUDA_HOME=/tmp exists here but not in the root."""
    root, _, _ = _root(tmp_path)
    env = tmp_path / "image.env"
    env.write_text("PATH=/usr/bin:/bin\nLD_LIBRARY_PATH=/usr/local/cuda-13.0/lib64:/opt/gone/lib\nCUDA_HOME=/tmp\n")
    report = json.loads(_gd("--root", str(root), "--env", str(env), "--json").stdout)
    ids = {f["id"]: f for f in report["findings"]}
    assert ids["env.ld_library_path"]["title"] == "LD_LIBRARY_PATH is stale: missing directories: /opt/gone/lib"
    assert ids["env.cuda_home"]["title"] == "CUDA_HOME=/tmp does not exist"


TORCH_CPU = os.path.join(os.path.dirname(CUDNN), "..", "torch-cpu", "site-packages")
CURAND_LIB = CURAND


@pytest.mark.skipif(not os.path.isdir(TORCH_CPU) or not os.path.exists(CURAND_LIB),
                    reason="needs the torch CPU wheel and the curand wheel (.ci/fetch-real-wheels)")
def test_a_frameworks_kernels_in_a_root_are_judged_against_the_target_gpu(tmp_path):
    """The live fatbinary scan and arch rule on a root: torch's real version.py and dist-info (the CPU wheel),
    with FAKE in one respect: cuRAND's real CUDA library (SASS sm_50..sm_90, PTX compute_90) stands in
    libtorch_cuda.so's place. A compute capability 3.7 GPU has no kernel in it; an H100 has its SASS."""
    root = tmp_path / "rootfs"
    sp = root / "usr" / "local" / "lib" / "python3.12" / "dist-packages"
    (sp / "torch" / "lib").mkdir(parents=True)
    shutil.copy2(os.path.join(TORCH_CPU, "torch", "version.py"), sp / "torch" / "version.py")
    dist = next(n for n in os.listdir(TORCH_CPU) if n.startswith("torch-") and n.endswith(".dist-info"))
    shutil.copytree(os.path.join(TORCH_CPU, dist), sp / dist)
    shutil.copy2(CURAND_LIB, sp / "torch" / "lib" / "libtorch_cuda.so")
    old = json.loads(_gd("--root", str(root), "--target-gpu", "3.7", "--json").stdout)
    (f,) = [f for f in old["findings"] if f["id"] == "arch.binary_missing"]
    assert f["evidence"]["sass"][-1] == "sm_90" and f["evidence"]["library"].endswith("/torch/lib/libtorch_cuda.so")
    assert old["probes"]["root"]["facts"]["frameworks"]["torch"]["version"].endswith("+cpu")
    new = json.loads(_gd("--root", str(root), "--target-gpu", "H100", "--json").stdout)
    assert [f["id"] for f in new["findings"] if f["id"].startswith("arch.")] == ["arch.binary_ok"]


TRT_BINDINGS = os.path.join(os.path.dirname(CUDNN), "..", "trt-bindings", "site-packages")


@pytest.mark.skipif(not os.path.isdir(TRT_BINDINGS), reason="needs the real tensorrt-cu13-bindings wheel (.ci/fetch-real-wheels)")
def test_tensorrt_bindings_without_their_libraries_are_a_missing_dependency_of_the_extension_module(tmp_path):
    """The real tensorrt-cu13-bindings wheel alone (pip installs it without libnvinfer): its tensorrt.so needs
    libnvinfer.so.11 (DT_NEEDED, RUNPATH $ORIGIN), which the image's loader would not find."""
    root = tmp_path / "rootfs"
    _base_libs(root)
    sp = root / "usr" / "local" / "lib" / "python3.12" / "dist-packages"
    shutil.copytree(TRT_BINDINGS, sp)
    report = json.loads(_gd("--root", str(root), "--json").stdout)
    missing = {f["evidence"]["needed"]: f for f in report["findings"] if f["id"] == "root.dependency_missing"}
    assert set(missing) == {"libnvinfer.so.11", "libnvinfer_plugin.so.11", "libnvonnxparser.so.11"}, sorted(missing)
    f = missing["libnvinfer.so.11"]
    assert f["severity"] == "fail" and f["title"].startswith("libnvinfer.so.11, needed by /usr/local/lib/python3.12/")
    version = next(n for n in os.listdir(TRT_BINDINGS) if n.endswith(".dist-info"))[: -len(".dist-info")].split("-")[1]
    assert f["fixes"][0]["commands"] == [f"python -m pip install 'tensorrt-cu13-libs=={version}'"]


DEBIAN_NVCC = "/usr/lib/nvidia-cuda-toolkit/bin/nvcc"


@pytest.mark.skipif(not os.path.exists(DEBIAN_NVCC) or not os.path.exists("/usr/include/crt/host_config.h")
                    or os.path.realpath("/usr/bin/gcc").rsplit("-", 1)[-1] != "12",
                    reason="needs Debian's CUDA 11.8 (.ci/install-real-parts) and gcc 12 as the default gcc")
def test_a_toolkits_nvcc_and_the_roots_default_gcc_beyond_its_bound_are_judged_from_the_files(tmp_path):
    """Debian's real CUDA 11.8 nvcc and host_config.h (gcc ≤ 11) in /usr/local/cuda-11.8, the real gcc 12 as
    the default gcc (its links as Debian makes them) and g++-11 installed: compiler.unsupported, with g++-11."""
    root = tmp_path / "rootfs"
    _base_libs(root)
    tk = root / "usr" / "local" / "cuda-11.8"
    (tk / "bin").mkdir(parents=True)
    (tk / "include" / "crt").mkdir(parents=True)
    shutil.copy2(DEBIAN_NVCC, tk / "bin" / "nvcc")
    shutil.copy2("/usr/include/crt/host_config.h", tk / "include" / "crt" / "host_config.h")
    shutil.copy2("/usr/include/cuda_runtime_api.h", tk / "include" / "cuda_runtime_api.h")
    for link in ("/usr/bin/gcc", "/usr/bin/gcc-12"):
        _copy_chain(link, str(root))
    _copy_chain("/usr/bin/g++-11", str(root))
    for mj in ("11", "12"):
        (root / "usr" / "lib" / "gcc" / "x86_64-linux-gnu" / mj).mkdir(parents=True)
    env = tmp_path / "env"
    env.write_text("PATH=/usr/local/cuda-11.8/bin:/usr/bin:/bin\n")
    report = json.loads(_gd("--root", str(root), "--env", str(env), "--json").stdout)
    (f,) = [f for f in report["findings"] if f["id"] == "compiler.unsupported"]
    # the live check's own words: the version is the one gcc 12's binary carries ("gcc --version" prints it)
    said = {g: subprocess.run([g, "-dumpfullversion"], capture_output=True, text=True, timeout=30).stdout.strip()
            for g in ("/usr/bin/gcc-12", "/usr/bin/g++-11")}
    assert f["title"] == f"nvcc 11.8 (/usr/local/cuda-11.8/bin/nvcc) rejects host compiler gnu {said['/usr/bin/gcc-12']} (supports ≤ 11)"
    assert f["fixes"][0]["commands"][0] == "export NVCC_PREPEND_FLAGS='-ccbin /usr/bin/g++-11'"
    # nvcc 11.8 does not read NVCC_CCBIN (its binary never names it; its real dry run still runs gcc): still refused
    env.write_text("PATH=/usr/local/cuda-11.8/bin:/usr/bin:/bin\nNVCC_CCBIN=/usr/bin/g++-11\n")
    report = json.loads(_gd("--root", str(root), "--env", str(env), "--json").stdout)
    (f,) = [f for f in report["findings"] if f["id"].startswith("compiler.")]
    assert f["id"] == "compiler.unsupported" and "does not read NVCC_CCBIN" in f["evidence"]["NVCC_CCBIN"]
    dry = subprocess.run([DEBIAN_NVCC, "--dryrun", "-c", "k.cu"], capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, NVCC_CCBIN="/usr/bin/g++-11"), cwd=tmp_path)
    assert "#$ gcc " in dry.stderr  # the ground truth on this machine: NVCC_CCBIN ignored
    env.write_text("PATH=/usr/local/cuda-11.8/bin:/usr/bin:/bin\nNVCC_PREPEND_FLAGS=-ccbin /usr/bin/g++-11\n")
    report = json.loads(_gd("--root", str(root), "--env", str(env), "--json").stdout)
    ok = [f["title"] for f in report["findings"] if f["id"].startswith("compiler.")]
    assert ok == [f"nvcc 11.8 (/usr/local/cuda-11.8/bin/nvcc) accepts its host compiler gnu {said['/usr/bin/g++-11']} (≤ 11)"], ok


@pytest.mark.skipif(not os.path.isdir(TORCH_CPU), reason="needs the torch CPU wheel (.ci/fetch-real-wheels)")
def test_a_cpu_only_torch_in_an_image_for_a_gpu_host_is_the_live_checks_cpu_build_finding(tmp_path):
    """The real torch CPU wheel's version.py (cuda = None) and dist-info in an image judged for a host with a
    driver: framework.cpu_build, as the live check says on a machine with a driver."""
    root = tmp_path / "rootfs"
    sp = root / "usr" / "local" / "lib" / "python3.12" / "dist-packages"
    (sp / "torch").mkdir(parents=True)
    shutil.copy2(os.path.join(TORCH_CPU, "torch", "version.py"), sp / "torch" / "version.py")
    dist = next(n for n in os.listdir(TORCH_CPU) if n.startswith("torch-") and n.endswith(".dist-info"))
    shutil.copytree(os.path.join(TORCH_CPU, dist), sp / dist)
    report = json.loads(_gd("--root", str(root), "--driver", "580.95.05", "--json").stdout)
    (f,) = [f for f in report["findings"] if f["id"] == "framework.cpu_build"]
    assert f["title"].startswith("torch 2.") and f["title"].endswith("+cpu is a CPU-only build, but an NVIDIA driver is installed")
    assert not [f for f in json.loads(_gd("--root", str(root), "--json").stdout)["findings"]
                if f["id"] == "framework.cpu_build"]  # no driver given: nothing says the image is for a GPU host


@needs_parts
def test_wheels_on_pythonpath_are_found_in_a_root_and_live(tmp_path):
    """``pip install --target /opt/pylibs`` plus PYTHONPATH=/opt/pylibs: Python imports the real cuDNN wheel from
    there, so the root check (the image's PYTHONPATH) and the live check (this process's) both find it."""
    root, env, _ = _root(tmp_path)
    shutil.move(str(root / "usr/local/lib/python3.10/dist-packages"), str(root / "opt" / "pylibs"))
    env.write_text(env.read_text() + "PYTHONPATH=/opt/pylibs\n")
    report = json.loads(_gd("--root", str(root), "--env", str(env), "--json").stdout)
    assert [lib["path"] for lib in report["probes"]["cudnn"]["facts"]["libraries"]] == \
        ["/opt/pylibs/nvidia/cudnn/lib/libcudnn.so.9"]
    live_env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.getcwd(), str(root / "opt" / "pylibs")]))
    live = json.loads(_gd("--no-gpu", "--no-smoke", "--json", env=live_env).stdout)
    assert str(root / "opt/pylibs/nvidia/cudnn/lib/libcudnn.so.9") in \
        [lib["path"] for lib in live["probes"]["cudnn"]["facts"]["libraries"]]
