"""Out-of-process probes: anything that loads the CUDA driver, NVRTC or a vendor library.

A broken driver can hang in ``cuInit`` or crash the process that loads it; running
these steps in a child (``python -m gpudoctor.process.worker TASK``) turns a crash or a hang
into a fact the report shows. Each task prints one JSON object on stdout.
"""
from __future__ import annotations

import ctypes
import json
import os
import struct
import sys
import time


from gpudoctor.process.cuda_bindings import binding as _binding, bindings_version as _bindings_version, call as _call, name as _name  # noqa: E501


def _safe_binding(name):
    try:
        return _binding(name)
    except Exception as exc:  # noqa: BLE001 - re-raised in the caller's thread
        return exc


def task_cuda() -> dict:
    """Driver and runtime API facts: cuDriverGetVersion, cuInit, devices, cudaRuntimeGetVersion."""
    import threading

    runtime_module = {}  # imported while cuInit runs (the binding releases the GIL in driver calls)
    importer = threading.Thread(target=lambda: runtime_module.setdefault("m", _safe_binding("runtime")), daemon=True)
    importer.start()
    driver = _binding("driver")
    res = {"bindings_version": _bindings_version()}
    err, ver = _call(driver.cuDriverGetVersion)
    res["cuDriverGetVersion"] = {"result": err, "value": ver}
    t0 = time.perf_counter()
    err, _ = _call(driver.cuInit, 0)
    res["cuInit"] = {"result": err, "seconds": round(time.perf_counter() - t0, 4)}
    devices = []
    if err == "CUDA_SUCCESS":
        err, count = _call(driver.cuDeviceGetCount)
        res["device_count"] = count
        for i in range(count or 0):
            e, dev = _call(driver.cuDeviceGet, i)
            if e != "CUDA_SUCCESS":
                devices.append({"ordinal": i, "error": e})
                continue
            _, raw = _call(driver.cuDeviceGetName, 256, dev)
            A = driver.CUdevice_attribute
            _, major = _call(driver.cuDeviceGetAttribute, A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)
            _, minor = _call(driver.cuDeviceGetAttribute, A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)
            _, mem = _call(driver.cuDeviceTotalMem, dev)
            _, uuid = _call(driver.cuDeviceGetUuid, dev)
            uuid_hex = bytes(uuid.bytes).hex() if uuid is not None else None
            devices.append({
                "ordinal": i,
                "name": raw.split(b"\0", 1)[0].decode(errors="replace") if raw else None,
                "compute_capability": f"{major}.{minor}" if major is not None else None,
                "memory_total_mib": int(mem) // (1024 * 1024) if mem is not None else None,
                "uuid": ("GPU-%s-%s-%s-%s-%s" % (uuid_hex[:8], uuid_hex[8:12], uuid_hex[12:16], uuid_hex[16:20], uuid_hex[20:])) if uuid_hex else None,
            })
    res["devices"] = devices
    if res["cuInit"]["result"] != "CUDA_SUCCESS":  # a failing step only: does a resource limit cause it?
        res["limits_rerun"] = _limits_rerun("cuInit", res["cuInit"]["result"])
    importer.join()
    runtime = runtime_module.get("m")
    if isinstance(runtime, Exception):
        raise runtime
    err, rt = _call(runtime.cudaRuntimeGetVersion)
    res["cudaRuntimeGetVersion"] = {"result": err, "value": rt}
    err, n = _call(runtime.cudaGetDeviceCount)
    res["cudaGetDeviceCount"] = {"result": err, "value": n}
    return res


from gpudoctor.process.nvrtc_build import (  # noqa: E402 - NVRTC's side, shared with the compiler child
    _HADD2_HEADER, _HADD2_PTX, KERNELS, _cached_compile, _fp16_include_dir, _nvrtc_info,
)


