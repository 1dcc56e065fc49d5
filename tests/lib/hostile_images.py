#!/usr/bin/env python3
"""tests/lib/hostile_images.py — image archives written by hand, byte by byte,
for what no Debian tool makes: images with exactly one defect (the refusal
tests) and the few well-formed layouts oci.bash needs besides umoci and
skopeo.  Standard library only; every digest, size and diff_id is computed,
so each hostile archive is well-formed except for its one defect.

  hostile_images.py [OPTION...] KIND OUT [BASE_DOCKER_ARCHIVE]
      write the hostile archive KIND (below) at OUT.  The image is
      BASE_DOCKER_ARCHIVE's first image (a `docker save`/skopeo
      docker-archive, e.g. the oci.bash fixture docker.tar) with the kind's
      layers on top, or without a base a tiny synthetic one (no shell: the
      archive is only meant to be refused).
      --format=docker|oci  the container format, for the kinds that exist in
                           both (whiteout-*, symlink-write, many-layers);
                           default docker (the legacy `docker save` layout)
      --gzip               OCI layers gzip-compressed (default uncompressed:
                           application/vnd.oci.image.layer.v1.tar)
      --count=N            many-layers: how many layers (default 1000)
      --size=BYTES         huge-json*: the size of the JSON file (default 64 MiB)
      --link-target=PATH   whiteout-symlink, symlink-write: where the symlink
                           points (default /etc)
      --victim=NAME        whiteout-symlink: the name whited out through it
                           (default passwd); symlink-write: the file written
                           through it (default gpurun-hostile)
  hostile_images.py list
      the kinds, one a line.

  Conversions for oci.bash (well-formed images):
  hostile_images.py fix-opaque LAYOUT TAG DIR
      in the OCI layout directory LAYOUT, rewrite the top layer of TAG so
      that the per-file whiteouts umoci writes under DIR (a directory that
      was removed and made again) become one opaque whiteout
      DIR/.wh..wh..opq; the layer, diff_id, config, manifest and index.json
      are rewritten to match (the old blobs stay: `umoci gc` drops them).
  hostile_images.py docker25 OUT LAYOUT TAG NAME:TAG
      the Docker 25+ `docker save` tar of LAYOUT's TAG: an OCI layout
      (uncompressed layers named by their diff_id, a legacy v1 json blob per
      layer, index.json with io.containerd.image.name) plus manifest.json
      and repositories.
  hostile_images.py docker-legacy OUT LAYOUT TAG NAME:TAG
      the pre-25 `docker save` tar: <id>/layer.tar (regular files),
      <id>/json, <id>/VERSION, <config-hex>.json, manifest.json,
      repositories, names in Docker's familiar form (gpurun/test:latest).
  hostile_images.py merge-docker OUT ARCHIVE...
      one docker-archive holding the images of every ARCHIVE (skopeo writes
      one image per archive): the union of their members, manifest.json the
      list of all their entries, repositories merged.

Kinds (each is exactly one defect):
  manifest-traversal         docker: the last manifest.json Layers entry is ../../etc/passwd
  manifest-absolute          docker: the last Layers entry is /etc/passwd
  manifest-config-traversal  docker: manifest.json Config is ../../etc/passwd
  index-traversal            oci: an extra member blobs/sha256/../../../gpurun-hostile-escape
  member-symlink             oci: the top layer's blob member is a symlink to /etc/passwd
  member-hardlink            oci: the top layer's blob member is a hard link to /etc/passwd
  bad-digest                 oci: index.json's manifest digest is sha256:xyz
                             (the manifest is also stored as blobs/sha256/xyz)
  bad-digest-md5             oci: index.json's manifest digest is md5:<md5 of the manifest>
                             (stored as blobs/md5/<hex>)
  digest-traversal           oci: a manifest layer digest is sha256:../../../../../../etc/passwd
  blob-mismatch              oci: one byte of a file in the top layer's blob is flipped,
                             the descriptors (digest, size) are the original's
  diffid-mismatch            docker: config rootfs.diff_ids[0] is the sha256 of other bytes
  whiteout-dotdot            a layer with the entry .wh... (a whiteout of "..")
  whiteout-dotdot-dir        a layer with the entry etc/.wh... (a whiteout of "etc/..")
  whiteout-symlink           layer A: link -> /etc; layer B: link/.wh.passwd
  symlink-write              layer A: link -> /etc; layer B: the regular file link/gpurun-hostile
  opaque-mixed               layer A: data/m1 and data/m2 with files a and b; layer B: in each, a
                             whiteout of a and the opaque marker (m1 whiteout first, m2 marker
                             first) and a new file c
  huge-json                  oci: index.json is --size bytes of valid JSON (a giant annotation)
  huge-json-manifest         docker: manifest.json is --size bytes of valid JSON
  many-layers                --count tiny layers (each adds many/NNNN), diff_ids to match
"""

