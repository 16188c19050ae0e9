"""`gpudoctor matrix update` against a real HTTP server on loopback (http.server in a thread), not a mock."""
from __future__ import annotations

import functools
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from gpudoctor.matrix.bundle import build_bundle

ROOT = Path(__file__).resolve().parents[1]
NEW = "2099-01-01"


class TruncatingHandler(http.server.SimpleHTTPRequestHandler):
    """Serves files; cuda.json is cut in half after a Content-Length that promises all of it."""

    def log_message(self, *args):
        pass

    def do_GET(self):  # noqa: N802 - http.server's naming
        if self.server.truncate and self.path.endswith("/cuda.json"):
            data = (Path(self.directory) / self.path.lstrip("/")).read_bytes()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            self.close_connection = True
            return
        super().do_GET()


@pytest.fixture
def server(tmp_path):
    root = tmp_path / "www"
    root.mkdir()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(TruncatingHandler, directory=str(root)))
    httpd.truncate = False
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    yield httpd, root, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _bundle(root: Path, name: str, data_version: str = NEW) -> Path:
    src = root.parent / f"src-{name}"
    shutil.copytree(ROOT / "compat_matrix", src)
    for f in src.glob("*.json"):  # the matrix's version is the newest of its files'
        doc = json.loads(f.read_text())
        doc["data_version"] = data_version
        f.write_text(json.dumps(doc, indent=1))
    build_bundle(str(src), str(root / name))
    return root / name


def _gd(tmp_path, *args):
    env = dict(os.environ, XDG_DATA_HOME=str(tmp_path / "data"), XDG_CACHE_HOME=str(tmp_path / "cache"))
    env.pop("GPUDOCTOR_MATRIX_URL", None)
    return subprocess.run([sys.executable, "-m", "gpudoctor", *args], capture_output=True, text=True, env=env,
                          cwd=str(ROOT), timeout=120)


def _version(tmp_path) -> dict:
    return json.loads(_gd(tmp_path, "matrix", "--version", "--json").stdout)


def test_a_good_bundle_is_installed_and_used_by_every_command(tmp_path, server):
    _, root, url = server
    _bundle(root, "good")
    before = _version(tmp_path)
    assert before["origin"].startswith("bundled")
    p = _gd(tmp_path, "matrix", "update", "--from", f"{url}/good/")
    assert p.returncode == 0, p.stderr
    after = _version(tmp_path)
    assert after["data_version"] == NEW and f"{url}/good/" in after["origin"]
    report = json.loads(_gd(tmp_path, "check", "--no-smoke", "--json").stdout)
    assert report["matrix_data_version"] == NEW and "downloaded from" in report["matrix_origin"]
    pinned = _gd(tmp_path, "matrix", "--version", "--matrix", str(ROOT / "compat_matrix"))
    assert before["data_version"] in pinned.stdout and "pinned" in pinned.stdout  # --matrix DIR still wins
    again = _gd(tmp_path, "matrix", "update", "--from", f"{url}/good/")
    assert again.returncode == 2 and "already" in again.stderr


def _refused(tmp_path, url, *fragments):
    p = _gd(tmp_path, "matrix", "update", "--from", url)
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert "refused, the matrix in use is unchanged" in p.stderr
    for f in fragments:
        assert f in p.stderr, p.stderr
    assert _version(tmp_path)["origin"].startswith("bundled")  # the current matrix is kept
    assert not (tmp_path / "data" / "gpudoctor" / "matrix" / "active.json").exists()


def test_a_tampered_file_is_refused(tmp_path, server):
    _, root, url = server
    b = _bundle(root, "tampered")
    doc = json.loads((b / "gpus.json").read_text())
    doc["gpus"] = doc["gpus"][1:]
    (b / "gpus.json").write_text(json.dumps(doc))
    _refused(tmp_path, f"{url}/tampered/", "gpus.json: SHA-256", "does not match the manifest")


@pytest.mark.parametrize("damage,message", [
    ("not json", "manifest.json is not JSON"),
    ("missing file", "manifest files must be exactly"),
    ("bad hash", "is not 64 hex digits"),
    ("other schema", "update gpudoctor itself"),
])
def test_a_wrong_manifest_is_refused(tmp_path, server, damage, message):
    _, root, url = server
    b = _bundle(root, "wrong")
    man = json.loads((b / "manifest.json").read_text())
    if damage == "not json":
        (b / "manifest.json").write_text("<html>404</html>")
    else:
        if damage == "missing file":
            del man["files"]["os.json"]
        elif damage == "bad hash":
            man["files"]["os.json"] = "xyz"
        else:
            man["schema_version"] = 99
        (b / "manifest.json").write_text(json.dumps(man))
    _refused(tmp_path, f"{url}/wrong/", message)


def test_a_valid_hash_of_an_invalid_matrix_is_refused(tmp_path, server):
    """The hashes match, but the files fail the same schema validation as the bundled matrix."""
    _, root, url = server
    b = _bundle(root, "invalid")
    doc = json.loads((b / "cuda.json").read_text())
    doc["releases"][0]["cuda"] = "not a version"
    (b / "cuda.json").write_text(json.dumps(doc))
    import hashlib

    man = json.loads((b / "manifest.json").read_text())
    man["files"]["cuda.json"] = hashlib.sha256((b / "cuda.json").read_bytes()).hexdigest()
    (b / "manifest.json").write_text(json.dumps(man))
    _refused(tmp_path, f"{url}/invalid/", "the bundle's matrix is invalid")


def test_an_older_bundle_is_refused(tmp_path, server):
    _, root, url = server
    _bundle(root, "old", data_version="2020-01-01")
    _refused(tmp_path, f"{url}/old/", "older than the one in use")


def test_a_truncated_download_is_refused(tmp_path, server):
    httpd, root, url = server
    _bundle(root, "cut")
    httpd.truncate = True
    p = _gd(tmp_path, "matrix", "update", "--from", f"{url}/cut/")
    assert p.returncode == 2 and ("truncated" in p.stderr or "IncompleteRead" in p.stderr
                                  or "ChunkedEncodingError" in p.stderr or "ConnectionError" in p.stderr), p.stderr
    _refused(tmp_path, f"{url}/cut/")


def test_a_server_that_is_down_is_a_clear_error(tmp_path, server):
    httpd, root, url = server
    httpd.shutdown()
    httpd.server_close()
    _refused(tmp_path, f"{url}/anything/", "cannot reach", "offline")


def test_a_downloaded_matrix_that_no_longer_verifies_is_not_used(tmp_path, server):
    _, root, url = server
    _bundle(root, "good")
    assert _gd(tmp_path, "matrix", "update", "--from", f"{url}/good/").returncode == 0
    installed = tmp_path / "data" / "gpudoctor" / "matrix" / NEW / "os.json"
    installed.write_text(installed.read_text().replace("ubuntu", "ubuntu "))
    v = _version(tmp_path)
    assert v["origin"].startswith("bundled") and "not usable" in v["origin"]
