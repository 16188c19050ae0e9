"""Build FAKE copies of NVIDIA's CUDA repository indexes (developer.download.nvidia.com cannot be reached where
the tests were written): ``python tests/data/indexes/nvidia/make_fake.py``.

They are FAKE: the files are written in the documented formats (a Debian ``Packages`` file, deb822 stanzas;
createrepo's ``repodata/repomd.xml`` and ``primary.xml``; modulemd v2 documents in ``modules.yaml``), but what they list comes from gpudoctor's
compatibility matrix (compat_matrix/*.json: the CUDA releases published for each OS, cuDNN's ``apt`` names and
``apt_versions``, the drivers' minimum versions), not from NVIDIA's servers. Sizes and checksums are
placeholders. Written: FAKE_debian12_Packages, FAKE_rhel9/repodata/repomd.xml, FAKE_rhel9/repodata/
FAKE-primary.xml and FAKE-modules.yaml (served gzipped by the tests; module streams
nvidia-driver:{branch}-open and -dkms for the drivers' branches, as NVIDIA's driver installation guide names them).
"""
from __future__ import annotations

import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
MATRIX = os.path.join(HERE, "..", "..", "..", "..", "compat_matrix")


def _load(name):
    with open(os.path.join(MATRIX, name), encoding="utf-8") as fh:
        return json.load(fh)


def _cmp_minor(v):
    return tuple(int(x) for x in v.split("."))


def packages(os_id):
    """[(name, version, rpm epoch)] that the matrix says NVIDIA's repository for ``os_id`` serves."""
    osr = next(o for o in _load("os.json")["oses"] if o["os"] == os_id)
    lo, hi = _cmp_minor(osr["cuda_min"]), _cmp_minor(osr["cuda_max"]) if osr["cuda_max"] else (99, 99)
    out = [("cuda-keyring", "1.1-1", None)] if osr["family"] == "debian" else []
    for rel in _load("cuda.json")["releases"]:
        if not lo <= _cmp_minor(rel["cuda"]) <= hi:
            continue
        mm = rel["cuda"].replace(".", "-")
        for upd in sorted({rel["cuda"] + ".0", rel.get("latest_update") or rel["cuda"] + ".0"}):
            out.append((f"cuda-toolkit-{mm}", f"{upd}-1", None))
        branch = rel["min_driver_linux"].split(".")[0]
        drv = f"{rel['min_driver_linux']}-1"
        out.append((f"cuda-drivers-{branch}", drv, None) if osr["family"] == "debian" else
                   ("nvidia-driver", drv + ".el9", "3"))
    for line in _load("cudnn.json")["releases"]:
        for major, ver in (line.get("apt_versions") or {}).items():
            if int(major) < lo[0]:
                continue
            for n in line["apt"]:
                n = n.replace("{cuda_major}", major)
                out.append((n.replace("-dev", "-devel") if osr["family"] == "rhel" else n, ver, None))
    return out


def write_deb(path, pkgs):
    stanzas = []
    for name, ver, _ in pkgs:
        stanzas.append(f"Package: {name}\nVersion: {ver}\nArchitecture: {'all' if name == 'cuda-keyring' else 'amd64'}\n"
                       f"Maintainer: cudatools <cudatools@nvidia.com>\nInstalled-Size: 1\n"
                       f"Filename: ./{name}_{ver}_amd64.deb\nSize: 1\n"
                       f"SHA256: {'0' * 64}\nDescription: FAKE stanza built from gpudoctor's matrix\n")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(stanzas))


def write_rpm(root, pkgs):
    os.makedirs(os.path.join(root, "repodata"), exist_ok=True)
    ns = 'xmlns="http://linux.duke.edu/metadata/common" xmlns:rpm="http://linux.duke.edu/metadata/rpm"'
    body = []
    for name, ver, epoch in pkgs:
        v, rel = ver.split("-", 1)
        body.append(f'<package type="rpm"><name>{name}</name><arch>x86_64</arch>'
                    f'<version epoch="{epoch or 0}" ver="{v}" rel="{rel}"/>'
                    f'<summary>FAKE entry built from gpudoctor\'s matrix</summary>'
                    f'<location href="{name}-{v}-{rel}.x86_64.rpm"/></package>')
    with open(os.path.join(root, "repodata", "FAKE-primary.xml"), "w", encoding="utf-8") as fh:
        fh.write(f'<?xml version="1.0" encoding="UTF-8"?>\n<metadata {ns} packages="{len(pkgs)}">\n'
                 + "\n".join(body) + "\n</metadata>\n")
    docs = []
    for name, ver, _ in pkgs:
        if name == "nvidia-driver":
            for flavour in ("open", "dkms"):
                docs.append(f"---\ndocument: modulemd\nversion: 2\ndata:\n  name: nvidia-driver\n"
                            f"  stream: \"{ver.split('.')[0]}-{flavour}\"\n  version: 20260101000000\n"
                            f"  context: FAKE0000\n  arch: x86_64\n  summary: FAKE stream built from gpudoctor's matrix\n"
                            f"  license:\n    module:\n    - MIT\n  profiles:\n    default:\n      rpms:\n"
                            f"      - nvidia-driver\n...\n")
    docs.append("---\ndocument: modulemd-defaults\nversion: 1\ndata:\n  module: nvidia-driver\n  stream: latest-dkms\n...\n")
    with open(os.path.join(root, "repodata", "FAKE-modules.yaml"), "w", encoding="utf-8") as fh:
        fh.write("".join(docs))
    with open(os.path.join(root, "repodata", "repomd.xml"), "w", encoding="utf-8") as fh:
        fh.write('<?xml version="1.0" encoding="UTF-8"?>\n'
                 '<repomd xmlns="http://linux.duke.edu/metadata/repo" xmlns:rpm="http://linux.duke.edu/metadata/rpm">\n'
                 '  <revision>0</revision>\n'
                 '  <data type="filelists"><location href="repodata/FAKE-filelists.xml.gz"/></data>\n'
                 '  <data type="primary"><checksum type="sha256">0</checksum>'
                 '<location href="repodata/FAKE-primary.xml.gz"/></data>\n'
                 '  <data type="modules"><location href="repodata/FAKE-modules.yaml.gz"/></data>\n'
                 '</repomd>\n')


if __name__ == "__main__":
    write_deb(os.path.join(HERE, "FAKE_debian12_Packages"), packages("debian-12"))
    write_rpm(os.path.join(HERE, "FAKE_rhel9"), packages("rhel-9"))
