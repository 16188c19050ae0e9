"""The same machine judged live (`check --no-gpu`) and from its files (`check --root /` with this process's
environment and the live driver's version): prints each finding both can judge, side by side, and the ones only
one side said (live-only ones need the GPU host; root-only ones say what a root holds). Exit 1 on a difference."""
import json
import os
import re
import subprocess
import sys
import tempfile

LIVE_ONLY = ("smoke.", "container.", "gpu.", "device.", "driver.ok", "driver.not_loaded", "nvml.", "probe.",
             "process.", "platform.", "engine.", "tensorrt.smoke", "multigpu.")
ROOT_ONLY = ("root.",)
STRIP = "(--no-gpu: needs the GPU host) "


def run(*args):
    r = subprocess.run([sys.executable, "-m", "gpudoctor", "check", "--json", *args], capture_output=True, text=True,
                       timeout=300)
    return json.loads(r.stdout)


live = run("--no-gpu", "--no-smoke", *sys.argv[1:])
drv = (live["probes"]["driver"]["facts"] or {}).get("user_space_version") or \
    (live["probes"]["driver"]["facts"] or {}).get("driver_version")
env = dict(os.environ)
if sys.prefix != sys.base_prefix:  # a venv's python run by path: its site-packages are what a shell of it uses
    env["VIRTUAL_ENV"] = sys.prefix
with tempfile.NamedTemporaryFile("w", suffix=".env", delete=False) as fh:
    fh.write("".join(f"{k}={v}\n" for k, v in env.items() if "\n" not in v))
root = run("--root", "/", "--env", fh.name, *(["--driver", drv] if drv else []), *sys.argv[1:])
said_live = {(f["id"], f["title"].replace(STRIP, "")) for f in live["findings"] if not f["id"].startswith(LIVE_ONLY)
             and not re.search(r"\bGPU \d+ \(", f["title"])}  # the GPUs present: a root knows only --target-gpu
said_root = {(f["id"], f["title"]) for f in root["findings"] if not f["id"].startswith(ROOT_ONLY)}
print(f"driver {drv}; live --no-gpu: {len(live['findings'])} findings; --root /: {len(root['findings'])} findings")
for fid, title in sorted(said_live & said_root):
    print(f"  both  {fid}: {title}")
for fid, title in sorted(said_live - said_root):
    print(f"  LIVE  {fid}: {title}")
for fid, title in sorted(said_root - said_live):
    print(f"  ROOT  {fid}: {title}")
sys.exit(0 if said_live == said_root else 1)
