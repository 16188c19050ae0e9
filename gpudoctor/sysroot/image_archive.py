"""The outer archive of an image: an index of its members (headers only, read in place), which format it is,
and the plan its manifest gives (config, layers in order, their digests), every JSON checked for the
types its format says.

Formats: ``docker save`` (manifest.json; layers as ``<id>/layer.tar`` or, from Docker 25, as
``blobs/sha256/<hex>``), an OCI image layout (oci-layout, index.json, blobs; index -> manifest, linux/amd64
picked among platforms -> config and layers), and anything else is a ``docker export`` root file system."""
from __future__ import annotations

import hashlib
import json
import os
import posixpath
import re
import tarfile
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from gpudoctor.sysroot.image_limits import ImageError, Limits, show
from gpudoctor.sysroot.image_streams import BlobReader

_INDEX_DEPTH = 3  # blobs/sha256/<hex> and <id>/layer.tar are shallow; a root fs's deep files are not indexed
_INDEX_MAX = 100_000
_BLOB_NAME = re.compile(r"^blobs/(sha256|sha512)/([0-9a-f]{64}|[0-9a-f]{128})$")
_CLASSIC_LAYER = re.compile(r"^[0-9a-f]{64}/layer\.tar$")
_CLASSIC_CONFIG = re.compile(r"^([0-9a-f]{64})\.json$")
_DIGEST = re.compile(r"^(sha256|sha512):([0-9a-f]{64}|[0-9a-f]{128})$")
_ROOTFS_MARKERS = {"etc", "usr", "bin", "lib", "sbin", "var"}
_INDEX_TYPES = {"application/vnd.oci.image.index.v1+json",
                "application/vnd.docker.distribution.manifest.list.v2+json"}


@dataclass
class Layer:
    """One layer to apply: its member in the outer archive, the digest its name or descriptor claims for the
    stored bytes, and the config's diff_id (digest of the uncompressed tar); digests as (algo, hex)."""

    key: str
    label: str
    blob_digest: Optional[Tuple[str, str]] = None
    diff_id: Optional[Tuple[str, str]] = None


@dataclass
class Plan:
    config: dict = field(default_factory=dict)
    layers: List[Layer] = field(default_factory=list)
    tags: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)


def _parts(name: str) -> List[str]:
    return [p for p in name.split("/") if p not in ("", ".")]


def name_digest(key: str) -> Optional[Tuple[str, str]]:
    """The digest a member's name claims: ``blobs/<algo>/<hex>``, or a classic docker-save config
    ``<sha256 hex>.json`` (the image id is the config's sha256)."""
    m = _BLOB_NAME.match(key)
    if m:
        return m.group(1), m.group(2)
    m = _CLASSIC_CONFIG.match(key)
    return ("sha256", m.group(1)) if m else None


def parse_digest(value, where: str) -> Tuple[str, str]:
    if not isinstance(value, str) or not _DIGEST.match(value):
        raise ImageError(f"{where}: {show(str(value))} is not a sha256/sha512 digest")
    algo, hexd = value.split(":", 1)
    return algo, hexd


