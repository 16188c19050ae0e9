"""Versions a log states, judged against the compatibility matrix: the pasted ``nvidia-smi`` header,
``nvcc --version``, ``gcc --version``, ``pip list``, PyTorch's collect_env.

People paste their versions next to the error, and the versions often show the cause when the error
text does not (a generic "CUDA error: unknown error", a build that failed on header noise). This
module finds those facts with the scanner (as context lines: they never diagnose by themselves) and
judges them as ``gpudoctor check`` judges the same facts probed live, with the same matrix
(:mod:`gpudoctor.matrix`, sourced from NVIDIA's release notes and the frameworks' wheels):

- driver D and a package built for CUDA C (``torch 2.1.0+cu121``, "CUDA used to build PyTorch") where
  D runs neither C natively nor by minor-version compatibility (CUDA release notes, Tables 2 and 3):
  ``driver.too_old``;
- host gcc/clang newer than the ``nvcc`` release in the log accepts (``crt/host_config.h`` of that
  release): ``compiler.unsupported``;
- a GPU (by name or compute capability) and a PyTorch build with no SASS or PTX it can run (the
  matrix's inspected wheel) or a CUDA release that cannot target it at all: ``arch.binary_missing``;
- a package built for CUDA major M and ``nvcc`` of another major in a build log (PyTorch's
  cpp_extension refuses exactly this): ``framework.cuda_mismatch``;
- a CPU-only build by its own name (``torch 2.1.0+cpu``, conda's ``cpuonly``, ``tensorflow-cpu``,
  ``faiss-cpu``): ``framework.cpu_build``;
- TensorFlow's version and the CUDA installed beside it (its issue template), of different majors:
  TensorFlow cannot load its CUDA libraries (``library.not_found``);
- TensorRT's version and a GPU outside that release's supported range (the TensorRT support
  matrix's min/max SM): ``arch.toolkit_unsupported`` (the KB's class for "this TensorRT does not
  support this SM").

A judgment from facts alone is a low-confidence diagnosis (:data:`FACTS_ONLY`, below the 0.75
"medium" floor): the facts are true of the machine, but the failure may have another cause. When the
log also shows a symptom of that cause (no GPU found, a failed build), the judgment ranks above the
symptom with medium confidence. Ambiguous facts (two different drivers in one log) are not judged.
"""
from __future__ import annotations

import re
from typing import Callable, Dict, List, Optional, Tuple

from gpudoctor.explain.kb import CONTEXT_PREFIX, Signature, Variant
from gpudoctor.explain.ranking import raise_or_add

__all__ = ["FACT_PREFIX", "fact_signatures", "read_facts", "judge", "FACTS_ONLY"]

FACT_PREFIX = "fact_"
#: Score of a diagnosis made from stated versions alone (low confidence).
FACTS_ONLY = 0.7
_MATRIX_DOC = "https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html#cuda-driver"
_V3 = r"[1-9]\d{2}\.\d{1,3}(?:\.\d{1,3})?"  # an NVIDIA driver version: 535.104.05, 470.82.1, 531.14

