"""FAKE: stands in for TensorRT, which cannot be installed here (no GPU, and the real builder needs one).

Implements only the API surface that ``gpudoctor.process.trt_smoke.trt_build_and_run`` uses, per API generation,
chosen by ``FAKE_TENSORRT_VERSION`` (default 10.3.0):

* 8.x: ``create_network`` must get ``1 << EXPLICIT_BATCH`` (else the fake refuses to build, as an
  implicit-batch network would not match the shapes); engines expose only the binding API
  (``num_bindings``, ``get_binding_index``) and contexts only ``execute_v2``.
* 10.x: ``EXPLICIT_BATCH`` exists but is ignored; engines expose only the named-tensor API
  (``num_io_tensors``, ``get_tensor_name``, ``get_tensor_mode``), contexts ``set_tensor_address`` and
  ``execute_async_v3``.
* 11.x: as 10.x, and ``NetworkDefinitionCreationFlag`` has no ``EXPLICIT_BATCH`` member at all.

``FAKE_TENSORRT_FAULT`` injects a failure: ``build_raises``, ``build_returns_none``, ``wrong_numbers``
(the engine forgets its ReLU), ``execute_false``, ``abort`` (the process dies in the build). "Device" pointers are host addresses: use the
FAKE host-memory helper in ``fake_device_memory`` with it. The plan is a real byte string that
``Runtime.deserialize_cuda_engine`` parses, so serialize → deserialize is a real round trip.
"""
import ctypes
import enum
import json
import os

__version__ = os.environ.get("FAKE_TENSORRT_VERSION", "10.3.0")
_MAJOR = int(__version__.split(".")[0])
_FAULT = os.environ.get("FAKE_TENSORRT_FAULT", "")
_MAGIC = b"FAKE-TRT-PLAN\n"


class DataType(enum.Enum):
    FLOAT = 0


float32 = DataType.FLOAT


class ILogger:
    class Severity(enum.Enum):
        INTERNAL_ERROR = 0
        ERROR = 1
        WARNING = 2
        INFO = 3
        VERBOSE = 4

    def __init__(self):
        pass

    def log(self, severity, msg):
        raise NotImplementedError


class Logger(ILogger):
    WARNING = ILogger.Severity.WARNING

    def __init__(self, min_severity=ILogger.Severity.WARNING):
        ILogger.__init__(self)

    def log(self, severity, msg):
        pass


if _MAJOR < 10:
    class NetworkDefinitionCreationFlag(enum.IntEnum):
        EXPLICIT_BATCH = 0
        EXPLICIT_PRECISION = 1
elif _MAJOR == 10:
    class NetworkDefinitionCreationFlag(enum.IntEnum):
        EXPLICIT_BATCH = 0  # deprecated, ignored
        STRONGLY_TYPED = 1
else:
    class NetworkDefinitionCreationFlag(enum.IntEnum):
        STRONGLY_TYPED = 1  # deprecated, ignored: always strongly typed
        PREFER_AOT_PYTHON_PLUGINS = 2
        PREFER_JIT_PYTHON_PLUGINS = 3


class ElementWiseOperation(enum.Enum):
    SUM = 0
    PROD = 1


class ActivationType(enum.Enum):
    RELU = 0
    SIGMOID = 1


class MemoryPoolType(enum.Enum):
    WORKSPACE = 0


class TensorIOMode(enum.Enum):
    NONE = 0
    INPUT = 1
    OUTPUT = 2


class ITensor:
    def __init__(self, name, shape, op=None, args=()):
        self.name, self.shape, self.op, self.args = name, tuple(shape), op, args


class ILayer:
    def __init__(self, output):
        self._output = output

    def get_output(self, index):
        assert index == 0
        return self._output


class INetworkDefinition:
    def __init__(self, flags):
        self.flags = flags
        self.inputs, self.outputs = [], []

    def add_input(self, name, dtype, shape):
        assert dtype is DataType.FLOAT
        t = ITensor(name, shape)
        self.inputs.append(t)
        return t

    def add_elementwise(self, a, b, op):
        assert isinstance(op, ElementWiseOperation) and a.shape == b.shape
        return ILayer(ITensor(f"({a.name} {op.name} {b.name})", a.shape, op.name, (a, b)))

    def add_activation(self, t, kind):
        assert isinstance(kind, ActivationType)
        return ILayer(ITensor(f"{kind.name}({t.name})", t.shape, kind.name, (t,)))

    def mark_output(self, t):
        self.outputs.append(t)


def _graph(t):
    return {"name": t.name, "op": t.op, "args": [_graph(a) for a in t.args]} if t.op else {"input": t.name}


class IBuilderConfig:
    def __init__(self):
        self.pools = {}

    def set_memory_pool_limit(self, pool, size):
        assert isinstance(pool, MemoryPoolType) and size > 0
        self.pools[pool.name] = size


