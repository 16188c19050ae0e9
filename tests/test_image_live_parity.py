"""Issue 25's done-when: a Linux image archive built from real packages gets the findings a live
`check --no-gpu` of the same files gets.

The root is laid out from the Debian packages installed on this machine (:mod:`tests.image_from_packages`:
glibc, python3.11, Debian's CUDA 11.8 toolkit with gcc 12 as the default gcc and gcc 11 for nvcc's wrapper,
the driver 535 user space) plus the real cuDNN wheel and gpudoctor with its pure-Python dependencies under
/opt/gpudoctor. It is packed as a `docker save` archive and judged from its files with `check --image
--driver`, then judged live by the gpudoctor inside it (chroot, root file system mounted read-only, its own
/proc, /dev and a fresh /tmp for HOME and the cache). Every finding both can say must be the same, id and
title; the lists below name, with the reason, what only one side can say. The --image check runs with
everything but tmp_path read-only and an audit hook in its Python: it starts no program and loads no
library of the image, and writes nothing outside its temporary root.

On the CI machine (2 cores) the test takes about 10 s and ~1.1 GB of disk at its peak (a 360 MB root, its
archive, and the check's unpacked copy). Both sides say compiler.ok for Debian's nvcc 11.8 (its nvcc.profile
puts the gcc wrapper that picks gcc 11 first) and toolkit.inventory.
"""
import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from tests import image_from_packages as pkgs
from tests.test_sysroot_check import _docker_save
from tests.test_sysroot_libindex import CUDNN

#: Findings only a live check can say, by id or id prefix: each needs the running system, not its files.
LIVE_ONLY = (
    "driver.not_loaded",  # whether the kernel module is loaded
    "container.",  # whether the running check is in a container with a GPU passed in
    "smoke.",  # smoke tests run programs on the GPU (listed as skipped with --no-smoke)
)
#: Findings only a check of files can say: the root's inventory, what needs a live system, and what the root
#: probes judge that the live check leaves to the loader when it loads (dependency closure, CUDA majors mixed).
ROOT_ONLY = ("root.",)
#: The live check prefixes what needs the GPU host with this under --no-gpu; the judgement is the same.
NO_GPU = "(--no-gpu: needs the GPU host) "


def _live_only(f) -> bool:
    if f["id"].startswith(LIVE_ONLY):
        return True
    # The checking interpreter's own modules (gpudoctor's cuda-python, left out of the image's gpudoctor):
    # a fact of the check, not of the image, which --image judges with this venv's Python.
    return f["id"] == "library.not_found" and (f.get("evidence") or {}).get("provided_by", {}).get("module") == "cuda"


def _root_only(f, live) -> bool:
    if f["id"].startswith(ROOT_ONLY):
        return True
    # "supports every runtime (driver CUDA X)" needs the driver's CUDA: the live check asks the driver
    # (cuDriverGetVersion, through the cuda-python left out above), the file check takes the matrix's for --driver.
    return f["id"] == "driver.runtimes_ok" and not live["probes"]["cuda"]["facts"].get("driver_cuda_version")


def _judged(findings):
    return sorted((f["id"], f["title"].replace(NO_GPU, "", 1)) for f in findings)


def _differs(live, image) -> str:
    a, b = set(live), set(image)
    return ("\nonly live:\n  " + "\n  ".join(map(repr, sorted(a - b))) + "\nonly --image:\n  "
            + "\n  ".join(map(repr, sorted(b - a))) + "\nlive (all):\n  " + "\n  ".join(map(repr, live))
            + "\n--image (all):\n  " + "\n  ".join(map(repr, image)))


#: Logs, from inside each Python process of the --image check, every program it starts, every library it
#: loads and every file it opens for writing by its path (Python's audit events, PEP 578). A name relative to a
#: directory descriptor (the extractor's openat) says no directory: the read-only mount holds those.
AUDIT = textwrap.dedent("""\
    import json, os, sys
    _log = os.environ.get("GD_TEST_AUDIT_LOG")
    _WRITE = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
    _busy = []
    def _hook(event, args):
        if _busy:  # the log's own open
            return
        if event in ("subprocess.Popen", "os.exec", "os.posix_spawn", "os.spawn", "os.system", "ctypes.dlopen"):
            what = [str(a) for a in args[:2]]
        elif event == "open" and isinstance(args[0], (str, bytes)) and os.path.isabs(args[0]) and (
                any(c in str(args[1] or "") for c in "wax+") or (args[2] or 0) & _WRITE):
            what = [os.path.normpath(os.fsdecode(args[0]))]  # a relative name is one under a dir fd: see below
        else:
            return
        _busy.append(1)
        try:
            with open(_log, "a") as fh:
                fh.write(json.dumps([event] + what) + "\\n")
        finally:
            _busy.pop()
    if _log:
        sys.addaudithook(_hook)
        _busy.append(1)
        with open(_log, "a") as fh:  # proof that the hook is in place in this process
            fh.write(json.dumps(["audit", sys.argv[0]]) + "\\n")
        _busy.pop()
""")


def _audited(log):
    if not os.path.exists(log):
        return []
    with open(log) as fh:
        return [json.loads(line) for line in fh]


