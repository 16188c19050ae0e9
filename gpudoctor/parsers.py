"""Pure parsers for NVIDIA driver / CUDA toolchain text formats.

Every function here is pure: it takes text (or a small value such as an
environment variable or an int) and returns plain Python data.  Nothing here
runs a process, reads a file or touches the network.

Robustness contract
-------------------
* Text inputs may be ``str``, ``bytes`` (decoded as UTF-8 with
  ``errors="replace"``) or ``None`` (treated as empty).  Any other type is
  treated as empty input.
* Only the first :data:`MAX_TEXT` characters (1 MiB) of a text input are
  looked at (:data:`MAX_XML` for ``nvidia-smi -q -x``).
* Absent fields are ``None`` (or an empty list / dict); garbage input gives
  ``None`` / empty results.  The only exception ever raised is
  :class:`ParseError` (a ``ValueError``), and only where a docstring says so.
* Regular expressions are anchored, linear (no nested quantifiers) and are
  applied per line, so pathological input cannot cause catastrophic
  backtracking.
"""

import os
import re
import xml.etree.ElementTree as ET
from typing import Dict, List, Optional, Tuple

__all__ = [
    "ParseError",
    "MAX_TEXT",
    "MAX_XML",
    "parse_proc_driver_version",
    "parse_nvcc_version",
    "parse_host_config",
    "parse_gpu_code_list",
    "parse_cudnn_version_header",
    "cudnn_version_from_int",
    "cuda_version_from_int",
    "parse_ldconfig_p",
    "parse_nvidia_require_cuda",
    "parse_cuda_visible_devices",
    "parse_gcc_version",
    "parse_clang_version",
    "parse_os_release",
    "parse_nvidia_smi_xml",
    "parse_nvidia_smi_L",
    "parse_nvidia_smi_error",
    "parse_smi_query_csv",
    "version_from_soname",
]

#: Characters of text input that parsers look at.
MAX_TEXT = 1 << 20
#: Largest ``nvidia-smi -q -x`` document accepted (an 8-GPU box is ~250 KB).
MAX_XML = 16 << 20
#: Lines longer than this are skipped by line-oriented parsers.
_MAX_LINE = 8192


class ParseError(ValueError):
    """Input is not in the expected format (only raised where documented)."""


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------

def _text(value, limit: int = MAX_TEXT) -> str:
    """Coerce *value* to ``str`` and cap it at *limit* characters."""
    if value is None:
        return ""
    if isinstance(value, (bytes, bytearray)):
        value = bytes(value[: limit * 4]).decode("utf-8", errors="replace")
    elif not isinstance(value, str):
        return ""
    return value[:limit]


def _lines(text) -> List[str]:
    """Lines of the capped text, with over-long lines dropped."""
    return [ln for ln in _text(text).splitlines() if len(ln) <= _MAX_LINE]


_VERSION_RE = re.compile(r"\d+(?:\.\d+)*")          # "12.2.0", "580.159.04"
_DOTTED_RE = re.compile(r"\d+(?:\.\d+)+")           # needs at least one dot


def _lead_version(token: str, need_dot: bool = False) -> Optional[str]:
    """Leading dotted-number part of *token* ("14.0.0-1ubuntu1" -> "14.0.0")."""
    m = (_DOTTED_RE if need_dot else _VERSION_RE).match(token)
    return m.group(0) if m else None


def _to_int(s) -> Optional[int]:
    """``int`` of the leading digits of *s* ("16x" -> 16, "81559 MiB" -> 81559)."""
    if s is None:
        return None
    m = re.match(r"\s*(\d{1,18})", s)
    return int(m.group(1)) if m else None


# --------------------------------------------------------------------------
# /proc/driver/nvidia/version
# --------------------------------------------------------------------------

def parse_proc_driver_version(text) -> Optional[dict]:
    """Parse ``/proc/driver/nvidia/version``.

    Input, e.g.::

        NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (nixbld@)
        GCC version:  gcc version 15.3.0 (GCC)

    (the proprietary module says ``NVIDIA UNIX x86_64 Kernel Module  535.183.01  <date>``).

    Returns ``{"version": "580.159.04", "flavor": "open" | "proprietary",
    "arch": "x86_64" | None, "build_gcc": "15.3.0" | None}``, or ``None`` when
    there is no ``NVRM version:`` line with a version number.  Never raises.
    """
    version = flavor = arch = build_gcc = None
    for line in _lines(text):
        s = line.strip()
        if version is None and s.startswith("NVRM version:"):
            rest = s[len("NVRM version:"):]
            words = rest.split()
            # The version is the first dotted-number word after "Module"
            # (the arch word "x86_64" is not a dotted number).
            start = 0
            for i, w in enumerate(words):
                if w == "Module":
                    start = i + 1
                    break
            for w in words[start:]:
                v = _lead_version(w, need_dot=True)
                if v is not None and v == w:
                    version = v
                    break
            if version is None:
                continue
            flavor = "open" if "Open Kernel Module" in rest else "proprietary"
            if start and start + 1 < len(words) and words[start] == "for":
                arch = words[start + 1]      # "... Open Kernel Module for x86_64 ..."
            elif len(words) >= 3 and words[0] == "NVIDIA" and words[1] == "UNIX":
                if words[2] not in ("Open", "Kernel"):
                    arch = words[2]          # "NVIDIA UNIX x86_64 Kernel Module"
        elif build_gcc is None and s.startswith("GCC version:"):
            words = s.split()
            for i, w in enumerate(words[:-1]):
                if w == "version" and words[i - 1] in ("gcc", "clang"):
                    build_gcc = _lead_version(words[i + 1], need_dot=True)
                    break
    if version is None:
        return None
    return {"version": version, "flavor": flavor, "arch": arch, "build_gcc": build_gcc}