class OuterArchive:
    """The uncompressed outer tar at ``path``: every header read once (no data), the shallow members indexed
    as name -> TarInfo. ``entries`` counts all members; ``top`` holds the top-level names."""

    def __init__(self, path: str, label: str, limits: Limits):
        self.path, self.label, self.limits = path, label, limits
        self.index: Dict[str, tarfile.TarInfo] = {}
        self.top: set = set()
        self.entries = 0
        self.fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            self._scan()
        except BaseException:
            os.close(self.fd)
            raise

    def close(self) -> None:
        os.close(self.fd)

    def _scan(self) -> None:
        try:
            tf = tarfile.open(self.path, mode="r:")
        except tarfile.TarError as e:
            raise ImageError(f"{self.label} is not a tar archive, nor a gzip- or zstd-compressed one ({e})") from None
        try:
            while True:
                m = tf.next()
                if m is None:
                    break
                tf.members.clear()  # headers only; a root fs tar may have millions
                self.entries += 1
                if self.entries > self.limits.max_entries:
                    raise ImageError(f"{self.label}: more than {self.limits.max_entries} entries")
                parts = _parts(m.name)
                if not parts or ".." in parts:
                    continue
                if len(self.top) < _INDEX_MAX:
                    self.top.add(parts[0])
                if len(parts) <= _INDEX_DEPTH and len(self.index) < _INDEX_MAX:
                    self.index["/".join(parts)] = m
        except tarfile.TarError as e:
            raise ImageError(f"{self.label}: truncated or corrupt tar ({e})") from None
        finally:
            tf.close()

    def kind(self) -> str:
        """``docker-save``, ``oci-layout`` or ``docker-export``; ImageError for an image archive this cannot
        read (a layout without its index, a pre-1.10 docker save) rather than unpacking it as a root fs."""
        if self.top & _ROOTFS_MARKERS:
            return "docker-export"
        if "manifest.json" in self.index:
            return "docker-save"
        if "oci-layout" in self.index:
            if "index.json" not in self.index:
                raise ImageError(f"{self.label}: an OCI layout (oci-layout) without index.json")
            return "oci-layout"
        if "repositories" in self.index and any(_CLASSIC_LAYER.match(k) for k in self.index):
            raise ImageError(f"{self.label}: a docker save archive without manifest.json (Docker before 1.10); "
                             "save it again with a current docker")
        return "docker-export"

    def member(self, key: str, where: str) -> tarfile.TarInfo:
        """The regular-file member ``key``, following the archive's own links (inside the archive only)."""
        for _ in range(8):
            m = self.index.get(key)
            if m is None:
                raise ImageError(f"{where} names {show(key)}, which is not in the archive")
            if m.isreg() and not m.issparse():
                return m
            if not (m.issym() or m.islnk()):
                raise ImageError(f"{where} names {show(key)}, which is not a regular file in the archive")
            base = posixpath.dirname(key) if m.issym() else ""
            parts = _parts(posixpath.normpath(posixpath.join("/", base, m.linkname)))
            key = "/".join(parts)
        raise ImageError(f"{where} names {show(key)}, a chain of links in the archive")

    def blob(self, key: str, where: str, algo: str = "sha256") -> BlobReader:
        m = self.member(key, where)
        return BlobReader(self.fd, m.offset_data, m.size, where, algo)

    def json(self, key: str, where: str, digest: Optional[Tuple[str, str]] = None, size: Optional[int] = None):
        """The JSON in member ``key``, at most ``max_manifest_bytes``; its digest and size checked when given."""
        m = self.member(key, where)
        if m.size > self.limits.max_manifest_bytes:
            raise ImageError(f"{where}: {show(key)} is {m.size} bytes, over the {self.limits.max_manifest_bytes}"
                             "-byte limit for manifests and configs")
        if size is not None and m.size != size:
            raise ImageError(f"{where}: {show(key)} is {m.size} bytes, its descriptor says {size}")
        data = os.pread(self.fd, m.size, m.offset_data)
        if len(data) != m.size:
            raise ImageError(f"{where}: {show(key)} is truncated")
        if digest is not None and hashlib.new(digest[0], data).hexdigest() != digest[1]:
            raise ImageError(f"{where}: digest mismatch for {show(key)} (content is not {digest[0]}:"
                             f"{digest[1][:16]}...)")
        try:
            return json.loads(data)
        except (ValueError, UnicodeDecodeError, RecursionError) as e:
            raise ImageError(f"{where}: {show(key)} is not valid JSON ({str(e)[:200] or type(e).__name__})") from None


def _want(value, types, where: str, what: str):
    if not isinstance(value, types) or isinstance(value, bool):
        raise ImageError(f"{where}: {what} has the wrong type ({type(value).__name__})")
    return value


def _str_list(value, where: str, what: str) -> List[str]:
    _want(value, list, where, what)
    for item in value:
        _want(item, str, where, f"an entry of {what}")
    return value


def image_config(doc, where: str) -> Tuple[dict, List[Tuple[str, str]]]:
    """(the ``config`` part, checked for the types of Env/Entrypoint/Cmd/WorkingDir/Labels; the diff_ids)."""
    _want(doc, dict, where, "the image config")
    cfg = doc.get("config") or {}
    _want(cfg, dict, where, "config")
    for key in ("Env", "Entrypoint", "Cmd"):
        if cfg.get(key) is not None:
            _str_list(cfg[key], where, f"config.{key}")
    if cfg.get("WorkingDir") is not None:
        _want(cfg["WorkingDir"], str, where, "config.WorkingDir")
    if cfg.get("Labels") is not None:
        _want(cfg["Labels"], dict, where, "config.Labels")
        for k, v in cfg["Labels"].items():
            _want(v, str, where, f"label {show(k)}")
    rootfs = doc.get("rootfs") or {}
    _want(rootfs, dict, where, "rootfs")
    diff_ids = [parse_digest(d, f"{where} rootfs.diff_ids") for d in _str_list(rootfs.get("diff_ids") or [],
                                                                                 where, "rootfs.diff_ids")]
    return cfg, diff_ids


def _with_diff_ids(layers: List[Layer], diff_ids, where: str) -> List[Layer]:
    if diff_ids and len(diff_ids) != len(layers):
        raise ImageError(f"{where}: the config lists {len(diff_ids)} diff_ids for {len(layers)} layers")
    for layer, diff in zip(layers, diff_ids):
        layer.diff_id = diff
    return layers


