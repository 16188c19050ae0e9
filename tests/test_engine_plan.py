"""gpudoctor.formats.engine_plan: reading TensorRT plan headers without TensorRT.

Real bytes: tests/data/engines/real-*.bin (first four bytes of real files, as quoted by
TensorRT's own errors; see that folder's README.md).  Every header that carries a version is
FAKE: built here by the ``fake_*`` helpers from the layout in docs/engine-plan.md.
"""
from __future__ import annotations

import io
import json
import os
import struct
import subprocess
import time

import pytest
from hypothesis import given, settings, strategies as st

from gpudoctor.formats import engine_plan as ep
from gpudoctor.formats.engine_plan import PlanFormatError, PlanHeader, read_plan_header, what_is_it

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "engines")


def real(name: str) -> str:
    return os.path.join(DATA, name)


# ------------------------------------------------------------------------------ FAKE builders


def fake_plan(version=(10, 3, 0, 26), word4=0, tag8=0, body=b"\xab" * 64) -> bytes:
    """FAKE plan: 'ftrt', u32 word4 at 4, byte tag8 at 8, version bytes at 24..27, then a body."""
    head = bytearray(28)
    head[0:4] = b"ftrt"
    struct.pack_into("<I", head, 4, word4)
    head[8] = tag8
    head[24:28] = bytes(version)
    return bytes(head) + body


def fake_ultralytics(plan: bytes, meta=None) -> bytes:
    """FAKE Ultralytics export: u32 LE JSON length, the JSON, then the plan."""
    meta = meta if meta is not None else {"author": "Ultralytics", "task": "detect", "imgsz": [640, 640]}
    blob = json.dumps(meta).encode()
    return struct.pack("<I", len(blob)) + blob + plan


def fake_onnx() -> bytes:
    """FAKE ONNX ModelProto start: ir_version=8, producer_name='pytorch', producer_version, graph."""
    def field(num, wire, payload):
        return bytes([(num << 3) | wire]) + payload

    def ld(num, data):
        return field(num, 2, bytes([len(data)]) + data)

    return field(1, 0, b"\x08") + ld(2, b"pytorch") + ld(3, b"2.3.0") + ld(7, b"\x0a\x04node")


# ------------------------------------------------------------------------------ real bytes


def test_real_plan_tag_is_ftrt_little_endian_1953657958():
    data = open(real("real-trt10-plan-tag-ftrt.bin"), "rb").read()
    assert data == b"ftrt"
    assert struct.unpack("<I", data)[0] == 1953657958 == 0x74727466  # the value TensorRT 10 expects
    assert what_is_it(data) == "TensorRT engine plan"


def test_real_plan_tag_alone_is_a_truncated_plan():
    with pytest.raises(PlanFormatError) as exc:
        read_plan_header(real("real-trt10-plan-tag-ftrt.bin"))
    assert exc.value.reason == "truncated"
    assert "28" in str(exc.value)


def test_real_safety_engine_tag_NLYM():
    path = real("real-trt10-safety-tag-NLYM-cookbook.bin")
    assert struct.unpack("<I", open(path, "rb").read())[0] == 1297697870
    h = read_plan_header(path)
    assert (h.magic, h.layout, h.trt_version, h.size) == ("NLYM", "trt-safety", None, 4)
    assert h.fields == (("magic", 0, 1297697870),)
    assert what_is_it(open(path, "rb").read()) == "TensorRT safety-runtime engine"


def test_real_ptrt_tag_from_fcm_issue_8():
    path = real("real-trt10-ptrt-tag-fcm8.bin")
    assert struct.unpack("<I", open(path, "rb").read())[0] == 1953657968
    h = read_plan_header(path)
    assert (h.magic, h.layout, h.trt_version) == ("ptrt", "trt-ptrt", None)


def test_fixture_readme_lists_every_real_fixture():
    readme = open(os.path.join(DATA, "README.md")).read()
    for name in os.listdir(DATA):
        if name.endswith(".bin"):
            assert name.startswith("real-"), name
            assert name in readme, name


# ------------------------------------------------------------------------------ FAKE layouts


@pytest.mark.parametrize(
    "version",
    [(8, 6, 1, 6), (9, 3, 0, 1), (10, 0, 1, 6), (10, 3, 0, 26), (10, 13, 3, 9), (11, 4, 0, 106 % 256)],
)
def test_FAKE_trt86plus_header_version(version):
    h = read_plan_header(fake_plan(version))
    assert h.layout == "trt8.6+"
    assert h.magic == "ftrt"
    assert h.trt_version == version
    assert h.trt_version_text == ".".join(map(str, version))
    assert not h.version_is_partial
    assert dict((n, (o, v)) for n, o, v in h.fields)["trt_major"] == (24, version[0])
    # Not recorded at any documented offset: reported unknown, never guessed.
    assert (h.version_compatible, h.lean, h.hardware_compatibility, h.compute_capability) == (None,) * 4


