"""nvcc: --version, --list-gpu-code, --dryrun, and the host-compiler limits in crt/host_config.h.

Pure: text in, plain data out; see gpudoctor.formats._text for the robustness contract."""
from __future__ import annotations

import os
import shlex
import re
from typing import Dict, List, Optional, Tuple

from gpudoctor.formats._text import _MAX_LINE, _lines, _text  # noqa: F401


_GPU_CODE_RE = re.compile(r"(?:sm|compute|lto)_\d{1,4}[a-z]?")

_HC_CMP_RE = re.compile(r"(__GNUC__|__clang_major__|_MSC_VER)\s*(>=|<=|==|!=|>|<)\s*(\d{1,6})")

# Optional "123:" prefix so that ``grep -n`` excerpts of the header parse too.
_HC_DIRECTIVE_RE = re.compile(r"(?:\d{1,7}[:-])?\s*#\s*([a-z]+)\b(.*)")

_CLANG_GUARD_RE = re.compile(r"(?<!!)defined\s*\(\s*__clang__\s*\)")

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


_DRYRUN_VAR = re.compile(r"^#\$ ([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
_HOST_VERSION = re.compile(r"--(gnu|clang)_version=(\d+)")


def version_from_host_int(n: int) -> str:
    """``120200`` (cudafe's --gnu_version) → ``"12.2.0"``."""
    return f"{n // 10000}.{(n // 100) % 100}.{n % 100}"


def parse_dryrun(text: str) -> dict:
    """Read ``nvcc --dryrun`` output: its variables, host compiler command and detected version, ptxas command."""
    variables, host_cmd, host_kind, host_ver, ptxas_cmd = {}, None, None, None, None
    for line in text.splitlines()[:400]:
        if not line.startswith("#$ "):
            continue
        m = _DRYRUN_VAR.match(line)
        if m:
            variables[m.group(1)] = m.group(2).strip()
            continue
        try:
            argv = shlex.split(line[3:])
        except ValueError:
            continue
        if not argv:
            continue
        tool = os.path.basename(argv[0])
        if host_cmd is None and "-E" in argv and tool not in ("cicc", "cudafe++", "ptxas"):
            host_cmd = argv[0]
        if tool == "ptxas" and ptxas_cmd is None:
            ptxas_cmd = argv[0]
        hv = _HOST_VERSION.search(line)
        if hv and host_ver is None:
            host_kind, host_ver = hv.group(1), version_from_host_int(int(hv.group(2)))
    return {"vars": variables, "host_command": host_cmd, "host_kind": host_kind,
            "host_version": host_ver, "ptxas_command": ptxas_cmd}
