"""Tests for gpudoctor.formats (text parsers) against real captured / local tool output.

Fixture origins (tests/data/parsers/):
cudnn_version_pip_cu12_9.28.0.h is include/cudnn_version.h from the PyPI wheel nvidia_cudnn_cu12-9.28.0.42-py3-none-manylinux_2_27_x86_64.whl.
nvidia_smi_not_loaded.txt is the output of Debian's nvidia-smi 535.261.03 on a host without the nvidia kernel module.
nvidia_smi_nvml_not_found.txt is the output of that nvidia-smi with libnvidia-ml.so.1 hidden (bind-mounted /dev/null in a private mount namespace).
Captures from an H100 host with CUDA 13.0 / driver 580.159.04 are vendored in tests/data/captures/h100-cuda13/.
"""

import os
import random
import sys
import time

import pytest

try:
    import gpudoctor  # noqa: F401
except ImportError:  # running from a checkout without an install
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


from gpudoctor.formats import compilers as compilers_fmt

from gpudoctor.formats import container as container_fmt

from gpudoctor.formats import cuda_env as cuda_env_fmt

from gpudoctor.formats import cudnn as cudnn_fmt

from gpudoctor.formats import ldconfig as ldconfig_fmt

from gpudoctor.formats import nvcc as nvcc_fmt

from gpudoctor.formats import nvidia_driver as nvidia_driver_fmt

from gpudoctor.formats import nvidia_smi as nvidia_smi_fmt

from gpudoctor.formats import os_release as os_release_fmt
from gpudoctor.formats._text import ParseError

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data", "parsers")
CAPTURES = os.path.join(HERE, "data", "captures", "h100-cuda13")  # vendored real H100 outputs
CUDA13_HOST_CONFIG = "/usr/local/cuda/include/crt/host_config.h"
CUDA118_HOST_CONFIGS = ("/usr/include/crt/host_config.h",
                        "/usr/lib/nvidia-cuda-toolkit/include/crt/host_config.h")


def _read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def cap(name):
    path = os.path.join(CAPTURES, name)
    if not os.path.exists(path):
        pytest.fail("vendored capture %s is missing" % path)
    return _read(path)


def data(name):
    return _read(os.path.join(DATA, name))


def local(path):
    if not os.path.exists(path):
        pytest.skip("%s not present on this machine" % path)
    return _read(path)


def run_tool(argv, what):
    """Real local tool output; skip with a reason if the tool is absent."""
    import shutil
    import subprocess
    exe = argv[0] if os.path.isabs(argv[0]) else shutil.which(argv[0])
    if not exe or not os.path.exists(exe):
        pytest.skip("%s (%s) not installed here" % (what, argv[0]))
    res = subprocess.run([exe] + argv[1:], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         timeout=60, check=False)
    return res.stdout.decode("utf-8", errors="replace")


# --------------------------------------------------------------------------
# /proc/driver/nvidia/version
# --------------------------------------------------------------------------

def test_proc_driver_open_capture():
    r = nvidia_driver_fmt.parse_proc_driver_version(cap("proc_driver.out"))
    assert r == {"version": "580.159.04", "flavor": "open", "arch": "x86_64", "build_gcc": "15.3.0"}


def test_proc_driver_proprietary():
    text = ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12 19:39:15 UTC 2024\n"
            "GCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n")
    r = nvidia_driver_fmt.parse_proc_driver_version(text)
    assert r == {"version": "535.183.01", "flavor": "proprietary", "arch": "x86_64", "build_gcc": "12.3.0"}


def test_proc_driver_absent():
    assert nvidia_driver_fmt.parse_proc_driver_version("") is None
    assert nvidia_driver_fmt.parse_proc_driver_version("GCC version:  gcc version 12.3.0\n") is None
    assert nvidia_driver_fmt.parse_proc_driver_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module\n") is None


# --------------------------------------------------------------------------
# nvcc
# --------------------------------------------------------------------------

NVCC13 = {"release": "13.0", "version": "13.0.88", "build": "cuda_13.0.r13.0/compiler.36424714_0"}


def test_nvcc_version_capture():
    assert nvcc_fmt.parse_nvcc_version(cap("nvcc_version.out")) == NVCC13