import copy
import gzip
import hashlib
import io
import json
import os
import posixpath
import sys
import tarfile

MT_INDEX = "application/vnd.oci.image.index.v1+json"
MT_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MT_CONFIG = "application/vnd.oci.image.config.v1+json"
MT_LAYER = "application/vnd.oci.image.layer.v1.tar"
MT_LAYER_GZ = MT_LAYER + "+gzip"
OCI_LAYOUT = b'{"imageLayoutVersion":"1.0.0"}'
REF_NAME = "org.opencontainers.image.ref.name"
PAD_KEY = "gpurun.test/padding"


def die(msg):
    sys.stderr.write("hostile_images.py: %s\n" % msg)
    sys.exit(1)


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def jbytes(obj):
    """Compact JSON, as Go's encoding/json writes it."""
    return json.dumps(obj, separators=(",", ":")).encode()


def gzip_bytes(data):
    # mtime 0: the same layer gives the same blob.
    return gzip.compress(data, compresslevel=6, mtime=0)


def maybe_gunzip(data):
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


# ---- tar members ----------------------------------------------------------------


class Member:
    """One entry of an archive we write: kind is file, dir, symlink, hardlink
    or stream (size bytes read from opener(), for files too big to hold)."""

    def __init__(self, name, kind="file", data=b"", link="", mode=None, size=None, opener=None,
                 uid=0, gid=0, mtime=0):
        self.name, self.kind, self.data, self.link = name, kind, data, link
        if mode is None:
            mode = {"dir": 0o755, "symlink": 0o777}.get(kind, 0o644)
        self.mode = mode
        self.size, self.opener = size, opener
        self.uid, self.gid, self.mtime = uid, gid, mtime

    def tarinfo(self):
        ti = tarfile.TarInfo(self.name)
        ti.mode, ti.uid, ti.gid, ti.mtime = self.mode, self.uid, self.gid, self.mtime
        ti.uname = ti.gname = ""
        if self.kind == "dir":
            ti.type = tarfile.DIRTYPE
        elif self.kind == "symlink":
            ti.type, ti.linkname = tarfile.SYMTYPE, self.link
        elif self.kind == "hardlink":
            ti.type, ti.linkname = tarfile.LNKTYPE, self.link
        elif self.kind == "stream":
            ti.size = self.size
        else:
            ti.size = len(self.data)
        return ti

    def fileobj(self):
        if self.kind == "stream":
            return self.opener()
        if self.kind == "file":
            return io.BytesIO(self.data)
        return None


def add_member(tf, m):
    ti = m.tarinfo()
    tf.addfile(ti, m.fileobj())


def write_tar(out, members):
    """The outer archive: members in the order given.  Written to OUT.tmp and
    renamed, so a failed run leaves no half archive."""
    tmp = out + ".tmp"
    with tarfile.open(tmp, "w", format=tarfile.PAX_FORMAT) as tf:
        for m in members:
            add_member(tf, m)
    os.chmod(tmp, 0o644)
    os.replace(tmp, out)


def layer_tar(entries):
    """A layer: the Members given, ended as Go's archive/tar ends one (two
    zero blocks, no padding to tar's 10 KiB records)."""
    buf = io.BytesIO()
    tf = tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT)
    for m in entries:
        add_member(tf, m)
    tf.close()
    return buf.getvalue()[: tf.offset]


def whiteout(name):
    return Member(name, mode=0)


def find(members, name):
    for i, m in enumerate(members):
        if m.name == name:
            return i
    die("no member %s" % name)


class Stream(io.RawIOBase):
    """A readable file of chunks produced on demand (huge-json): the script
    never holds the whole file."""

    def __init__(self, parts):
        self.parts = iter(parts)
        self.buf = b""

    def readable(self):
        return True

    def readinto(self, b):
        while not self.buf:
            try:
                self.buf = next(self.parts)
            except StopIteration:
                return 0
        n = min(len(b), len(self.buf))
        b[:n] = self.buf[:n]
        self.buf = self.buf[n:]
        return n


