#!/usr/bin/env python3
"""Regenerate ``gpudoctor/explain/kb/tools/generated.json``: the diagnostic messages compiled into
NVIDIA's own binaries, each as a template, a linear regex and a finding class (or none).

Reads the printable strings of each ELF file's read-only data (``.rodata``: where printf-style
templates live; code bytes never pass) and keeps those shaped like a diagnostic (words, a failure or
refusal word, no help-text length), then joins them with the hand-kept ``tools/classes.json``
(families by template prefix or phrase -> finding class, with a reason). A template no family
names stays unclassified: ``explain`` still recognises it and names the tool, at low confidence.

Binaries (each skipped when absent; ``--fetch`` downloads the wheels):
  Debian's CUDA 11.8 (nvidia-cuda-toolkit) and CUDA 13.0 (/usr/local/cuda): nvcc, cudafe++, cicc,
  ptxas, nvlink, fatbinary; driver 535's libcuda.so.1 (and the PTX JIT it loads) and
  libnvidia-ml.so.1; the wheels nvidia-cuda-nvcc (CUDA 13: nvcc, cudafe++, ptxas, nvlink, fatbinary),
  nvidia-cuda-nvcc-cu12 (ptxas) and nvidia-nccl-cu13 (libnccl.so.2); the TensorRT 11.4 lean and
  dispatch runtimes (.ci/cache/trt-lean, see .ci/fetch-real-wheels).

Usage:
    python scripts/gen_tool_messages.py [--fetch | --wheels DIR] [--check]

``--check`` writes nothing and exits 1 when the committed file differs from what would be generated
(it needs the same binaries as the run that wrote it).
"""
from __future__ import annotations

import argparse
import glob
import json
import mmap
import re
import struct
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Tuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gpudoctor.explain.toolwords import MIN_CONSTANT, constant_length, message_literal, template_regex  # noqa: E402

OUT_DIR = ROOT / "gpudoctor" / "explain" / "kb" / "tools"
DEB_BIN = Path("/usr/lib/nvidia-cuda-toolkit/bin")
CUDA = Path("/usr/local/cuda")
DRIVER = Path("/usr/lib/x86_64-linux-gnu/nvidia/current")
TRT = ROOT / ".ci" / "cache" / "trt-lean" / "site-packages"
COMPILER_TOOLS = ("nvcc", "cudafe++", "cicc", "ptxas", "nvlink", "fatbinary")


# ----------------------------------------------------------------------------- reading ELF files