def test_nvcc_version_local_cuda13():
    assert nvcc_fmt.parse_nvcc_version(run_tool(["/usr/local/cuda/bin/nvcc", "--version"], "CUDA 13 nvcc")) == NVCC13


def test_nvcc_version_local_debian_118():
    r = nvcc_fmt.parse_nvcc_version(run_tool(["/usr/bin/nvcc", "--version"], "Debian CUDA 11.8 nvcc (apt)"))
    assert r == {"release": "11.8", "version": "11.8.89", "build": "cuda_11.8.r11.8/compiler.31833905_0"}


def test_nvcc_version_absent():
    assert nvcc_fmt.parse_nvcc_version("") is None
    assert nvcc_fmt.parse_nvcc_version("bash: nvcc: command not found") is None
    # very old nvcc: no Build line
    r = nvcc_fmt.parse_nvcc_version("Cuda compilation tools, release 8.0, V8.0.61\n")
    assert r == {"release": "8.0", "version": "8.0.61", "build": None}


CODES13 = ["sm_75", "sm_80", "sm_86", "sm_87", "sm_88", "sm_89", "sm_90", "sm_100", "sm_110",
           "sm_103", "sm_120", "sm_121"]


def test_gpu_code_list_capture():
    assert nvcc_fmt.parse_gpu_code_list(cap("nvcc_codes.out")) == CODES13
    assert nvcc_fmt.parse_gpu_code_list(cap("nvcc_archs.out")) == [c.replace("sm_", "compute_") for c in CODES13]


def test_gpu_code_list_local():
    assert nvcc_fmt.parse_gpu_code_list(run_tool(["/usr/local/cuda/bin/nvcc", "--list-gpu-code"], "CUDA 13 nvcc")) == CODES13
    arch = nvcc_fmt.parse_gpu_code_list(run_tool(["/usr/local/cuda/bin/nvcc", "--list-gpu-arch"], "CUDA 13 nvcc"))
    assert arch[0] == "compute_75" and "compute_90" in arch


def test_gpu_code_list_local_118():
    codes = nvcc_fmt.parse_gpu_code_list(run_tool(["/usr/bin/nvcc", "--list-gpu-code"], "Debian CUDA 11.8 nvcc (apt)"))
    assert codes[0] == "sm_35" and codes[-1] == "sm_90" and len(codes) == 16


def test_gpu_code_list_dedup_and_junk():
    assert nvcc_fmt.parse_gpu_code_list("sm_90\nsm_90a\nsm_90\nfoo\ncompute_90 , lto_90\n sm_\n") == [
        "sm_90", "sm_90a", "compute_90", "lto_90"]
    assert nvcc_fmt.parse_gpu_code_list("") == []


# --------------------------------------------------------------------------
# host_config.h
# --------------------------------------------------------------------------

def test_host_config_cuda13_local():
    r = nvcc_fmt.parse_host_config(local(CUDA13_HOST_CONFIG))
    assert r == {"max_gcc": 15, "min_gcc": None, "max_clang": 20, "min_clang": 3,
                 "max_msvc": 1949, "min_msvc": 1920}


def test_host_config_cuda118_local():
    path = next((p for p in CUDA118_HOST_CONFIGS if os.path.exists(p)), None)
    if path is None:
        pytest.skip("Debian CUDA 11.8 host_config.h (apt nvidia-cuda-toolkit) not installed")
    r = nvcc_fmt.parse_host_config(_read(path))
    assert r == {"max_gcc": 11, "min_gcc": None, "max_clang": 14, "min_clang": 3,
                 "max_msvc": 1939, "min_msvc": 1910}


def test_host_config_grep_capture():
    # hostcfg.out is `grep -n __GNUC__ host_config.h` from the H100 host
    r = nvcc_fmt.parse_host_config(cap("hostcfg.out"))
    assert r["max_gcc"] == 15 and r["max_clang"] is None