# --------------------------------------------------------------------------
# nvcc
# --------------------------------------------------------------------------

def parse_nvcc_version(text) -> Optional[dict]:
    """Parse ``nvcc --version``.

    Input: the banner, whose relevant lines are::

        Cuda compilation tools, release 13.0, V13.0.88
        Build cuda_13.0.r13.0/compiler.36424714_0

    Returns ``{"release": "13.0", "version": "13.0.88" | None,
    "build": "cuda_13.0.r13.0/compiler.36424714_0" | None}``, or ``None`` when
    there is no ``release X.Y`` line (very old nvcc lack the ``Build`` line).
    Never raises.
    """
    release = version = build = None
    for line in _lines(text):
        s = line.strip()
        if release is None and "compilation tools" in s and "release" in s:
            m = re.search(r"release (\d+\.\d+)", s)
            if m:
                release = m.group(1)
                m = re.search(r"\bV(\d+(?:\.\d+)+)", s)
                version = m.group(1) if m else None
        elif build is None and s.startswith("Build ") and len(s.split()) == 2:
            build = s.split()[1]
    if release is None:
        return None
    return {"release": release, "version": version, "build": build}


_GPU_CODE_RE = re.compile(r"(?:sm|compute|lto)_\d{1,4}[a-z]?")


def parse_gpu_code_list(text) -> List[str]:
    """Parse ``nvcc --list-gpu-code`` or ``nvcc --list-gpu-arch``.

    Input: one name per line (``sm_75``, ``compute_90``, also ``sm_90a`` /
    ``lto_90`` style names; whitespace- or comma-separated is accepted too).
    Returns the names in input order, de-duplicated; anything that is not
    such a name is skipped.  Never raises.
    """
    out: List[str] = []
    seen = set()
    for line in _lines(text):
        for tok in line.replace(",", " ").split():
            if _GPU_CODE_RE.fullmatch(tok) and tok not in seen:
                seen.add(tok)
                out.append(tok)
    return out


# --------------------------------------------------------------------------
# crt/host_config.h
# --------------------------------------------------------------------------

_HC_CMP_RE = re.compile(r"(__GNUC__|__clang_major__|_MSC_VER)\s*(>=|<=|==|!=|>|<)\s*(\d{1,6})")
# Optional "123:" prefix so that ``grep -n`` excerpts of the header parse too.
_HC_DIRECTIVE_RE = re.compile(r"(?:\d{1,7}[:-])?\s*#\s*([a-z]+)\b(.*)")
_CLANG_GUARD_RE = re.compile(r"(?<!!)defined\s*\(\s*__clang__\s*\)")
_GNUC_GUARD_RE = re.compile(r"(?<!!)defined\s*\(\s*__GNUC__\s*\)")
_WIN_GUARD_RE = re.compile(r"(?<!!)defined\s*\(\s*(?:_WIN32|_MSC_VER)\s*\)")


def _hc_directives(text) -> List[Tuple[str, str]]:
    """Preprocessor directives of a header as ``(name, rest)``; continuation
    lines (trailing backslash) are joined, comments are not stripped."""
    out: List[Tuple[str, str]] = []
    pending: List[str] = []
    pending_len = 0
    for raw in _text(text).splitlines():
        if raw.endswith("\\"):
            pending.append(raw[:-1])
            pending_len += len(raw)
            if pending_len > _MAX_LINE:       # absurd continuation: drop it
                pending, pending_len = [], 0
            continue
        if pending:
            raw = " ".join(pending) + " " + raw
            pending, pending_len = [], 0
        if len(raw) > _MAX_LINE:
            continue
        m = _HC_DIRECTIVE_RE.match(raw)
        if m:
            rest = m.group(2)
            cut = rest.find("/*")
            if cut >= 0:
                rest = rest[:cut]
            cut = rest.find("//")
            if cut >= 0:
                rest = rest[:cut]
            out.append((m.group(1), rest.strip()))
    return out


