"""Windows facts (gpudoctor/windows) from Windows roots laid out in tmp dirs from real files, as the CUDA
installer, a copied cuDNN zip, pip and Visual Studio leave them: the real win_amd64 DLLs and nvcc.exe of
NVIDIA's wheels (.ci/fetch-real-wheels -> .ci/cache/win/), the real headers of this machine's CUDA 13.0 and
Debian CUDA 11.8 toolkits, the real cudnn_version.h of the nvidia-cudnn-cu12 wheel.

What cannot be had for real is either absent (nvcuda.dll, nvml.dll, cl.exe, zlibwapi.dll: their absence is a
state tested here) or a FAKE: a file of the bytes b"FAKE" under a real DLL name (cuDNN's and TensorRT's
Windows DLLs come in 0.4-1 GB packages); a FAKE is never parsed as a PE file (it is a problem record).
Visual Studio's toolsets are directories only (their names are the facts)."""
from __future__ import annotations

import ntpath
import os
import shutil

import pytest

from tests.conftest import CACHE, need
from gpudoctor.sysroot.view import SystemView
from gpudoctor.windows import dll_search
from gpudoctor.windows.install import windows_facts
from gpudoctor.windows.msvc import msc_ver_of_toolset, msvc_installs, nvcc_msvc_bounds
from gpudoctor.windows.pe_read import PeReader
from gpudoctor.formats.tensorrt_header import parse_cuda_h_version, parse_nvinfer_version_header

WIN = os.path.join(CACHE, "win")
CUDART_118 = os.path.join(WIN, "cudart-cu11", "site-packages", "nvidia", "cuda_runtime", "bin", "cudart64_110.dll")
CUDART_124 = os.path.join(WIN, "cudart-cu12", "site-packages", "nvidia", "cuda_runtime", "bin", "cudart64_12.dll")
CUDART_124_META = os.path.join(WIN, "cudart-cu12", "site-packages", "nvidia_cuda_runtime_cu12-12.4.127.dist-info",
                               "METADATA")
CUDART_130 = os.path.join(WIN, "cudart-13.0", "site-packages", "nvidia", "cu13", "bin", "x86_64", "cudart64_13.dll")
CUDART_135 = os.path.join(WIN, "cudart-13", "site-packages", "nvidia", "cu13", "bin", "x86_64", "cudart64_13.dll")
NVCC_130 = os.path.join(WIN, "nvcc-13.0", "site-packages", "nvidia", "cu13", "bin", "nvcc.exe")
CUDA13_INC = "/usr/local/cuda/targets/x86_64-linux/include"
CUDA118_INC = "/usr/include"  # Debian's nvidia-cuda-dev 11.8
CUDNN_H = os.path.join(CACHE, "cudnn-cu12", "site-packages", "nvidia", "cudnn", "include", "cudnn_version.h")
REAL = [CUDART_118, CUDART_124, CUDART_124_META, CUDART_130, CUDART_135, NVCC_130,
        os.path.join(CUDA13_INC, "cuda.h"), os.path.join(CUDA13_INC, "crt", "host_config.h"),
        os.path.join(CUDA118_INC, "cuda.h"), os.path.join(CUDA118_INC, "crt", "host_config.h"), CUDNN_H]

# NVIDIA's NvInferVersion.h of TensorRT 10.14.1.48, captured as published (Apache-2.0) in
# https://github.com/NVIDIA/TensorRT/blob/main/include/NvInferVersion.h (the defines; the license header cut)
NVINFER_VERSION_H = """#ifndef NV_INFER_VERSION_H
#define NV_INFER_VERSION_H

#define TRT_MAJOR_ENTERPRISE 10
#define TRT_MINOR_ENTERPRISE 14
#define TRT_PATCH_ENTERPRISE 1
#define TRT_BUILD_ENTERPRISE 48
#define NV_TENSORRT_MAJOR TRT_MAJOR_ENTERPRISE //!< TensorRT major version.
#define NV_TENSORRT_MINOR TRT_MINOR_ENTERPRISE //!< TensorRT minor version.
#define NV_TENSORRT_PATCH TRT_PATCH_ENTERPRISE //!< TensorRT patch version.
#define NV_TENSORRT_BUILD TRT_BUILD_ENTERPRISE //!< TensorRT build number.

#define NV_TENSORRT_LWS_MAJOR 0 //!< TensorRT LWS major version.
#endif // NV_INFER_VERSION_H
"""

