"""A package index on 127.0.0.1 for the index tests: serves the pages recorded under tests/data/indexes/
(PyPI's PEP 691 JSON pages at /simple/<name>/, the FAKE PyTorch PEP 503 page at /whl/cu130/torch/), counts
the requests it gets, and can be told to hold a request unanswered (to exercise timeouts)."""
from __future__ import annotations

import os
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Dict, Optional, Tuple

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "indexes")
JSON = "application/vnd.pypi.simple.v1+json"


def recorded_routes() -> Dict[str, Tuple[int, str, bytes]]:
    """The recorded pages; a file recorded whole (tests/data/indexes/pypi/files/, the TensorRT sdists) is
    linked from its page as /files/NAME and served from here, as PyPI would serve it."""
    import json

    routes = {}
    files_dir = os.path.join(DATA, "pypi", "files")
    kept = set(os.listdir(files_dir)) if os.path.isdir(files_dir) else set()
    for fname in kept:
        with open(os.path.join(files_dir, fname), "rb") as fh:
            routes[f"/files/{fname}"] = (200, "application/octet-stream", fh.read())
    for fname in os.listdir(os.path.join(DATA, "pypi")):
        if fname.endswith(".json"):
            with open(os.path.join(DATA, "pypi", fname), "rb") as fh:
                page = json.load(fh)
            for f in page.get("files") or []:
                if f.get("filename") in kept:
                    f["url"] = f"/files/{f['filename']}"
            routes[f"/simple/{fname[:-5]}/"] = (200, JSON, json.dumps(page).encode())
    with open(os.path.join(DATA, "pytorch", "FAKE-cu130-torch.html"), "rb") as fh:
        routes["/whl/cu130/torch/"] = (200, "text/html", fh.read())
    return routes


class LoopbackIndex:
    """``with LoopbackIndex() as idx``: ``idx.url`` ("http://127.0.0.1:PORT"), ``idx.requests`` (paths asked),
    ``idx.routes`` (path -> (status, content type, body); anything else is a 404), ``idx.hang_s``."""

    def __init__(self, routes: Optional[Dict[str, Tuple[int, str, bytes]]] = None) -> None:
        self.routes = recorded_routes() if routes is None else routes
        self.requests: list = []
        self.hang_s = 0.0
        index = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's name)
                index.requests.append(self.path)
                if index.hang_s:
                    time.sleep(index.hang_s)
                status, ctype, body = index.routes.get(self.path, (404, "text/plain", b"not found"))
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", ctype)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test): nothing to answer

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "LoopbackIndex":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def closed_port() -> int:
    """A loopback port nothing listens on (connections are refused)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port
