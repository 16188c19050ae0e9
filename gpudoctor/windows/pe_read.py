"""One DLL or EXE of the judged Windows system read as facts (its PE version resource, machine, imports), each
file read once per run; a file that cannot be read or parsed becomes a problem record, never an exception."""
from __future__ import annotations

import ntpath
from typing import Dict, List, Optional

from gpudoctor.process.problems import record

__all__ = ["PeReader", "optional_text"]


def _name_facts(name: str) -> dict:
    """What the file name alone says (library stem, the major it promises), by pe.py's naming rules."""
    from gpudoctor.formats.pe import PeInfo, cuda_dll_versions

    info = PeInfo(path=name, machine="", is_dll=True, file_version=None, product_version=None, strings={},
                  imports=(), delay_imports=())
    named = cuda_dll_versions(info)
    return {"library": named["library"], "major_from_name": named["major_from_name"]}


class PeReader:
    """Reads PE files of ``view`` through :func:`gpudoctor.formats.pe.read_pe` (``view.host(path)``), appending
    a problem record to ``problems`` for each one that cannot be read or parsed."""

    def __init__(self, view, problems: List[dict]):
        self.view = view
        self.problems = problems
        self._done: Dict[str, dict] = {}

    def facts(self, path: str) -> dict:
        """``{"path", "name", "library", "major_from_name", "product_version", "file_version",
        "file_version_tuple", "machine", "imports", "read"}`` of the PE file at system path ``path``:

        * ``library`` / ``major_from_name``: from the file name (:func:`gpudoctor.formats.pe.cuda_dll_versions`:
          "cudart" / "12", "cudnn" / "9", "nvinfer" / "10"), also for a file that could not be read;
        * ``product_version``: the release an NVIDIA file states in words ("13.0.96"), or None;
        * ``file_version``: VS_FIXEDFILEINFO's file version dotted ("6.14.11.13000"), ``file_version_tuple``
          the same as a 4-tuple; None without a version resource or when unread;
        * ``machine``: "x86-64", "i386", "arm64", ... or None when unread; ``imports``: the import and
          delay-load import DLL names as written, [] when unread;
        * ``read``: True when the file was parsed; False when not (the problem record names the file: kind
          ``unreadable`` when it cannot be opened, ``unparsable`` when it is not a PE file or is damaged).
        """
        key = ntpath.normcase(path)
        if key not in self._done:
            self._done[key] = self._read(path)
        return self._done[key]

    def _read(self, path: str) -> dict:
        from gpudoctor.formats.pe import PeError, cuda_dll_versions, read_pe

        name = ntpath.basename(path)
        out = {"path": path, "name": name, **_name_facts(name), "product_version": None, "file_version": None,
               "file_version_tuple": None, "machine": None, "imports": [], "read": False}
        host = self.view.host(path)
        if host is None:
            self.problems.append(record(path, "unreadable", f"{path} cannot be reached in the judged system"))
            return out
        try:
            info = read_pe(host)
        except PeError as exc:
            what = str(exc).replace(host, path)
            kind = "unreadable" if "cannot read" in what or "not a regular file" in what else "unparsable"
            self.problems.append(record(path, kind, what))
            return out
        named = cuda_dll_versions(info)
        out.update(product_version=named["product_version"], file_version=named["file_version"],
                   file_version_tuple=info.file_version, machine=info.machine, imports=list(info.imports),
                   read=True)
        return out

    def cuda_majors_imported(self, facts: dict) -> List[str]:
        """The CUDA majors that the CUDA toolkit libraries a PE file imports name (``cublasLt64_12.dll`` ->
        "12"), sorted; [] when it imports none or was not read."""
        majors = set()
        for imported in facts.get("imports") or ():
            named = _name_facts(imported)
            if named["major_from_name"] and not (named["library"] or "").startswith(_OWN_MAJOR_PREFIXES):
                majors.add(named["major_from_name"])
        return sorted(majors, key=int)


# Libraries whose file-name number is their own major, not a CUDA one (pe.cuda_dll_versions' two kinds).
_OWN_MAJOR_PREFIXES = ("cudnn", "nvinfer", "nvonnxparser", "nvparsers")


def optional_text(view, path: str, problems: List[dict], limit: int = 1 << 20) -> Optional[str]:
    """The text (first ``limit`` bytes) of file ``path`` of the judged system, or None when it is absent; one
    that is there but is not a regular file (a directory, a FIFO: never opened) or cannot be read is a problem
    record (``unreadable``) and None."""
    if view.lstat(path) is None:
        return None
    if not view.isfile(path):
        problems.append(record(path, "unreadable", f"{path} is not a regular file (or a link to none)"))
        return None
    text = view.read_text(path, limit)
    if text is None:
        problems.append(record(path, "unreadable", f"{path} exists but cannot be read"))
    return text