_RULES = (  # (kind, literal, regex on the line; its group v is the value)
    # nvidia-smi's header ("Driver Version: 535.104.05   CUDA Version: 12.2"), its -q output, collect_env
    ("driver", "driver version", rf"driver version\s*:?\s*(?P<v>{_V3})\b"),
    ("driver", "nvidia-smi ", rf"nvidia-smi\s+(?P<v>{_V3})\b"),
    ("driver", "kernel module", rf"nvrm version:.{0,120}kernel module\s+(?P<v>{_V3})\b"),
    ("driver", "kernel reported version is", rf"kernel reported version is:?\s*(?P<v>{_V3})\b"),  # TensorFlow
    # Wheels tagged with their CUDA: torch 2.1.0+cu121, torchvision-0.16.0+cu118
    ("built_cuda", "+cu", r"(?:(?P<pkg>[a-z][\w.-]{0,40}?)[\s=:_-]{1,30}(?:version:?\s*)?)?v?(?P<pv>\d{1,4}\.\d+(?:\.\d+)?)\+cu(?P<v>\d{2,3})\b"),
    # CPU-only builds, by their own names: torch 2.1.0+cpu, conda's cpuonly, tensorflow-cpu, faiss-cpu
    # (or a bare x.y.z+cpu: only PyTorch-style wheels carry that local version, e.g. xFormers' "you have 2.1.0+cpu")
    ("cpu_build", "+cpu", r"(?:(?P<pkg>torch|pytorch|torchvision|torchaudio|jaxlib|paddlepaddle|mxnet)[\s=:_-]{1,30}(?:version:?\s*)?v?"
                          r"|(?<![\w.+-])v?(?=\d+\.\d+\.\d+\+))\d+\.\d+(?:\.\d+)?\+cpu\b"),
    ("cpu_build", "cpuonly", r"\bcpuonly\b"),
    ("cpu_build", "tensorflow-cpu", r"\btensorflow-cpu\b"),
    ("cpu_build", "faiss-cpu", r"\bfaiss-cpu\b"),
    ("built_cuda", "cuda used to build pytorch", r"cuda used to build pytorch:\s*(?P<v>\d+\.\d+)"),
    ("built_cuda", "'cuda_version'", r"'cuda_version':\s*'(?P<v>\d+\.\d+)"),  # tf.sysconfig.get_build_info()
    ("toolkit", "cuda compilation tools, release", r"cuda compilation tools, release (?P<v>\d+\.\d+)"),
    ("toolkit", "compiler identification is nvidia", r"compiler identification is nvidia (?P<v>\d+\.\d+)"),
    ("toolkit", "found cuda:", r"found cuda:.{0,300}found (?:suitable )?version \"(?P<v>\d+\.\d+)"),
    # TensorFlow's version (its issue template, pip) and the CUDA installed beside it (the same template)
    *(("tensorflow", lit, r"tensor ?flow(?:-gpu)?(?: version)?(?: \(use command below\))?\s*(?:[:=]=?|\s)\s*v?(?P<v>[12]\.\d{1,2})(?:\.\d+)?\b")
      for lit in ("tensorflow version", "tensor flow version", "tensorflow==", "tensorflow-gpu==", "tensorflow-gpu ", "tensorflow  ")),
    # TensorRT's version (its issue template, pip, its own log) for its supported-GPU range
    *(("tensorrt", lit, r"tensorrt(?:\W{0,4}version)?\W{0,6}v?(?P<v>\d{1,2}\.\d{1,2})(?:\.\d+)*\b")
      for lit in ("tensorrt version", "tensorrt==", "using tensorrt ", "loaded tensorrt ")),
    ("system_cuda", "cuda/cudnn version", r"cuda/cudnn version:?\s*(?:cuda\s*)?v?(?P<v>\d{1,2}\.\d)"),
    ("gcc", "gcc (", r"^\W*(?:x86_64-\S+-)?gcc(?:-\d+)?(?:\.exe)? \([^)]*\) (?P<v>\d+)\.\d+"),
    ("gcc", "g++ (", r"^\W*(?:x86_64-\S+-)?g\+\+(?:-\d+)?(?:\.exe)? \([^)]*\) (?P<v>\d+)\.\d+"),
    ("gcc", "gcc version", r"\bgcc version:?\s*(?:\([^)]*\)\s*)?(?P<v>\d+)\.\d+"),
    ("gcc", "compiler identification is gnu", r"compiler identification is gnu (?P<v>\d+)\.\d+"),
    ("clang", "clang version", r"^(?!.*apple)\W*(?:ubuntu |debian )?clang version (?P<v>\d+)\.\d+"),
    ("clang", "compiler identification is clang", r"compiler identification is clang (?P<v>\d+)\.\d+"),
    # A GPU by name (collect_env's "GPU 0: NVIDIA GeForce RTX 4090", nvidia-smi's table, whose next column
    # is two or more spaces away) or by its CC
    *(("gpu", lit, r"(?P<v>(?:nvidia\s+)?(?:geforce|quadro|tesla|titan|rtx|gtx|[abhlt]\d{1,3}\b)(?:[\w-]| (?! )){0,60})")
      for lit in ("geforce", "quadro", "tesla ", "titan ", "nvidia a", "nvidia h", "nvidia l4", "nvidia rtx", "nvidia t4",
                  "rtx ", "gtx ")),
    ("cc", "compute capability", r"compute capability:?\s*(?P<v>\d{1,2}\.\d)\b"),
    ("cc", "capability major/minor", r"capability major/minor version number:\s*(?P<v>\d{1,2}\.\d)\b"),
    ("windows", ".dll", r"\.dll\b"),
    ("windows", ":\\", r"\b[a-z]:\\"),
)