def parse_host_config(text) -> dict:
    """Parse CUDA's ``include/crt/host_config.h`` for host-compiler limits.

    Input: the header text.  nvcc rejects unsupported host compilers with
    blocks such as (CUDA 13.0)::

        #if defined(__GNUC__)
        #if __GNUC__ > 15
        #error -- unsupported GNU version! gcc versions later than 15 ...
        ...
        #if defined(__clang__) && !defined(__ibmxl_vrm__) && ... && !defined(__GRCO_CLANG_COMPILER__)
        #if (__clang_major__ >= 21) || (__clang_major__ < 3) || ((__clang_major__ == 3) && (__clang_minor__ < 3))
        #error -- unsupported clang version! ...
        ...
        #if defined(_WIN32)
        #if _MSC_VER < 1920 || _MSC_VER >= 1950
        #error -- unsupported Microsoft Visual Studio version! ...

    (CUDA 11.8 has ``__GNUC__ > 11``, clang ``>= 15`` and MSVC ``< 1910 || >= 1940``.)
    A ``grep -n`` excerpt of the header (lines prefixed ``123:``) is accepted.

    Which checks are read: only an ``#if``/``#elif`` whose *next* directive
    is ``#error`` (so deprecation ``#pragma message`` branches and feature
    tests such as ``#if _MSC_VER >= 1500`` are ignored).  In its condition,
    ``X > N`` gives max N, ``X >= N`` max N-1, ``X < N`` min N, ``X <= N``
    min N+1 (``==``/``!=`` and ``__clang_minor__`` refinements are ignored,
    so CUDA's "clang > 3.2" appears as ``min_clang == 3``).

    * gcc: ``__GNUC__`` checks *not* nested in a ``defined(__clang__)`` block.
    * clang: ``__clang_major__`` checks nested in a positive
      ``defined(__clang__)`` block, i.e. the generic Linux clang check; the
      special-purpose Grace (``__GRCO_CLANG_COMPILER__``) and Horizon
      (``__HORIZON__``) clang checks are used only if the generic one is absent.
    * MSVC: ``_MSC_VER`` checks (in practice inside ``#if defined(_WIN32)``).

    Returns ``{"max_gcc", "min_gcc", "max_clang", "min_clang", "max_msvc",
    "min_msvc"}``: ints (inclusive major versions; ``_MSC_VER`` values for
    MSVC, e.g. ``max_msvc == 1949``) or ``None`` where no check exists.
    Never raises.
    """
    result: Dict[str, Optional[int]] = {
        "max_gcc": None, "min_gcc": None,
        "max_clang": None, "min_clang": None,
        "max_msvc": None, "min_msvc": None,
    }
    fallback_clang: Dict[str, Optional[int]] = {"max_clang": None, "min_clang": None}
    directives = _hc_directives(text)
    stack: List[str] = []   # condition of each enclosing #if (latest #elif replaces)

    def put(target: Dict[str, Optional[int]], key: str, value: int, is_max: bool) -> None:
        old = target.get(key)
        if old is None:
            target[key] = value
        else:
            target[key] = min(old, value) if is_max else max(old, value)

    for i, (name, rest) in enumerate(directives):
        if name in ("if", "ifdef", "ifndef"):
            stack.append(rest if name == "if" else "defined(%s)" % rest if name == "ifdef" else "")
        elif name == "elif":
            if stack:
                stack[-1] = rest
        elif name == "else":
            if stack:
                stack[-1] = ""
        elif name == "endif":
            if stack:
                stack.pop()
        if name not in ("if", "elif"):
            continue
        if i + 1 >= len(directives) or directives[i + 1][0] != "error":
            continue
        enclosing = stack[:-1]
        in_clang = any(_CLANG_GUARD_RE.search(c) for c in enclosing)
        for macro, op, num in _HC_CMP_RE.findall(rest):
            n = int(num)
            if op in ("==", "!="):
                continue
            is_max = op in (">", ">=")
            bound = {">": n, ">=": n - 1, "<": n, "<=": n + 1}[op]
            if macro == "__GNUC__":
                if not in_clang:
                    put(result, "max_gcc" if is_max else "min_gcc", bound, is_max)
            elif macro == "__clang_major__":
                key = "max_clang" if is_max else "min_clang"
                put(result if in_clang else fallback_clang, key, bound, is_max)
            else:
                put(result, "max_msvc" if is_max else "min_msvc", bound, is_max)
    for key in ("max_clang", "min_clang"):
        if result[key] is None:
            result[key] = fallback_clang[key]
    return result


# --------------------------------------------------------------------------
# cuDNN / CUDA version numbers
# --------------------------------------------------------------------------

_CUDNN_DEFINE_RE = re.compile(r"\s*#\s*define\s+CUDNN_(MAJOR|MINOR|PATCHLEVEL)\s+\(?(\d{1,6})\)?\s*(?:/[/*].*)?")