def test_FAKE_header_fields_are_evidence_with_offsets():
    h = read_plan_header(fake_plan((8, 6, 1, 6)))
    assert h.fields == (
        ("magic", 0, 0x74727466),
        ("serialization_word", 4, 0),
        ("trt_major", 24, 8),
        ("trt_minor", 25, 6),
        ("trt_patch", 26, 1),
        ("trt_build", 27, 6),
    )
    assert h.plan_offset == 0


@pytest.mark.parametrize("tag,expected", [(205, (8, 2)), (213, (8, 4)), (232, (8, 5))])
def test_FAKE_legacy_serialization_tag_gives_release_line(tag, expected):
    # Pre-8.6 plans: bytes 24..27 hold no version; the public tag values sit at byte 8.
    for word4 in (0, 0x12345):
        h = read_plan_header(fake_plan((0, 0, 0, 0), word4=word4, tag8=tag))
        assert h.layout == "trt-legacy"
        assert h.trt_version == expected
        assert h.version_is_partial
        assert ("serialization_tag", 8, tag) in h.fields


def test_FAKE_legacy_unknown_tag_has_no_version():
    h = read_plan_header(fake_plan((0, 0, 0, 0), word4=7, tag8=99))
    assert (h.layout, h.trt_version, h.trt_version_text) == ("trt-legacy", None, None)


def test_FAKE_implausible_version_bytes_are_not_reported():
    # word4 == 0 but bytes 24..27 are not a version that can use this header (8.5 < 8.6, 200.x)
    for bad in [(8, 5, 3, 1), (200, 1, 1, 1), (0, 0, 0, 0), (10, 250, 0, 0)]:
        h = read_plan_header(fake_plan(bad, tag8=1))
        assert h.trt_version is None
        assert h.layout == "trt-unknown"


def test_FAKE_version_byte_8_is_not_used_when_header_has_a_version():
    h = read_plan_header(fake_plan((10, 3, 0, 26), tag8=232))
    assert h.trt_version == (10, 3, 0, 26)


def test_FAKE_ultralytics_wrapped_engine():
    plan = fake_plan((10, 3, 0, 26))
    data = fake_ultralytics(plan)
    n = struct.unpack("<I", data[:4])[0]
    h = read_plan_header(data)
    assert h.layout == "ultralytics+trt8.6+"
    assert h.trt_version == (10, 3, 0, 26)
    assert h.plan_offset == 4 + n
    assert ("trt_major", 4 + n + 24, 10) in h.fields
    assert what_is_it(data) == "Ultralytics-wrapped TensorRT engine"


def test_FAKE_ultralytics_prefix_without_plan_is_not_an_engine():
    data = fake_ultralytics(b"PK\x03\x04" + b"\0" * 40)
    with pytest.raises(PlanFormatError) as exc:
        read_plan_header(data)
    assert exc.value.reason == "not_an_engine"
    assert "Ultralytics" in str(exc.value)