def test_host_config_ignores_non_error_checks():
    text = """
#if defined(__GNUC__)
#if __GNUC__ >= 14
#pragma message("deprecated")
#endif
#if __GNUC__ < 6
#error -- too old
#endif
#if defined(__HORIZON__)
#if (__clang_major__ >= 30)
#error -- horizon
#endif
#endif
#endif
#if defined(_WIN32)
#if _MSC_VER >= 1500
#define X 1
#endif
#endif
"""
    r = nvcc_fmt.parse_host_config(text)
    assert r["max_gcc"] is None and r["min_gcc"] == 6
    # only the special-purpose Horizon clang check exists: used as fallback
    assert r["max_clang"] == 29
    assert r["max_msvc"] is None and r["min_msvc"] is None


def test_host_config_empty():
    assert nvcc_fmt.parse_host_config("") == {k: None for k in
                                       ("max_gcc", "min_gcc", "max_clang", "min_clang", "max_msvc", "min_msvc")}


# --------------------------------------------------------------------------
# cuDNN / CUDA ints
# --------------------------------------------------------------------------

def test_cudnn_header_pip():
    assert cudnn_fmt.parse_cudnn_version_header(data("cudnn_version_pip_cu12_9.28.0.h")) == (9, 28, 0)


def test_cudnn_header_v7_style():
    text = ("#if !defined(CUDNN_H_)\n#define CUDNN_H_\n\n#define CUDNN_MAJOR 7\n"
            "#define CUDNN_MINOR 6\n#define CUDNN_PATCHLEVEL 5\n\n"
            "#define CUDNN_VERSION (CUDNN_MAJOR * 1000 + CUDNN_MINOR * 100 + CUDNN_PATCHLEVEL)\n")
    assert cudnn_fmt.parse_cudnn_version_header(text) == (7, 6, 5)


def test_cudnn_header_incomplete():
    assert cudnn_fmt.parse_cudnn_version_header("#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 1\n") is None
    assert cudnn_fmt.parse_cudnn_version_header("") is None


def test_cudnn_int_capture():
    n = int(cap("cudnn_ver.out").split()[-1])
    assert cudnn_fmt.cudnn_version_from_int(n) == "9.19.0"


@pytest.mark.parametrize("n,expected", [(91900, "9.19.0"), (90100, "9.1.0"), (92800, "9.28.0"),
                                        (8907, "8.9.7"), (8600, "8.6.0"), (7605, "7.6.5")])
def test_cudnn_int(n, expected):
    assert cudnn_fmt.cudnn_version_from_int(n) == expected


@pytest.mark.parametrize("bad", [-1, 50000, True, "91900", None, 9.1])
def test_cudnn_int_bad(bad):
    with pytest.raises(ParseError):
        cudnn_fmt.cudnn_version_from_int(bad)


@pytest.mark.parametrize("n,expected", [(13000, "13.0"), (12020, "12.2"), (13030, "13.3"),
                                        (11080, "11.8"), (12090, "12.9")])
def test_cuda_int(n, expected):
    assert nvidia_driver_fmt.cuda_version_from_int(n) == expected


@pytest.mark.parametrize("bad", [-13000, False, "13000", None])
def test_cuda_int_bad(bad):
    with pytest.raises(ParseError):
        nvidia_driver_fmt.cuda_version_from_int(bad)


# --------------------------------------------------------------------------
# ldconfig
# --------------------------------------------------------------------------

def test_ldconfig_capture():
    rows = ldconfig_fmt.parse_ldconfig_p(cap("ldconfig.out"))
    assert len(rows) == 178
    assert rows[0] == {"soname": "libvdpau_nvidia.so.1", "arch": "libc6,x86-64", "extra": None,
                       "path": "/usr/local/nvidia/lib64/libvdpau_nvidia.so.1"}
    assert {"soname": "libnvrtc.so.13", "arch": "libc6,x86-64", "extra": None,
            "path": "/usr/local/cuda/targets/x86_64-linux/lib/libnvrtc.so.13"} in rows


def test_ldconfig_local():
    text = run_tool(["ldconfig", "-p"], "ldconfig")
    rows = ldconfig_fmt.parse_ldconfig_p(text)
    header = text.splitlines()[0]
    assert header.endswith("found in cache `/etc/ld.so.cache'")
    assert len(rows) == int(header.split()[0])
    assert all(r["path"].startswith("/") and r["soname"] for r in rows)
    libc = [r for r in rows if r["soname"] == "libc.so.6"]
    assert libc and libc[0]["arch"].startswith("libc6")


