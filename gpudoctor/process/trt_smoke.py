"""TensorRT smoke test, run in the worker child (``python -m gpudoctor.process.worker trt-smoke``).

Kept apart from :mod:`gpudoctor.process.worker` so the other child tasks stay small; nothing here is imported
by the main process.
"""
from __future__ import annotations

import ctypes
import os
import sys
import time

from gpudoctor.process.cuda_bindings import binding as _binding, call as _call, name as _name

# ---------------------------------------------------------------------------------------------
# TensorRT smoke test ("trt-smoke"): build a two-layer network with the TensorRT Python API,
# serialize it, deserialize it with a fresh Runtime, run it and compare every element.
#
# API generations (NVIDIA's Python API reference and migration guides):
#   all:   Builder(logger), Builder.create_builder_config(), IBuilderConfig.set_memory_pool_limit(
#          MemoryPoolType.WORKSPACE, n), INetworkDefinition.add_input / add_elementwise /
#          add_activation / mark_output, Builder.build_serialized_network(network, config),
#          Runtime(logger).deserialize_cuda_engine(plan), ICudaEngine.create_execution_context()
#   8.x:   create_network(1 << int(NetworkDefinitionCreationFlag.EXPLICIT_BATCH)) (implicit batch
#          otherwise); ICudaEngine.num_bindings / get_binding_index; IExecutionContext.execute_v2(bindings)
#   10.x:  EXPLICIT_BATCH is deprecated and ignored (always explicit batch): create_network(0);
#          binding APIs removed; ICudaEngine.num_io_tensors / get_tensor_name / get_tensor_mode,
#          IExecutionContext.set_tensor_address + execute_async_v3(stream_handle)
#   11.x:  as 10.x; NetworkDefinitionCreationFlag.EXPLICIT_BATCH no longer exists (strong typing
#          always on), so it must not be touched.
# Device memory, copies and the stream go through cuda-python's runtime API, never torch.
# ---------------------------------------------------------------------------------------------

TRT_MODULES = ("tensorrt", "tensorrt_bindings")
TRT_SHAPE = (4, 256)
_TRT_WORKSPACE = 1 << 26


def _one_line(exc: BaseException, limit: int = 600) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}"[:limit] if text else type(exc).__name__


class CudaRuntimeMemory:
    """Device buffers, host<->device copies and one stream through cuda-python's runtime API.

    The TensorRT smoke test talks to memory only through this interface (``device``, ``alloc``,
    ``htod``, ``dtoh``, ``stream``, ``sync``, ``close``), so a stand-in can replace it."""

    def __init__(self):
        self.rt = _binding("runtime")
        self._ptrs = []
        self._streams = {}

    def _ok(self, out, what):
        err = _name(out[0])
        if err != "cudaSuccess":
            raise RuntimeError(f"{what}: {err}")
        return out[1] if len(out) > 1 else None

    def device(self):
        """``(None, facts)`` for device 0, or ``(reason, None)`` when no CUDA device is usable."""
        err, count = _call(self.rt.cudaGetDeviceCount)
        if err != "cudaSuccess" or not count:
            return f"no CUDA device (cudaGetDeviceCount: {err}{', 0 devices' if err == 'cudaSuccess' else ''})", None
        self._ok(self.rt.cudaSetDevice(0), "cudaSetDevice(0)")
        prop = self._ok(self.rt.cudaGetDeviceProperties(0), "cudaGetDeviceProperties(0)")
        name = prop.name
        if isinstance(name, (bytes, bytearray)):
            name = bytes(name).split(b"\0", 1)[0].decode(errors="replace")
        return None, {"ordinal": 0, "name": name, "compute_capability": f"{prop.major}.{prop.minor}", "device_count": count}

    def alloc(self, nbytes: int) -> int:
        ptr = int(self._ok(self.rt.cudaMalloc(nbytes), "cudaMalloc"))
        self._ptrs.append(ptr)
        return ptr

    def htod(self, dst: int, src) -> None:
        kind = self.rt.cudaMemcpyKind.cudaMemcpyHostToDevice
        self._ok(self.rt.cudaMemcpy(dst, ctypes.addressof(src), ctypes.sizeof(src), kind), "cudaMemcpy(HtoD)")

    def dtoh(self, dst, src: int) -> None:
        kind = self.rt.cudaMemcpyKind.cudaMemcpyDeviceToHost
        self._ok(self.rt.cudaMemcpy(ctypes.addressof(dst), src, ctypes.sizeof(dst), kind), "cudaMemcpy(DtoH)")

    def stream(self) -> int:
        s = self._ok(self.rt.cudaStreamCreate(), "cudaStreamCreate")
        handle = int(s)
        self._streams[handle] = s
        return handle

    def sync(self, handle: int) -> None:
        self._ok(self.rt.cudaStreamSynchronize(self._streams.get(handle, handle)), "cudaStreamSynchronize")

    def close(self) -> None:
        for p in self._ptrs:
            self.rt.cudaFree(p)
        for s in self._streams.values():
            self.rt.cudaStreamDestroy(s)
        self._ptrs, self._streams = [], {}