def test_FAKE_ultralytics_cut_before_plan_is_truncated():
    data = fake_ultralytics(fake_plan())
    n = struct.unpack("<I", data[:4])[0]
    with pytest.raises(PlanFormatError) as exc:
        read_plan_header(data[: 4 + n // 2])
    assert exc.value.reason == "truncated"


def test_FAKE_ultralytics_prefix_beyond_max_bytes_is_unreadable_not_misread():
    data = fake_ultralytics(fake_plan(), meta={"pad": "x" * 5000})
    with pytest.raises(PlanFormatError) as exc:
        read_plan_header(data, max_bytes=1000)
    assert exc.value.reason == "unreadable"
    assert "max_bytes" in str(exc.value)


# ------------------------------------------------------------------------------ bad input


def test_empty_bytes_and_file(tmp_path):
    for src in (b"", bytearray()):
        with pytest.raises(PlanFormatError) as exc:
            read_plan_header(src)
        assert exc.value.reason == "empty"
    p = tmp_path / "empty.engine"
    p.write_bytes(b"")
    with pytest.raises(PlanFormatError) as exc:
        read_plan_header(p)
    assert exc.value.reason == "empty"
    assert "empty.engine" in str(exc.value)


@pytest.mark.parametrize(
    "full",
    [fake_plan((8, 6, 1, 6)), fake_plan((0, 0, 0, 0), word4=3, tag8=232), fake_ultralytics(fake_plan())],
    ids=["FAKE-trt86", "FAKE-legacy", "FAKE-ultralytics"],
)
def test_truncated_at_every_byte_of_the_header(full, tmp_path):
    header_end = full.index(b"ftrt") + 28
    for cut in range(header_end):
        data = full[:cut]
        with pytest.raises(PlanFormatError) as exc:
            read_plan_header(data)
        assert exc.value.reason in ("empty", "truncated", "not_an_engine"), (cut, exc.value.reason)
        if cut == 0:
            assert exc.value.reason == "empty"
        elif full.startswith(b"ftrt"):
            assert exc.value.reason == "truncated", cut
    # The same through a real file, for a few cuts.
    for cut in (1, 3, 4, 27):
        p = tmp_path / f"cut{cut}.engine"
        p.write_bytes(full[:cut])
        with pytest.raises(PlanFormatError):
            read_plan_header(p)
    assert read_plan_header(full[:header_end]).trt_version is not None


def test_onnx_model_is_not_an_engine(tmp_path):
    data = fake_onnx()
    assert what_is_it(data) == "ONNX model"
    p = tmp_path / "model.onnx"
    p.write_bytes(data)
    with pytest.raises(PlanFormatError) as exc:
        read_plan_header(p)
    assert exc.value.reason == "not_an_engine"
    assert "ONNX model" in str(exc.value)


def test_real_onnx_serialization_if_available():
    onnx = pytest.importorskip("onnx")
    from onnx import helper, TensorProto

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    )
    data = helper.make_model(graph, producer_name="gpudoctor-test").SerializeToString()
    assert what_is_it(data) == "ONNX model"
    with pytest.raises(PlanFormatError) as exc:
        read_plan_header(data)
    assert exc.value.reason == "not_an_engine"
    del onnx


def test_text_file_is_not_an_engine(tmp_path):
    p = tmp_path / "notes.engine"
    p.write_text("this is not an engine, just some notes\nsecond line\n")
    with pytest.raises(PlanFormatError) as exc:
        read_plan_header(p)
    assert exc.value.reason == "not_an_engine"
    assert "text" in str(exc.value)
    assert what_is_it(p.read_bytes()) == "text"


def test_calibration_cache_is_recognised_not_an_engine():
    data = b"TRT-8601-EntropyCalibration2\ninput: 3c010a14\n"
    assert what_is_it(data) == "TensorRT calibration cache"
    with pytest.raises(PlanFormatError) as exc:
        read_plan_header(data)
    assert exc.value.reason == "not_an_engine"


@pytest.mark.parametrize(
    "data,guess",
    [
        (b"\x7fELF\x02\x01\x01" + b"\0" * 40, "ELF"),
        (b"PK\x03\x04" + b"\0" * 40, "zip"),
        (b"\x1f\x8b\x08\x00" + b"\0" * 40, "gzip"),
        (struct.pack("<Q", 20) + b'{"__metadata__":{}}', "safetensors"),
        (b"", "empty"),
        (bytes(range(256)) * 2, "unknown"),
    ],
)
def test_what_is_it(data, guess):
    assert what_is_it(data) == guess


def test_timing_cache_like_binary_is_not_an_engine():
    # A timing cache has no public signature; whatever it starts with, it is not 'ftrt'.
    data = b"\x01\x00\x00\x00" + os.urandom(200)
    with pytest.raises(PlanFormatError) as exc:
        read_plan_header(data)
    assert exc.value.reason == "not_an_engine"


def test_directory_and_missing_and_unreadable(tmp_path):
    with pytest.raises(PlanFormatError) as exc:
        read_plan_header(tmp_path)
    assert exc.value.reason == "unreadable"
    assert "directory" in str(exc.value)
    with pytest.raises(PlanFormatError) as exc:
        read_plan_header(tmp_path / "nope.engine")
    assert exc.value.reason == "unreadable"
    p = tmp_path / "locked.engine"
    p.write_bytes(fake_plan())
    p.chmod(0)
    try:
        if os.access(p, os.R_OK):  # root reads anything
            pytest.skip("running as root: permissions do not stop the read")
        with pytest.raises(PlanFormatError) as exc:
            read_plan_header(p)
        assert exc.value.reason == "unreadable"
    finally:
        p.chmod(0o644)


def test_fifo_is_refused_without_hanging(tmp_path):
    fifo = tmp_path / "pipe.engine"
    os.mkfifo(fifo)
    t0 = time.monotonic()
    with pytest.raises(PlanFormatError) as exc:
        read_plan_header(fifo)
    assert exc.value.reason == "unreadable"
    assert time.monotonic() - t0 < 2


def test_path_types(tmp_path):
    p = tmp_path / "m.plan"
    p.write_bytes(fake_plan((8, 6, 1, 6)))
    for src in (p, str(p)):
        assert read_plan_header(src).trt_version == (8, 6, 1, 6)
    assert read_plan_header(memoryview(fake_plan((10, 0, 1, 6)))).trt_version == (10, 0, 1, 6)
    assert read_plan_header(bytearray(fake_plan((10, 0, 1, 6)))).size == 28 + 64
    with pytest.raises(TypeError):
        read_plan_header(12345)
    with pytest.raises(ValueError):
        read_plan_header(fake_plan(), max_bytes=0)


def test_max_bytes_smaller_than_header_is_unreadable_not_truncated():
    with pytest.raises(PlanFormatError) as exc:
        read_plan_header(fake_plan(), max_bytes=10)
    assert exc.value.reason == "unreadable"
    assert read_plan_header(fake_plan(), max_bytes=28).trt_version == (10, 3, 0, 26)


class _CountingFile(io.FileIO):
    total = 0

    def read(self, n=-1):
        assert n is not None and n >= 0, "must never read to end of file"
        out = super().read(n)
        _CountingFile.total += len(out)
        return out


def test_huge_sparse_file_is_fast_and_bounded(tmp_path, monkeypatch):
    p = tmp_path / "huge.engine"
    p.write_bytes(fake_plan((10, 3, 0, 26)))
    subprocess.run(["truncate", "-s", "2G", str(p)], check=True)
    assert os.path.getsize(p) == 2 << 30

    import builtins

    real_open = builtins.open

    def counting_open(path, mode="r", *a, **kw):
        if mode == "rb" and os.fspath(path) == str(p):
            return _CountingFile(path, "r")
        return real_open(path, mode, *a, **kw)

    monkeypatch.setattr(builtins, "open", counting_open)
    for max_bytes in (1 << 20, 28, 4096, 100):
        _CountingFile.total = 0
        t0 = time.monotonic()
        h = read_plan_header(p, max_bytes=max_bytes)
        assert time.monotonic() - t0 < 1.0
        assert _CountingFile.total <= max_bytes
        assert h.size == 2 << 30
        assert h.trt_version == (10, 3, 0, 26)

    # A 2 GB sparse file of zeros: not an engine, and still only a bounded read.
    z = tmp_path / "zeros.engine"
    subprocess.run(["truncate", "-s", "2G", str(z)], check=True)
    _CountingFile.total = 0
    with pytest.raises(PlanFormatError) as exc:
        read_plan_header(z, max_bytes=512)
    assert exc.value.reason == "not_an_engine"
    assert _CountingFile.total <= 512


def test_plan_format_error_contract():
    e = PlanFormatError("truncated", "cut")
    assert isinstance(e, ValueError)
    assert (e.reason, str(e)) == ("truncated", "cut")
    with pytest.raises(ValueError):
        PlanFormatError("bogus", "x")


def test_header_is_frozen():
    h = read_plan_header(fake_plan())
    assert isinstance(h, PlanHeader)
    with pytest.raises(Exception):
        h.layout = "x"  # type: ignore[misc]


def test_legacy_table_matches_docs():
    doc = open(os.path.join(os.path.dirname(DATA), "..", "..", "docs", "engine-plan.md")).read()
    for tag, (major, minor) in ep.LEGACY_SERIALIZATION_TAGS.items():
        assert f"{tag}" in doc and f"{major}.{minor}" in doc


# ------------------------------------------------------------------------------ fuzzing


def _check_outcome(data: bytes):
    try:
        h = read_plan_header(data)
    except PlanFormatError as exc:
        assert exc.reason in PlanFormatError.REASONS
        assert str(exc)
        return None
    assert isinstance(h, PlanHeader)
    assert h.size == len(data)
    return h


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=600))
def test_random_bytes_never_raise_anything_else(data):
    _check_outcome(data)
    assert isinstance(what_is_it(data), str)


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=0, max_size=80))
def test_random_bytes_after_the_tag(rest):
    h = _check_outcome(b"ftrt" + rest)
    if len(rest) >= 24:
        assert h is not None and h.magic == "ftrt"
    else:
        assert h is None


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 0xFFFFFFFF), st.binary(max_size=300))
def test_random_length_prefixes(n, rest):
    _check_outcome(struct.pack("<I", n) + b"{" + rest)
    _check_outcome(struct.pack("<I", n) + rest)