def docker_save_plan(arc: OuterArchive) -> Plan:
    where = "manifest.json"
    doc = arc.json("manifest.json", where)
    _want(doc, list, where, "the manifest")
    if not doc:
        raise ImageError(f"{where} lists no image")
    plan = Plan()
    if len(doc) > 1:
        plan.notes.append(f"the archive holds {len(doc)} images; checked the first")
    image = _want(doc[0], dict, where, "an image entry")
    config_key = "/".join(_parts(_want(image.get("Config"), str, where, "Config")))
    layer_names = _str_list(image.get("Layers"), where, "Layers")
    plan.tags = _str_list(image.get("RepoTags") or [], where, "RepoTags")
    cfg_doc = arc.json(config_key, f"{where} Config", digest=name_digest(config_key))
    plan.config, diff_ids = image_config(cfg_doc, config_key)
    layers = []
    for i, name in enumerate(layer_names, 1):
        key = "/".join(_parts(name))
        arc.member(key, f"{where} layer {i}")
        layers.append(Layer(key, f"layer {i} ({key})", blob_digest=name_digest(key)))
    plan.layers = _with_diff_ids(layers, diff_ids, config_key)
    return plan


def _descriptor(d, where: str) -> Tuple[str, Tuple[str, str], int]:
    _want(d, dict, where, "a descriptor")
    digest = parse_digest(d.get("digest"), where)
    size = _want(d.get("size"), int, where, "size")
    if size < 0:
        raise ImageError(f"{where}: size {size} is negative")
    media = d.get("mediaType") or ""
    _want(media, str, where, "mediaType")
    return media, digest, size


def _blob_key(digest: Tuple[str, str]) -> str:
    return f"blobs/{digest[0]}/{digest[1]}"


def _platform(d: dict) -> str:
    p = d.get("platform") if isinstance(d.get("platform"), dict) else {}
    return f"{p.get('os', '?')}/{p.get('architecture', '?')}" if p else ""


def _candidates(arc: OuterArchive, index, where: str, depth: int, out: list, seen: Optional[set] = None) -> None:
    """Image manifest descriptors (descriptor, digest, size) reachable from ``index``, attestations left out;
    nested indexes are read once each, at most 3 deep and 64 in all (a fan-out cannot make it hang)."""
    seen = set() if seen is None else seen
    _want(index, dict, where, "the index")
    for i, d in enumerate(_want(index.get("manifests"), list, where, "manifests")):
        media, digest, size = _descriptor(d, f"{where} manifests[{i}]")
        annotations = d.get("annotations") if isinstance(d.get("annotations"), dict) else {}
        attestation = annotations.get("vnd.docker.reference.type") == "attestation-manifest"
        if attestation or _platform(d).startswith("unknown/"):
            continue
        if media in _INDEX_TYPES:
            if depth >= 3 or len(seen) >= 64:
                raise ImageError(f"{where}: image indexes nested too deep or too many")
            if digest in seen:
                continue
            seen.add(digest)
            nested = arc.json(_blob_key(digest), f"{where} manifests[{i}]", digest, size)
            _candidates(arc, nested, _blob_key(digest), depth + 1, out, seen)
        else:
            out.append((d, digest, size))


def oci_plan(arc: OuterArchive) -> Plan:
    layout = arc.json("oci-layout", "oci-layout")
    _want(_want(layout, dict, "oci-layout", "the layout").get("imageLayoutVersion"), str, "oci-layout",
          "imageLayoutVersion")
    index = arc.json("index.json", "index.json")
    found: list = []
    _candidates(arc, index, "index.json", 0, found)
    if not found:
        raise ImageError("index.json lists no image manifest")
    plan = Plan()
    amd64 = [c for c in found if _platform(c[0]) == "linux/amd64"]
    chosen = (amd64 or found)[0]
    if len(found) > 1:
        plats = ", ".join(sorted({_platform(c[0]) or "unnamed" for c in found}))
        plan.notes.append(f"the index lists {len(found)} images ({plats}); "
                          f"checked {_platform(chosen[0]) or 'the first'}")
    for d in index.get("manifests", []):
        ann = d.get("annotations") if isinstance(d, dict) and isinstance(d.get("annotations"), dict) else {}
        tag = ann.get("io.containerd.image.name") or ann.get("org.opencontainers.image.ref.name")
        if isinstance(tag, str) and tag not in plan.tags:
            plan.tags.append(tag)
    mkey = _blob_key(chosen[1])
    manifest = _want(arc.json(mkey, "image manifest", chosen[1], chosen[2]), dict, mkey, "the manifest")
    _, cdigest, csize = _descriptor(manifest.get("config"), f"{mkey} config")
    ckey = _blob_key(cdigest)
    plan.config, diff_ids = image_config(arc.json(ckey, f"{mkey} config", cdigest, csize), ckey)
    layers = []
    for i, d in enumerate(_want(manifest.get("layers"), list, mkey, "layers"), 1):
        _, digest, size = _descriptor(d, f"{mkey} layers[{i - 1}]")
        key = _blob_key(digest)
        m = arc.member(key, f"{mkey} layer {i}")
        if m.size != size:
            raise ImageError(f"{mkey} layer {i}: {key} is {m.size} bytes, its descriptor says {size}")
        layers.append(Layer(key, f"layer {i} ({key})", blob_digest=digest))
    plan.layers = _with_diff_ids(layers, diff_ids, ckey)
    return plan