def _parts_or_skip():
    missing = pkgs.missing_packages()
    if not os.path.isdir(CUDNN):
        missing.append(f"the cuDNN wheel {CUDNN} (.ci/fetch-real-wheels)")
    if missing:
        reason = "needs these Debian packages and files installed: " + ", ".join(missing)
        if os.environ.get("GPUDOCTOR_REQUIRE_REAL"):
            pytest.fail(reason)
        pytest.skip(reason)
    if os.geteuid() != 0:
        pytest.skip("needs root: the live check runs in a chroot with its own mounts")
    tried = subprocess.run(["unshare", "--mount", "--fork", "chroot", "/", "true"], capture_output=True, text=True,
                           timeout=30)
    if tried.returncode != 0:
        pytest.skip(f"unshare --mount / chroot refused here: {tried.stderr.strip()}")


def _live_check_inside(root):
    """`python3.11 -m gpudoctor check --no-gpu --no-smoke --json` run by the root's own Python in the root, with
    the image's Env; the root read-only, /proc, /dev and a fresh /tmp (HOME, the cache) mounted for it."""
    script = (f'set -e; R="{root}"; mount --bind "$R" "$R"; mount -o remount,bind,ro "$R"; '
              'mount -t proc proc "$R/proc"; mount --rbind /dev "$R/dev"; mount -t tmpfs tmpfs "$R/tmp"; '
              'mkdir "$R/tmp/home"; exec chroot "$R" /usr/bin/python3.11 -m gpudoctor check --no-gpu --no-smoke --json')
    env = dict(pkgs.IMAGE_ENV, HOME="/tmp/home", XDG_CACHE_HOME="/tmp/home/.cache", LANG="C.UTF-8")
    return subprocess.run(["unshare", "--mount", "--fork", "/bin/sh", "-c", script], capture_output=True, text=True,
                          timeout=180, env=env)


@pytest.fixture
def root(tmp_path):
    """Where the root is laid out; removed with its archive afterwards (pytest keeps the last runs' tmp_path)."""
    yield str(tmp_path / "rootfs")
    shutil.rmtree(tmp_path / "rootfs", ignore_errors=True)
    (tmp_path / "image.tar").unlink(missing_ok=True)


def test_an_image_built_from_real_packages_gets_the_findings_of_a_live_check_of_its_files(root, tmp_path):
    _parts_or_skip()
    pkgs.lay_out(root)
    shutil.copytree(CUDNN, root + "/usr/local/lib/python3.11/dist-packages")
    pkgs.add_gpudoctor(root)
    pkgs.build_ld_cache(root)
    archive = tmp_path / "image.tar"
    _docker_save(root, archive, [f"{k}={v}" for k, v in pkgs.IMAGE_ENV.items()])
    archive.chmod(0o444)

    ran = _live_check_inside(root)
    assert ran.returncode in (0, 1) and ran.stdout.startswith("{"), ran.stderr[-2000:]
    live = json.loads(ran.stdout)
    tks = live["probes"]["toolkit"]["facts"]["toolkits"]  # the root's own: this machine's CUDA 13.0 is outside it
    assert [(t["nvcc"], t["release"]) for t in tks] == [("/usr/bin/nvcc", "11.8")], tks
    driver = (live["probes"]["driver"]["facts"] or {}).get("user_space_version")
    assert driver, live["probes"]["driver"]  # libcuda1's own version, e.g. 535.261.03

    audit, tmp, home = tmp_path / "audit", tmp_path / "tmpdir", tmp_path / "home"
    for d in (audit, tmp, home):
        d.mkdir()
    (audit / "sitecustomize.py").write_text(AUDIT)
    log = str(tmp_path / "audit.log")
    env = dict(os.environ, TMPDIR=str(tmp), HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), GD_TEST_AUDIT_LOG=log,
               PYTHONPATH=os.pathsep.join([str(audit), pkgs.REPO]), PYTHONDONTWRITEBYTECODE="1")
    # Everything but tmp_path read-only for it (its own mount namespace): a write elsewhere fails, whatever writes.
    script = f'set -e; mount --bind "{tmp_path}" "{tmp_path}"; mount -o remount,bind,ro /; exec "$@"'
    judged = subprocess.run(["unshare", "--mount", "--fork", "/bin/sh", "-c", script, "sh", sys.executable, "-m",
                             "gpudoctor", "check", "--image", str(archive), "--driver", driver, "--json"],
                            capture_output=True, text=True, timeout=180, env=env)
    assert judged.returncode in (0, 1) and judged.stdout.startswith("{"), judged.stderr[-2000:]
    image = json.loads(judged.stdout)

    events = _audited(log)
    assert ["audit", "-m"] in events, "the audit hook was not in place: nothing below would be proved"
    started = [e for e in events if e[0] not in ("audit", "open", "ctypes.dlopen")]
    loaded_from_image = [e for e in events if e[0] == "ctypes.dlopen" and e[1].startswith(str(tmp))]
    assert started == [] and loaded_from_image == []  # nothing of the image ran: no program, no library
    written = [e[1] for e in events if e[0] == "open" and not e[1].startswith(str(tmp_path) + os.sep)]
    assert written == [] and list(tmp.iterdir()) == []  # nothing written outside; the temporary root is gone
    assert "Read-only file system" not in judged.stderr + judged.stdout

    said_live = _judged(f for f in live["findings"] if not _live_only(f))
    said_image = _judged(f for f in image["findings"] if not _root_only(f, live))
    assert said_image == said_live, _differs(said_live, said_image)