def _trt_major(version) -> int:
    try:
        return int(str(version).split(".")[0])
    except ValueError:
        return 0


def _trt_logger(trt):
    """An ILogger that keeps warnings and errors (they explain a failed build in the report)."""
    sev = trt.ILogger.Severity
    keep = ((sev.INTERNAL_ERROR, "internal error"), (sev.ERROR, "error"), (sev.WARNING, "warning"))

    class _Log(trt.ILogger):
        def __init__(self):
            trt.ILogger.__init__(self)
            self.messages = []

        def log(self, severity, msg):
            for s, label in keep:
                if severity == s:
                    self.messages.append(f"{label}: {msg}"[:400])

    return _Log()


def _decode_infer_version(v: int) -> str:
    """getInferLibVersion(): major*1000+minor*100+patch up to 8.x, major*10000+minor*100+patch from 10."""
    if v >= 10000:
        return f"{v // 10000}.{(v // 100) % 100}.{v % 100}"
    return f"{v // 1000}.{(v // 100) % 10}.{v % 100}"


def _loaded_libnvinfer():
    """The libnvinfer this process mapped (the one that built the engine) and its getInferLibVersion()."""
    try:
        with open("/proc/self/maps") as fh:
            paths = {line.split()[-1] for line in fh if "/libnvinfer.so" in line}
    except OSError:
        return None
    for path in sorted(paths):
        try:
            f = ctypes.CDLL(path).getInferLibVersion
            f.restype = ctypes.c_int32
            return {"path": path, "version": _decode_infer_version(int(f()))}
        except (OSError, AttributeError):
            continue
    return None


def _trt_inputs(n: int):
    """Host inputs and the float32-exact expected output of relu(a * b)."""
    a = [((i % 61) - 30) * 0.25 for i in range(n)]
    b = [0.5 + (i % 13) * 0.125 for i in range(n)]
    expect = [max(x * y, 0.0) for x, y in zip(a, b)]
    return (ctypes.c_float * n)(*a), (ctypes.c_float * n)(*b), expect


