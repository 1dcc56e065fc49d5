#!/usr/bin/env python3
"""tests/lib/cve_images.py — the OCI images tests/cve.bats needs whose
config carries the attack (an Env or a WorkingDir), written with
hostile_images.py's writers so that every digest and diff_id matches.

  cve_images.py OUT ROOTFS_TAR [--workdir DIR] [KEY=VALUE...]
      an OCI image layout archive at OUT: one uncompressed layer, the bytes
      of ROOTFS_TAR (a root file system tar), and a config whose Env is
      PATH plus each KEY=VALUE given, and whose WorkingDir is DIR.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hostile_images as hi  # noqa: E402


def main(argv):
    if len(argv) < 2:
        hi.die("usage: cve_images.py OUT ROOTFS_TAR [--workdir DIR] [KEY=VALUE...]")
    out, rootfs, rest = argv[0], argv[1], argv[2:]
    env = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]
    config = {"Env": env, "Cmd": ["/bin/sh"]}
    while rest:
        arg = rest.pop(0)
        if arg == "--workdir" and rest:
            config["WorkingDir"] = rest.pop(0)
        elif "=" in arg:
            env.append(arg)
        else:
            hi.die("not KEY=VALUE: %s" % arg)
    with open(rootfs, "rb") as f:
        layer = f.read()
    img = hi.Image({"architecture": "amd64", "os": "linux", "config": config,
                    "rootfs": {"type": "layers", "diff_ids": []}, "history": []},
                   [], "gpurun/cve:latest")
    img.add_layer(layer, "cve_images.py: " + os.path.basename(rootfs))
    members, _, _ = hi.oci_members([(img, "latest")])
    hi.write_tar(out, members)


if __name__ == "__main__":
    main(sys.argv[1:])