class IHostMemory(bytes):
    @property
    def nbytes(self):
        return len(self)


class Builder:
    def __init__(self, logger):
        assert isinstance(logger, ILogger)
        self.logger = logger

    def create_network(self, flags=0):
        return INetworkDefinition(flags)

    def create_builder_config(self):
        return IBuilderConfig()

    def build_serialized_network(self, network, config):
        if _FAULT == "abort":  # a crash inside the native builder
            os.abort()
        if _FAULT == "build_raises":
            raise RuntimeError("FAKE: [builder] out of device memory while timing tactics")
        if _FAULT == "build_returns_none":
            self.logger.log(ILogger.Severity.ERROR, "FAKE: [builderUtils] Error Code 2: Internal Error (no tactic found)")
            return None
        if _MAJOR < 10 and not network.flags & (1 << int(NetworkDefinitionCreationFlag.EXPLICIT_BATCH)):
            self.logger.log(ILogger.Severity.ERROR, "FAKE 8.x: network created without EXPLICIT_BATCH (implicit batch)")
            return None
        if "WORKSPACE" not in config.pools or len(network.outputs) != 1:
            self.logger.log(ILogger.Severity.ERROR, "FAKE: no workspace limit or no single marked output")
            return None
        out = network.outputs[0]
        body = {"version": __version__, "inputs": [t.name for t in network.inputs], "output": out.name,
                "shape": list(out.shape), "graph": _graph(out)}
        return IHostMemory(_MAGIC + json.dumps(body).encode())


class Runtime:
    def __init__(self, logger):
        self.logger = logger

    def deserialize_cuda_engine(self, plan):
        data = bytes(plan)
        if data.startswith(b"ftrt") and len(data) >= 28:  # a plan header as real TensorRT writes it (8.6+)
            built = ".".join(str(b) for b in data[24:28])
            if built != __version__:
                self.logger.log(ILogger.Severity.ERROR, f"FAKE: The engine plan file is not compatible with this "
                                f"version of TensorRT, expecting library version {__version__} got {built}")
                return None
            return object()  # FAKE: an engine is all the caller checks for
        if not data.startswith(_MAGIC):
            self.logger.log(ILogger.Severity.ERROR, "FAKE: not a plan")
            return None
        body = json.loads(data[len(_MAGIC):])
        if body["version"] != __version__:
            self.logger.log(ILogger.Severity.ERROR, f"FAKE: plan built by {body['version']}, this is {__version__}")
            return None
        return ICudaEngine(body)


def _evaluate(node, values, n):
    if "input" in node:
        return values[node["input"]]
    args = [_evaluate(a, values, n) for a in node["args"]]
    if node["op"] == "PROD":
        return [x * y for x, y in zip(*args)]
    if node["op"] == "SUM":
        return [x + y for x, y in zip(*args)]
    if node["op"] == "RELU":
        return list(args[0]) if _FAULT == "wrong_numbers" else [max(x, 0.0) for x in args[0]]
    raise NotImplementedError(node["op"])


class ICudaEngine:
    def __init__(self, body):
        self._body = body
        self._names = body["inputs"] + [body["output"]]

    def create_execution_context(self):
        return IExecutionContext(self)

    if _MAJOR < 10:
        @property
        def num_bindings(self):
            return len(self._names)

        def get_binding_index(self, name):
            return self._names.index(name) if name in self._names else -1
    else:
        @property
        def num_io_tensors(self):
            return len(self._names)

        def get_tensor_name(self, index):
            return self._names[index]

        def get_tensor_mode(self, name):
            return TensorIOMode.OUTPUT if name == self._body["output"] else TensorIOMode.INPUT


class IExecutionContext:
    def __init__(self, engine):
        self.engine = engine
        self._addr = {}

    def _run(self):
        if _FAULT == "execute_false":
            return False
        body = self.engine._body
        n = body["shape"][0] * body["shape"][1]
        values = {name: list((ctypes.c_float * n).from_address(self._addr[name])) for name in body["inputs"]}
        out = _evaluate(body["graph"], values, n)
        (ctypes.c_float * n).from_address(self._addr[body["output"]])[:] = out
        return True

    if _MAJOR < 10:
        def execute_v2(self, bindings):
            assert len(bindings) == len(self.engine._names) and all(bindings)
            self._addr = dict(zip(self.engine._names, bindings))
            return self._run()
    else:
        def set_tensor_address(self, name, ptr):
            if name not in self.engine._names:
                return False
            self._addr[name] = ptr
            return True

        def execute_async_v3(self, stream_handle):
            assert isinstance(stream_handle, int)
            if set(self._addr) != set(self.engine._names):
                return False
            return self._run()