def trt_build_and_run(trt, mem, shape=TRT_SHAPE) -> dict:
    """Build → serialize → deserialize → run → verify with module ``trt`` and memory helper ``mem``.
    Never raises: a failing step is ``{"error": {"stage", "message", "log"}}``."""
    major = _trt_major(getattr(trt, "__version__", "0"))
    res = {"api": "execute_v2 (bindings)" if major < 10 else "execute_async_v3 (named tensors)",
           "network": f"relu(a * b), float32 {shape[0]}x{shape[1]}"}
    logger = stage = plan = None
    try:
        stage = "logger"
        logger = _trt_logger(trt)
        stage = "build"
        builder = trt.Builder(logger)
        if builder is None:  # TensorRT 8 returns None when it cannot initialise CUDA
            raise RuntimeError("trt.Builder() returned None")
        flags = (1 << int(trt.NetworkDefinitionCreationFlag.EXPLICIT_BATCH)) if major < 10 else 0
        network = builder.create_network(flags)
        a = network.add_input("a", trt.float32, shape)
        b = network.add_input("b", trt.float32, shape)
        prod = network.add_elementwise(a, b, trt.ElementWiseOperation.PROD)
        relu = network.add_activation(prod.get_output(0), trt.ActivationType.RELU)
        out = relu.get_output(0)
        out.name = "out"
        network.mark_output(out)
        config = builder.create_builder_config()
        config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, _TRT_WORKSPACE)
        t0 = time.perf_counter()
        serialized = builder.build_serialized_network(network, config)
        build_s = time.perf_counter() - t0
        if serialized is None:
            raise RuntimeError("build_serialized_network() returned None")
        plan = bytes(serialized)
        res["build"] = {"seconds": round(build_s, 4), "plan_bytes": len(plan)}

        stage = "deserialize"
        del serialized, builder, network, config
        runtime = trt.Runtime(logger)
        t0 = time.perf_counter()
        engine = runtime.deserialize_cuda_engine(plan)
        if engine is None:
            raise RuntimeError("deserialize_cuda_engine() returned None")
        res["deserialize_seconds"] = round(time.perf_counter() - t0, 4)
        lib = _loaded_libnvinfer()
        res["engine"] = {"tensorrt_version": lib["version"] if lib else getattr(trt, "__version__", None),
                         "version_source": f"getInferLibVersion() of {lib['path']}" if lib else "tensorrt.__version__"}

        stage = "run"
        context = engine.create_execution_context()
        if context is None:
            raise RuntimeError("create_execution_context() returned None")
        n = shape[0] * shape[1]
        ha, hb, expect = _trt_inputs(n)
        nbytes = ctypes.sizeof(ha)
        ptrs = {name: mem.alloc(nbytes) for name in ("a", "b", "out")}
        mem.htod(ptrs["a"], ha)
        mem.htod(ptrs["b"], hb)
        mem.htod(ptrs["out"], (ctypes.c_float * n)(*([float("nan")] * n)))  # poison: unwritten shows
        t0 = time.perf_counter()
        if major < 10:
            bindings = [0] * engine.num_bindings
            for name, ptr in ptrs.items():
                idx = engine.get_binding_index(name)
                if idx < 0:
                    raise RuntimeError(f"engine has no binding named {name!r}")
                bindings[idx] = ptr
            res["io"] = sorted(ptrs)
            ok = context.execute_v2(bindings)
        else:
            io = []
            for i in range(engine.num_io_tensors):
                name = engine.get_tensor_name(i)
                if name not in ptrs:
                    raise RuntimeError(f"unexpected I/O tensor {name!r}")
                io.append(name)
                if context.set_tensor_address(name, ptrs[name]) is False:
                    raise RuntimeError(f"set_tensor_address({name!r}) failed")
            res["io"] = sorted(io)
            stream = mem.stream()
            ok = context.execute_async_v3(stream)
            mem.sync(stream)
        if ok is False:  # documented: True on success
            raise RuntimeError(("execute_v2" if major < 10 else "execute_async_v3") + "() returned False")
        got = (ctypes.c_float * n)()
        mem.dtoh(got, ptrs["out"])
        run_s = time.perf_counter() - t0
        stage = "verify"
        bad = [i for i, (g, e) in enumerate(zip(got, expect)) if not abs(g - e) <= 1e-6 * max(1.0, abs(e))]
        res["run"] = {"seconds": round(run_s, 4), "elements": n, "mismatches": len(bad),
                      "first_mismatch": ({"index": bad[0], "got": got[bad[0]], "expected": expect[bad[0]]} if bad else None)}
        stage = None
    except Exception as exc:  # reported as a fact, never a traceback
        res["error"] = {"stage": stage, "message": _one_line(exc)}
    log = getattr(logger, "messages", [])
    if log:
        res["log"] = log[-20:]
    if plan is not None and (res.get("error") or (res.get("run") or {}).get("mismatches")):
        res["plan_file"] = _keep_plan(plan)
    return res


