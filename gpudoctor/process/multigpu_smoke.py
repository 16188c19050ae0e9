"""Multi-GPU smoke test, run in the worker child (``python -m gpudoctor.process.worker multigpu-smoke``).

1. A peer copy between every ordered pair of GPUs (CUDA runtime API through cuda-python:
   ``cudaDeviceCanAccessPeer``, ``cudaDeviceEnablePeerAccess``, ``cudaMemcpyPeer``), verified byte for
   byte and timed (GB/s). ``cudaMemcpyPeer`` also works without peer access (the driver stages the
   copy through host memory), so "peer access: no" with a good copy is a slow path, not a failure.
2. When an NCCL library is given: an all-reduce (sum of float32) over all GPUs through NCCL's C API
   (ctypes; nccl.h: ``ncclCommInitAll``, ``ncclGroupStart``/``End``, ``ncclAllReduce``), verified on every
   GPU and timed: algorithm bandwidth = bytes / time, bus bandwidth = algbw x 2(n-1)/n (the figure
   nccl-tests prints). NCCL's own warnings are captured (``NCCL_DEBUG=WARN`` into a file unless the user
   set NCCL_DEBUG) and returned. The caller's timeout covers a hang.

Needs two or more GPUs; ``--self-test`` runs the same code on one GPU (a copy to itself, a one-rank
all-reduce) to check the plumbing on a single-GPU machine.
"""
from __future__ import annotations

import ctypes
import os
import tempfile
import time

from gpudoctor.process.cuda_bindings import binding, call, name

COPY_BYTES = 64 << 20
COPY_REPEATS = 5
NCCL_FLOATS = 16 << 20  # 64 MiB of float32 per GPU (device memory; the host stages 4 MiB at a time)
NCCL_REPEATS = 5
NCCL_FLOAT32, NCCL_SUM = 7, 0  # nccl.h: ncclDataType_t ncclFloat32 = 7, ncclRedOp_t ncclSum = 0