def padded_json(obj, marker, size):
    """(size, opener) of obj's JSON with the string marker replaced by as
    many 'a' as make the whole exactly size bytes."""
    prefix, suffix = jbytes(obj).split(marker.encode(), 1)
    pad = size - len(prefix) - len(suffix)
    if pad < 0:
        die("--size %d is smaller than the JSON itself" % size)

    def chunks():
        yield prefix
        left, chunk = pad, b"a" * (1 << 20)
        while left > 0:
            yield chunk[: min(left, len(chunk))]
            left -= len(chunk)
        yield suffix

    return size, lambda: io.BufferedReader(Stream(chunks()), 1 << 20)


# ---- the image model ----------------------------------------------------------------


class Image:
    """An image: its config (a dict; raw_config its original bytes, kept
    when the config is written unchanged so the image ID stays), its layers
    as uncompressed tar bytes, and a name:tag."""

    def __init__(self, config, layers, repotag, raw_config=None):
        self.config, self.layers, self.repotag, self.raw_config = config, layers, repotag, raw_config

    def add_layer(self, data, created_by):
        self.layers.append(data)
        self.config.setdefault("history", []).append(
            {"created": "1970-01-01T00:00:00Z", "created_by": "hostile_images.py: " + created_by})

    def final_config(self, edit=None):
        """The config with diff_ids matching the layers, after edit; its bytes."""
        cfg = copy.deepcopy(self.config)
        cfg["rootfs"] = {"type": "layers", "diff_ids": ["sha256:" + sha256(l) for l in self.layers]}
        if edit:
            edit(cfg)
        if self.raw_config is not None and json.loads(self.raw_config) == cfg:
            return cfg, self.raw_config
        return cfg, jbytes(cfg)


def split_repotag(repotag):
    name, _, tag = repotag.rpartition(":")
    if not name or "/" in tag:
        return repotag, "latest"
    return name, tag


class TarReader:
    """Members of an archive by name; symlinks inside the archive followed
    (skopeo's docker-archive has <id>/layer.tar -> ../<hex>.tar)."""

    def __init__(self, path):
        self.tf = tarfile.open(path, "r:*")
        self.members = {}
        for m in self.tf.getmembers():
            self.members[self.norm(m.name)] = m

    @staticmethod
    def norm(name):
        return posixpath.normpath(name).lstrip("/")

    def read(self, name, depth=0):
        m = self.members.get(self.norm(name))
        if m is None or depth > 8:
            die("%s: no member %s" % (self.tf.name, name))
        if m.issym():
            return self.read(posixpath.join(posixpath.dirname(self.norm(name)), m.linkname), depth + 1)
        return self.tf.extractfile(m).read()


def load_docker(path):
    """The images of a docker-archive (any of the layouts above)."""
    r = TarReader(path)
    images = []
    for entry in json.loads(r.read("manifest.json")):
        raw = r.read(entry["Config"])
        layers = [maybe_gunzip(r.read(p)) for p in entry["Layers"]]
        tag = (entry.get("RepoTags") or ["gpurun/hostile:latest"])[0]
        # Docker's familiar form (skopeo writes docker.io/NAME:TAG).
        for prefix in ("docker.io/library/", "docker.io/"):
            if tag.startswith(prefix):
                tag = tag[len(prefix):]
                break
        images.append(Image(json.loads(raw), layers, tag, raw))
    return images


def layout_blob(layout, digest):
    alg, _, hexd = digest.partition(":")
    with open(os.path.join(layout, "blobs", alg, hexd), "rb") as f:
        data = f.read()
    if sha256(data) != hexd:
        die("%s: blob %s does not match its digest" % (layout, digest))
    return data


def layout_descriptor(layout, tag):
    """(index, position, descriptor) of the manifest named tag in LAYOUT."""
    with open(os.path.join(layout, "index.json"), "rb") as f:
        index = json.load(f)
    for i, d in enumerate(index["manifests"]):
        if d.get("annotations", {}).get(REF_NAME) == tag:
            return index, i, d
    die("%s: no image tagged %s" % (layout, tag))


def load_layout(layout, tag, repotag):
    _, _, desc = layout_descriptor(layout, tag)
    manifest = json.loads(layout_blob(layout, desc["digest"]))
    raw = layout_blob(layout, manifest["config"]["digest"])
    layers = []
    for l in manifest["layers"]:
        data = layout_blob(layout, l["digest"])
        if l["mediaType"].endswith("+zstd"):
            die("zstd layers are not supported here")
        layers.append(maybe_gunzip(data))
    return Image(json.loads(raw), layers, repotag, raw)