TK = r"C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA"
FAKE = b"FAKE"


def _real():
    need(all(os.path.isfile(p) for p in REAL),
         "real Windows DLLs in .ci/cache/win (.ci/fetch-real-wheels), CUDA 13.0 and 11.8 headers, cuDNN's header")


class Root:
    """A Windows C:\\ drive in a tmp dir: files placed at their Windows paths."""

    def __init__(self, base):
        self.base = str(base)

    def host(self, win_path: str) -> str:
        assert win_path[:3].upper() == "C:\\"
        return os.path.join(self.base, *win_path[3:].split("\\"))

    def copy(self, src: str, win_path: str) -> str:
        os.makedirs(os.path.dirname(self.host(win_path)), exist_ok=True)
        shutil.copyfile(src, self.host(win_path))
        return win_path

    def write(self, win_path: str, data) -> str:
        os.makedirs(os.path.dirname(self.host(win_path)), exist_ok=True)
        with open(self.host(win_path), "wb") as fh:
            fh.write(data if isinstance(data, bytes) else data.encode())
        return win_path

    def mkdir(self, win_path: str) -> str:
        os.makedirs(self.host(win_path), exist_ok=True)
        return win_path

    def view(self, **env) -> SystemView:
        return SystemView(self.base, "windows", env)


def _toolkit(root: Root, version: str, include: str = None, nvcc: str = None, cudart: str = None):
    """A toolkit as the CUDA installer leaves it: bin\\ (nvcc.exe, cudart), include\\ (cuda.h, crt\\host_config.h)."""
    tk = f"{TK}\\v{version}"
    root.mkdir(tk + "\\bin")
    if nvcc:
        root.copy(nvcc, tk + "\\bin\\nvcc.exe")
    if cudart:
        root.copy(cudart, tk + "\\bin\\" + os.path.basename(cudart))
    if include:
        root.copy(os.path.join(include, "cuda.h"), tk + "\\include\\cuda.h")
        root.copy(os.path.join(include, "crt", "host_config.h"), tk + "\\include\\crt\\host_config.h")
    return tk


@pytest.fixture()
def broken(tmp_path):
    """Three toolkits: v11.8 (no nvcc.exe), v13.0 (nvcc.exe 13.0.88, cudart 13.0.96), v13.5 (cudart 13.5.37
    only); CUDA_PATH at the older v11.8, CUDA_PATH_V12_1 left behind by an uninstalled 12.1; PATH with
    v13.5\\bin before v13.0\\bin; a cuDNN 9 for CUDA 12 copied into v13.0; a cuDNN 8 on PATH without
    zlibwapi.dll; a TensorRT zip; no NVIDIA driver files."""
    _real()
    root = Root(tmp_path / "c")
    root.mkdir("C:\\Windows\\System32")
    v118 = _toolkit(root, "11.8", CUDA118_INC, cudart=CUDART_118)
    v130 = _toolkit(root, "13.0", CUDA13_INC, nvcc=NVCC_130, cudart=CUDART_130)
    v135 = _toolkit(root, "13.5", cudart=CUDART_135)
    # cuDNN 9.28 from the CUDA 12 package, bin\ and include\ copied into the CUDA 13.0 folders
    root.write(v130 + "\\bin\\cudnn64_9.dll", FAKE)
    root.copy(CUDNN_H, v130 + "\\include\\cudnn_version.h")
    # cuDNN 8 unpacked to C:\tools\cudnn8 and put on PATH; no zlibwapi.dll anywhere
    root.write("C:\\tools\\cudnn8\\bin\\cudnn64_8.dll", FAKE)
    # TensorRT's zip unpacked under Program Files\NVIDIA
    trt = "C:\\Program Files\\NVIDIA\\TensorRT-10.14.1.48"
    root.write(trt + "\\lib\\nvinfer_10.dll", FAKE)
    root.write(trt + "\\include\\NvInferVersion.h", NVINFER_VERSION_H)
    env = {"PATH": ";".join([v135 + "\\bin", v130 + "\\bin", v118 + "\\bin", "C:\\tools\\cudnn8\\bin",
                             "C:\\Windows\\system32", "C:\\Windows"]),
           "CUDA_PATH": v118, "CUDA_PATH_V11_8": v118, "CUDA_PATH_V13_0": v130,
           "CUDA_PATH_V12_1": f"{TK}\\v12.1", "SystemRoot": "C:\\Windows"}
    return root, root.view(**env)


