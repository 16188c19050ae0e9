"""NVIDIA's error enumerations, read from the headers and bindings installed on this machine.

Used by ``scripts/gen_error_codes.py`` (which writes ``kb/codes/generated.json``) and by the test
that fails when an installed header or binding holds a code the KB does not know. Nothing here is
typed in by hand: every name and number comes from the file it is read from.

Enumerations and where they are read (all that are found are merged; a code's ``sources`` lists each):

========================  =====================================================================
``CUresult``              ``cuda.h`` (CUDA toolkit), ``cuda.bindings.driver.CUresult``
``cudaError_t``           ``driver_types.h`` (CUDA toolkit), ``cuda.bindings.runtime.cudaError_t``
``nvmlReturn_t``          ``nvml.h``, nvidia-ml-py's ``NVML_ERROR_*`` constants
``cudnnStatus_t``         ``cudnn_graph.h`` (cuDNN 9; ``cudnn_ops_infer.h``/``cudnn.h`` before)
``cublasStatus_t``        ``cublas_api.h``
``ncclResult_t``          ``nccl.h``
``nvrtcResult``           ``nvrtc.h``
``cufftResult``           ``cufft.h``
``curandStatus_t``        ``curand.h``
``cusolverStatus_t``      ``cusolver_common.h``
``cusparseStatus_t``      ``cusparse.h``
``NVENCSTATUS``           ``nvEncodeAPI.h`` (the Video Codec SDK's, or FFmpeg's ``ffnvcodec/`` copy)
========================  =====================================================================

The message each library prints for a code (``cuGetErrorString``, ``cudaGetErrorString``,
``nvmlErrorString``, ``cublasGetStatusString``, ``ncclGetErrorString``, ``nvrtcGetErrorString``) is
asked from the library itself when one can be loaded (:func:`library_messages`): these are pure
functions that need no GPU and no initialisation.
"""
from __future__ import annotations

import ast
import ctypes
import glob
import os
import re
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

__all__ = ["Code", "ENUMS", "EnumSpec", "parse_c_enum", "find_headers", "read_enum", "read_all",
           "library_messages", "pynvml_class_name", "portable"]


@dataclass
class Code:
    """One enumerator: ``value`` is the integer the API returns; ``doc`` the header's comment for it."""

    enum: str
    name: str
    value: int
    doc: str = ""
    sources: List[str] = field(default_factory=list)


@dataclass(frozen=True)
class EnumSpec:
    enum: str
    library: str
    headers: Tuple[str, ...]  # file names, searched by :func:`find_headers`
    tag: Optional[str]  # ``enum TAG {`` (None: matched by the typedef name after the closing brace)
    prefix: str  # every enumerator of interest starts with it
    doc_url: str
    bindings: Optional[Callable[[], Iterable[Tuple[str, int, str]]]] = None


def _cuda_bindings(module: str, enum: str):
    def read():
        mod = __import__(f"cuda.bindings.{module}", fromlist=[enum])
        return [(m.name, int(m), (getattr(m, "__doc__", "") or "")) for m in getattr(mod, enum)]
    return read


def _pynvml():
    import pynvml  # nvidia-ml-py

    return [(k, int(getattr(pynvml, k)), "") for k in dir(pynvml)
            if k.startswith("NVML_ERROR_") and isinstance(getattr(pynvml, k), int)] + [("NVML_SUCCESS", 0, "")]