def rodata_strings(path: Path, min_len: int = 12) -> Iterator[str]:
    """NUL-terminated printable ASCII strings (tab and newline allowed) of the ELF64 file's
    ``.rodata*`` sections. Raises ValueError for a file that is not a little-endian ELF64."""
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        if m[:4] != b"\x7fELF" or m[4] != 2 or m[5] != 1:
            raise ValueError(f"{path}: not a little-endian ELF64 file")
        shoff, = struct.unpack_from("<Q", m, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", m, 0x3A)
        secs = [struct.unpack_from("<IIQQQQIIQQ", m, shoff + i * shentsize) for i in range(shnum)]
        names_off = secs[shstrndx][4]
        for name_idx, _type, _flags, _addr, off, size, *_ in secs:
            end = m.find(b"\0", names_off + name_idx)
            if not m[names_off + name_idx:end].startswith(b".rodata"):
                continue
            for raw in re.finditer(rb"[\t\n\x20-\x7e]{%d,}(?=\0)" % min_len, m[off:off + size]):
                yield raw.group().decode("ascii")


# ----------------------------------------------------------------------------- which strings are diagnostics

_WORD = re.compile(r"[A-Za-z]{2,}")
# A diagnostic fails, refuses or warns: one of these words. Statistics, option help and symbol names do not.
_DIAG = re.compile(
    r"\b(?:error|errors|fail(?:ed|ure|s)?|invalid|illegal|unsupported|not (?:supported|found|defined|allowed|"
    r"compatible|available|permitted|initiali[sz]ed|recogni[sz]ed|valid|enough|set)|cannot|can't|could not|"
    r"couldn't|unable|mismatch(?:ed)?|missing|incompatible|unknown|undefined|too (?:old|new|large|many|small)|"
    r"exceed(?:s|ed)?|out of|denied|no such|corrupt(?:ed)?|overflow|conflict(?:s|ing)?|requires?|expected|"
    r"unexpected|ignor(?:ed|ing)|deprecated|abort(?:ed|ing)?|refus(?:ed|es)|older|newer|unresolved|duplicate|"
    r"multiple definition|redefinition|unrecogni[sz]ed|violat(?:es|ion)|timed? ?out|no usable|"
    r"no (?:[a-z]+ ){1,3}(?:found|available|detected))\b", re.I)
_MAX_TEMPLATE = 220  # longer strings are option help and documentation, not messages


def is_diagnostic(s: str) -> bool:
    s = s.strip()
    if not 12 <= len(s) <= _MAX_TEMPLATE or "\n" in s.rstrip("\n") or s.startswith(("-", "_", "%")) and " " not in s:
        return False
    words = _WORD.findall(s)
    if len(words) < 2 or " " not in s or not _DIAG.search(s):  # option names (Wno-deprecated-gpu-targets) have no space
        return False
    text = re.sub(r"%[-+ #0-9.*]*[a-zA-Z]{1,3}", "", s)
    plain = sum(c.isalpha() or c in " '\",.:;()-_=" for c in text)
    # mostly words: code bytes that happen to read as text, format tables, regexes are not
    return plain >= 0.85 * len(text) and not re.search(r"[{}|\\^$]|\s{3,}\S*\s{3,}", text)


# ----------------------------------------------------------------------------- the binaries

def _run(cmd: List[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def _cuda_release(nvcc: Path) -> Optional[str]:
    m = re.search(r"release (\d+\.\d+), V([\d.]+)", _run([str(nvcc), "--version"]))
    return m.group(2) if m else None


def binaries(unpacked: Optional[Path]) -> List[Tuple[str, str, str, Path]]:
    """(tool, version, where it came from, file) for every binary found here and in the wheels
    :func:`unpack_wheels` unpacked into ``unpacked``."""
    out: List[Tuple[str, str, str, Path]] = []
    deb = _run(["dpkg-query", "-W", "-f=${Version}", "nvidia-cuda-toolkit"]).strip()
    for root, origin in ((DEB_BIN, f"Debian nvidia-cuda-toolkit {deb}"), (CUDA / "bin", f"CUDA toolkit in {CUDA}")):
        release = _cuda_release(root / "nvcc") or "?"
        for tool in COMPILER_TOOLS:
            for cand in (root / tool, root.parent / "nvvm" / "bin" / tool, Path("/usr/bin") / tool):
                if cand.is_file() and (root == DEB_BIN or cand.is_relative_to(CUDA)) and cand.read_bytes()[:4] == b"\x7fELF":
                    out.append((tool, release, origin, cand))
                    break
    driver = _run(["dpkg-query", "-W", "-f=${Version}", "libcuda1"]).strip()
    for tool, lib in (("libcuda", "libcuda.so.1"), ("libcuda", "libnvidia-ptxjitcompiler.so.1"),
                      ("libnvidia-ml", "libnvidia-ml.so.1")):
        path = DRIVER / lib
        if path.is_file():
            out.append((tool, path.resolve().name.rsplit(".so.", 1)[-1], f"Debian driver packages {driver}".strip(), path))
    for marker in sorted(unpacked.glob("*/.wheel")) if unpacked else ():
        wheel = marker.read_text().strip()
        version = wheel.split("-")[1]
        for path in sorted(marker.parent.rglob("*")):
            tool = "libnccl" if path.name == "libnccl.so.2" else path.name if path.name in COMPILER_TOOLS else None
            if tool and path.is_file() and not path.is_symlink():
                out.append((tool, version, wheel, path))
    for lib in sorted(glob.glob(str(TRT / "tensorrt_*_libs" / "libnvinfer_*.so.*"))):
        dist = sorted(glob.glob(str(TRT / f"{Path(lib).parent.name.replace('_libs', '')}_cu*_libs-*.dist-info")))
        version = Path(dist[0]).name.split("-")[1].replace(".dist", "") if dist else "?"
        wheel = Path(dist[0]).name.replace(".dist-info", "") if dist else "TensorRT wheel"
        out.append(("TensorRT", version, wheel, Path(lib)))
    return out


def _portable(path: Path, origin: str) -> str:
    """The file as another run would name it: a wheel's member path, a path in the repository relative to it."""
    if origin.endswith(".whl") and "/nvidia/" in str(path):
        return "nvidia/" + str(path).split("/nvidia/", 1)[1]
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


#: Wheels whose binaries are read (pip names): NCCL's library, and the nvcc wheels' tools (CUDA 13's wheel has
#: nvcc, cudafe++, ptxas, nvlink, fatbinary; CUDA 12's only ptxas).
WHEELS = ("nvidia-nccl-cu13", "nvidia-cuda-nvcc", "nvidia-cuda-nvcc-cu12")


def fetch_wheels(into: Path) -> None:
    """Download :data:`WHEELS` (no dependencies) into ``into``."""
    for spec in WHEELS:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", spec,
                        "-d", str(into)], check=True)


def unpack_wheels(wheels: Path, into: Path) -> Path:
    """Extract the binaries of every NVIDIA wheel in ``wheels`` into ``into/<wheel>/`` (with a ``.wheel``
    marker naming the wheel); returns ``into``."""
    for whl in sorted(wheels.glob("nvidia_*.whl")):
        with zipfile.ZipFile(whl) as z:
            members = [n for n in z.namelist() if n.endswith("lib/libnccl.so.2")
                       or ("/bin/" in n and n.rsplit("/", 1)[-1] in COMPILER_TOOLS)]
            if not members:
                continue
            dest = into / whl.stem
            z.extractall(dest, members)
            (dest / ".wheel").write_text(whl.name)
    return into


# ----------------------------------------------------------------------------- classification

def load_classes() -> dict:
    return json.loads((OUT_DIR / "classes.json").read_text(encoding="utf-8"))


def classify(template: str, tools: List[str], families: List[dict]) -> Optional[dict]:
    """The first family whose tools include one of ``tools`` and whose ``prefix`` starts the template
    or whose ``phrase`` is in it (case-insensitive)."""
    low = template.lower()
    for fam in families:
        if fam.get("tools") and not set(fam["tools"]) & set(tools):
            continue
        if ("prefix" in fam and low.startswith(fam["prefix"].lower())) or ("phrase" in fam and fam["phrase"].lower() in low):
            return fam
    return None


def libc_messages() -> set:
    """The C library's error messages (strerror): tools print them after a path ("%s: No such file or
    directory"), so they name no tool."""
    import os

    return {os.strerror(n).lower() for n in range(1, 134)}


#: Libraries NVIDIA's binaries link statically (ptxas 13.5 carries OpenSSL's error reasons, many carry
#: libstdc++'s and zlib's): their strings are those libraries' words, not the tool's.
LINKED_IN = ("libcrypto.so.3", "libssl.so.3", "libstdc++.so.6", "libc.so.6", "libz.so.1", "libzstd.so.1", "libgcc_s.so.1")
_LIBDIRS = (Path("/usr/lib/x86_64-linux-gnu"), Path("/lib/x86_64-linux-gnu"), Path("/usr/lib64"))


def linked_in_strings() -> Tuple[set, List[str]]:
    """(the .rodata strings of :data:`LINKED_IN` found here, the files read)."""
    out: set = set()
    read: List[str] = []
    for name in LINKED_IN:
        path = next((d / name for d in _LIBDIRS if (d / name).is_file()), None)
        if path is not None:
            out |= {t.strip() for t in rodata_strings(path.resolve())}
            read.append(str(path))
    return out, read


def code_messages() -> set:
    """Messages of NVIDIA's error enumerations (kb/codes/generated.json): libnccl and TensorRT link the
    CUDA runtime statically, so its messages are in them; that knowledge is the enumeration's."""
    data = json.loads((OUT_DIR.parent / "codes" / "generated.json").read_text(encoding="utf-8"))
    return {c["message"].lower().rstrip(". ") for e in data["enums"] for c in e["codes"] if c.get("message")}


def build(unpacked: Optional[Path]) -> Tuple[dict, List[str]]:
    notes: List[str] = []
    classes = load_classes()
    known = code_messages()
    libc = libc_messages()
    linked, linked_files = linked_in_strings()
    found: Dict[str, dict] = {}
    per_binary: List[dict] = []
    for tool, version, origin, path in binaries(unpacked):
        dialect = "edg" if tool == "cudafe++" else "printf"
        n = 0
        for s in rodata_strings(path):
            t = s.strip()
            if not is_diagnostic(t) or t.lower().rstrip(". ") in known or t in linked:
                continue
            n += 1
            e = found.setdefault(t, {"template": t, "tools": [], "from": [], "dialect": dialect})
            if tool not in e["tools"]:
                e["tools"].append(tool)
            src = f"{path.name} {version}"
            if src not in e["from"]:
                e["from"].append(src)
        per_binary.append({"tool": tool, "binary": path.name, "version": version, "from": origin, "file": _portable(path, origin),
                           "templates": n})
    messages = []
    for t, e in sorted(found.items(), key=lambda kv: kv[0].lower()):
        constant = re.sub(r"%[-+ #0-9.*]*[a-zA-Z]{1,3}", " ", t).strip(" :.,;'\"").lower()
        if constant in libc:
            continue
        regex = template_regex(t, e["dialect"])
        literal = message_literal(t, e["dialect"])
        if regex is None or literal is None:
            continue  # no constant words long enough to recognise it by
        prefixed = constant_length(t, e["dialect"]) < MIN_CONSTANT  # recognised only behind the tool's name
        fam = None if prefixed else classify(t, e["tools"], classes["families"])
        messages.append({"tools": e["tools"], "from": e["from"], "template": t, "literal": literal, "regex": regex,
                         **({"prefixed": True} if prefixed else {}),
                         "class": fam["class"] if fam else None, "weight": fam.get("weight") if fam else None,
                         "family": fam["name"] if fam else None})
        if fam and fam["class"] and fam["class"] not in classes.get("known_classes", [fam["class"]]):
            notes.append(f"family {fam['name']!r}: unknown class {fam['class']}")
    for b in per_binary:
        mine = [m for m in messages if f"{b['binary']} {b['version']}" in m["from"]]
        b["recognisable"] = len(mine)
        b["classified"] = sum(m["class"] is not None for m in mine)
    unused = [f["name"] for f in classes["families"] if not any(m["family"] == f["name"] for m in messages)]
    if unused:
        notes.append(f"families that matched no template here: {unused}")
    data = {"about": "Generated by scripts/gen_tool_messages.py from the .rodata strings of the binaries listed "
                     "in 'binaries'; classes from tools/classes.json. Do not edit by hand.",
            "binaries": per_binary, "left_to_linked_libraries": [Path(f).name for f in linked_files],
            "messages": messages}
    return data, notes


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fetch", action="store_true", help=f"download the wheels {', '.join(WHEELS)} and read their binaries")
    ap.add_argument("--wheels", type=Path, help="a directory holding those wheels already (instead of --fetch)")
    ap.add_argument("--check", action="store_true", help="exit 1 if generated.json is out of date")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        wheels = args.wheels
        if args.fetch:
            wheels = Path(tmp) / "dl"
            fetch_wheels(wheels)
        data, notes = build(unpack_wheels(wheels, Path(tmp) / "unpacked") if wheels else None)
    for note in notes:
        print("note: " + note, file=sys.stderr)
    classified = {"about": "The classified subset of generated.json (what load_kb reads on every run). Generated by "
                           "scripts/gen_tool_messages.py; do not edit by hand.",
                  "messages": [m for m in data["messages"] if m["class"]]}
    files = {OUT_DIR / "generated.json": data, OUT_DIR / "classified.json": classified}
    texts = {out: json.dumps(d, indent=None, separators=(",", ":"), ensure_ascii=False).replace('},{"tools"', '},\n{"tools"') + "\n"
             for out, d in files.items()}
    if args.check:
        stale = [out.name for out, text in texts.items() if not out.is_file() or out.read_text() != text]
        print(f"out of date: {stale}: re-run this script" if stale else "generated.json and classified.json are up to date")
        return 1 if stale else 0
    for out, text in texts.items():
        tmp_out = out.with_suffix(".tmp")
        tmp_out.write_text(text)
        tmp_out.replace(out)
    out = OUT_DIR / "generated.json"
    msgs = data["messages"]
    print(f"wrote {out}: {len(msgs)} templates, {sum(m['class'] is not None for m in msgs)} classified")
    for b in data["binaries"]:
        print(f"  {b['binary']:30} {b['version']:11} {b['templates']:5} diagnostic strings, "
              f"{b['recognisable']:5} recognisable, {b['classified']:3} classified")
    return 0


if __name__ == "__main__":
    sys.exit(main())