def test_toolkits_are_read_from_their_own_files(broken):
    _root, view = broken
    facts = windows_facts(view)
    tks = {t["folder_version"]: t for t in facts["toolkits"]}
    assert sorted(tks) == ["11.8", "13.0", "13.5"]
    assert tks["11.8"]["cuda_h_version"] == "11.8" and tks["11.8"]["version"] == "11.8"
    assert tks["11.8"]["version_from"] == "cuda.h" and not tks["11.8"]["has_nvcc"]
    assert tks["13.0"]["has_nvcc"] and tks["13.0"]["nvcc_version"] == "13.0.88"
    assert tks["13.0"]["version"] == "13.0" and tks["13.0"]["nvcc"].endswith("v13.0\\bin\\nvcc.exe")
    # v13.5 holds only a cudart: no file of its own says its release (the folder name is not taken for one)
    assert tks["13.5"]["version"] is None and tks["13.5"]["version_from"] is None
    dlls = {d["name"].lower(): d for d in tks["13.5"]["dlls"]}
    assert dlls["cudart64_13.dll"]["product_version"] == "13.5.37" and dlls["cudart64_13.dll"]["machine"] == "x86-64"
    dlls = {d["name"].lower(): d for d in tks["11.8"]["dlls"]}
    assert dlls["cudart64_110.dll"]["product_version"] == "11.8.89"
    assert dlls["cudart64_110.dll"]["major_from_name"] == "11"
    assert tks["11.8"]["found_by"] == ["Program Files", "CUDA_PATH", "CUDA_PATH_V11_8"]


def test_cuda_path_at_the_older_toolkit_and_a_variable_pointing_nowhere(broken):
    _root, view = broken
    cp = windows_facts(view)["cuda_path"]
    assert cp["CUDA_PATH"]["toolkit"].endswith("v11.8") and cp["CUDA_PATH"]["toolkit_version"] == "11.8"
    assert cp["CUDA_PATH"]["named_version"] is None
    assert cp["CUDA_PATH_V13_0"]["named_version"] == "13.0" and cp["CUDA_PATH_V13_0"]["toolkit_version"] == "13.0"
    assert cp["CUDA_PATH_V12_1"] == {"value": f"{TK}\\v12.1", "named_version": "12.1", "exists": False,
                                     "toolkit": None, "toolkit_version": None}


def test_path_order_takes_nvcc_from_one_toolkit_and_cudart_from_another(broken):
    _root, view = broken
    facts = windows_facts(view)
    assert [(p["index"], p["folder_version"]) for p in facts["path_toolkits"]] == \
        [(0, "13.5"), (1, "13.0"), (2, "11.8")]
    assert facts["nvcc_on_path"] == {"path": f"{TK}\\v13.0\\bin\\nvcc.exe", "toolkit": f"{TK}\\v13.0",
                                     "version": "13.0"}
    # a program in C:\app that needs cudart64_13.dll gets v13.5's, v13.0's (nvcc's own) is shadowed
    order = dll_search.search_order(view, "C:\\app", python_extension=False)
    found = dll_search.find_dll(view, "CUDART64_13.DLL", order)
    assert found["path"] == f"{TK}\\v13.5\\bin\\cudart64_13.dll" and found["via"] == dll_search.PATH_ENTRY
    assert [s["path"] for s in found["shadowed"]] == [f"{TK}\\v13.0\\bin\\cudart64_13.dll"]
    pe = PeReader(view, [])
    assert pe.facts(found["path"])["product_version"] == "13.5.37"
    assert pe.facts(found["shadowed"][0]["path"])["product_version"] == "13.0.96"


def test_no_driver_files_is_a_fact(broken):
    _root, view = broken
    drv = windows_facts(view)["driver"]
    assert drv["nvcuda"] == {"present": False, "path": "C:\\Windows\\System32\\nvcuda.dll"}
    assert [n["present"] for n in drv["nvml"]] == [False, False]
    assert drv["nvidia_smi"] == [] and drv["driver_store"] == []


