"""FAKE: stands in for GPU memory (cuda-python's runtime) beside the FAKE TensorRT: "device"
buffers are host buffers, copies are memmove, the stream is a number. Same interface as
``gpudoctor.process.trt_smoke.CudaRuntimeMemory``."""
import ctypes


class HostMemory:
    def __init__(self):
        self._bufs = {}

    def device(self):
        return None, {"ordinal": 0, "name": "FAKE host memory", "compute_capability": None, "device_count": 1}

    def alloc(self, nbytes):
        buf = ctypes.create_string_buffer(nbytes)
        self._bufs[ctypes.addressof(buf)] = buf
        return ctypes.addressof(buf)

    def htod(self, dst, src):
        assert dst in self._bufs
        ctypes.memmove(dst, ctypes.addressof(src), ctypes.sizeof(src))

    def dtoh(self, dst, src):
        assert src in self._bufs
        ctypes.memmove(ctypes.addressof(dst), src, ctypes.sizeof(dst))

    def stream(self):
        return 7

    def sync(self, handle):
        assert handle == 7

    def close(self):
        self._bufs.clear()
