#!/usr/bin/env python3
"""tools/gen-examples.py — the commands and outputs the docs show, run for real.

A Markdown file marks an example like this:

    <!-- run: gpurun --gpus 1 "$IMAGE" ls /dev -->
    ```console
    (written by this script: "$ COMMAND", then its output)
    ```

Several `<!-- run: ... -->` lines may precede one block; each command is
shown with its output, in order.  `<!-- run, exit N: ... -->` expects exit
status N (default 0).  Commands run with bash from the repository root,
with ./gpurun first on PATH and a fresh image cache per file, against the
test suite's fixtures:

    IMAGE               a glibc image (.tar.gz) with ldconfig
    BUSYBOX             a busybox image (.tar.gz)
    DOCKER_ARCHIVE      a three-layer image as `docker save` writes it, with
                        a config (Env, Entrypoint, Cmd, WorkingDir, User)
    GPURUN_DRIVER_ROOT  the fake driver with four GPUs whose device minors
                        are not in PCI bus order (tests/fakedriver)

Output is shown with those paths put back as the variables above, so that
what is printed does not depend on where the clone lives.  --check compares
with SHA-256 digests masked (layer digests follow the fixtures' build, not
gpurun) and a plan's hardening block by its heading only (its steps follow
the host's kernel and mounts: see mask()).

    gen-examples.py FILE...            rewrite the examples in place
    gen-examples.py --check FILE...    fail (exit 1) when a file differs from
                                       what its commands print now
    gen-examples.py --run FILE...      run every command, check only the
                                       exit status (any caller: the outputs
                                       are written as root prints them)
"""
import os
import re
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUN = re.compile(r"^<!-- run(?:, exit (\d+))?: (.*) -->$")


def fixtures():
    build = os.path.join(REPO, "tests", "build")
    found = {}
    images = os.path.join(build, "images")
    for d in sorted(os.listdir(images)) if os.path.isdir(images) else []:
        for name, var in (("glibc.tar.gz", "IMAGE"), ("busybox.tar.gz", "BUSYBOX")):
            p = os.path.join(images, d, name)
            if os.path.exists(p):
                found[var] = p
    oci = os.path.join(build, "oci-images")
    for d in sorted(os.listdir(oci)) if os.path.isdir(oci) else []:
        p = os.path.join(oci, d, "docker.tar")
        if os.path.exists(p):
            found["DOCKER_ARCHIVE"] = p
    drv = os.path.join(build, "fakedriver-four")
    if os.path.isdir(drv):
        found["GPURUN_DRIVER_ROOT"] = drv
    missing = {"IMAGE", "BUSYBOX", "DOCKER_ARCHIVE", "GPURUN_DRIVER_ROOT"} - found.keys()
    if missing:
        sys.exit("gen-examples: missing fixtures %s: build them as root with tests/run-bats.sh "
                 "(or bash tests/lib/images.bash all; bash tests/lib/oci.bash all; "
                 "sh tests/fakedriver/build.sh tests/build/fakedriver-four four)"
                 % ", ".join(sorted(missing)))
    return found


def run(cmd, env, cwd):
    p = subprocess.run(["bash", "-c", cmd], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    return p.returncode, p.stdout.decode("utf-8", "replace")


def process(path, mode):
    fx = fixtures()
    text = open(path, encoding="utf-8").read().split("\n")
    out, i, failures = [], 0, []
    with tempfile.TemporaryDirectory(prefix="gpurun-examples.") as tmp:
        work = os.path.join(tmp, "work")
        os.makedirs(work)
        os.chmod(tmp, 0o755)
        env = {
            "PATH": REPO + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "LANG": "C.UTF-8", "HOME": os.environ.get("HOME", tmp), "TMPDIR": tmp,
            "GPURUN_CACHE": os.path.join(tmp, "cache"), **fx,
        }
        # Longest first, so that a path inside another is not cut in two.
        subst = sorted(((v, "$" + k) for k, v in fx.items()), key=lambda kv: -len(kv[0]))
        subst += [(os.path.join(tmp, "cache"), "$GPURUN_CACHE"), (work, "."), (REPO + "/", "./")]
        while i < len(text):
            cmds = []
            while i < len(text) and RUN.match(text[i]):
                m = RUN.match(text[i])
                cmds.append((int(m.group(1) or 0), m.group(2)))
                out.append(text[i])
                i += 1
            if not cmds:
                out.append(text[i])
                i += 1
                continue
            if i >= len(text) or not text[i].startswith("```"):
                sys.exit("gen-examples: %s:%d: a run marker must be followed by a fenced block" % (path, i + 1))
            out.append(text[i])
            i += 1
            while i < len(text) and text[i] != "```":
                i += 1
            if i >= len(text):
                sys.exit("gen-examples: %s: unterminated block" % path)
            for want, cmd in cmds:
                status, shown = run(cmd, env, work)
                if status != want:
                    failures.append("%s: `%s` exited %d, expected %d:\n%s" % (path, cmd, status, want, shown))
                for real, name in subst:
                    shown = shown.replace(real, name)
                out.append("$ " + cmd)
                out.extend(shown.rstrip("\n").split("\n") if shown.strip() else [])
            out.append(text[i])
            i += 1
    return "\n".join(out), failures


HARDENING = "# Hardening the walkthrough does not have"


def mask(text):
    """What --check compares: the text with SHA-256 digests masked, and the
    steps of a plan's hardening block as one line.  Those steps follow the
    host, not gpurun: docker's masked paths where this kernel has them, and
    a read-only remount of each mount the host has below /sys."""
    out, hardening = [], False
    for line in re.sub(r"[0-9a-f]{64}", "<sha256>", text).split("\n"):
        if hardening and line.strip() and not line.startswith(("#", "$ ", "```")):
            continue
        hardening = line.startswith(HARDENING)
        out.append(line)
        if hardening:
            out.append("<the steps this host's kernel and mounts call for>")
    return "\n".join(out)


def main(argv):
    mode = "write"
    if argv and argv[0] in ("--check", "--run"):
        mode, argv = argv[0][2:], argv[1:]
    if not argv:
        sys.exit(__doc__)
    bad = 0
    for path in argv:
        new, failures = process(path, mode)
        for f in failures:
            print("gen-examples: " + f, file=sys.stderr)
            bad = 1
        if mode == "check" and mask(new) != mask(open(path, encoding="utf-8").read()):
            old = open(path, encoding="utf-8").read().split("\n")
            import difflib
            sys.stderr.writelines(l + "\n" for l in difflib.unified_diff(old, new.split("\n"), path, "now", lineterm=""))
            print("gen-examples: %s is out of date: run python3 tools/gen-examples.py %s (as root)" % (path, path),
                  file=sys.stderr)
            bad = 1
        elif mode == "write" and not failures:
            with open(path, "w", encoding="utf-8") as f:
                f.write(new)
    return bad


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