ENUMS: Tuple[EnumSpec, ...] = (
    EnumSpec("CUresult", "CUDA driver API", ("cuda.h",), "cudaError_enum", "CUDA_",
             "https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__TYPES.html",
             _cuda_bindings("driver", "CUresult")),
    EnumSpec("cudaError_t", "CUDA runtime API", ("driver_types.h",), "cudaError", "cuda",
             "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html",
             _cuda_bindings("runtime", "cudaError_t")),
    EnumSpec("nvmlReturn_t", "NVML", ("nvml.h",), "nvmlReturn_enum", "NVML_",
             "https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceEnumvs.html", _pynvml),
    EnumSpec("cudnnStatus_t", "cuDNN", ("cudnn_graph.h", "cudnn_ops_infer.h", "cudnn.h"), None, "CUDNN_STATUS_",
             "https://docs.nvidia.com/deeplearning/cudnn/backend/latest/api/cudnn-graph-library.html"),
    EnumSpec("cublasStatus_t", "cuBLAS", ("cublas_api.h",), None, "CUBLAS_STATUS_",
             "https://docs.nvidia.com/cuda/cublas/#cublasstatus-t"),
    EnumSpec("ncclResult_t", "NCCL", ("nccl.h",), None, "nccl",
             "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/api/types.html#ncclresult-t"),
    EnumSpec("nvrtcResult", "NVRTC", ("nvrtc.h",), None, "NVRTC_",
             "https://docs.nvidia.com/cuda/nvrtc/#_CPPv411nvrtcResult"),
    # the CUDA math libraries' statuses (PyTorch, CuPy and JAX print their names: "CUSOLVER_STATUS_ALLOC_FAILED")
    EnumSpec("cufftResult", "cuFFT", ("cufft.h",), "cufftResult_t", "CUFFT_",
             "https://docs.nvidia.com/cuda/cufft/index.html#cufftresult"),
    EnumSpec("curandStatus_t", "cuRAND", ("curand.h",), "curandStatus", "CURAND_STATUS_",
             "https://docs.nvidia.com/cuda/curand/group__HOST.html"),
    EnumSpec("cusolverStatus_t", "cuSOLVER", ("cusolver_common.h",), None, "CUSOLVER_STATUS_",
             "https://docs.nvidia.com/cuda/cusolver/index.html#cusolverstatus-t"),
    EnumSpec("cusparseStatus_t", "cuSPARSE", ("cusparse.h",), None, "CUSPARSE_STATUS_",
             "https://docs.nvidia.com/cuda/cusparse/index.html#cusparsestatus-t"),
    # the Video Codec SDK's encoder status, as FFmpeg's nv-codec-headers ship it (Debian: libffmpeg-nvenc-dev)
    EnumSpec("NVENCSTATUS", "NVENC (Video Codec SDK)", ("nvEncodeAPI.h", "ffnvcodec/nvEncodeAPI.h"), "_NVENCSTATUS", "NV_ENC_",
             "https://docs.nvidia.com/video-technologies/video-codec-sdk/13.0/nvenc-video-encoder-api-prog-guide/index.html"),
)

# --------------------------------------------------------------------------- C enum parser

_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_ENTRY = re.compile(r"^\s*([A-Za-z_]\w*)(?:\s+[A-Za-z_]\w*)*\s*(?:=\s*(.+?))?\s*$", re.S)


def _clean_doc(comment: str) -> str:
    body = comment[3:-2] if comment.startswith("/*") else comment.lstrip("/")
    body = body.lstrip("*!<").strip()
    lines = [ln.strip().lstrip("*").strip() for ln in body.splitlines()]
    text = " ".join(ln for ln in lines if ln)
    return re.sub(r"\s*@since.*$", "", text).strip()


def _eval(expr: str, known: Dict[str, int]) -> Optional[int]:
    expr = re.sub(r"(?<=\d)[uUlL]+\b", "", expr.strip())
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError:
        return None

    def ev(node):
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name) and node.id in known:
            return known[node.id]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -ev(node.operand)
        if isinstance(node, ast.BinOp):
            a, b = ev(node.left), ev(node.right)
            ops = {ast.Add: a + b, ast.Sub: a - b, ast.LShift: a << b, ast.BitOr: a | b}
            return ops.get(type(node.op))
        raise ValueError(expr)

    try:
        value = ev(tree)
    except (ValueError, TypeError):
        return None
    return value if isinstance(value, int) else None


def _enum_bodies(text: str) -> Iterable[Tuple[str, str, str]]:
    """(text between ``enum`` and ``{``, body, typedef name after ``}``) for every enum in ``text``."""
    for m in re.finditer(r"\benum\b([^{;()]*)\{", text):
        end = text.find("}", m.end())
        if end < 0:
            return
        after = re.match(r"\s*(\w+)?", text[end + 1:])
        yield m.group(1), text[m.end():end], (after.group(1) or "") if after else ""


def parse_c_enum(text: str, enum: str, tag: Optional[str] = None) -> List[Code]:
    """The enumerators of ``enum`` in C source ``text``, with values and doc comments.

    Finds ``typedef enum [tag] { ... } enum;`` or ``enum [attrs] tag { ... }``. A leading ``/** */``
    comment or a trailing ``/**< */`` / ``//!<`` comment is the enumerator's doc. Values may be
    literals, earlier enumerators (aliases) or simple expressions; an entry without one is the
    previous value + 1. Returns [] when the enum is not in ``text``.
    """
    for head, body, typedef in _enum_bodies(text):
        if typedef == enum or (tag and re.search(rf"\b{re.escape(tag)}\s*$", head)):
            return _parse_body(enum, body)
    return []


