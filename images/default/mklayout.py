#!/usr/bin/env python3
"""Turn a rootfs tarball into a one-layer OCI image layout (called by
images/default-image.sh).  Standard library only.

usage: mklayout.py ROOTFS.tar LAYOUT TAG CONFIG.json

CONFIG.json is the image config's "config" object (Env, Cmd, Labels...).
Device nodes are left out (a sandbox gets its own /dev, and an unprivileged
pull could not create them).  The layer is gzip with a fixed header and every
document is written the same way each time, so the same tarball always gives
the same digests.
"""
import gzip
import hashlib
import json
import os
import sys
import tarfile

CREATED = "2023-11-14T22:13:20Z"
MT_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MT_CONFIG = "application/vnd.oci.image.config.v1+json"
MT_TGZ = "application/vnd.oci.image.layer.v1.tar+gzip"


class HashWriter:
    """A write-only file object that hashes and counts what passes through."""

    def __init__(self, inner):
        self.inner, self.h, self.n = inner, hashlib.sha256(), 0

    def write(self, b):
        self.h.update(b)
        self.n += len(b)
        return self.inner.write(b)

    def flush(self):
        pass

    def tell(self):
        return self.n

    def digest(self):
        return "sha256:" + self.h.hexdigest()


def goarch():
    m = os.uname().machine
    return {"x86_64": "amd64", "aarch64": "arm64", "i686": "386", "armv7l": "arm"}.get(m, m)


def put_blob(root, data, mediatype):
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    with open(os.path.join(root, "blobs", "sha256", digest[7:]), "wb") as f:
        f.write(data)
    return {"mediaType": mediatype, "digest": digest, "size": len(data)}


def jdump(obj):
    return json.dumps(obj, indent=2).encode() + b"\n"


def write_layer(root, rootfs_tar):
    """The rootfs as a gzip layer blob: (descriptor, diff_id)."""
    tmp = os.path.join(root, "blobs", "layer.tmp")
    with open(tmp, "wb") as raw:
        zw = HashWriter(raw)
        with gzip.GzipFile(filename="", fileobj=zw, mode="wb", compresslevel=6, mtime=0) as z:
            tw = HashWriter(z)
            with tarfile.open(rootfs_tar, "r:") as tin, \
                    tarfile.open(fileobj=tw, mode="w", format=tarfile.PAX_FORMAT) as tout:
                for m in tin:
                    if m.ischr() or m.isblk():
                        continue
                    tout.addfile(m, tin.extractfile(m) if m.isreg() else None)
    os.rename(tmp, os.path.join(root, "blobs", "sha256", zw.digest()[7:]))
    return {"mediaType": MT_TGZ, "digest": zw.digest(), "size": zw.n}, tw.digest()


def main(argv):
    if len(argv) != 5:
        sys.exit(__doc__)
    rootfs_tar, root, tag, cfg_path = argv[1:]
    with open(cfg_path) as f:
        cfg = json.load(f)
    os.makedirs(os.path.join(root, "blobs", "sha256"), exist_ok=True)
    layer, diff_id = write_layer(root, rootfs_tar)
    config = {"created": CREATED, "architecture": goarch(), "os": "linux", "config": cfg,
              "rootfs": {"type": "layers", "diff_ids": [diff_id]},
              "history": [{"created": CREATED, "created_by": "images/default-image.sh"}]}
    manifest = {"schemaVersion": 2, "mediaType": MT_MANIFEST,
                "config": put_blob(root, jdump(config), MT_CONFIG), "layers": [layer]}
    desc = put_blob(root, jdump(manifest), MT_MANIFEST)
    desc["annotations"] = {"org.opencontainers.image.ref.name": tag}
    with open(os.path.join(root, "index.json"), "wb") as f:
        f.write(jdump({"schemaVersion": 2, "manifests": [desc]}))
    with open(os.path.join(root, "oci-layout"), "wb") as f:
        f.write(jdump({"imageLayoutVersion": "1.0.0"}))


if __name__ == "__main__":
    main(sys.argv)