def synthetic_base():
    """A one-layer image with a skeleton /etc, when no base archive is given."""
    entries = [Member("etc", "dir"), Member("tmp", "dir", mode=0o1777), Member("data", "dir"),
               Member("etc/passwd", data=b"root:x:0:0:root:/root:/bin/sh\nalice:x:1000:1000::/:/bin/sh\n"),
               Member("etc/group", data=b"root:x:0:\nalice:x:1000:\n"),
               Member("etc/hostname", data=b"gpurun-hostile\n")]
    config = {"architecture": "amd64", "os": "linux",
              "config": {"Env": ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"], "Cmd": ["/bin/sh"]},
              "rootfs": {"type": "layers", "diff_ids": []}, "history": []}
    img = Image(config, [], "gpurun/hostile:latest")
    img.add_layer(layer_tar(entries), "synthetic base")
    return img


# ---- writers ----------------------------------------------------------------------


class Blobs:
    """Content-addressed blobs, deduplicated, in the order first stored."""

    def __init__(self):
        self.blobs = {}

    def put(self, data, alg="sha256"):
        hexd = hashlib.new(alg, data).hexdigest()
        self.blobs.setdefault((alg, hexd), data)
        return "%s:%s" % (alg, hexd)

    def members(self):
        out = [Member("blobs", "dir")]
        for alg in sorted({a for a, _ in self.blobs}):
            out.append(Member("blobs/" + alg, "dir"))
            for (a, hexd), data in sorted(self.blobs.items()):
                if a == alg:
                    out.append(Member("blobs/%s/%s" % (a, hexd), data=data))
        return out


def oci_members(images, gz=False, edit_config=None, edit_manifest=None, edit_index=None):
    """An OCI image layout as archive members: images is a list of
    (Image, ref name).  Returns (members, blobs, manifests) so that a kind
    can find what it alters."""
    blobs = Blobs()
    descs, manifests = [], []
    for img, ref in images:
        layer_descs = []
        for data in img.layers:
            blob = gzip_bytes(data) if gz else data
            layer_descs.append({"mediaType": MT_LAYER_GZ if gz else MT_LAYER,
                                "digest": blobs.put(blob), "size": len(blob)})
        _, raw = img.final_config(edit_config)
        manifest = {"schemaVersion": 2, "mediaType": MT_MANIFEST,
                    "config": {"mediaType": MT_CONFIG, "digest": blobs.put(raw), "size": len(raw)},
                    "layers": layer_descs}
        if edit_manifest:
            edit_manifest(manifest)
        mraw = jbytes(manifest)
        manifests.append(manifest)
        descs.append({"mediaType": MT_MANIFEST, "digest": blobs.put(mraw), "size": len(mraw),
                      "annotations": {REF_NAME: ref}})
    index = {"schemaVersion": 2, "mediaType": MT_INDEX, "manifests": descs}
    if edit_index:
        edit_index(index)
    members = blobs.members() + [Member("index.json", data=jbytes(index)),
                                 Member("oci-layout", data=OCI_LAYOUT)]
    return members, blobs, manifests


def v1_id(parent, diff_id):
    # Docker derives a layer's legacy v1 ID from its chain; any stable hash
    # of the same inputs serves, nothing reads it back.
    return sha256(("%s %s" % (parent, diff_id)).encode())


def v1_json(layer_id, parent, os_name):
    j = {"id": layer_id, "created": "1970-01-01T00:00:00Z", "os": os_name}
    if parent:
        j["parent"] = parent
    return jbytes(j)


def docker_members(images, edit_config=None, edit_manifest=None):
    """The pre-25 `docker save` layout: <id>/{VERSION,json,layer.tar} per
    layer, <config-hex>.json, manifest.json, repositories."""
    files = {}
    manifest, repos = [], {}
    for img in images:
        cfg, raw = img.final_config(edit_config)
        cfg_name = sha256(raw) + ".json"
        files[cfg_name] = Member(cfg_name, data=raw)
        parent, paths = "", []
        for data in img.layers:
            lid = v1_id(parent, sha256(data))
            files[lid] = Member(lid, "dir")
            files[lid + "/VERSION"] = Member(lid + "/VERSION", data=b"1.0")
            files[lid + "/json"] = Member(lid + "/json", data=v1_json(lid, parent, cfg.get("os", "linux")))
            files[lid + "/layer.tar"] = Member(lid + "/layer.tar", data=data)
            paths.append(lid + "/layer.tar")
            parent = lid
        name, tag = split_repotag(img.repotag)
        manifest.append({"Config": cfg_name, "RepoTags": [img.repotag], "Layers": paths})
        repos.setdefault(name, {})[tag] = parent
    if edit_manifest:
        edit_manifest(manifest)
    members = [files[k] for k in sorted(files)]
    members.append(Member("manifest.json", data=jbytes(manifest)))
    members.append(Member("repositories", data=jbytes(repos)))
    return members


def docker25_members(images):
    """The Docker 25+ `docker save` layout (moby image/tarexport): an OCI
    layout whose layers are the uncompressed tars named by diff_id, one
    legacy v1 json blob per layer, plus manifest.json and repositories."""
    blobs = Blobs()
    descs, manifest, repos = [], [], {}
    for img in images:
        cfg, raw = img.final_config()
        platform = {"architecture": cfg.get("architecture", "amd64"), "os": cfg.get("os", "linux")}
        cfg_digest = blobs.put(raw)
        parent, layer_descs, paths = "", [], []
        for data in img.layers:
            d = blobs.put(data)
            lid = v1_id(parent, d)
            blobs.put(v1_json(lid, parent, platform["os"]))
            layer_descs.append({"mediaType": MT_LAYER, "digest": d, "size": len(data)})
            paths.append("blobs/sha256/" + d[7:])
            parent = lid
        m = {"schemaVersion": 2, "mediaType": MT_MANIFEST,
             "config": {"mediaType": MT_CONFIG, "digest": cfg_digest, "size": len(raw), "platform": platform},
             "layers": layer_descs}
        mraw = jbytes(m)
        name, tag = split_repotag(img.repotag)
        full = name if "/" in name and "." in name.split("/")[0] else "docker.io/" + (
            name if "/" in name else "library/" + name)
        descs.append({"mediaType": MT_MANIFEST, "digest": blobs.put(mraw), "size": len(mraw),
                      "platform": platform,
                      "annotations": {"io.containerd.image.name": "%s:%s" % (full, tag), REF_NAME: tag}})
        manifest.append({"Config": "blobs/sha256/" + cfg_digest[7:], "RepoTags": [img.repotag],
                         "Layers": paths})
        repos.setdefault(name, {})[tag] = img.layers and sha256(img.layers[-1])
    index = {"schemaVersion": 2, "mediaType": MT_INDEX, "manifests": descs}
    return blobs.members() + [Member("index.json", data=jbytes(index)),
                              Member("manifest.json", data=jbytes(manifest) + b"\n"),
                              Member("oci-layout", data=OCI_LAYOUT),
                              Member("repositories", data=jbytes(repos) + b"\n")]


# ---- conversions for oci.bash ----------------------------------------------------------


def fix_opaque(layout, tag, dirpath):
    dirpath = dirpath.strip("/")
    index, pos, desc = layout_descriptor(layout, tag)
    manifest = json.loads(layout_blob(layout, desc["digest"]))
    config = json.loads(layout_blob(layout, manifest["config"]["digest"]))
    ldesc = manifest["layers"][-1]
    old = maybe_gunzip(layout_blob(layout, ldesc["digest"]))

    src = tarfile.open(fileobj=io.BytesIO(old), mode="r:")
    buf = io.BytesIO()
    dst = tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT)
    prefix = dirpath + "/"
    dropped, marked = 0, False

    def mark(dir_ti):
        if dir_ti is None:
            dir_ti = tarfile.TarInfo(dirpath)
            dir_ti.type, dir_ti.mode = tarfile.DIRTYPE, 0o755
        dst.addfile(dir_ti)
        opq = tarfile.TarInfo(prefix + ".wh..wh..opq")
        opq.mode = 0
        dst.addfile(opq)

    for ti in src.getmembers():
        name = ti.name.rstrip("/")
        if name == dirpath and ti.isdir():
            if not marked:
                mark(ti)
                marked = True
            continue
        if name.startswith(prefix):
            if not marked:
                mark(None)
                marked = True
            base = name[len(prefix):]
            if "/" not in base and base.startswith(".wh.") and not base.startswith(".wh..wh."):
                dropped += 1
                continue
        dst.addfile(ti, src.extractfile(ti) if ti.isreg() else None)
    dst.close()
    if not marked or dropped == 0:
        die("%s:%s: the top layer has no whiteouts under /%s" % (layout, tag, dirpath))
    new = buf.getvalue()[: dst.offset]

    def store(data):
        hexd = sha256(data)
        path = os.path.join(layout, "blobs", "sha256", hexd)
        with open(path + ".tmp", "wb") as f:
            f.write(data)
        os.chmod(path + ".tmp", 0o644)
        os.replace(path + ".tmp", path)
        return "sha256:" + hexd

    blob = gzip_bytes(new) if ldesc["mediaType"].endswith("+gzip") else new
    ldesc["digest"], ldesc["size"] = store(blob), len(blob)
    config["rootfs"]["diff_ids"][-1] = "sha256:" + sha256(new)
    craw = jbytes(config)
    manifest["config"]["digest"], manifest["config"]["size"] = store(craw), len(craw)
    mraw = jbytes(manifest)
    desc["digest"], desc["size"] = store(mraw), len(mraw)
    index["manifests"][pos] = desc
    ipath = os.path.join(layout, "index.json")
    with open(ipath + ".tmp", "wb") as f:
        f.write(jbytes(index))
    os.chmod(ipath + ".tmp", 0o644)
    os.replace(ipath + ".tmp", ipath)