def test_a_driver_file_that_is_not_a_pe_file_is_present_but_says_no_version(tmp_path):
    _real()
    root = Root(tmp_path / "c")
    root.write("C:\\Windows\\System32\\nvcuda.dll", FAKE)
    root.write("C:\\Windows\\System32\\nvidia-smi.exe", FAKE)
    facts = windows_facts(root.view())
    nvcuda = facts["driver"]["nvcuda"]
    assert (nvcuda["present"], nvcuda["read"], nvcuda["driver_version"]) == (True, False, None)
    assert facts["driver"]["nvidia_smi"] == ["C:\\Windows\\System32\\nvidia-smi.exe"]
    assert [p["kind"] for p in facts["problems"] if p["path"].endswith("nvcuda.dll")] == ["unparsable"]


def test_a_cudnn_copied_into_a_toolkit_and_a_cudnn_8_without_zlibwapi(broken):
    _root, view = broken
    facts = windows_facts(view)
    copies = {c["majors_from_names"][0]: c for c in facts["cudnn"]}
    nine = copies["9"]
    assert nine["in_toolkit"].endswith("v13.0") and nine["in_toolkit_version"] == "13.0"
    assert nine["header"] == {"path": f"{TK}\\v13.0\\include\\cudnn_version.h", "version": "9.28.0"}
    assert nine["found_via"] == [f"toolkit {TK}\\v13.0", "PATH entry 1"] and nine["zlibwapi"] is None
    # the FAKE DLL says nothing of the CUDA it was built for, and is reported as unparsable, never guessed at
    assert nine["built_for_cuda"] == {"from_path": None, "from_imports": [], "from_kernels": [], "from_load_names": []}
    assert not nine["dlls"][0]["read"]
    assert any(p["path"] == f"{TK}\\v13.0\\bin\\cudnn64_9.dll" and p["kind"] == "unparsable"
               for p in facts["problems"])
    eight = copies["8"]
    assert eight["in_toolkit"] is None and eight["found_via"] == ["PATH entry 3"] and eight["header"] is None
    assert eight["zlibwapi"]["found"]["path"] is None and eight["zlibwapi"]["found"]["shadowed"] == []


def test_cudnn_9_installer_layout_and_pip_wheel_say_their_cuda(tmp_path):
    _real()
    root = Root(tmp_path / "c")
    cudnn = "C:\\Program Files\\NVIDIA\\CUDNN\\v9.28"
    root.write(cudnn + "\\bin\\12.9\\x64\\cudnn64_9.dll", FAKE)
    root.copy(CUDNN_H, cudnn + "\\include\\12.9\\cudnn_version.h")
    site = "C:\\Program Files\\Python312\\Lib\\site-packages"
    root.write(site + "\\nvidia\\cudnn\\bin\\cudnn64_9.dll", FAKE)
    root.copy(CUDNN_H, site + "\\nvidia\\cudnn\\include\\cudnn_version.h")
    facts = windows_facts(root.view(PATH="C:\\Windows\\system32"))
    by_dir = {c["dir"]: c for c in facts["cudnn"]}
    inst = by_dir[cudnn + "\\bin\\12.9\\x64"]
    assert inst["found_via"] == ["cuDNN installer"] and inst["built_for_cuda"]["from_path"] == "12.9"
    assert inst["header"] == {"path": cudnn + "\\include\\12.9\\cudnn_version.h", "version": "9.28.0"}
    wheel = by_dir[site + "\\nvidia\\cudnn\\bin"]
    assert wheel["found_via"] == ["python C:\\Program Files\\Python312"] and wheel["header"]["version"] == "9.28.0"
    (py,) = facts["python"]
    assert (py["kind"], py["version"], py["nvidia_wheels"]) == ("all users", "3.12", [])


def test_tensorrt_from_its_zip_with_the_version_from_its_header(broken):
    _root, view = broken
    (trt,) = windows_facts(view)["tensorrt"]
    assert trt["found_via"] == ["TensorRT folder"] and trt["majors_from_names"] == ["10"]
    assert trt["header"]["version"] == "10.14.1.48" and trt["in_toolkit"] is None