def parse_cudnn_version_header(text) -> Optional[Tuple[int, int, int]]:
    """Parse ``cudnn_version.h`` (cuDNN 8/9) or ``cudnn.h`` (cuDNN <= 7).

    Input: header text containing ``#define CUDNN_MAJOR 9``,
    ``#define CUDNN_MINOR 28``, ``#define CUDNN_PATCHLEVEL 0`` (first
    definition of each wins).  Returns ``(major, minor, patch)`` or ``None``
    if any of the three is missing.  Never raises.
    """
    found: Dict[str, int] = {}
    for line in _lines(text):
        if "CUDNN_" not in line:
            continue
        m = _CUDNN_DEFINE_RE.fullmatch(line)
        if m and m.group(1) not in found:
            found[m.group(1)] = int(m.group(2))
            if len(found) == 3:
                break
    if len(found) != 3:
        return None
    return (found["MAJOR"], found["MINOR"], found["PATCHLEVEL"])


def _nonneg_int(n) -> int:
    if isinstance(n, bool) or not isinstance(n, int):
        raise ParseError("expected a non-negative int, got %r" % (type(n).__name__,))
    if n < 0:
        raise ParseError("expected a non-negative int, got %d" % n)
    return n


def cudnn_version_from_int(n: int) -> str:
    """Format a ``cudnnGetVersion()`` / ``CUDNN_VERSION`` int as "M.m.p".

    Rule: cuDNN >= 9 encodes ``major*10000 + minor*100 + patch``
    (91900 -> "9.19.0"); cuDNN <= 8 encoded ``major*1000 + minor*100 + patch``
    (8907 -> "8.9.7", 7605 -> "7.6.5").  So values >= 90000 use the new rule,
    values < 10000 the old one.  Values 10000..89999 were never produced by
    any cuDNN and raise :class:`ParseError`, as do negative numbers and
    non-ints (``bool`` included).
    """
    n = _nonneg_int(n)
    if n >= 90000:
        return "%d.%d.%d" % (n // 10000, (n % 10000) // 100, n % 100)
    if n < 10000:
        return "%d.%d.%d" % (n // 1000, (n % 1000) // 100, n % 100)
    raise ParseError("%d is not a cuDNN version number" % n)


def cuda_version_from_int(n: int) -> str:
    """Format a CUDA version int (``cudaDriverGetVersion``,
    ``nvmlSystemGetCudaDriverVersion``, ``CUDA_VERSION``) as "major.minor".

    ``major = n // 1000``, ``minor = (n % 1000) // 10``: 13000 -> "13.0",
    12020 -> "12.2", 13030 -> "13.3".  Raises :class:`ParseError` for
    negative numbers and non-ints (``bool`` included).
    """
    n = _nonneg_int(n)
    return "%d.%d" % (n // 1000, (n % 1000) // 10)


# --------------------------------------------------------------------------
# ldconfig -p
# --------------------------------------------------------------------------

def parse_ldconfig_p(text) -> List[dict]:
    """Parse ``ldconfig -p``.

    Input lines look like::

        609 libs found in cache `/etc/ld.so.cache'
        \\tlibcuda.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcuda.so.1
        \\tlibfoo.so.2 (libc6,x86-64, OS ABI: Linux 3.2.0) => /lib/libfoo.so.2

    Returns ``[{"soname": "libcuda.so.1", "arch": "libc6,x86-64",
    "extra": None | "OS ABI: Linux 3.2.0", "path": "/usr/lib/..."}]`` in input
    order (``arch`` is the part of the parenthesised flags before the first
    ", "; ``extra`` the rest, e.g. OS ABI or hwcap).  The header and
    malformed lines are skipped.  Never raises.
    """
    out: List[dict] = []
    for line in _lines(text):
        s = line.strip()
        arrow = s.find(" => ")
        if arrow <= 0:
            continue
        left, path = s[:arrow].rstrip(), s[arrow + 4:].strip()
        if not path or not left.endswith(")"):
            continue
        paren = left.find(" (")
        if paren <= 0:
            continue
        soname = left[:paren].strip()
        flags = left[paren + 2:-1]
        if not soname or " " in soname:
            continue
        arch, _, extra = flags.partition(", ")
        out.append({"soname": soname, "arch": arch.strip(),
                    "extra": extra.strip() or None, "path": path})
    return out


# --------------------------------------------------------------------------
# container / environment variables
# --------------------------------------------------------------------------

_REQ_RE = re.compile(r"([A-Za-z_][A-Za-z0-9_]{0,63})(>=|<=|==|!=|>|<|=)(.{1,256})")


def parse_nvidia_require_cuda(value: str) -> dict:
    """Parse the NVIDIA container ``NVIDIA_REQUIRE_CUDA`` variable.

    Input: whitespace-separated requirements; each is a comma-separated AND of
    ``key<op>value`` conditions (op one of ``>= <= == != > < =``), e.g.::

        cuda>=13.0 brand=tesla,driver>=535,driver<536 brand=grid,driver>=535,driver<536

    The container toolkit requires the ``cuda`` condition(s) and treats the
    other requirements as alternatives (any one may match).

    Returns ``{"cuda": ">=13.0" | None, "constraints": [{"brand": "tesla",
    "driver": ">=535,<536"}, ...], "unparsed": [tokens that are not
    key<op>value]}``.  In a constraint, ``brand`` (an ``=`` condition) holds
    the bare value; every other key holds its ``<op><value>`` parts joined by
    ",".  A requirement made only of ``cuda`` conditions sets ``"cuda"``.
    Never raises.
    """
    text = _text(value)
    cuda_parts: List[str] = []
    constraints: List[dict] = []
    unparsed: List[str] = []
    for token in text.split():
        conds: Dict[str, List[str]] = {}
        for part in token.split(","):
            if not part:
                continue
            m = _REQ_RE.fullmatch(part)
            if not m:
                unparsed.append(part)
                continue
            key, op, val = m.group(1).lower(), m.group(2), m.group(3)
            conds.setdefault(key, []).append(val if (op == "=" and key in ("brand", "arch")) else op + val)
        if not conds:
            continue
        if set(conds) == {"cuda"}:
            cuda_parts.extend(conds["cuda"])
        else:
            constraints.append({k: ",".join(v) for k, v in conds.items()})
    return {"cuda": ",".join(cuda_parts) or None, "constraints": constraints, "unparsed": unparsed}


_HEXDASH = frozenset("0123456789abcdefABCDEF-")


def _is_hexdash(s: str) -> bool:
    return bool(s) and any(c != "-" for c in s) and all(c in _HEXDASH for c in s)


def _cvd_kind(entry: str) -> Optional[str]:
    """'index' | 'uuid' | 'mig' | None (invalid) for one CUDA_VISIBLE_DEVICES entry."""
    if entry.isdigit() and entry.isascii():
        return "index"
    if entry.startswith("GPU-"):
        return "uuid" if _is_hexdash(entry[4:]) else None
    if entry.startswith("MIG-"):
        rest = entry[4:]
        if rest.startswith("GPU-"):                       # MIG-GPU-<uuid>/<gi>/<ci>
            parts = rest[4:].split("/")
            if len(parts) == 3 and _is_hexdash(parts[0]) and all(
                    p.isdigit() and p.isascii() for p in parts[1:]):
                return "mig"
            return None
        return "mig" if _is_hexdash(rest) else None        # MIG-<uuid> (R470+)
    return None


def parse_cuda_visible_devices(value) -> dict:
    """Parse ``CUDA_VISIBLE_DEVICES`` the way the CUDA runtime reads it.

    Semantics (CUDA C Programming Guide, "CUDA Environment Variables"): a
    comma-separated sequence of GPU identifiers, each a device index (``0``),
    a GPU UUID as printed by nvidia-smi (``GPU-8932f937-...``; any unique
    prefix such as ``GPU-8932f937`` is allowed) or a MIG device
    (``MIG-<uuid>``, or the older ``MIG-GPU-<uuid>/<gi>/<ci>``).  Devices are
    enumerated in that order; parsing stops at the first invalid entry, so
    ``0,2,-1,1`` makes devices 0 and 2 visible and hides 1.  An empty value
    hides every device.  Surrounding whitespace of each entry is stripped.
    Whether an index/UUID exists on this machine is not checked here.

    Returns::

        {"set": bool, "raw": value, "entries": [all entries, stripped],
         "visible": [entries CUDA honours, i.e. before the first invalid one],
         "kind": "unset" | "empty" | "none" | "invalid" | "indices" | "uuids" | "mig" | "mixed",
         "invalid": [the entry that stopped parsing] or [],
         "ignored": [entries after it, which CUDA never looks at]}

    ``kind``: ``unset`` (``None``), ``empty`` (empty/blank: no devices),
    ``none`` (first entry is ``-1``/another negative number or
    ``NoDevFiles``: the deliberate "no GPU" markers, no devices visible),
    ``invalid`` (first entry is other garbage: no devices visible), otherwise
    the type of the visible entries (``mixed`` if they differ).  Never raises.
    """
    if value is None:
        return {"set": False, "raw": None, "entries": [], "visible": [], "kind": "unset",
                "invalid": [], "ignored": []}
    raw = value
    text = _text(value)
    if not text.strip():
        return {"set": True, "raw": raw, "entries": [], "visible": [], "kind": "empty",
                "invalid": [], "ignored": []}
    entries = [e.strip() for e in text.split(",")]
    visible: List[str] = []
    kinds = []
    invalid: List[str] = []
    ignored: List[str] = []
    for i, entry in enumerate(entries):
        k = _cvd_kind(entry)
        if k is None:
            invalid = [entry]
            ignored = entries[i + 1:]
            break
        visible.append(entry)
        kinds.append(k)
    if not visible:
        first = entries[0]
        is_neg = first.startswith("-") and first[1:].isdigit() and first[1:].isascii()
        kind = "none" if (is_neg or first == "NoDevFiles") else "invalid"
    elif len(set(kinds)) > 1:
        kind = "mixed"
    else:
        kind = {"index": "indices", "uuid": "uuids", "mig": "mig"}[kinds[0]]
    return {"set": True, "raw": raw, "entries": entries, "visible": visible, "kind": kind,
            "invalid": invalid, "ignored": ignored}


# --------------------------------------------------------------------------
# compilers, OS
# --------------------------------------------------------------------------

def _first_nonblank(text, max_lines: int = 50) -> str:
    for line in _lines(text)[:max_lines]:
        if line.strip():
            return line.strip()
    return ""


def parse_gcc_version(text) -> Optional[str]:
    """Parse ``gcc --version`` / ``g++ --version`` or ``gcc -dumpfullversion``.

    Input: the first line is ``NAME (PKGVERSION) VERSION [DATE] [(...)]``, e.g.
    ``gcc (Debian 12.2.0-14+deb12u1) 12.2.0`` or
    ``gcc (GCC) 8.5.0 20210514 (Red Hat 8.5.0-18)``; ``-dumpfullversion``
    prints just ``12.2.0`` (``-dumpversion`` may print ``12``).

    Returns the version string (first dotted number outside parentheses),
    or ``None`` (also for clang's ``--version`` output).  Never raises.
    """
    line = _first_nonblank(text)
    if not line or "clang" in line.lower():
        return None
    if _VERSION_RE.fullmatch(line):
        return line
    depth = 0
    for tok in line.split():
        opened = tok.count("(")
        closed = tok.count(")")
        if depth == 0 and opened == 0:
            v = _lead_version(tok, need_dot=True)
            if v is not None and v == tok:
                return v
        depth = max(0, depth + opened - closed)
    return None


def parse_clang_version(text) -> Optional[str]:
    """Parse ``clang --version`` / ``clang++ --version``.

    Input: first lines such as ``clang version 17.0.6``,
    ``Ubuntu clang version 14.0.0-1ubuntu1.1`` or
    ``Apple clang version 15.0.0 (clang-1500.3.9.4)``.
    Returns the dotted version after ``clang version`` ("14.0.0"), or
    ``None``.  Never raises.
    """
    for line in _lines(text)[:20]:
        pos = line.find("clang version ")
        if pos < 0:
            continue
        words = line[pos + len("clang version "):].split()
        if words:
            return _lead_version(words[0], need_dot=True)
        return None
    return None


_OS_RELEASE_KEY_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


def _os_release_unquote(v: str) -> str:
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'":
        inner = v[1:-1]
        if v[0] == "'":
            return inner
        out = []
        i = 0
        while i < len(inner):
            c = inner[i]
            if c == "\\" and i + 1 < len(inner) and inner[i + 1] in "\\\"$`":
                out.append(inner[i + 1])
                i += 2
                continue
            out.append(c)
            i += 1
        return "".join(out)
    return v


def parse_os_release(text) -> dict:
    """Parse ``/etc/os-release`` (os-release(5): ``KEY=value`` lines, values
    optionally in double or single quotes, ``#`` comments).

    Returns a dict of every key found (unquoted string values); the keys
    ``ID``, ``VERSION_ID``, ``PRETTY_NAME`` and ``ID_LIKE`` are always present
    (``None`` when absent).  ``ID_LIKE`` stays a space-separated string.
    Never raises.
    """
    out: Dict[str, Optional[str]] = {}
    for line in _lines(text):
        s = line.strip()
        if not s or s.startswith("#") or "=" not in s:
            continue
        key, _, val = s.partition("=")
        if not _OS_RELEASE_KEY_RE.fullmatch(key):
            continue
        out[key] = _os_release_unquote(val.strip())
    for key in ("ID", "VERSION_ID", "PRETTY_NAME", "ID_LIKE"):
        out.setdefault(key, None)
    return out


# --------------------------------------------------------------------------
# nvidia-smi
# --------------------------------------------------------------------------

# nvidia-smi -q -x always starts with this (no internal subset, no entities).
_SMI_DOCTYPE_RE = re.compile(r'<!DOCTYPE\s{1,16}nvidia_smi_log\s{1,16}SYSTEM\s{1,16}"[A-Za-z0-9_.\-]{1,64}"\s{0,16}>')
_NA = frozenset(["", "N/A", "[N/A]", "Not Supported", "[Not Supported]", "[Unknown Error]"])


def _xt(el, path: str) -> Optional[str]:
    """Stripped text at *path* under *el*; None if absent or N/A-like."""
    if el is None:
        return None
    node = el.find(path)
    if node is None or node.text is None:
        return None
    t = node.text.strip()
    return None if t in _NA else t


def parse_nvidia_smi_xml(text) -> dict:
    """Parse ``nvidia-smi -q -x`` (root element ``<nvidia_smi_log>``).

    Returns::

        {"driver_version": "580.159.04", "cuda_version": "13.0",
         "gpus": [{"name", "uuid", "pci_bus_id", "compute_cap",
                   "memory_total_mib": int, "persistence_mode": "Enabled",
                   "mig_mode": "Disabled", "mig_mode_pending",
                   "ecc_mode": "Enabled", "ecc_mode_pending",
                   "pcie_gen_current": int, "pcie_gen_max": int,
                   "pcie_width_current": int, "pcie_width_max": int,
                   "compute_mode": "Default", "vbios": "96.00.DA.00.0C"}]}

    String values are as nvidia-smi prints them; "N/A"-style values and
    absent elements are ``None``.  ``compute_cap`` ("9.0") is read from a
    ``<compute_cap>`` element where the nvidia-smi version emits one (580.x
    does not; use ``--query-gpu=compute_cap``).  ``pci_bus_id`` falls back to
    the ``<gpu id=...>`` attribute.

    Security: the XML is parsed with ``xml.etree.ElementTree`` after
    rejecting entity tricks.  The one DOCTYPE real nvidia-smi emits,
    ``<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_vNN.dtd">`` (no internal
    subset, nothing fetched), is removed before parsing; any other
    ``<!DOCTYPE`` and any ``<!ENTITY`` is rejected.

    Raises :class:`ParseError` on: non-XML or truncated XML, a root element
    other than ``nvidia_smi_log``, a disallowed DOCTYPE / ENTITY, or input
    larger than :data:`MAX_XML` characters.
    """
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text[: MAX_XML + 1]).decode("utf-8", errors="replace")
    if not isinstance(text, str):
        raise ParseError("nvidia-smi XML: expected text, got %s" % type(text).__name__)
    if len(text) > MAX_XML:
        raise ParseError("nvidia-smi XML: input larger than %d characters" % MAX_XML)
    if "<!ENTITY" in text:
        raise ParseError("nvidia-smi XML: entity declarations are not allowed")
    text = _SMI_DOCTYPE_RE.sub("", text, count=1)
    if "<!DOCTYPE" in text:
        raise ParseError("nvidia-smi XML: DOCTYPE other than nvidia-smi's own is not allowed")
    if not text.strip():
        raise ParseError("nvidia-smi XML: empty input")
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise ParseError("nvidia-smi XML: not well-formed: %s" % exc) from None
    except Exception as exc:  # e.g. lone surrogates, encoding declaration mismatch
        raise ParseError("nvidia-smi XML: cannot parse: %s" % exc) from None
    if root.tag != "nvidia_smi_log":
        raise ParseError("nvidia-smi XML: root element is <%s>, not <nvidia_smi_log>" % str(root.tag)[:64])
    gpus = []
    for g in root.findall("gpu"):
        pci = g.find("pci")
        link = pci.find("pci_gpu_link_info") if pci is not None else None
        gpus.append({
            "name": _xt(g, "product_name"),
            "uuid": _xt(g, "uuid"),
            "pci_bus_id": _xt(pci, "pci_bus_id") or ((g.get("id") or "").strip() or None),
            "compute_cap": _xt(g, "compute_cap") or _xt(g, "cuda_compute_capability"),
            "memory_total_mib": _to_int(_xt(g, "fb_memory_usage/total")),
            "persistence_mode": _xt(g, "persistence_mode"),
            "mig_mode": _xt(g, "mig_mode/current_mig"),
            "mig_mode_pending": _xt(g, "mig_mode/pending_mig"),
            "ecc_mode": _xt(g, "ecc_mode/current_ecc"),
            "ecc_mode_pending": _xt(g, "ecc_mode/pending_ecc"),
            "pcie_gen_current": _to_int(_xt(link, "pcie_gen/current_link_gen")),
            "pcie_gen_max": _to_int(_xt(link, "pcie_gen/max_link_gen")),
            "pcie_width_current": _to_int(_xt(link, "link_widths/current_link_width")),
            "pcie_width_max": _to_int(_xt(link, "link_widths/max_link_width")),
            "compute_mode": _xt(g, "compute_mode"),
            "vbios": _xt(g, "vbios_version"),
        })
    return {
        "driver_version": _xt(root, "driver_version"),
        "cuda_version": _xt(root, "cuda_version"),
        "gpus": gpus,
    }


def parse_nvidia_smi_L(text) -> List[dict]:
    """Parse ``nvidia-smi -L``.

    Input::

        GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-5fd4...)
          MIG 3g.20gb     Device  0: (UUID: MIG-c6d4...)

    Returns one dict per physical GPU, in order: ``{"index": 0, "name":
    "NVIDIA A100-SXM4-40GB", "uuid": "GPU-...", "mig_devices": [{"index": 0,
    "name": "3g.20gb", "uuid": "MIG-..."}]}`` (MIG lines attach to the GPU
    line before them; the uuid may be ``None`` if a line lacks it).  Other
    lines are skipped.  Never raises.
    """
    out: List[dict] = []
    for line in _lines(text):
        s = line.strip()
        colon = s.find(":")
        if colon < 0:
            continue
        head, tail = s[:colon].split(), s[colon + 1:].strip()
        uuid = None
        name = tail
        u = tail.rfind("(UUID:")
        if u >= 0:
            end = tail.find(")", u)
            uuid = (tail[u + 6:end] if end >= 0 else tail[u + 6:]).strip() or None
            name = tail[:u].strip()
        if len(head) == 2 and head[0] == "GPU" and head[1].isdigit() and head[1].isascii():
            out.append({"index": int(head[1]), "name": name or None, "uuid": uuid,
                        "mig_devices": []})
        elif (len(head) == 4 and head[0] == "MIG" and head[2] == "Device"
              and head[3].isdigit() and head[3].isascii() and out):
            out[-1]["mig_devices"].append({"index": int(head[3]), "name": head[1], "uuid": uuid})
    return out


_SMI_ERRORS = (
    ("version_mismatch", "driver/library version mismatch"),
    ("nvml_not_found", "couldn't find libnvidia-ml.so"),
    ("driver_not_loaded", "couldn't communicate with the nvidia driver"),
    ("nvml_unknown_error", "failed to initialize nvml: unknown error"),
    ("no_devices", "no devices were found"),
)


_SMI_VERSION_RE = re.compile(r"^\d{2,4}\.\d{1,3}(?:\.\d{1,3})?$")


def parse_smi_query_csv(text) -> List[tuple]:
    """Rows of ``nvidia-smi --query-gpu=driver_version,name --format=csv,noheader``:
    ``"580.95.05, NVIDIA H100 80GB HBM3"`` -> ``[("580.95.05", "NVIDIA H100 80GB HBM3")]``.
    Lines whose first field is not a driver version are skipped (so garbage gives ``[]``).
    At most 64 rows are read. Never raises."""
    rows = []
    for line in _text(text).splitlines()[:256]:
        ver, sep, name = line.partition(",")
        if sep and _SMI_VERSION_RE.match(ver.strip()) and name.strip():
            rows.append((ver.strip(), name.strip()[:128]))
            if len(rows) == 64:
                break
    return rows


def parse_nvidia_smi_error(text) -> Optional[str]:
    """Map nvidia-smi failure output (stdout+stderr) to a canonical reason.

    * ``"version_mismatch"``: "Failed to initialize NVML: Driver/library version mismatch"
    * ``"nvml_not_found"``: "NVIDIA-SMI couldn't find libnvidia-ml.so library in your system."
    * ``"driver_not_loaded"``: "NVIDIA-SMI has failed because it couldn't communicate
      with the NVIDIA driver."
    * ``"nvml_unknown_error"``: "Failed to initialize NVML: Unknown Error" (typical of a
      container that lost access to /dev/nvidia* device nodes)
    * ``"no_devices"``: "No devices were found"

    Matching is case-insensitive, checked in the order above.  Returns
    ``None`` for anything else (including successful output).  Never raises.
    """
    low = _text(text).lower()
    for reason, needle in _SMI_ERRORS:
        if needle in low:
            return reason
    return None


def version_from_soname(path_or_name) -> Optional[str]:
    """Version suffix of a shared-library file name or path.

    ``libcudart.so.13.0.96`` -> "13.0.96", ``libnvidia-ml.so.535.247.01`` ->
    "535.247.01", ``libcudart.so.13`` -> "13", ``libcudnn.so`` -> None.
    Only the basename is looked at; the text after the last ``.so.`` must be
    dot-separated decimal numbers.  Accepts ``str``/``bytes``/``os.PathLike``;
    returns ``None`` for anything else.  Never raises.
    """
    try:
        p = os.fspath(path_or_name)
    except TypeError:
        return None
    if isinstance(p, bytes):
        p = p.decode("utf-8", errors="replace")
    p = p[:4096].strip()
    base = p.replace("\\", "/").rsplit("/", 1)[-1]
    pos = base.rfind(".so.")
    if pos < 0:
        return None
    suffix = base[pos + 4:]
    parts = suffix.split(".")
    if suffix and all(x.isdigit() and x.isascii() and len(x) <= 12 for x in parts):
        return suffix
    return None