_BY_KIND: Dict[str, List["re.Pattern[str]"]] = {}
for _kind, _lit, _regex in _RULES:
    _BY_KIND.setdefault(_kind, []).append(re.compile(_regex, re.I))


def fact_signatures() -> List[Signature]:
    """The fact lines, as context signatures (``context.fact_<kind>``) for the scanner."""
    out = []
    for kind, literal, regex in _RULES:
        var = Variant(f"{kind}: {literal.strip()}", literal.encode(), literal.encode(), re.compile(regex, re.I), 1.0, _MATRIX_DOC)
        out.append(Signature(CONTEXT_PREFIX + FACT_PREFIX + kind, "context", "info", kind, "a version the log states",
                             _MATRIX_DOC, (), (var,)))
    return out


def _cu_tag(tag: str) -> str:
    """A wheel's CUDA tag to a release: '121' -> '12.1', '118' -> '11.8', '90' -> '9.0'."""
    return f"{tag[:-1]}.{tag[-1]}"


def read_facts(ctx: Dict[str, List[Tuple[int, str]]]) -> Dict[str, List[Tuple[str, int, str, Dict[str, str]]]]:
    """Context lines of the fact kinds -> kind -> [(value, line_no, line, groups)], values normalised."""
    out: Dict[str, List[Tuple[str, int, str, Dict[str, str]]]] = {}
    rx = _BY_KIND
    for key, lines in ctx.items():
        if not key.startswith(FACT_PREFIX):
            continue
        kind = key[len(FACT_PREFIX):]
        for n, text in lines:
            for r in rx.get(kind, ()):
                m = r.search(text)
                if not m:
                    continue
                groups = {k: v for k, v in m.groupdict().items() if v}
                value = (m.group("v") if "v" in r.groupindex else m.group(0)).strip()
                if kind == "built_cuda" and "+cu" in m.group(0).lower():
                    value = _cu_tag(value)
                out.setdefault(kind, []).append((value, n, text, groups))
                break
    return out


def _distinct(facts, kind) -> List[str]:
    return list(dict.fromkeys(v for v, *_ in facts.get(kind, ())))


def _line(facts, kind, value=None) -> str:
    for v, n, text, _g in facts.get(kind, ()):
        if value is None or v == value:
            return f"line {n}: {text[:200]}"
    return ""


def _gpu_cc(facts, matrix) -> Optional[Tuple[str, str]]:
    """(compute capability, evidence line) of the one GPU the log names, or None (none, or several CCs)."""
    ccs: Dict[str, str] = {}
    for v, n, text, _g in facts.get("cc", ()):
        ccs.setdefault(v, f"line {n}: {text[:200]}")
    for v, n, text, _g in facts.get("gpu", ()):
        info = matrix.gpu_by_name(v)
        if info is not None:
            ccs.setdefault(info.cc, f"line {n}: {text[:200]}")
    return next(iter(ccs.items())) if len(ccs) == 1 else None