def merge_docker(out, paths):
    """Union of docker-archives; the member both have must be the same bytes."""
    seen, members, manifest, repos = {}, [], [], {}
    readers = [TarReader(p) for p in paths]
    for r in readers:
        manifest += json.loads(r.read("manifest.json"))
        if "repositories" in r.members:
            for name, tags in json.loads(r.read("repositories")).items():
                repos.setdefault(name, {}).update(tags)
        for ti in r.tf.getmembers():
            if ti.name in ("manifest.json", "repositories"):
                continue
            data = r.tf.extractfile(ti).read() if ti.isreg() else None
            if ti.name in seen:
                if seen[ti.name] != (ti.type, ti.linkname, data):
                    die("%s differs between the archives" % ti.name)
                continue
            seen[ti.name] = (ti.type, ti.linkname, data)
            members.append((ti, data))
    tmp = out + ".tmp"
    with tarfile.open(tmp, "w", format=tarfile.PAX_FORMAT) as tf:
        for ti, data in members:
            tf.addfile(ti, io.BytesIO(data) if data is not None else None)
        for name, data in (("manifest.json", jbytes(manifest)), ("repositories", jbytes(repos))):
            ti = tarfile.TarInfo(name)
            ti.size, ti.mode, ti.mtime = len(data), 0o444, 0
            tf.addfile(ti, io.BytesIO(data))
    os.chmod(tmp, 0o644)
    os.replace(tmp, out)


