"""NVRTC in a process of its own, beside the NVRTC smoke worker that runs what it compiles.

The worker forks this child first thing (one thread, no CUDA loaded yet): the child loads NVRTC while
the worker runs ``cuInit``, then compiles (or takes from the cache) a CUBIN per arch the worker sends,
while the worker creates its CUDA context. NVRTC's library (about 31 MiB resident) and its compile
heap (about 40 MiB) thus never share a process with a CUDA context (about 50 MiB): on the H100 the
single worker peaked at 128 MiB cold, 119 MiB warm (issue 12: every process of a check <= 120 MiB).

Protocol over two pipes: the child writes one JSON line of NVRTC facts (``nvrtc_version``,
``nvrtc_supported_archs``, ``fp16_header``, or ``nvrtc_error``); reads one JSON line ``{"archs": [...]}``;
then writes, per arch, a JSON header line ``{arch, log, seconds, result, cached, size}`` followed by
``size`` bytes of CUBIN. A child that dies is reported with its signal or exit code.
"""
from __future__ import annotations

import json
import os
import signal
from typing import Dict, Optional, Tuple


class CompilerChild:
    """The parent's handle on the forked NVRTC process."""

    def __init__(self, pid: int, to_child, from_child) -> None:
        self.pid, self._to, self._from = pid, to_child, from_child
        self._status: Optional[int] = None

    @classmethod
    def start(cls, use_cache: bool) -> Optional["CompilerChild"]:
        """Fork the compiler now; None where fork is not available (the worker compiles in-process)."""
        if not hasattr(os, "fork"):
            return None
        from gpudoctor.process.subproc import fork_call

        down_r, down_w = os.pipe()
        up_r, up_w = os.pipe()

        def child() -> int:
            os.close(down_w)
            os.close(up_r)
            with os.fdopen(down_r, "rb") as rfile, os.fdopen(up_w, "wb") as wfile:
                _serve(rfile, wfile, use_cache)
            return 0

        pid = fork_call(child, "gd:nvrtc-cc")  # named in ps/top and bench_check, apart from the worker
        os.close(down_r)
        os.close(up_w)
        return cls(pid, os.fdopen(down_w, "wb"), os.fdopen(up_r, "rb"))

    def info(self) -> dict:
        """NVRTC's facts, or ``{"nvrtc_error": ...}`` when the child died before saying them."""
        line = self._from.readline()
        if not line:
            return {"nvrtc_error": self._death(), "nvrtc_crashed": True}
        return json.loads(line)

    def compile(self, archs) -> Dict[str, Tuple[Optional[bytes], str, float, str, bool]]:
        """``{arch: (cubin|None, log, seconds, NVRTC result, from the cache)}`` for each of ``archs``."""
        out: Dict[str, Tuple[Optional[bytes], str, float, str, bool]] = {}
        try:
            self._to.write((json.dumps({"archs": list(archs)}) + "\n").encode())
            self._to.flush()
        except OSError:
            pass
        for arch in archs:
            line = self._from.readline()
            if not line:
                out[arch] = (None, "", 0.0, f"NVRTC process died: {self._death()}", False)
                continue
            head = json.loads(line)
            cubin = self._from.read(head["size"]) if head["size"] else None
            out[arch] = (cubin, head["log"], head["seconds"], head["result"], head["cached"])
        return out

    def close(self) -> None:
        for f in (self._to, self._from):
            try:
                f.close()
            except OSError:
                pass
        self._wait()

    def _wait(self) -> int:
        if self._status is None:
            try:
                _, status = os.waitpid(self.pid, 0)
                self._status = os.waitstatus_to_exitcode(status)
            except ChildProcessError:
                self._status = 0
        return self._status

    def _death(self) -> str:
        code = self._wait()
        if code < 0:
            try:
                return f"killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exited with {code} before answering"


def _serve(rfile, wfile, use_cache: bool) -> None:
    from gpudoctor.process import nvrtc_build as w

    info: dict = {}
    nvrtc = w._nvrtc_info(info)
    inc = w._fp16_include_dir()
    info["fp16_header"] = os.path.join(inc, "cuda_fp16.h") if inc else None
    wfile.write((json.dumps(info) + "\n").encode())
    wfile.flush()
    if nvrtc is None:
        return
    line = rfile.readline()
    if not line:
        return  # the worker gave up (no answer needed)
    source = (w.KERNELS % {"fp16_include": "#include <cuda_fp16.h>" if inc else "",
                           "hadd2_body": w._HADD2_HEADER if inc else w._HADD2_PTX}).encode()
    for arch in json.loads(line)["archs"]:
        cubin, log, secs, result, cached = w._cached_compile(nvrtc, info, source, arch, inc, use_cache)
        head = {"arch": arch, "log": log, "seconds": secs, "result": result, "cached": cached,
                "size": len(cubin) if cubin else 0}
        wfile.write((json.dumps(head) + "\n").encode())
        if cubin:
            wfile.write(cubin)
        wfile.flush()
