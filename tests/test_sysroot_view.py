"""SystemView: a root on disk read as the system it is (links re-rooted, never leaving the root; Windows
names matched without case), the live system read with plain os calls; --env files."""
import os

import pytest

from gpudoctor.sysroot.envfile import EnvFileError, parse_env_file, read_env_file
from gpudoctor.sysroot.view import SystemView, live_view


@pytest.fixture()
def image(tmp_path):
    """An image-like root: usr/lib with a versioned library and its soname link, an absolute link, a link
    climbing above the root, a loop; and a secret beside the root that nothing may reach."""
    root = tmp_path / "rootfs"
    lib = root / "usr" / "lib" / "x86_64-linux-gnu"
    lib.mkdir(parents=True)
    (lib / "libcuda.so.535.104.05").write_bytes(b"\x7fELF real")
    os.symlink("libcuda.so.535.104.05", lib / "libcuda.so.1")
    os.symlink("/usr/lib/x86_64-linux-gnu", root / "lib64")  # absolute: the image's own /usr/lib/...
    os.symlink("../../../../../secret", root / "climb")
    os.symlink("loop2", root / "loop1")
    os.symlink("loop1", root / "loop2")
    (root / "etc").mkdir()
    (root / "etc" / "os-release").write_text('ID=ubuntu\nVERSION_ID="22.04"\n')
    (tmp_path / "secret").write_text("host secret")
    return root


def test_links_resolve_inside_the_root_and_never_leave_it(image, tmp_path):
    v = SystemView(str(image))
    assert v.realpath("/lib64/libcuda.so.1") == "/usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05"
    assert v.host("/lib64/libcuda.so.1") == str(image / "usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05")
    assert v.read_bytes("/lib64/libcuda.so.1") == b"\x7fELF real"
    assert v.islink("/usr/lib/x86_64-linux-gnu/libcuda.so.1") and v.isfile("/usr/lib/x86_64-linux-gnu/libcuda.so.1")
    # ".." stops at the root: the climbing link names the root's /secret, which does not exist
    assert v.realpath("/climb") == "/secret" and v.read_bytes("/climb") is None and not v.exists("/climb")
    assert v.read_bytes("/../../secret") is None and v.host("/../../secret") == str(image / "secret")
    assert v.host("/loop1") is None and not v.exists("/loop1")  # a loop, as ELOOP
    assert v.host("relative/path") is None
    assert v.read_text("/etc/os-release").startswith("ID=ubuntu")
    assert v.glob("/usr/lib/*/libcuda.so*") == ["/usr/lib/x86_64-linux-gnu/libcuda.so.1",
                                                 "/usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05"]
    assert v.listdir("/usr/lib") == ["x86_64-linux-gnu"]


def test_a_windows_root_is_read_without_case_and_with_its_own_path_rules(tmp_path):
    c = tmp_path / "c"
    bin_dir = c / "Program Files" / "NVIDIA GPU Computing Toolkit" / "CUDA" / "v12.1" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "nvcc.exe").write_bytes(b"MZ")
    (bin_dir / "cudart64_12.dll").write_bytes(b"MZ")
    env = {"PATH": r"C:\Windows\system32;C:\PROGRAM FILES\nvidia gpu computing toolkit\cuda\V12.1\BIN",
           "CUDA_PATH": r"C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v12.1"}
    v = SystemView(str(c), "windows", env)
    assert v.which("nvcc") == r"C:\PROGRAM FILES\nvidia gpu computing toolkit\cuda\V12.1\BIN\nvcc.EXE"
    assert v.read_bytes(r"c:\program files\NVIDIA GPU Computing Toolkit\cuda\v12.1\bin\CUDART64_12.DLL") == b"MZ"
    assert v.realpath(r"C:\program files\nvidia gpu computing toolkit\CUDA\V12.1\bin\nvcc.exe") == \
        r"C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v12.1\bin\nvcc.exe"
    assert v.glob(r"C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\V*") == \
        [r"C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v12.1"]
    assert v.path_list("PATH")[0] == r"C:\Windows\system32"
    assert v.host(r"D:\data\x.dll") is None and not v.exists(r"D:\data\x.dll")  # another drive is not in the root


def test_the_live_view_is_plain_os_calls(tmp_path):
    (tmp_path / "f").write_text("x")
    os.symlink(tmp_path / "f", tmp_path / "l")
    v = live_view({"PATH": "/usr/bin:/bin"})
    assert v.live and v.host(str(tmp_path / "l")) == str(tmp_path / "l")
    assert v.realpath(str(tmp_path / "l")) == os.path.realpath(tmp_path / "f")
    assert v.read_text(str(tmp_path / "l")) == "x" and v.which("sh") in ("/usr/bin/sh", "/bin/sh")


def test_env_files_as_env_and_windows_set_print_them(tmp_path):
    assert parse_env_file("# from env\nPATH=/usr/local/cuda/bin:/usr/bin\nexport LD_LIBRARY_PATH='/opt/x lib'\n\n"
                          "ProgramFiles(x86)=C:\\Program Files (x86)\nEMPTY=\nA=1\nA=2\n") == {
        "PATH": "/usr/local/cuda/bin:/usr/bin", "LD_LIBRARY_PATH": "/opt/x lib",
        "ProgramFiles(x86)": "C:\\Program Files (x86)", "EMPTY": "", "A": "2"}
    f = tmp_path / "win.env"
    f.write_bytes("\ufeffCUDA_PATH=C:\\CUDA\\v12.1\r\nPATH=C:\\Windows\r\n".encode("utf-16-le"))
    f.write_bytes(b"\xff\xfe" + "CUDA_PATH=C:\\CUDA\\v12.1\r\nPATH=C:\\Windows\r\n".encode("utf-16-le"))
    assert read_env_file(str(f)) == {"CUDA_PATH": "C:\\CUDA\\v12.1", "PATH": "C:\\Windows"}


@pytest.mark.parametrize("content, words", [
    (b"PATH=/bin\nthis is not an assignment\n", "line 2: not KEY=VALUE"),
    (b"=value\n", "line 1"),
    (b"\x7fELF\x02\x01\x01\x00\x00\x00\xff\xfe", "not UTF-8"),
    (b"A=1\0B=2\n", "NUL"),
    (b"A=" + b"x" * (2 << 20), "larger than"),
])
def test_a_bad_env_file_is_one_clear_error(tmp_path, content, words):
    f = tmp_path / "bad.env"
    f.write_bytes(content)
    with pytest.raises(EnvFileError, match=words):
        read_env_file(str(f))
    with pytest.raises(EnvFileError, match="cannot read"):
        read_env_file(str(tmp_path / "missing.env"))


def test_a_fifo_or_device_in_a_root_is_never_read(tmp_path):
    """A root handed to --root may hold a FIFO where a file is expected: opening it for reading would block."""
    root = tmp_path / "rootfs"
    (root / "etc").mkdir(parents=True)
    os.mkfifo(root / "etc" / "os-release")
    os.symlink("/dev/zero", root / "etc" / "ld.so.cache")  # re-rooted: names the root's /dev/zero, absent
    v = SystemView(str(root))
    assert v.read_bytes("/etc/os-release") is None and v.read_text("/etc/ld.so.cache") is None
    live = live_view()
    assert live.read_bytes(str(root / "etc" / "os-release")) is None and live.read_bytes("/dev/zero", 4) is None