def test_ldconfig_extra_flags():
    text = ("2 libs found in cache `/etc/ld.so.cache'\n"
            "\tlibfoo.so.2 (libc6,x86-64, OS ABI: Linux 3.2.0) => /lib/libfoo.so.2\n"
            "\tbroken line\n\tlibbar.so (libc6) => /usr/lib/my dir/libbar.so\n")
    assert ldconfig_fmt.parse_ldconfig_p(text) == [
        {"soname": "libfoo.so.2", "arch": "libc6,x86-64", "extra": "OS ABI: Linux 3.2.0", "path": "/lib/libfoo.so.2"},
        {"soname": "libbar.so", "arch": "libc6", "extra": None, "path": "/usr/lib/my dir/libbar.so"},
    ]


# --------------------------------------------------------------------------
# env vars
# --------------------------------------------------------------------------

def test_nvidia_require_cuda_capture():
    env = dict(line.split("=", 1) for line in cap("env.out").splitlines() if "=" in line)
    r = container_fmt.parse_nvidia_require_cuda(env["NVIDIA_REQUIRE_CUDA"])
    assert r["cuda"] == ">=13.0"
    assert r["unparsed"] == []
    assert len(r["constraints"]) == 60
    assert r["constraints"][0] == {"brand": "unknown", "driver": ">=535,<536"}
    assert {"brand": "tesla", "driver": ">=575,<576"} in r["constraints"]


def test_nvidia_require_cuda_small():
    assert container_fmt.parse_nvidia_require_cuda("cuda>=12.2") == {"cuda": ">=12.2", "constraints": [], "unparsed": []}
    assert container_fmt.parse_nvidia_require_cuda("") == {"cuda": None, "constraints": [], "unparsed": []}
    r = container_fmt.parse_nvidia_require_cuda("cuda>=11.0 arch=x86_64 junk")
    assert r == {"cuda": ">=11.0", "constraints": [{"arch": "x86_64"}], "unparsed": ["junk"]}


@pytest.mark.parametrize("value,kind,visible,invalid,ignored", [
    (None, "unset", [], [], []),
    ("", "empty", [], [], []),
    ("  ", "empty", [], [], []),
    ("0", "indices", ["0"], [], []),
    ("2,1", "indices", ["2", "1"], [], []),
    ("0,2,-1,1", "indices", ["0", "2"], ["-1"], ["1"]),       # the Programming Guide's example
    ("-1", "none", [], ["-1"], []),
    ("NoDevFiles", "none", [], ["NoDevFiles"], []),
    ("GPU-23a74986-f221-396f-b53a-6b6bbca65897", "uuids", ["GPU-23a74986-f221-396f-b53a-6b6bbca65897"], [], []),
    ("GPU-8932f937", "uuids", ["GPU-8932f937"], [], []),       # prefix form
    ("MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f", "mig", ["MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f"], [], []),
    ("MIG-GPU-5fd4ed3c-eb1a-4b1d-ab7c-1d3a4d7c6b1a/1/0", "mig",
     ["MIG-GPU-5fd4ed3c-eb1a-4b1d-ab7c-1d3a4d7c6b1a/1/0"], [], []),
    ("0,GPU-8932f937", "mixed", ["0", "GPU-8932f937"], [], []),
    ("0, 1", "indices", ["0", "1"], [], []),
    ("cuda:0,1", "invalid", [], ["cuda:0"], ["1"]),
    ("0,,1", "indices", ["0"], [""], ["1"]),
    ("GPU-xyz", "invalid", [], ["GPU-xyz"], []),
    ("MIG-GPU-abc/1", "invalid", [], ["MIG-GPU-abc/1"], []),
])
def test_cuda_visible_devices(value, kind, visible, invalid, ignored):
    r = cuda_env_fmt.parse_cuda_visible_devices(value)
    assert r["set"] is (value is not None)
    assert r["raw"] == value
    assert (r["kind"], r["visible"], r["invalid"], r["ignored"]) == (kind, visible, invalid, ignored)
    if value and value.strip():
        assert r["entries"] == [e.strip() for e in value.split(",")]