def _floats(value: float) -> bytes:
    """CHUNK bytes of float32 ``value``."""
    from array import array

    return (array("f", [value]) * (CHUNK // 4)).tobytes()


class _Fail(Exception):
    pass


def _ok(rt, out, what):
    """The values of a cuda-python call, or raise _Fail naming the call and its cudaError_t."""
    err = name(out[0])
    if err != "cudaSuccess":
        raise _Fail(f"{what}: {err}")
    return out[1] if len(out) == 2 else out[1:] if len(out) > 2 else None


CHUNK = 4 << 20  # host-side staging: device buffers are verified and filled 4 MiB at a time (RSS stays small)


def _differing(rt, ptr: int, nbytes: int, expected_chunk: bytes) -> int:
    """Bytes (or for floats, 4-byte values) of device memory at ``ptr`` that differ from
    ``expected_chunk`` repeated; read back CHUNK bytes at a time."""
    host = (ctypes.c_char * CHUNK)()
    bad = 0
    for off in range(0, nbytes, CHUNK):
        n = min(CHUNK, nbytes - off)
        _ok(rt, rt.cudaMemcpy(ctypes.addressof(host), ptr + off, n, rt.cudaMemcpyKind.cudaMemcpyDeviceToHost),
            "cudaMemcpy D2H")
        got = host.raw[:n]
        if got != expected_chunk[:n]:
            step = 4 if len(expected_chunk) % 4 == 0 and len(set(expected_chunk)) > 1 else 1
            bad += sum(got[i:i + step] != expected_chunk[i:i + step] for i in range(0, n, step))
    return bad


def _fill(rt, ptr: int, nbytes: int, chunk: bytes) -> None:
    host = ctypes.create_string_buffer(chunk, len(chunk))
    for off in range(0, nbytes, len(chunk)):
        n = min(len(chunk), nbytes - off)
        _ok(rt, rt.cudaMemcpy(ptr + off, ctypes.addressof(host), n, rt.cudaMemcpyKind.cudaMemcpyHostToDevice),
            "cudaMemcpy H2D")


def _sync(rt, *devices) -> None:
    """Wait for both ends: cudaMemcpyPeer is queued on the current device and ordered with both."""
    for d in devices:
        _ok(rt, rt.cudaSetDevice(d), "cudaSetDevice")
        _ok(rt, rt.cudaDeviceSynchronize(), "cudaDeviceSynchronize")


def _copy(rt, src: int, dst: int, nbytes: int) -> dict:
    entry = {"src": src, "dst": dst}
    try:
        can = _ok(rt, rt.cudaDeviceCanAccessPeer(src, dst), "cudaDeviceCanAccessPeer") if src != dst else 1
        entry["can_access_peer"] = bool(can)
        if can and src != dst:
            _ok(rt, rt.cudaSetDevice(src), "cudaSetDevice")
            err = name(rt.cudaDeviceEnablePeerAccess(dst, 0)[0])
            entry["peer_enabled"] = err in ("cudaSuccess", "cudaErrorPeerAccessAlreadyEnabled")
            if not entry["peer_enabled"]:
                entry["enable_error"] = err
        _ok(rt, rt.cudaSetDevice(src), "cudaSetDevice")
        a = _ok(rt, rt.cudaMalloc(nbytes), f"cudaMalloc on GPU {src}")
        _ok(rt, rt.cudaSetDevice(dst), "cudaSetDevice")
        b = _ok(rt, rt.cudaMalloc(nbytes), f"cudaMalloc on GPU {dst}")
        pattern = (src * 16 + dst + 1) & 0xFF or 0x5A
        try:
            _ok(rt, rt.cudaSetDevice(src), "cudaSetDevice")
            _ok(rt, rt.cudaMemset(a, pattern, nbytes), "cudaMemset")
            _ok(rt, rt.cudaDeviceSynchronize(), "cudaDeviceSynchronize")
            _ok(rt, rt.cudaMemcpyPeer(b, dst, a, src, nbytes), "cudaMemcpyPeer")  # warm-up
            _sync(rt, src, dst)
            _ok(rt, rt.cudaSetDevice(src), "cudaSetDevice")
            t0 = time.perf_counter()
            for _ in range(COPY_REPEATS):
                _ok(rt, rt.cudaMemcpyPeer(b, dst, a, src, nbytes), "cudaMemcpyPeer")
            _sync(rt, src, dst)
            secs = time.perf_counter() - t0
            wrong = _differing(rt, b, nbytes, bytes([pattern]) * CHUNK)
            entry.update(ok=wrong == 0, bytes=nbytes, seconds=round(secs, 6),
                         gb_per_s=round(nbytes * COPY_REPEATS / secs / 1e9, 2) if secs > 0 else None)
            if wrong:
                entry["error"] = f"{wrong} of {nbytes} bytes differ after the copy"
        finally:
            for d, ptr in ((src, a), (dst, b)):
                rt.cudaSetDevice(d)
                rt.cudaFree(ptr)
    except _Fail as exc:
        entry.update(ok=False, error=str(exc))
    return entry


def _nccl(rt, path: str, devices: list) -> dict:
    out = {"library": path, "devices": devices}
    try:
        lib = ctypes.CDLL(path)
    except OSError as exc:
        out.update(ok=False, error=f"cannot load {path}: {exc}")
        return out
    log = None
    if "NCCL_DEBUG" not in os.environ:  # NCCL's warnings (e.g. "P2P is disabled") are evidence: keep them
        fd, log = tempfile.mkstemp(prefix="gpudoctor-nccl-", suffix=".log")  # (NCCL reads both at init)
        os.close(fd)
        os.environ["NCCL_DEBUG"] = "WARN"
        os.environ.setdefault("NCCL_DEBUG_FILE", log)
        out["ran_with"] = {"NCCL_DEBUG": "WARN"}  # what a message asking for NCCL_DEBUG=WARN already had
    lib.ncclGetErrorString.restype = ctypes.c_char_p
    ver = ctypes.c_int(0)
    if lib.ncclGetVersion(ctypes.byref(ver)) == 0:
        out["version_code"] = ver.value

    def check(rc, what):
        if rc != 0:
            raise _Fail(f"{what}: ncclResult_t {rc} ({lib.ncclGetErrorString(rc).decode(errors='replace')})")

    n = len(devices)
    comms = (ctypes.c_void_p * n)()
    bufs, streams = [], []
    try:
        t0 = time.perf_counter()
        check(lib.ncclCommInitAll(comms, n, (ctypes.c_int * n)(*devices)), "ncclCommInitAll")
        out["init_seconds"] = round(time.perf_counter() - t0, 4)
        nbytes = NCCL_FLOATS * 4
        for i, d in enumerate(devices):
            _ok(rt, rt.cudaSetDevice(d), "cudaSetDevice")
            send = _ok(rt, rt.cudaMalloc(nbytes), f"cudaMalloc on GPU {d}")
            recv = _ok(rt, rt.cudaMalloc(nbytes), f"cudaMalloc on GPU {d}")
            bufs.append((d, send, recv))
            _fill(rt, send, nbytes, _floats(float(i + 1)))
            streams.append(_ok(rt, rt.cudaStreamCreate(), "cudaStreamCreate"))

        def all_reduce():
            check(lib.ncclGroupStart(), "ncclGroupStart")
            for i, (d, send, recv) in enumerate(bufs):
                check(lib.ncclAllReduce(ctypes.c_void_p(send), ctypes.c_void_p(recv), ctypes.c_size_t(NCCL_FLOATS),
                                        NCCL_FLOAT32, NCCL_SUM, ctypes.c_void_p(comms[i]),
                                        ctypes.c_void_p(int(streams[i]))), f"ncclAllReduce on GPU {d}")
            check(lib.ncclGroupEnd(), "ncclGroupEnd")
            for (d, _, _), s in zip(bufs, streams):
                _ok(rt, rt.cudaSetDevice(d), "cudaSetDevice")
                _ok(rt, rt.cudaStreamSynchronize(s), f"cudaStreamSynchronize on GPU {d}")

        all_reduce()  # warm-up (connections are set up lazily)
        t0 = time.perf_counter()
        for _ in range(NCCL_REPEATS):
            all_reduce()
        secs = (time.perf_counter() - t0) / NCCL_REPEATS
        expected = float(n * (n + 1) // 2)
        wrong = []
        for d, _, recv in bufs:
            _ok(rt, rt.cudaSetDevice(d), "cudaSetDevice")
            bad = _differing(rt, recv, nbytes, _floats(expected))
            if bad:
                wrong.append(f"GPU {d}: {bad} of {NCCL_FLOATS} values differ from {expected}")
        algbw = nbytes / secs / 1e9 if secs > 0 else None
        out.update(ok=not wrong, bytes=nbytes, seconds=round(secs, 6),
                   algbw_gb_per_s=round(algbw, 2) if algbw else None,
                   busbw_gb_per_s=round(algbw * 2 * (n - 1) / n, 2) if algbw and n > 1 else None)
        if wrong:
            out["error"] = "; ".join(wrong)
    except _Fail as exc:
        out.update(ok=False, error=str(exc))
    finally:
        for d, send, recv in bufs:
            rt.cudaSetDevice(d)
            rt.cudaFree(send)
            rt.cudaFree(recv)
        for c in comms:
            if c:
                lib.ncclCommDestroy(ctypes.c_void_p(c))
        if log:
            for var in ("NCCL_DEBUG", "NCCL_DEBUG_FILE"):  # ours, not the user's: leave no trace
                if os.environ.get(var) in ("WARN", log):
                    del os.environ[var]
            try:
                with open(log, errors="replace") as fh:
                    out["nccl_log"] = [line.rstrip() for line in fh.read(1 << 16).splitlines() if line.strip()][-20:]
            finally:
                os.unlink(log)
    return out


def _rerun_for_detail(args, nccl: dict, seconds: float) -> None:
    """When NCCL's error says how to learn more ("run with NCCL_DEBUG=WARN for details") and this run did
    not already run that way, run the all-reduce once more in a fresh child with that setting (NCCL reads
    its variables once per process) and keep what it said: ``nccl["rerun"] = {"setting", "command",
    "stderr_tail", "error"}``. Bounded by :func:`gpudoctor.process.more_detail.rerun_timeout`."""
    import json
    import sys

    from gpudoctor.process.more_detail import detail_env, rerun_timeout
    from gpudoctor.process.subproc import run
    from gpudoctor.process.tail import tail

    ran = dict(os.environ, **(nccl.get("ran_with") or {}))
    asked = detail_env(ran, "\n".join([nccl.get("error") or ""] + list(nccl.get("nccl_log") or [])))
    if asked is None:
        return
    env, setting = asked
    argv = [sys.executable, "-m", "gpudoctor.process.worker", "multigpu-smoke", *[a for a in args if a != "--detail-rerun"],
            "--nccl-only", "--detail-rerun"]
    r = run(argv, timeout=rerun_timeout(seconds), env=env)
    lines = [l for l in r.output.splitlines() if l.strip()]
    answer = {}
    if lines and lines[-1].startswith("{"):
        try:
            answer = (json.loads(lines.pop()) or {}).get("nccl") or {}
        except ValueError:
            pass
    said = lines + list(answer.get("nccl_log") or [])
    nccl["rerun"] = {"setting": setting, "command": f"{setting} python -m gpudoctor.process.worker multigpu-smoke "
                                                    f"--nccl {nccl.get('library')} --nccl-only",
                     "stderr_tail": tail("\n".join(said)), "error": answer.get("error") or r.error,
                     "ok": answer.get("ok")}


def multigpu_smoke_main(args) -> dict:
    """``[--self-test] [--nccl PATH] [--nccl-only]`` → ``{"device_count", "copies": [...], "nccl": {...}|None}``
    or ``{"skipped": reason, "device_count"}``. A failed all-reduce whose error asks for a setting is run once
    more with it (``nccl["rerun"]``; ``--detail-rerun`` marks that child, which never reruns itself)."""
    self_test = "--self-test" in args
    nccl = args[args.index("--nccl") + 1] if "--nccl" in args and args.index("--nccl") + 1 < len(args) else None
    rt = binding("runtime")
    err, count = call(rt.cudaGetDeviceCount)
    if err != "cudaSuccess":
        return {"skipped": f"no CUDA device ({err})", "device_count": 0}
    if count < 2 and not self_test:
        return {"skipped": f"{count} GPU visible to CUDA: peer copies and an NCCL all-reduce need two or more",
                "device_count": count}
    devices = list(range(count))
    ordered = [(a, b) for a in devices for b in devices if a != b] or [(0, 0)]
    res = {"device_count": count, "self_test": self_test,
           "copies": [] if "--nccl-only" in args else [_copy(rt, a, b, COPY_BYTES) for a, b in ordered]}
    t0 = time.perf_counter()
    res["nccl"] = _nccl(rt, nccl, devices) if nccl else None
    if res["nccl"] and not res["nccl"].get("ok") and "--detail-rerun" not in args:
        _rerun_for_detail(args, res["nccl"], time.perf_counter() - t0)
    return res