def _keep_plan(plan: bytes):
    """Keep a plan that failed after it was built, so `trtexec --loadEngine` can reproduce it."""
    import tempfile

    path = os.path.join(tempfile.gettempdir(), f"gpudoctor-trt-smoke-{os.getpid()}.plan")
    try:
        with open(path, "wb") as fh:
            fh.write(plan)
    except OSError:
        return None
    return path


def _trt_distributions() -> dict:
    import re
    from importlib import metadata

    out = {}
    for dist in metadata.distributions():
        name = re.sub(r"[-_.]+", "-", (dist.metadata["Name"] or "").lower())
        if name.startswith("tensorrt"):
            out[name] = dist.version
    return out


def _load_object(spec: str):
    """``"package.module:attr"`` → the object (the memory helper of ``trt-smoke --device-memory``)."""
    import importlib

    mod, _, attr = spec.partition(":")
    return getattr(importlib.import_module(mod), attr)


def task_trt_smoke(modules=TRT_MODULES, memory_factory=None) -> dict:
    """Import TensorRT (first of ``modules`` present), then on device 0 build, serialize, deserialize,
    run and verify a tiny engine. ``memory_factory`` defaults to :class:`CudaRuntimeMemory`."""
    import importlib
    import importlib.util

    res = {"python": sys.executable}
    trt = None
    for name in modules:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        if spec is None:
            continue
        res["module"] = name
        res["module_path"] = os.path.dirname(spec.origin) if spec.origin else None
        try:
            trt = importlib.import_module(name)
        except Exception as exc:  # ImportError for missing libnvinfer; anything else the module raises
            res["trt_import_error"] = _one_line(exc)
        break
    else:
        res["absent"] = True
        return res
    try:
        res["distributions"] = _trt_distributions()
    except Exception as exc:  # a broken dist-info must not hide the smoke result; keep why
        res["distributions"] = {}
        res["distributions_error"] = _one_line(exc)
    if trt is None:
        return res
    res["version"] = getattr(trt, "__version__", None)
    res["libnvinfer"] = _loaded_libnvinfer()
    try:
        mem = (memory_factory or CudaRuntimeMemory)()
    except Exception as exc:  # cuda-python missing from this Python
        res["skipped"] = f"cuda-python unavailable ({_one_line(exc, 200)})"
        res["device_error"] = _one_line(exc)
        return res
    try:
        reason, dev = mem.device()
        if reason:
            res["skipped"] = reason
            return res
        res["device"] = dev
        res.update(trt_build_and_run(trt, mem))
    except Exception as exc:
        res["error"] = {"stage": "device", "message": _one_line(exc)}
    finally:
        try:
            mem.close()
        except Exception as exc:  # freeing device memory failed after the result was taken: say so
            res["cleanup_error"] = _one_line(exc)
    return res


def trt_smoke_main(args) -> dict:
    """``trt-smoke [MODULE] [--device-memory PKG.MOD:FACTORY]``: MODULE is tried first; the
    factory replaces cuda-python's runtime for device memory (tests pass a host-memory stand-in)."""
    modules = list(TRT_MODULES)
    factory = None
    args = list(args)
    while args:
        a = args.pop(0)
        if a == "--device-memory" and args:
            factory = _load_object(args.pop(0))
        elif not a.startswith("-"):
            modules = [a] + [m for m in modules if m != a]
    return task_trt_smoke(modules, factory)