# ---- the hostile kinds ----------------------------------------------------------------


def kind_manifest_path(field, value):
    def make(base, opt):
        def edit(manifest):
            if field == "Config":
                manifest[0]["Config"] = value
            else:
                manifest[0]["Layers"][-1] = value
        return docker_members([base], edit_manifest=edit)
    return make


def kind_index_traversal(base, opt):
    members, _, _ = oci_members([(base, "latest")], opt["gzip"])
    at = find(members, "index.json")
    members.insert(at, Member("blobs/sha256/../../../gpurun-hostile-escape", data=b"escaped\n"))
    return members


def kind_member_link(kind):
    def make(base, opt):
        members, _, manifests = oci_members([(base, "latest")], opt["gzip"])
        top = manifests[0]["layers"][-1]["digest"]
        at = find(members, "blobs/sha256/" + top[7:])
        members[at] = Member(members[at].name, kind, link="/etc/passwd")
        return members
    return make


def kind_bad_digest(variant):
    def make(base, opt):
        members, _, _ = oci_members([(base, "latest")], opt["gzip"])
        at = find(members, "index.json")
        index = json.loads(members[at].data)
        desc = index["manifests"][0]
        mraw = members[find(members, "blobs/sha256/" + desc["digest"][7:])].data
        if variant == "md5":
            hexd = hashlib.md5(mraw).hexdigest()
            desc["digest"] = "md5:" + hexd
            extra = [Member("blobs/md5", "dir"), Member("blobs/md5/" + hexd, data=mraw)]
        else:
            desc["digest"] = "sha256:xyz"
            extra = [Member("blobs/sha256/xyz", data=mraw)]
        members[at] = Member("index.json", data=jbytes(index))
        return members[:at] + extra + members[at:]
    return make


def kind_digest_traversal(base, opt):
    def edit(manifest):
        manifest["layers"][-1]["digest"] = "sha256:../../../../../../etc/passwd"
    members, _, _ = oci_members([(base, "latest")], opt["gzip"], edit_manifest=edit)
    return members


