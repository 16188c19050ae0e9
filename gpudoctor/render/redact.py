"""Redact a report before it is pasted in public (``--redact``; on for ``--format markdown|github``).

Removes: this machine's hostname (and FQDN), user names in home paths (``/home/alice/`` ->
``/home/<user>/``, also ``/Users/...`` and ``C:\\Users\\...``) and the current user's name anywhere,
GPU and other UUIDs, and any value of an environment-looking key that names a secret (TOKEN, SECRET,
PASSWORD, KEY, CREDENTIAL, AUTH) or that looks like a credential (GitHub/Hugging Face/AWS/Slack
tokens, JWTs, long hex or base64 strings). Works on any JSON-like data; the input is not modified.
"""
from __future__ import annotations

import getpass
import re
import socket
from typing import Any, Iterable, Optional

__all__ = ["Redactor", "redact"]

_UUID = re.compile(r"\b(GPU-|MIG-)?[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")
_HOME = re.compile(r"(/home/|/Users/|[A-Za-z]:\\Users\\)([^/\\\s:'\"]+)")
_SECRET_KEY = re.compile(r"(TOKEN|SECRET|PASSW(OR)?D|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIAL|AUTH)", re.I)
_SECRET_VALUE = re.compile(
    r"\b(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|hf_[A-Za-z0-9]{20,}|(AKIA|ASIA)[A-Z0-9]{16}"
    r"|xox[abprs]-[A-Za-z0-9-]{10,}|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"
    r"|sk-[A-Za-z0-9_-]{20,}|[0-9a-fA-F]{40,}|[A-Za-z0-9+]{40,}={0,2})")  # no '/': paths are not secrets


class Redactor:
    """Redaction for one machine: ``hostnames`` and ``users`` default to this machine's."""

    def __init__(self, hostnames: Optional[Iterable[str]] = None, users: Optional[Iterable[str]] = None) -> None:
        if hostnames is None:
            hostnames = {socket.gethostname(), socket.getfqdn()}
        if users is None:
            users = set()
            try:
                users.add(getpass.getuser())
            except (KeyError, OSError):  # no passwd entry (containers with arbitrary UIDs)
                pass
        # Short names would redact parts of ordinary words ("root" is kept: it is not personal).
        self.hostnames = sorted({h for h in hostnames if h and len(h) >= 3 and h != "localhost"}, key=len, reverse=True)
        self.users = sorted({u for u in users if u and len(u) >= 3 and u != "root"}, key=len, reverse=True)

    def text(self, s: str) -> str:
        s = _UUID.sub(lambda m: (m.group(1) or "") + "<uuid>", s)
        s = _SECRET_VALUE.sub("<redacted>", s)
        s = _HOME.sub(lambda m: m.group(1) + "<user>", s)
        for h in self.hostnames:
            s = s.replace(h, "<host>")
        for u in self.users:
            s = re.sub(rf"(?<![A-Za-z0-9_]){re.escape(u)}(?![A-Za-z0-9_])", "<user>", s)
        return s

    def value(self, obj: Any, key: str = "") -> Any:
        if isinstance(obj, dict):
            return {self.text(k) if isinstance(k, str) else k: self.value(v, str(k)) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return [self.value(v, key) for v in obj]
        if isinstance(obj, str):
            if _SECRET_KEY.search(key) and obj:
                return "<redacted>"
            if key.lower() in ("host", "hostname", "nodename", "node") and obj:
                return "<host>"  # even a short hostname, which the text pass leaves alone
            return self.text(obj)
        return obj


def redact(data: Any, redactor: Optional[Redactor] = None) -> Any:
    """A redacted deep copy of ``data`` (see the module docstring for what is removed)."""
    return (redactor or Redactor()).value(data)