def test_a_dll_on_path_is_found_by_a_program_but_not_by_a_python_extension(tmp_path):
    _real()
    root = Root(tmp_path / "c")
    root.mkdir("C:\\Windows\\System32")
    v124 = _toolkit(root, "12.4", cudart=CUDART_124)
    site = "C:\\Users\\ana\\AppData\\Local\\Programs\\Python\\Python311\\Lib\\site-packages"
    root.copy(CUDART_124, site + "\\nvidia\\cuda_runtime\\bin\\cudart64_12.dll")
    root.copy(CUDART_124_META, site + "\\nvidia_cuda_runtime_cu12-12.4.127.dist-info\\METADATA")
    ext_dir = root.mkdir(site + "\\myext")
    view = root.view(PATH=f"{v124}\\bin;C:\\Windows\\system32")
    program = dll_search.search_order(view, ext_dir, python_extension=False)
    assert dll_search.find_dll(view, "cudart64_12.dll", program)["via"] == dll_search.PATH_ENTRY
    ext = dll_search.search_order(view, ext_dir, python_extension=True)
    assert ext == [(ext_dir, dll_search.EXTENSION_DIR), ("C:\\Windows\\System32", dll_search.SYSTEM32)]
    assert dll_search.find_dll(view, "cudart64_12.dll", ext)["path"] is None
    wheel_bin = site + "\\nvidia\\cuda_runtime\\bin"
    added = dll_search.search_order(view, ext_dir, python_extension=True, added_dirs=[wheel_bin])
    hit = dll_search.find_dll(view, "cudart64_12.dll", added)
    assert hit["path"] == wheel_bin + "\\cudart64_12.dll" and hit["via"] == dll_search.ADDED_DIR
    (py,) = windows_facts(view)["python"]
    assert py["kind"] == "per user" and py["version"] == "3.11" and py["version_from"] == "folder name"
    assert py["python_exe"] is None and py["nvidia_wheels"][0]["dist"] == "nvidia-cuda-runtime-cu12"
    assert py["nvidia_wheels"][0]["version"] == "12.4.127"


def test_the_standard_order_and_what_a_static_reading_cannot_know(tmp_path):
    _real()
    root = Root(tmp_path / "c")
    root.write("C:\\Windows\\System32\\kernel32.dll", FAKE)
    root.write("C:\\app\\KERNEL32.DLL", FAKE)
    view = root.view(PATH="C:\\tools;C:\\Windows\\System32")
    order = dll_search.search_order(view, "C:\\app", python_extension=False, cwd="C:\\work")
    assert order == [("C:\\app", dll_search.APP_DIR), ("C:\\Windows\\System32", dll_search.SYSTEM32),
                     ("C:\\Windows\\System", dll_search.SYSTEM16), ("C:\\Windows", dll_search.WINDOWS_DIR),
                     ("C:\\work", dll_search.CURRENT_DIR), ("C:\\tools", dll_search.PATH_ENTRY)]
    unsafe = dll_search.search_order(view, "C:\\app", python_extension=False, cwd="C:\\work", safe_dll_search=False)
    assert unsafe[1] == ("C:\\work", dll_search.CURRENT_DIR)
    plain = dll_search.find_dll(view, "kernel32.dll", order)
    assert plain["path"] == "C:\\app\\KERNEL32.DLL" and plain["known_dlls"] == "unread"
    known = dll_search.find_dll(view, "kernel32.dll", order, known_dlls=["KERNEL32.dll"])
    assert known["path"] == "C:\\Windows\\System32\\kernel32.dll" and known["via"] == dll_search.KNOWN_DLL
    assert [s["path"] for s in known["shadowed"]] == ["C:\\app\\KERNEL32.DLL"]
    # cudart's imports are API set contracts, which the loader maps: not files to search for
    cudart = root.copy(CUDART_130, "C:\\x\\cudart64_13.dll")
    assert "api-ms-win-core-synch-l1-1-0.dll" in PeReader(view, []).facts(cudart)["imports"]
    assert dll_search.find_dll(view, "api-ms-win-core-synch-l1-1-0.dll", order)["via"] == dll_search.API_SET
    with pytest.raises(ValueError, match="add_dll_directory"):
        dll_search.search_order(view, "C:\\app", python_extension=False, added_dirs=["C:\\x"])


def test_cuda_majors_a_dll_imports_are_read_from_its_import_names():
    pe = PeReader(None, [])
    assert pe.cuda_majors_imported({"imports": ["cublasLt64_12.dll", "KERNEL32.dll", "cudnn_graph64_9.dll",
                                                "nvrtc64_120_0.dll", "cudart64_110.dll"]}) == ["11", "12"]