def _parse_body(enum: str, body: str) -> List[Code]:
    codes: List[Code] = []
    known: Dict[str, int] = {}
    pending_doc, nxt, pos = "", 0, 0
    pieces: List[Tuple[str, str]] = []  # ("code", text) / ("doc", comment)
    for m in _COMMENT.finditer(body):
        pieces.append(("code", body[pos:m.start()]))
        pieces.append(("doc", m.group(0)))
        pos = m.end()
    pieces.append(("code", body[pos:]))
    last: Optional[Code] = None
    for kind, chunk in pieces:
        if kind == "doc":
            trailing = chunk.startswith(("/**<", "//!<", "///<", "/*!<"))
            if trailing and last is not None:
                last.doc = last.doc or _clean_doc(chunk)
            elif chunk.startswith(("/**", "/*!", "///")):
                pending_doc = _clean_doc(chunk)
            continue
        for part in chunk.split(","):
            if not part.strip():
                continue
            m = _ENTRY.match(part)
            if not m:
                continue
            name, expr = m.group(1), m.group(2)
            value = _eval(expr, known) if expr else nxt
            if value is None:
                continue
            known[name] = value
            nxt = value + 1
            last = Code(enum, name, value, pending_doc)
            codes.append(last)
            pending_doc = ""
    return codes


# --------------------------------------------------------------------------- where headers are


def _site_dirs() -> List[str]:
    from gpudoctor.probes.libfind import site_packages_dirs

    return site_packages_dirs()


def _include_dirs(extra: Sequence[str] = ()) -> List[str]:
    dirs = list(extra)
    env = os.environ.get("GPUDOCTOR_HEADER_DIRS", "")
    dirs += [d for d in env.split(os.pathsep) if d]
    cuda = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"
    dirs += [os.path.join(cuda, "include"), "/usr/local/cuda/include"]
    dirs += sorted(glob.glob("/usr/local/cuda-*/include"), reverse=True)
    if os.environ.get("CONDA_PREFIX"):
        dirs.append(os.path.join(os.environ["CONDA_PREFIX"], "include"))
    for d in _site_dirs():
        dirs += sorted(glob.glob(os.path.join(d, "nvidia", "*", "include")))
    dirs += ["/usr/include", "/usr/local/include"]
    return list(dict.fromkeys(d for d in dirs if os.path.isdir(d)))


def find_headers(name: str, extra: Sequence[str] = ()) -> List[str]:
    """Every readable copy of header ``name`` in the include dirs (extra dirs first, then
    ``$GPUDOCTOR_HEADER_DIRS``, the CUDA toolkit, conda, pip ``nvidia/*/include``, /usr/include)."""
    out = []
    for d in _include_dirs(extra):
        p = os.path.join(d, name)
        if os.path.isfile(p) and os.path.realpath(p) not in {os.path.realpath(o) for o in out}:
            out.append(p)
    return out


def _header_version(path: str) -> str:
    """A short "what release is this" for a header's citation: the toolkit's version.json/txt or
    the pip wheel's version, else the directory."""
    root = os.path.dirname(os.path.dirname(path))
    for name in ("version.json", "version.txt"):
        vp = os.path.join(root, name)
        if os.path.isfile(vp):
            m = re.search(r'"cuda"\s*:\s*\{\s*"name"[^}]*"version"\s*:\s*"([\d.]+)"|CUDA Version ([\d.]+)',
                          open(vp, encoding="utf-8", errors="replace").read())
            if m:
                return f"CUDA {m.group(1) or m.group(2)}"
    text = open(path, encoding="utf-8", errors="replace").read(200000)
    for macro in ("CUDA_VERSION", "CUDART_VERSION", "NCCL_VERSION_CODE", "CUBLAS_VER_MAJOR", "NVRTC_VERSION"):
        m = re.search(rf"#define\s+{macro}\s+(\d+)", text)
        if m:
            return f"{macro} {m.group(1)}"
    return ""


def read_enum(spec: EnumSpec, extra_dirs: Sequence[str] = (), use_bindings: bool = True) -> Dict[str, Code]:
    """Every code of ``spec`` found in the installed headers and bindings, keyed by name.

    Codes read from several places carry each place in ``sources``; the first doc comment found wins.
    """
    out: Dict[str, Code] = {}

    def add(name: str, value: int, doc: str, where: str) -> None:
        if not name.startswith(spec.prefix) or name.endswith(("_FORCE_DWORD", "NumResults")):
            return
        code = out.get(name)
        if code is None:
            out[name] = code = Code(spec.enum, name, value, doc.strip())
        elif not code.doc and doc:
            code.doc = doc.strip()
        if where not in code.sources:
            code.sources.append(where)

    for header in spec.headers:
        for path in find_headers(header, extra_dirs):
            text = open(path, encoding="utf-8", errors="replace").read()
            codes = parse_c_enum(text, spec.enum, spec.tag)
            version = _header_version(path)
            where = portable(path) + (f" ({version})" if version else "")
            for c in codes:
                add(c.name, c.value, c.doc, where)
    if use_bindings and spec.bindings is not None:
        try:
            entries = list(spec.bindings())
        except Exception:  # noqa: BLE001 - bindings not installed: the headers are the source
            entries = []
        where = _bindings_source(spec)
        for name, value, doc in entries:
            add(name, value, " ".join(doc.split()), where)
    return out