def _return_freed_heap() -> None:
    """glibc keeps freed heap pages; malloc_trim(0) gives them back (about 7 MiB after an NVRTC compile)."""
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _check(driver, out, what):
    err = _name(out[0])
    if err != "CUDA_SUCCESS":
        raise RuntimeError(f"{what}: {err}")
    return out[1] if len(out) == 2 else out[1:]


def _launch_and_verify(driver, ordinal: int, cubin: bytes, n: int = 4096) -> dict:
    """Load ``cubin`` on device ``ordinal``, run both kernels, compare every element with the host."""
    dev = _check(driver, driver.cuDeviceGet(ordinal), "cuDeviceGet")
    ctx = _check(driver, driver.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
    bufs = []
    try:
        _check(driver, (driver.cuCtxSetCurrent(ctx)[0], None), "cuCtxSetCurrent")
        module = _check(driver, driver.cuModuleLoadData(cubin), "cuModuleLoadData")
        results = {}
        t0 = time.perf_counter()
        for kname in ("vadd", "hadd2"):
            func = _check(driver, driver.cuModuleGetFunction(module, kname.encode()), f"cuModuleGetFunction({kname})")
            if kname == "vadd":
                a = (ctypes.c_float * n)(*[float(i) for i in range(n)])
                b = (ctypes.c_float * n)(*[0.5 * i for i in range(n)])
                expect = [float(i) + 0.5 * i for i in range(n)]
                ctype, count = ctypes.c_float, n
            else:  # two halves per 32-bit word; values exact in fp16
                ha = [(i % 512) * 0.5 for i in range(2 * n)]
                hb = [1.0 + (i % 7) for i in range(2 * n)]
                a = (ctypes.c_uint32 * n)(*struct.unpack(f"<{n}I", struct.pack(f"<{2 * n}e", *ha)))
                b = (ctypes.c_uint32 * n)(*struct.unpack(f"<{n}I", struct.pack(f"<{2 * n}e", *hb)))
                expect = [x + y for x, y in zip(ha, hb)]
                ctype, count = ctypes.c_uint32, n
            nbytes = ctypes.sizeof(a)
            d = [_check(driver, driver.cuMemAlloc(nbytes), "cuMemAlloc") for _ in range(3)]
            bufs.extend(d)
            _check(driver, (driver.cuMemcpyHtoD(d[0], ctypes.addressof(a), nbytes)[0], None), "cuMemcpyHtoD")
            _check(driver, (driver.cuMemcpyHtoD(d[1], ctypes.addressof(b), nbytes)[0], None), "cuMemcpyHtoD")
            poison = (ctype * count)(*([0x7FC00001] * count if ctype is ctypes.c_uint32 else [float("nan")] * count))
            _check(driver, (driver.cuMemcpyHtoD(d[2], ctypes.addressof(poison), nbytes)[0], None), "cuMemcpyHtoD")
            ptrs = [ctypes.c_uint64(int(x)) for x in d]
            cnt = ctypes.c_int(n)
            params = (ctypes.c_void_p * 4)(*[ctypes.addressof(p) for p in ptrs], ctypes.addressof(cnt))
            block = 256
            _check(driver, (driver.cuLaunchKernel(func, (n + block - 1) // block, 1, 1, block, 1, 1, 0, 0,
                                                  ctypes.addressof(params), 0)[0], None), f"cuLaunchKernel({kname})")
            _check(driver, (driver.cuCtxSynchronize()[0], None), f"cuCtxSynchronize({kname})")
            out = (ctype * count)()
            _check(driver, (driver.cuMemcpyDtoH(ctypes.addressof(out), d[2], nbytes)[0], None), "cuMemcpyDtoH")
            got = list(out) if kname == "vadd" else list(struct.unpack(f"<{2 * n}e", struct.pack(f"<{n}I", *out)))
            bad = [i for i, (g, e) in enumerate(zip(got, expect)) if g != e]
            results[kname] = {"elements": len(expect), "mismatches": len(bad),
                              "first_mismatch": ({"index": bad[0], "got": got[bad[0]], "expected": expect[bad[0]]} if bad else None)}
        results["run_seconds"] = round(time.perf_counter() - t0, 4)
        _check(driver, (driver.cuModuleUnload(module)[0], None), "cuModuleUnload")
        return results
    finally:
        for x in bufs:
            driver.cuMemFree(x)
        driver.cuDevicePrimaryCtxRelease(dev)


def task_nvrtc_smoke(args=()) -> dict:
    """Compile vadd + hadd2 to a CUBIN per visible device arch with NVRTC (or take the CUBIN a previous
    check compiled from the same inputs; ``--no-cache``: always compile); launch and verify on devices.

    NVRTC runs in a forked child (:mod:`gpudoctor.process.nvrtc_compiler`) while this process runs
    cuInit and creates the context, so NVRTC and a CUDA context never share one process's memory;
    without fork, both run here."""
    from gpudoctor.process.nvrtc_compiler import CompilerChild

    use_cache = "--no-cache" not in args
    compiler = CompilerChild.start(use_cache)
    if compiler is None:
        return _nvrtc_smoke_in_process(use_cache)
    try:
        res = {"bindings_version": _bindings_version()}
        driver = _binding("driver")
        init_err, _ = _call(driver.cuInit, 0)
        targets = _device_archs(driver, init_err)
        res.update(compiler.info())
        if res.get("nvrtc_error"):
            return res
        res["cuInit"] = init_err
        if not targets:  # no device: still prove the compiler works, for its oldest supported arch
            targets = [(None, (res.get("nvrtc_supported_archs") or ["sm_75"])[0])]
        compiled = compiler.compile(sorted({arch for _, arch in targets}))
    finally:
        compiler.close()
    res["runs"] = _run_compiled(driver, targets, compiled, init_err)
    return res


def _device_archs(driver, init_err) -> list:
    """[(ordinal, "sm_XY")] of the devices cuInit found."""
    targets = []
    if init_err == "CUDA_SUCCESS":
        _, count = _call(driver.cuDeviceGetCount)
        A = driver.CUdevice_attribute
        for i in range(count or 0):
            _, dev = _call(driver.cuDeviceGet, i)
            _, ma = _call(driver.cuDeviceGetAttribute, A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)
            _, mi = _call(driver.cuDeviceGetAttribute, A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)
            targets.append((i, f"sm_{ma}{mi}"))
    return targets


def _limits_rerun(step: str, failure: str) -> dict:
    """:func:`gpudoctor.process.limits.differential`: the failed CUDA step rerun with the soft limits raised."""
    from gpudoctor.process.limits import differential

    return differential(step, failure)


def _run_compiled(driver, targets, compiled, init_err) -> list:
    runs = []
    for ordinal, arch in targets:
        entry = {"ordinal": ordinal, "arch": arch}
        cubin, log, secs, result, cached = compiled[arch]
        entry.update({"compile_result": result, "compile_seconds": round(secs, 4), "log": log[-2000:] if log else "",
                      "cubin_bytes": len(cubin) if cubin else 0, "compile_cached": cached})
        if cubin is None:
            entry["launch"] = {"skipped": "compile failed"}
        elif ordinal is None:
            entry["launch"] = {"skipped": f"no CUDA device (cuInit: {init_err})"}
        else:
            try:
                entry["launch"] = _launch_and_verify(driver, ordinal, cubin)
            except Exception as exc:
                entry["launch"] = {"error": str(exc)}
                if not any("limits_rerun" in r for r in runs):  # once per worker
                    entry["limits_rerun"] = _limits_rerun("context", str(exc))
        runs.append(entry)
    return runs


def _nvrtc_smoke_in_process(use_cache: bool) -> dict:
    """:func:`task_nvrtc_smoke` where fork is not available: NVRTC loads in a thread while cuInit runs."""
    import threading

    res = {"bindings_version": _bindings_version()}
    loaded = {}
    loader = threading.Thread(target=lambda: loaded.setdefault("nvrtc", _nvrtc_info(res)), daemon=True)
    loader.start()
    driver = _binding("driver")
    init_err, _ = _call(driver.cuInit, 0)
    loader.join()
    nvrtc = loaded.get("nvrtc")
    if nvrtc is None:
        return res
    res["cuInit"] = init_err
    targets = _device_archs(driver, init_err)
    if not targets:
        targets = [(None, (res.get("nvrtc_supported_archs") or ["sm_75"])[0])]
    inc = _fp16_include_dir()
    source = (KERNELS % {"fp16_include": "#include <cuda_fp16.h>" if inc else "",
                         "hadd2_body": _HADD2_HEADER if inc else _HADD2_PTX}).encode()
    res["fp16_header"] = os.path.join(inc, "cuda_fp16.h") if inc else None
    compiled = {arch: _cached_compile(nvrtc, res, source, arch, inc, use_cache) for arch in {a for _, a in targets}}
    _return_freed_heap()  # the compiler's heap, before the context adds its own (peak RSS)
    res["runs"] = _run_compiled(driver, targets, compiled, init_err)
    return res


def _loaded(paths, out):
    """(path, ctypes library) for each path that loads; a load failure goes into ``out[path]["load_error"]``."""
    for path in paths:
        try:
            yield path, ctypes.CDLL(path)
        except OSError as exc:
            out[path] = {"load_error": str(exc)}


def task_libversions(paths) -> dict:
    """For each library path, dlopen it and ask it its version (cudart, cudnn, nvinfer, nvrtc)."""
    out = {}
    for path, lib in _loaded(paths, out):
        base = os.path.basename(path)
        info = {}
        if base.startswith("libcudnn"):
            for sym in ("cudnnGetVersion", "cudnnGetCudartVersion"):
                f = getattr(lib, sym, None)
                if f is not None:
                    f.restype = ctypes.c_size_t
                    info[sym] = int(f())
        elif base.startswith("libcudart"):
            v = ctypes.c_int(0)
            f = getattr(lib, "cudaRuntimeGetVersion", None)
            if f is not None and f(ctypes.byref(v)) == 0:
                info["cudaRuntimeGetVersion"] = v.value
        elif base.startswith("libnvinfer"):
            f = getattr(lib, "getInferLibVersion", None)
            if f is not None:
                f.restype = ctypes.c_int32
                info["getInferLibVersion"] = int(f())
        elif base.startswith("libnccl"):
            v = ctypes.c_int(0)  # ncclResult_t ncclGetVersion(int*): major*10000 + minor*100 + patch (2.9+)
            f = getattr(lib, "ncclGetVersion", None)
            if f is not None and f(ctypes.byref(v)) == 0:
                info["ncclGetVersion"] = v.value
        out[path] = info
    return out


def task_stubcheck(paths) -> dict:
    """Ask each libcuda / libnvidia-ml file itself whether it is a driver: ``cuInit(0)`` (a toolkit stub
    returns CUDA_ERROR_STUB_LIBRARY = 34, cuda.h) or ``nvmlInit_v2()`` (the NVML stub prints its own
    "is a stub library" warning and returns NVML_ERROR_DRIVER_NOT_LOADED = 9)."""
    out = {}
    for path, lib in _loaded(paths, out):
        base = os.path.basename(path)
        if base.startswith("libcuda"):
            rc = int(lib.cuInit(0))
            out[path] = {"call": "cuInit(0)", "result": rc, "stub": rc == 34,
                         "result_name": "CUDA_ERROR_STUB_LIBRARY" if rc == 34 else None}
        elif base.startswith("libnvidia-ml"):
            r, w = os.pipe()  # the stub prints its warning on fd 1: capture it, keep our JSON line clean
            saved = os.dup(1)
            sys.stdout.flush()
            os.dup2(w, 1)
            try:
                rc = int(lib.nvmlInit_v2())
                if rc == 0:
                    lib.nvmlShutdown()
            finally:
                os.dup2(saved, 1)
                os.close(w)
            printed = os.read(r, 65536).decode(errors="replace")
            os.close(r)
            out[path] = {"call": "nvmlInit_v2()", "result": rc, "stub": "stub library" in printed,
                         "printed": printed.strip()[-300:]}
    return out


NVML_REASONS = {
    1: "uninitialized", 2: "invalid_argument", 3: "not_supported", 4: "no_permission",
    6: "not_found", 9: "driver_not_loaded", 12: "library_not_found", 13: "function_not_found",
    15: "gpu_is_lost", 17: "operating_system", 18: "version_mismatch", 999: "unknown",
}


def _q(fn, *args):
    """Call an NVML query; NotSupported and friends become None (the GPU lacks the feature), and so does a
    function this libnvidia-ml lacks (pynvml raises NVMLLibraryMismatchError, not an NVMLError, e.g. for a
    ``*_v3`` symbol an older driver does not export): one missing function costs one fact, not the worker."""
    import pynvml

    try:
        value = fn(*args)
    except (pynvml.NVMLError, getattr(pynvml, "NVMLLibraryMismatchError", pynvml.NVMLError)):
        return None
    return value.decode() if isinstance(value, bytes) else value


def _gpu_processes(h) -> list:
    """``[{"pid", "used_mib" (None: NVML cannot say, e.g. under MIG or WDDM), "type": "compute"|"graphics"|
    "compute+graphics", "ours": bool}]``: the processes holding a context on this GPU (nvmlDeviceGetComputeRunningProcesses,
    nvmlDeviceGetGraphicsRunningProcesses). PIDs are as the driver sees them: in a container, the host's."""
    import pynvml

    by_pid: dict = {}
    for kind, fn in (("compute", pynvml.nvmlDeviceGetComputeRunningProcesses),
                     ("graphics", pynvml.nvmlDeviceGetGraphicsRunningProcesses)):
        for p in _q(fn, h) or []:
            used = getattr(p, "usedGpuMemory", None)
            entry = by_pid.setdefault(p.pid, {"pid": p.pid, "used_mib": None, "type": kind,
                                              "ours": _descends_from(p.pid, os.getppid())})
            if entry["type"] != kind:
                entry["type"] = "compute+graphics"
            if used is not None:
                entry["used_mib"] = max(entry["used_mib"] or 0, used // (1024 * 1024))
    return sorted(by_pid.values(), key=lambda e: e["pid"])


def _descends_from(pid: int, ancestor: int) -> bool:
    """Whether ``pid`` is ``ancestor`` (the check that started this worker) or below it: gpudoctor's own CUDA
    workers hold contexts while NVML is asked, and may have exited before the probe reads /proc."""
    for _ in range(64):
        if pid == ancestor:
            return True
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                pid = int(fh.read(4096).rsplit(b")", 1)[1].split()[1])  # field 4, after the parenthesised comm
        except (OSError, ValueError, IndexError):
            return False
        if pid <= 1:
            return False
    return False


def _gpu_facts(index: int) -> dict:
    import pynvml

    h = pynvml.nvmlDeviceGetHandleByIndex(index)
    cc = _q(pynvml.nvmlDeviceGetCudaComputeCapability, h)
    mem = _q(pynvml.nvmlDeviceGetMemoryInfo, h)
    mig = _q(pynvml.nvmlDeviceGetMigMode, h)
    ecc = _q(pynvml.nvmlDeviceGetEccMode, h)
    facts = {
        "index": index,
        "name": _q(pynvml.nvmlDeviceGetName, h),
        "uuid": _q(pynvml.nvmlDeviceGetUUID, h),
        "pci_bus_id": getattr(_q(pynvml.nvmlDeviceGetPciInfo, h), "busId", None),
        "compute_capability": f"{cc[0]}.{cc[1]}" if cc else None,
        "memory_total_mib": mem.total // (1024 * 1024) if mem else None,
        "memory_used_mib": mem.used // (1024 * 1024) if mem else None,
        "memory_free_mib": mem.free // (1024 * 1024) if mem else None,
        "processes": _gpu_processes(h),
        "pcie_gen_current": _q(pynvml.nvmlDeviceGetCurrPcieLinkGeneration, h),
        "pcie_gen_max": _q(pynvml.nvmlDeviceGetMaxPcieLinkGeneration, h),
        "pcie_width_current": _q(pynvml.nvmlDeviceGetCurrPcieLinkWidth, h),
        "pcie_width_max": _q(pynvml.nvmlDeviceGetMaxPcieLinkWidth, h),
        "ecc_mode_current": bool(ecc[0]) if ecc else None,
        "ecc_mode_pending": bool(ecc[1]) if ecc else None,
        "mig_mode_current": bool(mig[0]) if mig else None,
        "mig_mode_pending": bool(mig[1]) if mig else None,
        "persistence_mode": _q(pynvml.nvmlDeviceGetPersistenceMode, h),
        "compute_mode": _q(pynvml.nvmlDeviceGetComputeMode, h),
        "vbios": _q(pynvml.nvmlDeviceGetVbiosVersion, h),
        "temperature_c": _q(pynvml.nvmlDeviceGetTemperature, h, 0),
        "retired_pages_pending": None,
        "remapped_rows": None,
        "ecc_uncorrected_volatile": None,
    }
    if sys.platform == "win32":  # WDDM, TCC or MCDM: NVML answers on Windows only
        models = {0: "WDDM", 1: "TCC", 2: "MCDM"}
        dm = _q(pynvml.nvmlDeviceGetDriverModel, h)
        if dm:
            facts["driver_model_current"], facts["driver_model_pending"] = (models.get(v, f"unknown ({v})") for v in dm)
    from gpudoctor.process.nvml_topology import nvlinks

    facts["nvlinks"] = nvlinks(h)
    pending = _q(pynvml.nvmlDeviceGetRetiredPagesPendingStatus, h)
    if pending is not None:
        facts["retired_pages_pending"] = bool(pending)
    remap = _q(pynvml.nvmlDeviceGetRemappedRows, h)  # (corr, unc, pending, failure); Ampere and newer
    if remap is not None:
        facts["remapped_rows"] = {"correctable": remap[0], "uncorrectable": remap[1],
                                  "pending": bool(remap[2]), "failure": bool(remap[3])}
    if facts["ecc_mode_current"]:
        facts["ecc_uncorrected_volatile"] = _q(pynvml.nvmlDeviceGetTotalEccErrors, h, 1, 0)  # UNCORRECTED, VOLATILE
    return facts


def task_nvml() -> dict:
    """NVML's view (nvidia-ml-py): driver and CUDA versions, every GPU's facts; an NVML error as a fact."""
    from gpudoctor.formats.nvidia_driver import cuda_version_from_int

    try:
        import pynvml
    except ImportError as exc:
        return {"status": "unavailable", "error": f"nvidia-ml-py is not installed ({exc})", "reason": "binding_missing", "gpus": []}
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        code = getattr(exc, "value", None)
        return {"status": "error", "error": str(exc), "error_code": code,
                "reason": NVML_REASONS.get(code, "unknown"), "gpus": []}
    try:
        cuda_int = _q(pynvml.nvmlSystemGetCudaDriverVersion)
        count = pynvml.nvmlDeviceGetCount()
        gpus = []
        for i in range(count):
            try:
                gpus.append(_gpu_facts(i))
            except pynvml.NVMLError as exc:  # e.g. GPU is lost: keep the others
                gpus.append({"index": i, "error": str(exc), "reason": NVML_REASONS.get(getattr(exc, "value", None), "unknown")})
        from gpudoctor.process.nvml_topology import pairs

        handles = {g["index"]: pynvml.nvmlDeviceGetHandleByIndex(g["index"]) for g in gpus if "error" not in g}
        return {
            "status": "ok",
            "driver_version": _q(pynvml.nvmlSystemGetDriverVersion),
            "cuda_driver_version": cuda_version_from_int(cuda_int) if cuda_int else None,
            "nvml_version": _q(pynvml.nvmlSystemGetNVMLVersion),
            "gpus": gpus,
            "pairs": pairs(handles),
        }
    finally:
        try:
            pynvml.nvmlShutdown()
        except pynvml.NVMLError:
            pass


_KEEP: list = []


def task_trt_deserialize(args) -> dict:
    """``MODULE PLAN``: deserialize a plan with a real TensorRT runtime (full, lean or dispatch) and return
    what TensorRT itself said: ``{"module", "version", "loaded", "messages": [(severity, text)]}``."""
    import importlib

    module, plan = args[0], args[1]
    out = {"module": module, "plan": plan, "loaded": False, "messages": []}
    try:
        trt = importlib.import_module(module)
    except Exception as exc:  # noqa: BLE001 - the import failure is the answer
        out["error"] = f"import {module}: {type(exc).__name__}: {exc}"
        return out
    out["version"] = getattr(trt, "__version__", None)

    class Logger(trt.ILogger):
        def __init__(self):
            trt.ILogger.__init__(self)

        def log(self, severity, msg):
            out["messages"].append([str(severity).split(".")[-1], str(msg)[:600]])

    logger = Logger()
    try:
        runtime = trt.Runtime(logger)
        _KEEP.append((runtime, logger))  # a Runtime that failed to start crashes when destroyed: never destroy it
        failed = [m for sev, m in out["messages"] if sev in ("ERROR", "INTERNAL_ERROR")]
        if failed:  # no usable runtime (no GPU, no driver): deserializing would crash inside TensorRT
            out["error"] = f"the runtime did not start: {failed[0][:300]}"
            out.pop("loaded")
            return out
        if hasattr(runtime, "engine_host_code_allowed"):
            runtime.engine_host_code_allowed = True  # version-compatible plans carry their lean runtime
        with open(plan, "rb") as fh:
            engine = runtime.deserialize_cuda_engine(fh.read())
        out["loaded"] = engine is not None
    except Exception as exc:  # noqa: BLE001 - TensorRT's exception is the answer
        out["error"] = f"{type(exc).__name__}: {str(exc)[:400]}"
    return out


def main(argv) -> int:
    task = argv[0] if argv else ""
    try:
        if task == "cuda":
            result = task_cuda()
        elif task == "nvml":
            result = task_nvml()
        elif task == "nvrtc-smoke":
            result = task_nvrtc_smoke(argv[1:])
        elif task == "libversions":
            result = task_libversions(argv[1:])
        elif task == "stubcheck":
            result = task_stubcheck(argv[1:])
        elif task == "trt-deserialize":
            result = task_trt_deserialize(argv[1:])
        elif task == "trt-smoke":
            from gpudoctor.process.trt_smoke import trt_smoke_main

            result = trt_smoke_main(argv[1:])
        elif task == "multigpu-smoke":
            from gpudoctor.process.multigpu_smoke import multigpu_smoke_main

            result = multigpu_smoke_main(argv[1:])
        else:
            print(json.dumps({"worker_error": f"unknown task {task!r}"}))
            return 2
    except ImportError as exc:
        result = {"import_error": f"{type(exc).__name__}: {exc}"}
    sys.stdout.write("\n" + json.dumps(result) + "\n")
    if task == "trt-deserialize":  # TensorRT objects may crash in their destructors: leave without running them
        sys.stdout.flush()
        os._exit(0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
