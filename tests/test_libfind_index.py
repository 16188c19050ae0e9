"""The library index's wheel ownership map: one listing per site dir, realpaths resolved per directory, and
the same answers as resolving every file (links to directories, links to files, ``..`` in RECORD)."""
import os

from gpudoctor.probes.libfind import _RealPaths, pip_owned_libs


def _wheel(sp, dist, files):
    info = sp / f"{dist}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Name: {dist.split('-')[0]}\n")
    (info / "RECORD").write_text("".join(f"{f},sha256=x,1\n" for f in files))


def test_ownership_matches_realpath_of_every_file_through_links(tmp_path):
    sp = tmp_path / "site-packages"
    real_lib = tmp_path / "elsewhere" / "lib"
    real_lib.mkdir(parents=True)
    (real_lib / "libcudnn.so.9").write_bytes(b"\x7fELF")
    (sp / "nvidia" / "cudnn").mkdir(parents=True)
    os.symlink(real_lib, sp / "nvidia" / "cudnn" / "lib")  # a hand-moved library dir, linked back
    (sp / "nvidia" / "cublas" / "lib").mkdir(parents=True)
    (tmp_path / "libcublas.so.13").write_bytes(b"\x7fELF")
    os.symlink(tmp_path / "libcublas.so.13", sp / "nvidia" / "cublas" / "lib" / "libcublas.so.13")  # a file link
    (sp / "nvidia" / "cublas" / "lib" / "libcublasLt.so.13").write_bytes(b"\x7fELF")
    _wheel(sp, "nvidia_cudnn_cu13-9.19.0.56", ["nvidia/cudnn/lib/libcudnn.so.9"])
    _wheel(sp, "nvidia_cublas-13.1.0.3", ["nvidia/cublas/lib/libcublas.so.13", "nvidia/cublas/lib/libcublasLt.so.13",
                                          "nvidia/cublas/../cublas/lib/libcublasLt.so.13", "nvidia/cublas/__init__.py"])
    _wheel(sp, "torch-2.9.0", ["torch/lib/libtorch.so"])  # not an NVIDIA wheel: its files are not owned
    (sp / ".nvidia_hidden-1.0.dist-info").mkdir()  # hidden, as glob skips it
    owned = pip_owned_libs([str(sp)], [])
    assert owned == {
        str(real_lib / "libcudnn.so.9"): ("nvidia-cudnn-cu13", "9.19.0.56"),
        str(tmp_path / "libcublas.so.13"): ("nvidia-cublas", "13.1.0.3"),
        os.path.realpath(sp / "nvidia" / "cublas" / "lib" / "libcublasLt.so.13"): ("nvidia-cublas", "13.1.0.3"),
    }


def test_a_dist_info_without_record_is_a_problem_and_other_dirs_are_not_read(tmp_path):
    sp = tmp_path / "sp"
    (sp / "nvidia_nccl_cu13-2.28.3.dist-info").mkdir(parents=True)
    (sp / "requests-2.32.0.dist-info").mkdir()  # no RECORD either, but not one the probes rely on
    problems = []
    assert pip_owned_libs([str(sp), str(tmp_path / "missing")], problems) == {}
    assert [os.path.basename(p["path"]) for p in problems] == ["nvidia_nccl_cu13-2.28.3.dist-info"]
    assert "no METADATA and no RECORD" in problems[0]["what"]


def test_realpaths_equal_os_realpath(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    os.symlink(tmp_path / "a", tmp_path / "link")
    (tmp_path / "a" / "b" / "f").write_text("")
    os.symlink("f", tmp_path / "a" / "b" / "g")
    os.symlink("../b/missing", tmp_path / "a" / "b" / "dangling")
    rp = _RealPaths()
    for p in ("link/b/f", "link/b/g", "a/b/../b/f", "link/b/dangling", "link/b/nonexistent", "a/b"):
        assert rp(str(tmp_path / p)) == os.path.realpath(tmp_path / p), p