# --------------------------------------------------------------------------
# compilers, OS
# --------------------------------------------------------------------------

def test_gcc_version_capture():
    assert compilers_fmt.parse_gcc_version(cap("gcc_version.out")) == "13.3.0"


def test_gcc_version_local():
    assert compilers_fmt.parse_gcc_version(run_tool(["gcc", "--version"], "gcc")) == "12.2.0"
    assert compilers_fmt.parse_gcc_version(run_tool(["gcc", "-dumpfullversion"], "gcc")) == "12.2.0"


def test_gxx11_version_local():
    assert compilers_fmt.parse_gcc_version(run_tool(["g++-11", "--version"], "g++-11 (apt)")) == "11.3.0"


@pytest.mark.parametrize("text,expected", [
    ("gcc (GCC) 8.5.0 20210514 (Red Hat 8.5.0-18)\nCopyright\n", "8.5.0"),
    ("x86_64-linux-gnu-gcc-12 (Debian 12.2.0-14) 12.2.0\n", "12.2.0"),
    ("12\n", "12"),
    ("Ubuntu clang version 14.0.0-1ubuntu1.1\n", None),
    ("gcc: command not found", None),
    ("", None),
])
def test_gcc_version_variants(text, expected):
    assert compilers_fmt.parse_gcc_version(text) == expected


@pytest.mark.parametrize("text,expected", [
    ("Ubuntu clang version 14.0.0-1ubuntu1.1\nTarget: x86_64-pc-linux-gnu\n", "14.0.0"),
    ("Apple clang version 15.0.0 (clang-1500.3.9.4)\nTarget: arm64-apple-darwin23.4.0\n", "15.0.0"),
    ("clang version 17.0.6\n", "17.0.6"),
    ("Debian clang version 14.0.6\n", "14.0.6"),
    ("gcc (Debian 12.2.0-14) 12.2.0\n", None),
    ("", None),
])
def test_clang_version(text, expected):
    assert compilers_fmt.parse_clang_version(text) == expected


def test_os_release_capture():
    r = os_release_fmt.parse_os_release(cap("os_release.out"))
    assert (r["ID"], r["VERSION_ID"], r["PRETTY_NAME"], r["ID_LIKE"]) == (
        "ubuntu", "24.04", "Ubuntu 24.04.3 LTS", "debian")


def test_os_release_local():
    r = os_release_fmt.parse_os_release(local("/etc/os-release"))
    assert r["ID"] == "debian" and r["VERSION_ID"] == "12" and r["ID_LIKE"] is None


def test_os_release_quoting():
    r = os_release_fmt.parse_os_release('# c\nID="rhel"\nID_LIKE="fedora"\nNAME=\'My OS\'\nX="a \\"b\\""\nbad line\n')
    assert r["ID"] == "rhel" and r["ID_LIKE"] == "fedora" and r["NAME"] == "My OS" and r["X"] == 'a "b"'
    assert r["VERSION_ID"] is None and r["PRETTY_NAME"] is None
    assert os_release_fmt.parse_os_release("") == {"ID": None, "VERSION_ID": None, "PRETTY_NAME": None, "ID_LIKE": None}


# --------------------------------------------------------------------------
# nvidia-smi
# --------------------------------------------------------------------------

def test_nvidia_smi_xml_capture():
    r = nvidia_smi_fmt.parse_nvidia_smi_xml(cap("nvidia_smi_qx.out"))
    assert r["driver_version"] == "580.159.04"
    assert r["cuda_version"] == "13.0"
    assert len(r["gpus"]) == 1
    g = r["gpus"][0]
    assert g == {
        "name": "NVIDIA H100 80GB HBM3",
        "uuid": "GPU-23a74986-f221-396f-b53a-6b6bbca65897",
        "pci_bus_id": "00000000:00:06.0",
        "compute_cap": None,            # nvidia-smi 580's XML has no compute capability element
        "memory_total_mib": 81559,
        "persistence_mode": "Enabled",
        "mig_mode": "Disabled", "mig_mode_pending": "Disabled",
        "ecc_mode": "Enabled", "ecc_mode_pending": "Enabled",
        "pcie_gen_current": 5, "pcie_gen_max": 5,
        "pcie_width_current": 16, "pcie_width_max": 16,
        "compute_mode": "Default",
        "vbios": "96.00.DA.00.0C",
    }