def _bindings_source(spec: EnumSpec) -> str:
    from importlib import metadata

    dist = "nvidia-ml-py" if spec.enum == "nvmlReturn_t" else "cuda-bindings"
    try:
        return f"{dist} {metadata.version(dist)}"
    except metadata.PackageNotFoundError:
        return dist


def read_all(extra_dirs: Sequence[str] = (), use_bindings: bool = True) -> Dict[str, Dict[str, Code]]:
    """enum name -> {code name -> Code} for every enumeration in :data:`ENUMS`."""
    return {spec.enum: read_enum(spec, extra_dirs, use_bindings) for spec in ENUMS}


def pynvml_class_name(name: str) -> str:
    """The exception class nvidia-ml-py raises for an ``NVML_ERROR_*`` code (its own naming rule:
    ``NVML_ERROR_DRIVER_NOT_LOADED`` -> ``NVMLError_DriverNotLoaded``)."""
    stem = name[len("NVML_ERROR_"):]
    return "NVMLError_" + "".join(w.capitalize() for w in stem.split("_"))


# --------------------------------------------------------------------------- messages from the libraries

_MESSAGE_FUNCS = {
    # enum: (library sonames / globs, function, returns-status-with-out-pointer)
    "CUresult": (("libcuda.so.1",), "cuGetErrorString", True),
    "cudaError_t": (("libcudart.so.13", "libcudart.so.12", "libcudart.so"), "cudaGetErrorString", False),
    "nvmlReturn_t": (("libnvidia-ml.so.1",), "nvmlErrorString", False),
    "cublasStatus_t": (("libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so"), "cublasGetStatusString", False),
    "ncclResult_t": (("libnccl.so.2",), "ncclGetErrorString", False),
    "nvrtcResult": (("libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"), "nvrtcGetErrorString", False),
    "cudnnStatus_t": (("libcudnn_graph.so.9", "libcudnn.so.9", "libcudnn.so.8"), "cudnnGetErrorString", False),
    "cusparseStatus_t": (("libcusparse.so.12", "libcusparse.so.11", "libcusparse.so"), "cusparseGetErrorString", False),
}


def _wheel_libraries(sonames: Sequence[str]) -> List[str]:
    """Copies of ``sonames`` in pip ``nvidia/*/lib`` dirs (often newer than the system's)."""
    out = []
    for d in _site_dirs():
        for so in sonames:
            out += sorted(glob.glob(os.path.join(d, "nvidia", "*", "lib", so)))
    return out


def library_messages(enum: str, values: Iterable[int], libraries: Sequence[str] = ()) -> Tuple[Dict[int, str], str]:
    """``({value: message}, library path)`` from the library's own error-string function, or
    ``({}, "")`` when no copy loads. Tried in order: ``libraries``, pip wheels, the loader's default.
    A value the library answers with its "unrecognized code" text (it predates that code) is left out."""
    if enum not in _MESSAGE_FUNCS:  # no error-string function (NVENC, cuFFT, cuRAND, cuSOLVER): tools print the name
        return {}, ""
    names, func, out_param = _MESSAGE_FUNCS[enum]
    for lib in list(libraries) + _wheel_libraries(names) + list(names):
        try:
            handle = ctypes.CDLL(lib)
            fn = getattr(handle, func)
        except (OSError, AttributeError):
            continue
        if out_param:
            fn.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        else:
            fn.restype, fn.argtypes = ctypes.c_char_p, [ctypes.c_int]

        def ask(v: int) -> Optional[str]:
            if out_param:
                s = ctypes.c_char_p()
                if fn(v, ctypes.byref(s)) != 0 or not s.value:
                    return None
                return s.value.decode("utf-8", errors="replace")
            raw = fn(v)
            return raw.decode("utf-8", errors="replace") if raw else None

        unknown = ask(987654321)
        messages = {}
        for v in values:
            text = ask(v)
            if text and (text != unknown or v == 999):
                messages[v] = text
        return messages, _loaded_path(lib, func, handle)
    return {}, ""


def portable(path: str) -> str:
    """A path as cited in generated data: pip wheels as ``site-packages/...`` (no user or venv name)."""
    i = path.find("/site-packages/")
    return path[i + 1:] if i >= 0 else path


def _loaded_path(lib: str, func: str, handle) -> str:
    """The file a ctypes handle came from (dladdr on one of its symbols)."""
    class DlInfo(ctypes.Structure):
        _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                    ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]
    try:
        libdl = ctypes.CDLL(None)
        info = DlInfo()
        addr = ctypes.cast(getattr(handle, func), ctypes.c_void_p)
        if libdl.dladdr(addr, ctypes.byref(info)) and info.dli_fname:
            return os.path.realpath(info.dli_fname.decode())
    except (OSError, AttributeError):
        pass
    return lib