def kind_blob_mismatch(base, opt):
    # Uncompressed, so that the blob keeps its size and stays a valid tar:
    # only the digest can tell.
    if opt["gzip"]:
        die("blob-mismatch is made with uncompressed layers only")
    members, _, manifests = oci_members([(base, "latest")], False)
    top = manifests[0]["layers"][-1]["digest"]
    at = find(members, "blobs/sha256/" + top[7:])
    data = bytearray(members[at].data)
    tf = tarfile.open(fileobj=io.BytesIO(bytes(data)), mode="r:")
    victim = next((m for m in tf.getmembers() if m.isreg() and m.size > 0), None)
    if victim is None:
        die("blob-mismatch: the top layer has no non-empty file")
    data[victim.offset_data] ^= 0x01
    blob = bytes(data)
    members[at] = Member(members[at].name, data=blob)
    return members


def kind_diffid_mismatch(base, opt):
    def edit(cfg):
        cfg["rootfs"]["diff_ids"][0] = "sha256:" + sha256(b"gpurun: not this layer\n")
    return docker_members([base], edit_config=edit)


def layered(fmt_default):
    """A kind that only adds layers: written in --format."""
    def wrap(add):
        def make(base, opt):
            add(base, opt)
            if (opt["format"] or fmt_default) == "oci":
                return oci_members([(base, "latest")], opt["gzip"])[0]
            return docker_members([base])
        return make
    return wrap


@layered("docker")
def kind_whiteout_dotdot(base, opt):
    base.add_layer(layer_tar([whiteout(".wh...")]), "whiteout of ..")


@layered("docker")
def kind_whiteout_dotdot_dir(base, opt):
    base.add_layer(layer_tar([Member("etc", "dir"), whiteout("etc/.wh...")]), "whiteout of etc/..")


@layered("docker")
def kind_whiteout_symlink(base, opt):
    base.add_layer(layer_tar([Member("link", "symlink", link=opt["link_target"])]), "link")
    base.add_layer(layer_tar([whiteout("link/.wh." + (opt["victim"] or "passwd"))]), "whiteout through link")


@layered("docker")
def kind_opaque_mixed(base, opt):
    a = [Member("data", "dir")]
    b = []
    for d in ("data/m1", "data/m2"):
        a += [Member(d, "dir"), Member(d + "/a", data=b"a\n"), Member(d + "/b", data=b"b\n")]
        marks = [whiteout(d + "/.wh.a"), whiteout(d + "/.wh..wh..opq")]
        b += [Member(d, "dir")] + (marks if d.endswith("1") else marks[::-1]) + [Member(d + "/c", data=b"c\n")]
    base.add_layer(layer_tar(a), "two directories")
    base.add_layer(layer_tar(b), "a whiteout and the opaque marker in each")


@layered("docker")
def kind_symlink_write(base, opt):
    base.add_layer(layer_tar([Member("link", "symlink", link=opt["link_target"])]), "link")
    base.add_layer(layer_tar([Member("link/" + (opt["victim"] or "gpurun-hostile"), data=b"written through a symlink\n")]),
                   "file through link")


@layered("docker")
def kind_many_layers(base, opt):
    for i in range(opt["count"]):
        base.add_layer(layer_tar([Member("many", "dir"), Member("many/%04d" % i, data=b"%d\n" % i)]),
                       "layer %d" % i)


def kind_huge_json(base, opt):
    members, _, _ = oci_members([(base, "latest")], opt["gzip"])
    at = find(members, "index.json")
    index = json.loads(members[at].data)
    index["annotations"] = {PAD_KEY: "@PAD@"}
    size, opener = padded_json(index, "@PAD@", opt["size"])
    members[at] = Member("index.json", "stream", size=size, opener=opener)
    return members


def kind_huge_json_manifest(base, opt):
    members = docker_members([base])
    at = find(members, "manifest.json")
    manifest = json.loads(members[at].data)
    manifest[0]["Comment"] = "@PAD@"
    size, opener = padded_json(manifest, "@PAD@", opt["size"])
    members[at] = Member("manifest.json", "stream", size=size, opener=opener)
    return members


# Strings that would run a command, end a quote or a comment, or act on a
# terminal if gpurun printed them as they are.  "$GPURUN_CANARY" names the
# file a test watches: whatever creates it ran something it should not have.
HOSTILE_STRINGS = [
    "a\ntouch \"$GPURUN_CANARY\"\n#",
    "$(touch \"$GPURUN_CANARY\")",
    "`touch \"$GPURUN_CANARY\"`",
    "x'; touch \"$GPURUN_CANARY\"; '",
    "\x1b]0;retitled\x07\x1b[2J\x1b[31mred",
    "\xc2\x9b2J\x9b2J end\n",
]