def test_nvidia_smi_xml_compute_cap_and_na():
    text = ("<?xml version=\"1.0\" ?>\n<!DOCTYPE nvidia_smi_log SYSTEM \"nvsmi_device_v12.dtd\">\n"
            "<nvidia_smi_log><driver_version>535.1</driver_version><cuda_version>N/A</cuda_version>"
            "<gpu id=\"00000000:01:00.0\"><product_name>X</product_name><compute_cap>9.0</compute_cap>"
            "<mig_mode><current_mig>N/A</current_mig></mig_mode></gpu></nvidia_smi_log>")
    r = nvidia_smi_fmt.parse_nvidia_smi_xml(text)
    assert r["cuda_version"] is None
    g = r["gpus"][0]
    assert g["compute_cap"] == "9.0" and g["pci_bus_id"] == "00000000:01:00.0" and g["mig_mode"] is None
    assert g["memory_total_mib"] is None and g["pcie_gen_current"] is None


def test_nvidia_smi_xml_truncated():
    text = cap("nvidia_smi_qx.out")
    with pytest.raises(ParseError):
        nvidia_smi_fmt.parse_nvidia_smi_xml(text[: len(text) // 2])


@pytest.mark.parametrize("text", [
    "",
    "not xml at all",
    "<other_root/>",
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.",
    # billion-laughs style: internal DTD subset with entities
    '<?xml version="1.0"?><!DOCTYPE nvidia_smi_log [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;">]>'
    "<nvidia_smi_log><driver_version>&b;</driver_version></nvidia_smi_log>",
    # DOCTYPE other than nvidia-smi's own
    '<!DOCTYPE nvidia_smi_log PUBLIC "x" "http://example.invalid/x.dtd"><nvidia_smi_log/>',
    '<!DOCTYPE foo SYSTEM "file:///etc/passwd"><nvidia_smi_log/>',
    "<nvidia_smi_log><!ENTITY x 'y'></nvidia_smi_log>",
])
def test_nvidia_smi_xml_rejects(text):
    with pytest.raises(ParseError):
        nvidia_smi_fmt.parse_nvidia_smi_xml(text)


def test_nvidia_smi_xml_rejects_huge():
    with pytest.raises(ParseError):
        nvidia_smi_fmt.parse_nvidia_smi_xml("<nvidia_smi_log>" + " " * (nvidia_smi_fmt.MAX_XML + 1))


def test_nvidia_smi_L_capture():
    assert nvidia_smi_fmt.parse_nvidia_smi_L(cap("nvidia_smi_L.out")) == [
        {"index": 0, "name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-23a74986-f221-396f-b53a-6b6bbca65897",
         "mig_devices": []}]


def test_nvidia_smi_L_mig():
    text = ("GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-5fd4ed3c-eb1a-4b1d-ab7c-1d3a4d7c6b1a)\n"
            "  MIG 3g.20gb     Device  0: (UUID: MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f)\n"
            "  MIG 1g.5gb      Device  1: (UUID: MIG-GPU-5fd4ed3c-eb1a-4b1d-ab7c-1d3a4d7c6b1a/2/0)\n"
            "GPU 1: NVIDIA A100-SXM4-40GB (UUID: GPU-0000)\n")
    r = nvidia_smi_fmt.parse_nvidia_smi_L(text)
    assert [g["index"] for g in r] == [0, 1]
    assert r[0]["mig_devices"] == [
        {"index": 0, "name": "3g.20gb", "uuid": "MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f"},
        {"index": 1, "name": "1g.5gb", "uuid": "MIG-GPU-5fd4ed3c-eb1a-4b1d-ab7c-1d3a4d7c6b1a/2/0"}]
    assert r[1]["mig_devices"] == []
    assert nvidia_smi_fmt.parse_nvidia_smi_L(data("nvidia_smi_not_loaded.txt")) == []


def test_nvidia_smi_error_fixtures():
    assert nvidia_smi_fmt.parse_nvidia_smi_error(data("nvidia_smi_not_loaded.txt")) == "driver_not_loaded"
    assert nvidia_smi_fmt.parse_nvidia_smi_error(data("nvidia_smi_nvml_not_found.txt")) == "nvml_not_found"


def test_nvidia_smi_error_live_broken_host():
    # Debian's nvidia-smi 535 user space is installed here without a kernel module.
    out = run_tool(["nvidia-smi"], "nvidia-smi (apt, driver 535 user space)")
    if os.path.exists("/proc/driver/nvidia/version"):
        pytest.skip("an NVIDIA kernel module is loaded here; nvidia-smi does not fail")
    assert nvidia_smi_fmt.parse_nvidia_smi_error(out) == "driver_not_loaded"


@pytest.mark.parametrize("text,reason", [
    ("Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 535.261\n",
     "version_mismatch"),
    ("Failed to initialize NVML: Unknown Error\n", "nvml_unknown_error"),
    ("No devices were found\n", "no_devices"),
    ("", None),
])
def test_nvidia_smi_error_strings(text, reason):
    assert nvidia_smi_fmt.parse_nvidia_smi_error(text) == reason


def test_nvidia_smi_error_success_output():
    assert nvidia_smi_fmt.parse_nvidia_smi_error(cap("nvidia_smi.out")) is None
    assert nvidia_smi_fmt.parse_nvidia_smi_error(cap("nvidia_smi_L.out")) is None


# --------------------------------------------------------------------------
# sonames
# --------------------------------------------------------------------------

@pytest.mark.parametrize("name,expected", [
    ("libcudart.so.13.0.96", "13.0.96"),
    ("/usr/local/cuda/lib64/libcudart.so.13.0.96", "13.0.96"),
    ("libnvidia-ml.so.535.247.01", "535.247.01"),
    ("libcudart.so.13", "13"),
    ("libnvrtc-builtins.alt.so.13.0", "13.0"),
    ("libcudnn.so", None),
    ("libfoo.so.1.2rc", None),
    ("libfoo.so.", None),
    ("", None),
    (None, None),
    (123, None),
    (b"libcuda.so.580.159.04", "580.159.04"),
])
def test_version_from_soname(name, expected):
    assert nvidia_driver_fmt.version_from_soname(name) == expected


def test_version_from_soname_ldconfig_capture():
    rows = ldconfig_fmt.parse_ldconfig_p(cap("ldconfig.out"))
    vers = {r["soname"]: nvidia_driver_fmt.version_from_soname(r["path"]) for r in rows}
    assert vers["libnvrtc-builtins.so.13.0"] == "13.0"
    assert vers["libnvrtc.so"] is None


def test_version_from_soname_local_nvml():
    path = "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"
    if not os.path.exists(path):
        pytest.skip("driver-535 user space libnvidia-ml (apt) not installed")
    v = nvidia_driver_fmt.version_from_soname(os.path.realpath(path))
    assert v is not None and v.startswith("535.")


# --------------------------------------------------------------------------
# garbage / robustness
# --------------------------------------------------------------------------

TEXT_PARSERS = [
    nvidia_driver_fmt.parse_proc_driver_version, nvcc_fmt.parse_nvcc_version, nvcc_fmt.parse_host_config, nvcc_fmt.parse_gpu_code_list,
    cudnn_fmt.parse_cudnn_version_header, ldconfig_fmt.parse_ldconfig_p, container_fmt.parse_nvidia_require_cuda,
    cuda_env_fmt.parse_cuda_visible_devices, compilers_fmt.parse_gcc_version, compilers_fmt.parse_clang_version, os_release_fmt.parse_os_release,
    nvidia_smi_fmt.parse_nvidia_smi_L, nvidia_smi_fmt.parse_nvidia_smi_error, nvidia_driver_fmt.version_from_soname,
]
ALL_TEXT = TEXT_PARSERS + [nvidia_smi_fmt.parse_nvidia_smi_xml]


def _call(fn, text):
    try:
        return fn(text)
    except ParseError:
        return "ParseError"


def _garbage():
    rnd = random.Random(1234)
    binary = bytes(rnd.getrandbits(8) for _ in range(4096)).decode("utf-8", errors="replace")
    big = "".join(rnd.choice("ab 1.:,()#=<>-\n\t/\\\"x_") for _ in range(5 * 1024 * 1024))
    return {
        "empty": "",
        "binary": binary,
        "big_random": big,
        "big_one_line_spaces": "NVRM version:" + " " * (5 * 1024 * 1024),
        "big_digits_dots": "GPU 0:" + "1." * (2 * 1024 * 1024),
        "nul_and_surrogate_free_unicode": "\x00\u2028\ufffd\U0001f600 #if __GNUC__ > \n",
    }


GARBAGE = _garbage()


@pytest.mark.parametrize("fn", ALL_TEXT, ids=lambda f: f.__name__)
@pytest.mark.parametrize("kind", sorted(GARBAGE))
def test_garbage_never_raises_and_is_fast(fn, kind):
    t0 = time.perf_counter()
    r = _call(fn, GARBAGE[kind])
    assert time.perf_counter() - t0 < 2.0
    if fn is not nvidia_smi_fmt.parse_nvidia_smi_xml:
        assert r != "ParseError"
    else:
        assert r == "ParseError"


def test_garbage_results_are_empty():
    for text in ("", GARBAGE["binary"]):
        assert nvidia_driver_fmt.parse_proc_driver_version(text) is None
        assert nvcc_fmt.parse_nvcc_version(text) is None
        assert nvcc_fmt.parse_gpu_code_list(text) == []
        assert cudnn_fmt.parse_cudnn_version_header(text) is None
        assert ldconfig_fmt.parse_ldconfig_p(text) == []
        assert nvidia_smi_fmt.parse_nvidia_smi_L(text) == []
        assert nvidia_smi_fmt.parse_nvidia_smi_error(text) is None
        assert compilers_fmt.parse_gcc_version(text) is None
        assert compilers_fmt.parse_clang_version(text) is None


@pytest.mark.parametrize("fn", TEXT_PARSERS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("value", [None, b"\xff\xfe\x00junk", 42, ["x"]])
def test_non_str_inputs(fn, value):
    fn(value)  # must not raise


def test_hypothesis_only_parse_error():
    hyp = pytest.importorskip("hypothesis")
    st = hyp.strategies

    @hyp.settings(max_examples=300, deadline=None, database=None)
    @hyp.given(st.text(max_size=2000) | st.text(alphabet="GPU-0123456789abcdef,:()<>/#=._ \nMIGsmcompute",
                                                 max_size=300))
    def check(text):
        for fn in ALL_TEXT:
            try:
                fn(text)
            except ParseError:
                pass
        xml = "<nvidia_smi_log>" + text + "</nvidia_smi_log>"
        try:
            nvidia_smi_fmt.parse_nvidia_smi_xml(xml)
        except ParseError:
            pass

    check()


def test_hypothesis_ints():
    hyp = pytest.importorskip("hypothesis")
    st = hyp.strategies

    @hyp.settings(max_examples=300, deadline=None, database=None)
    @hyp.given(st.integers(min_value=-10 ** 30, max_value=10 ** 30))
    def check(n):
        for fn in (nvidia_driver_fmt.cuda_version_from_int, cudnn_fmt.cudnn_version_from_int):
            try:
                assert isinstance(fn(n), str)
            except ParseError:
                pass

    check()


def test_cudart_version_of_the_real_runtime_headers():
    import os

    from gpudoctor.formats.tensorrt_header import parse_cudart_h_version

    real = {"/usr/local/cuda/include/cuda_runtime_api.h": "13.0", "/usr/include/cuda_runtime_api.h": "11.8"}
    found = {p: v for p, v in real.items() if os.path.exists(p)}
    if not found:
        import pytest

        pytest.skip("no CUDA runtime header on this machine")
    for path, version in found.items():
        assert parse_cudart_h_version(open(path, encoding="utf-8", errors="replace").read()) == version
    assert parse_cudart_h_version("#define CUDART_VERSION banana\n") is None and parse_cudart_h_version(b"\xff") is None