# Symptoms a judged cause explains (a program's own error, program.error, is never one: a negative stays low).
_NO_GPU = ("driver.missing", "driver.not_loaded", "device.not_visible", "framework.cpu_build", "container.no_gpu")
_BUILD_FAILED = ("compiler.unsupported", "toolkit.mixed", "env.cuda_home", "arch.half_unsupported", "library.not_found")
_KERNEL_FAILED = ("device.not_visible", "framework.cpu_build")


def judge(diags: list, ctx: Dict[str, List[Tuple[int, str]]], make: Callable) -> list:
    """Add (or strengthen) diagnoses that the log's stated versions prove; returns ``diags`` re-sorted.

    ``make(sig_id, score, evidence)`` builds a diagnosis of a class (None when the KB lacks it).
    """
    facts = read_facts(ctx)
    if not facts:
        return diags
    from gpudoctor.matrix import MatrixError, load_matrix

    try:
        matrix = load_matrix()
    except MatrixError:
        return diags
    by_id = {d.finding.id: d for d in diags}

    def conclude(sig_id: str, evidence: Dict[str, object], symptoms: Tuple[str, ...]) -> None:
        seen = [d.score for d in diags if d.finding.id in symptoms and d.finding.id != sig_id]
        score = min(max(max(seen) + 0.05, 0.8), 0.95) if seen else FACTS_ONLY
        evidence = dict(evidence, judged_by="the versions stated in the log, against gpudoctor's compatibility matrix")
        raise_or_add(diags, by_id, make, sig_id, score, evidence)

    drivers, built = _distinct(facts, "driver"), _distinct(facts, "built_cuda")
    toolkits = _distinct(facts, "toolkit")
    os_name = "windows" if facts.get("windows") else "linux"
    if len(drivers) == 1 and built:
        for cuda in built:
            if matrix.driver_supports(drivers[0], cuda, os_name) == "unsupported":
                newest = matrix.max_cuda_for_driver(drivers[0], os_name) or "none in the matrix"
                conclude("driver.too_old", {"driver": _line(facts, "driver"), "built_for_cuda": _line(facts, "built_cuda", cuda),
                                            "newest_cuda_this_driver_runs": newest}, _NO_GPU + ("driver.too_old",))
                break
    elif len(drivers) == 1 and len(toolkits) == 1 and not built:
        # a program built by this nvcc: only judged when the log also shows it failing to find a working GPU
        if matrix.driver_supports(drivers[0], toolkits[0], os_name) == "unsupported" and \
                any(d.finding.id in _NO_GPU + ("driver.too_old",) for d in diags):
            conclude("driver.too_old", {"driver": _line(facts, "driver"), "nvcc": _line(facts, "toolkit"),
                                        "newest_cuda_this_driver_runs": matrix.max_cuda_for_driver(drivers[0], os_name) or "none"},
                     _NO_GPU + ("driver.too_old",))
    tf = _distinct(facts, "tensorflow")
    system_cuda = toolkits or _distinct(facts, "system_cuda")
    if len(tf) == 1 and len(system_cuda) == 1 and not built:
        row = next((r for r in matrix.tensorflow_releases() if r.tensorflow == tf[0]), None)
        # TensorFlow (before its pip CUDA wheels) dlopens the CUDA libraries of the major it was built with
        if row is not None and row.cuda.split(".")[0] != system_cuda[0].split(".")[0]:
            conclude("library.not_found", {"tensorflow": _line(facts, "tensorflow"),
                                           "installed_cuda": _line(facts, "toolkit") or _line(facts, "system_cuda"),
                                           "why": f"TensorFlow {tf[0]} was built with CUDA {row.cuda} and loads that major's "
                                                  f"libraries; CUDA {system_cuda[0]} is installed"},
                     ("framework.cpu_build", "device.not_visible", "library.not_found"))
    cpu = facts.get("cpu_build", ())
    if cpu:
        v, n, text, _g = cpu[0]
        conclude("framework.cpu_build", {"cpu_only_package": f"line {n}: {text[:200]}",
                                         "why": "the package installed is its CPU-only build, which has no CUDA code"},
                 _NO_GPU + ("framework.cpu_build", "framework.cuda_mismatch"))  # a CPU build matches no CUDA
    compilers = [("gcc", v) for v in _distinct(facts, "gcc")] + [("clang", v) for v in _distinct(facts, "clang")]
    if len(toolkits) == 1 and compilers:
        rel = matrix.cuda_release(toolkits[0])
        for name, major in compilers:
            limit = None if rel is None else (rel.max_gcc if name == "gcc" else rel.max_clang)
            if limit is not None and int(major) > limit:
                conclude("compiler.unsupported", {"nvcc": _line(facts, "toolkit"), "host_compiler": _line(facts, name),
                                                  f"newest_{name}_cuda_{toolkits[0]}_accepts": str(limit)}, _BUILD_FAILED)
                break
    gpu = _gpu_cc(facts, matrix)
    if gpu and built:
        cc, where = gpu
        verdict = _kernels_for(matrix, facts, cc)
        if verdict:
            conclude("arch.binary_missing", {"gpu": where, "compute_capability": cc, **verdict}, _KERNEL_FAILED)
    trt = _distinct(facts, "tensorrt")
    if gpu and len(trt) == 1:
        cc, where = gpu
        row = matrix.tensorrt_release(trt[0])
        sm = int(cc.replace(".", ""))
        low, high = ((int(x[3:]) if x else None) for x in ((row.min_sm, row.max_sm) if row else (None, None)))
        if row is not None and row.exact and low is not None and high is not None and not low <= sm <= high:
            conclude("arch.toolkit_unsupported", {"gpu": where, "compute_capability": cc, "tensorrt": _line(facts, "tensorrt"),
                                                  "why": f"TensorRT {row.tensorrt} supports sm_{low} to sm_{high}"}, ())
    if len(toolkits) == 1 and (ctx.get("nvcc") or ctx.get("build_error")):
        nvcc_major = toolkits[0].split(".")[0]
        for v, n, text, groups in facts.get("built_cuda", ()):
            if groups.get("pkg", "").lower() in ("torch", "pytorch") and v.split(".")[0] != nvcc_major:
                conclude("framework.cuda_mismatch", {"nvcc": _line(facts, "toolkit"), "framework": f"line {n}: {text[:200]}",
                                                     "why": f"PyTorch was built with CUDA {v}, the nvcc building the extension is {toolkits[0]}"},
                         _BUILD_FAILED)
                break
    diags.sort(key=lambda d: (-d.score, min((m.line_no for m in d.matches), default=0)))
    return diags


def _kernels_for(matrix, facts, cc: str) -> Optional[Dict[str, object]]:
    """Evidence that the PyTorch build (or any build for that CUDA) named in the log has no kernel for ``cc``."""
    from gpudoctor.formats.fatbin import coverage

    sm = "sm_" + cc.replace(".", "")
    for v, n, text, groups in facts.get("built_cuda", ()):
        if groups.get("pkg", "").lower() in ("torch", "pytorch") and groups.get("pv"):
            row = matrix.torch_release(groups["pv"])
            build = row.build(v) if row else None
            if build is not None and (build.sass or build.ptx):
                cov = coverage((tuple(build.sass), tuple(build.ptx)), cc)
                if cov.verdict == "none":
                    return {"build": f"line {n}: {text[:200]}", "build_sass": list(build.sass), "build_ptx": list(build.ptx)}
                return None
        span = matrix.cuda_range_for_sm(sm)
        rel = matrix.cuda_release(v)
        if rel is not None and span is not None and sm not in rel.sms:
            return {"build": f"line {n}: {text[:200]}",
                    "why": f"CUDA {v} cannot build kernels for {sm} (CUDA {span[0]} to {span[1]} can)"}
    return None