def kind_hostile_strings(base, opt):
    """An OCI archive whose config fields, a layer's file name and the
    ref name each carry HOSTILE_STRINGS; runnable (Cmd is /bin/true)."""
    names = [Member("hostile", "dir")] + [
        Member("hostile/" + s.replace("/", "_"), data=b"x\n") for s in HOSTILE_STRINGS if "\n" not in s[:-1]]
    base.add_layer(layer_tar(names), "hostile file names")

    def edit(cfg):
        c = cfg.setdefault("config", {})
        c["Env"] = ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"] + [
            "GPURUN_HOSTILE%d=%s" % (i, v) for i, v in enumerate(HOSTILE_STRINGS)]
        c["Entrypoint"] = ["/bin/true"]
        c["Cmd"] = list(HOSTILE_STRINGS)
        c["WorkingDir"] = "/"
        c["User"] = "0:0"
        c["Labels"] = {"gpurun.hostile": HOSTILE_STRINGS[0]}
    members, _, _ = oci_members([(base, "hostile\x1b]0;retitled\x07\x1b[2J" + opt["ref_tail"])],
                                opt["gzip"], edit_config=edit)
    return members


KINDS = {
    "hostile-strings": kind_hostile_strings,
    "manifest-traversal": kind_manifest_path("Layers", "../../etc/passwd"),
    "manifest-absolute": kind_manifest_path("Layers", "/etc/passwd"),
    "manifest-config-traversal": kind_manifest_path("Config", "../../etc/passwd"),
    "index-traversal": kind_index_traversal,
    "member-symlink": kind_member_link("symlink"),
    "member-hardlink": kind_member_link("hardlink"),
    "bad-digest": kind_bad_digest("sha256"),
    "bad-digest-md5": kind_bad_digest("md5"),
    "digest-traversal": kind_digest_traversal,
    "blob-mismatch": kind_blob_mismatch,
    "diffid-mismatch": kind_diffid_mismatch,
    "whiteout-dotdot": kind_whiteout_dotdot,
    "whiteout-dotdot-dir": kind_whiteout_dotdot_dir,
    "whiteout-symlink": kind_whiteout_symlink,
    "symlink-write": kind_symlink_write,
    "opaque-mixed": kind_opaque_mixed,
    "huge-json": kind_huge_json,
    "huge-json-manifest": kind_huge_json_manifest,
    "many-layers": kind_many_layers,
}


def usage():
    sys.stderr.write(__doc__)
    sys.exit(2)


def main(argv):
    opt = {"format": None, "gzip": False, "count": 1000, "size": 64 << 20,
           "link_target": "/etc", "victim": None, "ref_tail": ""}
    args = []
    for a in argv:
        if a.startswith("--format="):
            opt["format"] = a.split("=", 1)[1]
            if opt["format"] not in ("docker", "oci"):
                die("--format is docker or oci")
        elif a == "--gzip":
            opt["gzip"] = True
        elif a.startswith("--count="):
            opt["count"] = int(a.split("=", 1)[1])
        elif a.startswith("--size="):
            opt["size"] = int(a.split("=", 1)[1])
        elif a.startswith("--link-target="):
            opt["link_target"] = a.split("=", 1)[1]
        elif a.startswith("--victim="):
            opt["victim"] = a.split("=", 1)[1]
        elif a in ("-h", "--help"):
            usage()
        elif a.startswith("--"):
            die("unknown option %s" % a)
        else:
            args.append(a)
    if not args:
        usage()
    cmd, rest = args[0], args[1:]
    if cmd == "list":
        print("\n".join(KINDS))
    elif cmd == "fix-opaque" and len(rest) == 3:
        fix_opaque(*rest)
    elif cmd in ("docker25", "docker-legacy") and len(rest) == 4:
        out, layout, tag, repotag = rest
        img = load_layout(layout, tag, repotag)
        write_tar(out, docker25_members([img]) if cmd == "docker25" else docker_members([img]))
    elif cmd == "merge-docker" and len(rest) >= 2:
        merge_docker(rest[0], rest[1:])
    elif cmd in KINDS and len(rest) in (1, 2):
        base = load_docker(rest[1])[0] if len(rest) == 2 else synthetic_base()
        write_tar(rest[0], KINDS[cmd](base, opt))
    elif cmd in KINDS or cmd in ("fix-opaque", "docker25", "docker-legacy", "merge-docker"):
        usage()
    else:
        die("unknown kind %s (hostile_images.py list)" % cmd)


if __name__ == "__main__":
    main(sys.argv[1:])