def test_msvc_toolsets_and_the_msc_ver_bounds_of_each_nvcc(broken):
    root, _ = broken
    # directory layouts only: the toolset's name is the fact; no cl.exe exists here
    vs = "C:\\Program Files\\Microsoft Visual Studio\\2022\\Community"
    root.mkdir(vs + "\\VC\\Tools\\MSVC\\14.38.33130\\bin\\Hostx64\\x64")
    root.mkdir("C:\\Program Files (x86)\\Microsoft Visual Studio\\2019\\BuildTools\\VC\\Tools\\MSVC\\14.29.30133")
    view = root.view()
    found = [(m["release_folder"], m["edition"], m["toolset"], m["msc_ver"], m["cl_exe"]) for m in msvc_installs(view)]
    assert found == [("2022", "Community", "14.38.33130", 1938, None),
                     ("2019", "BuildTools", "14.29.30133", 1929, None)]
    assert msc_ver_of_toolset("14.40.33807") == 1940 and msc_ver_of_toolset("v143") is None
    b13 = nvcc_msvc_bounds(view, f"{TK}\\v13.0")
    assert (b13["present"], b13["min_msc_ver"], b13["max_msc_ver"]) == (True, 1920, 1949)
    b118 = nvcc_msvc_bounds(view, f"{TK}\\v11.8")
    assert (b118["min_msc_ver"], b118["max_msc_ver"]) == (1910, 1939)
    assert nvcc_msvc_bounds(view, f"{TK}\\v13.5")["present"] is False
    facts = windows_facts(view)
    assert [m["toolset"] for m in facts["msvc"]] == ["14.38.33130", "14.29.30133"]
    bounds = {t["folder_version"]: (t["msvc_bounds"]["min_msc_ver"], t["msvc_bounds"]["max_msc_ver"])
              for t in facts["toolkits"]}
    assert bounds == {"11.8": (1910, 1939), "13.0": (1920, 1949), "13.5": (None, None)}


def test_unreadable_and_garbage_files_are_problem_records(tmp_path):
    _real()
    root = Root(tmp_path / "c")
    tk = _toolkit(root, "12.6", cudart=CUDART_124)
    root.write(tk + "\\version.json", "{not json")
    root.write(tk + "\\include\\cuda.h", "// no version here\n")
    os.makedirs(os.path.dirname(root.host(tk + "\\include\\cudnn_version.h")), exist_ok=True)
    os.mkfifo(root.host(tk + "\\include\\cudnn_version.h"))  # never opened (an open() would block)
    root.write(tk + "\\bin\\cudnn64_9.dll", FAKE)
    root.write(tk + "\\bin\\nvcc.exe", b"\x7fELF\x02\x01\x01" + bytes(60))  # a Linux binary in its place
    facts = windows_facts(root.view(PATH=tk + "\\bin"))
    kinds = {(ntpath.basename(p["path"]), p["kind"]) for p in facts["problems"]}
    assert {("version.json", "unparsable"), ("cuda.h", "unparsable"), ("nvcc.exe", "unparsable"),
            ("cudnn_version.h", "unreadable")} <= kinds
    (tk_facts,) = facts["toolkits"]
    assert tk_facts["has_nvcc"] and tk_facts["nvcc_version"] is None and tk_facts["version"] is None
    assert any("ELF" in p["what"] for p in facts["problems"] if p["path"].endswith("nvcc.exe"))


def test_version_json_of_the_installer_shape_wins(tmp_path):
    _real()
    root = Root(tmp_path / "c")
    tk = _toolkit(root, "11.8", CUDA118_INC, cudart=CUDART_118)
    # FAKE version.json: the documented shape ({"cuda": {"name": "CUDA SDK", "version": ...}}), not a real file
    root.write(tk + "\\version.json", '{"cuda": {"name": "CUDA SDK", "version": "11.8.20220929"}}')
    (t,) = windows_facts(root.view())["toolkits"]
    assert (t["version_json"], t["version"], t["version_from"]) == ("11.8.20220929", "11.8", "version.json")


def test_header_parsers_on_real_headers():
    _real()
    with open(os.path.join(CUDA13_INC, "cuda.h"), encoding="utf-8", errors="replace") as fh:
        assert parse_cuda_h_version(fh.read()) == "13.0"
    assert parse_nvinfer_version_header(NVINFER_VERSION_H) == (10, 14, 1, 48)
    assert parse_nvinfer_version_header("#define NV_TENSORRT_MAJOR 8 //!< TensorRT major version.\n"
                                        "#define NV_TENSORRT_MINOR 6\n#define NV_TENSORRT_PATCH 1\n") == (8, 6, 1, None)
    assert parse_nvinfer_version_header("#define NV_TENSORRT_MAJOR TRT_MAJOR_UNDEFINED\n") is None
