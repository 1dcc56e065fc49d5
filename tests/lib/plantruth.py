#!/usr/bin/env python3
"""tests/lib/plantruth.py — does the teaching view tell the truth?

gpurun prints its plan as shell commands (--dry-run) and prints each step as
it does it (--verbose).  This checker holds both against what the executor
really made, as seen from inside the container:

  plantruth.py script DRY          print a shell script for inside the
                                   container: it dumps /proc/self/mountinfo
                                   and the facts the non-mount steps leave
                                   (links, directories, files, host name, lo)
  plantruth.py check DRY VERBOSE INSIDE
                                   compare; print every mismatch, exit 1 on any

DRY is the --dry-run output, VERBOSE the --verbose run's stderr, INSIDE that
run's stdout (the script's output).  What is checked:

  1. the step lines of --verbose are exactly the op lines of --dry-run;
  2. every printed mount exists at its target with the printed file system
     type, per-mount flags (ro, nosuid, nodev, noexec: exactly, for fresh
     mounts; at least, for binds, which keep their source's locked flags)
     and file system data (mode=, userxattr, ...);
  3. every mount inside the container was printed (or lies under a printed
     recursive bind), and its file system data holds nothing that was not
     printed beyond the kernel's own defaults (size=, uid=, redirect_dir=...);
  4. every printed link, directory, file and host name is there; lo is up
     when the plan says so.
"""
import shlex
import sys

PER_MOUNT = {"ro", "nosuid", "nodev", "noexec"}
# Data the kernel shows without being asked, per file system type.
KERNEL_DEFAULTS = {
    "tmpfs": {"size", "nr_inodes", "inode64", "uid", "gid", "noswap", "huge"},
    "overlay": {"redirect_dir", "uuid", "index", "xino", "metacopy", "nfs_export"},
    "devpts": {"gid"},
    "proc": set(),
    "sysfs": set(),
}
# Data the kernel applies but does not show (or shows only when it differs
# from the default).
NOT_SHOWN = {("devpts", "newinstance"), ("tmpfs", "mode=1777")}
SCRATCH_ROOT = "$S/root"
LIBDIR_DEFAULT = "/usr/lib/x86_64-linux-gnu"
LIBDIR32_DEFAULT = "/usr/lib/i386-linux-gnu"


def op_lines_dry(text):
    """The op lines of the plan: the body of its steps function, before the
    command; comment lines (the sections' headings, and facts --verbose
    only knows at run time, "# the image has no ldconfig") left out."""
    lines = text.splitlines()
    start = lines.index("steps() {")
    # The command is the last of the steps: the line before the function's
    # "}", and the lines it goes on from.
    end = lines.index("}", start) - 1
    while lines[end - 1].endswith("\\"):
        end -= 1
    return [l for l in lines[start + 1:end] if not l.startswith("#")]


def op_lines_verbose(text):
    """The same lines as --verbose printed them ("+ " each)."""
    steps = [l[2:] for l in text.splitlines() if l.startswith("+ ")]
    return op_lines_dry("\n".join(steps))


def commands(lines):
    """Each shell command of the op lines, as a token list, in order; the
    bodies of here-documents are skipped, and a command that writes one
    carries it as ("<<", delimiter)."""
    heredoc = None
    joined, part = [], ""
    for line in lines:  # a line ending in \ goes on on the next
        if line.endswith("\\") and heredoc is None:
            part += line[:-1]
            continue
        joined.append(part + line)
        part = ""
    for line in joined:
        if heredoc is not None:
            if line == heredoc:
                heredoc = None
            continue
        lex = shlex.shlex(line, posix=True, punctuation_chars=";&|")
        lex.whitespace_split = True
        lex.commenters = "#"
        cmd = []
        for t in lex:
            if t in ("&&", "||", ";", "&", "|"):
                if cmd:
                    yield cmd
                cmd = []
            elif t.startswith("<<"):
                heredoc = t[2:] or next(lex)
            else:
                cmd.append(t)
        if cmd:
            yield cmd


class Plan:
    """What the printed commands say the container holds."""

    def __init__(self, lines, libdir, libdir32="$LIBDIR32"):
        self.libdir = libdir
        self.libdir32 = libdir32
        self.mounts = []  # dicts: target, kind (fresh|bind), type, flags, data, rec
        self.links, self.dirs, self.files = [], [], []
        self.optional = set()  # files written only where the image has their directory
        optional_dir = None
        self.hostname = None
        self.lo_up = False
        inside = False
        for cmd in commands(lines):
            name = cmd[0]
            if name == "if" and "-d" in cmd:
                # "if [ -d DIR ]; then <write DIR/FILE>; fi": an optional file
                optional_dir = self.path(cmd[cmd.index("-d") + 1], inside)
                continue
            if name == "fi":
                optional_dir = None
                continue
            if name == "cd":
                inside = cmd[1] == SCRATCH_ROOT
                continue
            if name in HELPERS:
                HELPERS[name](self, cmd[1:], inside)
            elif name == "mount":
                self.mount(cmd[1:], inside)
            elif name == "after_pivot" and "ro" in cmd[3].split(","):
                # --read-only: the helper outside the new root remounts it
                top = self.top("/")
                if top is not None:
                    top["flags"].add("ro")
            elif name == "ln":
                self.links.append((self.path(cmd[-1], inside), cmd[-2]))
            elif name == "mkdir" and inside:
                args = [a for a in cmd[1:] if not a.startswith("-")]
                if "-m" in cmd:
                    args = [a for a in args if a != cmd[cmd.index("-m") + 1]]
                self.dirs += [self.path(a, inside) for a in args]
            elif name == "touch":
                self.files.append(self.path(cmd[1], inside))
            elif name == "hostname":
                self.hostname = cmd[1]
            elif name in ("printf", "head") and ">" in cmd:
                f = self.path(cmd[cmd.index(">") + 1], inside)
                self.files.append(f)
                if optional_dir and f and f.startswith(optional_dir + "/"):
                    self.optional.add(f)
            elif name == "ip" and cmd[1:] == ["link", "set", "lo", "up"]:
                self.lo_up = True

    def path(self, p, inside):
        """A printed target as an absolute path inside the container; None
        for the scratch outside it."""
        if not inside:
            return "/" if p == SCRATCH_ROOT else None
        if p.startswith(".$LIBDIR32"):  # compat32's directory, before $LIBDIR
            return self.libdir32 + p[len(".$LIBDIR32"):]
        if p.startswith(".$LIBDIR"):
            return self.libdir + p[len(".$LIBDIR"):]
        while p.startswith("./"):
            p = p[2:]
        p = "/" + ("" if p == "." else p)
        return p.rstrip("/") or "/"

    def mount(self, args, inside):
        opts, fstype, kind, rec, pos = [], None, "fresh", False, []
        i = 0
        while i < len(args):
            a = args[i]
            if a == "-t":
                fstype = args[i + 1]
                i += 2
                continue
            if a == "-o":  # mount(8) joins several -o lists
                opts += args[i + 1].split(",")
                i += 2
                continue
            if a in ("--bind", "--rbind"):
                kind, rec = "bind", a == "--rbind"
            elif a == "--make-rslave":
                return
            else:
                pos.append(a)
            i += 1
        if "remount" in opts:
            target = self.path(pos[-1], inside)
            top = self.top(target)
            if top is None and any(m["rec"] and under(target, m["target"]) for m in self.mounts):
                return  # a submount of a recursive bind, made read-only one by one
            if top is None:
                raise SystemExit("remount of %s, which nothing mounted" % target)
            top["flags"] |= PER_MOUNT & set(opts)
            return
        target = self.path(pos[-1], inside)
        if target is None:
            return  # the scratch, outside the root
        self.mounts.append({
            "target": target, "kind": kind, "type": fstype, "rec": rec,
            "flags": PER_MOUNT & set(opts),
            "data": [o.replace("$S/", "/tmp/") for o in opts if o not in PER_MOUNT],
            "line": " ".join(["mount"] + args),
        })

    def bind(self, opts, src, dst, inside, rec=False, directory=False):
        args = (["-o", opts] if opts else []) + ["--rbind" if rec else "--bind", src, dst]
        if directory:
            self.dirs.append(self.path(dst, inside))
        else:
            self.files.append(self.path(dst, inside))
        self.mount(args, inside)

    def top(self, target):
        for m in reversed(self.mounts):
            if m["target"] == target:
                return m
        return None


def _make_dir(plan, args, inside):
    if args[0] == "-m":
        args = args[2:]
    plan.dirs.append(plan.path(args[0], inside))


def _remount(plan, args, inside):
    base, names = (args[2], args[3:]) if args[1:2] == ["-C"] else (None, args[1:])
    for d in names:
        if base is not None:
            d = base if d == "." else base + "/" + d
        plan.mount(["-o", "remount,bind" + ("," + args[0] if args[0] else ""), d], inside)


def _bind_dir(plan, args, inside):
    opts = args[0].split(",")
    plan.bind(",".join(opts[1:]), args[1], args[2], inside, rec=opts[0] == "rbind", directory=True)


def _link_in(plan, args, inside):
    for i in range(1, len(args) - 1, 2):
        plan.links.append((plan.path(args[0] + "/" + args[i + 1], inside), args[i]))


def _files(plan, args, inside):
    plan.files += [plan.path(a, inside) for a in args]


def _write(optional):
    def write(plan, args, inside):
        f = plan.path(args[0], inside)
        plan.files.append(f)
        if optional:
            plan.optional.add(f)
    return write


# The plan's shell functions (ns/plan.sh), as what they do.
HELPERS = {
    "make_dir": _make_dir,
    "bind_file": lambda p, a, i: p.bind(a[0], a[1], a[2], i),
    "bind_over": lambda p, a, i: p.bind(a[0], a[1], a[2], i),
    "rbind_file": lambda p, a, i: p.bind(a[0], a[1], a[2], i, rec=True),
    "bind_dir": _bind_dir,
    "bind_files": lambda p, a, i: [p.bind(a[0], a[1].rstrip("/") + "/" + n, a[2] + "/" + n, i) for n in a[3:]],
    "bind_each": lambda p, a, i: [p.bind(a[0], a[1], d, i) for d in a[2:]],
    "rbind_self": lambda p, a, i: [p.mount(["-o", a[0], "--rbind", d, d], i) for d in a[1:]],
    "link_in": _link_in,
    "driver_text": _files,
    "driver_params": _files,
    "remount": _remount,
    "write_file": _write(False),
    "write_if_dir": _write(True),
}


def unescape(s):
    return s.encode().decode("unicode_escape") if "\\" in s else s


def read_inside(text):
    mountinfo, facts = [], {}
    section = None
    for line in text.splitlines():
        if line == "=== mountinfo":
            section = "mi"
            continue
        if line == "=== facts":
            section = "facts"
            continue
        if section == "mi":
            left, _, right = line.partition(" - ")
            f, r = left.split(), right.split()
            mountinfo.append({"id": f[0], "parent": f[1], "target": unescape(f[4]),
                              "flags": set(f[5].split(",")), "type": r[0],
                              "super": r[2].split(",") if len(r) > 2 else []})
        elif section == "facts" and line:
            key, _, rest = line.partition(" ")
            facts.setdefault(key, []).append(rest)
    return mountinfo, facts


def top_mounts(mountinfo):
    """The topmost mount at each mount point (a stacked mount's parent is the
    mount below it at the same point)."""
    by_id = {m["id"]: m for m in mountinfo}
    tops = {}
    for m in mountinfo:
        covered = any(o["parent"] == m["id"] and o["target"] == m["target"] for o in mountinfo)
        if not covered:
            tops[m["target"]] = m
    return tops, by_id


def norm(opt):
    k, eq, v = opt.partition("=")
    if eq and k in ("mode", "ptmxmode") and v.isdigit():
        v = v.lstrip("0") or "0"
    return k + eq + v


def under(path, root):
    return root == "/" or path == root or path.startswith(root + "/")


def script(dry_text):
    plan = Plan(op_lines_dry(dry_text), "$LIBDIR")
    # The Debian lib dir of this host's architecture, as the plan prints it.
    libdir, libdir32 = LIBDIR_DEFAULT, LIBDIR32_DEFAULT
    out = ['if [ -e /etc/debian_version ]; then LIBDIR=%s; else LIBDIR=/usr/lib64; fi' % libdir,
           'if [ -e /etc/debian_version ]; then LIBDIR32=%s; elif [ -d /usr/lib32 ]; then LIBDIR32=/usr/lib32; '
           'else LIBDIR32=/usr/lib; fi' % libdir32,
           'echo "=== mountinfo"', 'cat /proc/self/mountinfo', 'echo "=== facts"',
           'echo "libdir $LIBDIR"', 'echo "libdir32 $LIBDIR32"']

    def q(p):  # keep $LIBDIR expandable, quote the rest
        return '"%s"' % p.replace('"', '\\"') if p.startswith("$LIBDIR") else shlex.quote(p)

    for m in plan.mounts:
        out.append('[ -e %s ] && echo "exists %s $(readlink -f %s)"' % (q(m["target"]), m["target"], q(m["target"])))
    for path, _ in plan.links:
        out.append('echo "link %s $(readlink %s)"' % (path, q(path)))
    for d in plan.dirs:
        out.append('[ -d %s ] && echo "dir %s"' % (q(d), d))
    for f in plan.files:
        out.append('[ -e %s ] && echo "file %s"' % (q(f), f))
    out.append('echo "hostname $(hostname)"')
    out.append('[ -r /sys/class/net/lo/flags ] && echo "loflags $(cat /sys/class/net/lo/flags)"')
    out.append('true')
    return "\n".join(out) + "\n"


def check(dry_text, verbose_text, inside_text):
    problems = []
    dry, verbose = op_lines_dry(dry_text), op_lines_verbose(verbose_text)
    if dry != verbose:
        import difflib
        problems.append("the --verbose steps differ from the --dry-run plan:\n" +
                        "\n".join(difflib.unified_diff(dry, verbose, "dry-run", "verbose", lineterm="")))
    mountinfo, facts = read_inside(inside_text)
    libdir = facts.get("libdir", [LIBDIR_DEFAULT])[0]
    plan = Plan(dry, libdir, facts.get("libdir32", [LIBDIR32_DEFAULT])[0])
    # Printed targets are resolved inside the root, through the image's
    # symlinks (/lib -> usr/lib): the mount is where the link leads.
    resolved = dict(e.split(" ", 1) for e in facts.get("exists", []) if " " in e)
    exists = set(resolved)
    tops, _ = top_mounts(mountinfo)

    expected = {}
    for m in plan.mounts:
        m["printed"] = m["target"]
        m["target"] = resolved.get(m["target"], m["target"])
        expected[m["target"]] = m  # the last one printed is the top one
    for target, m in expected.items():
        got = tops.get(target)
        if got is None:
            # /proc entries depend on the kernel (no sysrq-trigger without
            # CONFIG_MAGIC_SYSRQ): the executor skips what is not there.
            if target.startswith("/proc/") and m["printed"] not in exists:
                continue
            problems.append("printed but not mounted: %s (%s)" % (target, m["line"]))
            continue
        if m["kind"] == "fresh":
            want_type = m["type"]
            if got["type"] != want_type:
                problems.append("%s: printed -t %s, mounted %s" % (target, want_type, got["type"]))
            flags = got["flags"] & PER_MOUNT
            if flags != m["flags"]:
                problems.append("%s: printed flags %s, mounted %s" %
                                (target, sorted(m["flags"]), sorted(flags)))
            shown = {norm(o) for o in got["super"]}
            for d in m["data"]:
                if (want_type, d) in NOT_SHOWN:
                    continue
                if norm(d) not in shown:
                    problems.append("%s: printed %s, not in the mount's data %s" %
                                    (target, d, ",".join(got["super"])))
            printed_keys = {norm(d).partition("=")[0] for d in m["data"]}
            for o in got["super"]:
                key = o.partition("=")[0]
                if key in ("rw", "ro") or key in printed_keys or key in KERNEL_DEFAULTS.get(want_type, set()):
                    continue
                problems.append("%s: the mount has %s, which the plan never printed" % (target, o))
        else:
            missing = m["flags"] - got["flags"]
            if missing:
                problems.append("%s: printed bind flags %s, mounted without %s" %
                                (target, sorted(m["flags"]), sorted(missing)))
            # A bind is printed read-only only if it is.
            if "ro" not in m["flags"] and "ro" in got["flags"]:
                problems.append("%s: mounted read-only, printed read-write" % target)

    rec_roots = [t for t, m in expected.items() if m["rec"]]
    for target, got in tops.items():
        if target in expected:
            continue
        if any(under(target, r) for r in rec_roots if r != "/"):
            continue  # a submount brought along by a printed recursive bind
        problems.append("mounted but never printed: %s (%s %s)" % (target, got["type"], ",".join(sorted(got["flags"]))))

    links = dict(l.split(" ", 1) if " " in l else (l, "") for l in facts.get("link", []))
    for path, want in plan.links:
        if links.get(path) != want:
            problems.append("link %s: printed -> %s, found -> %s" % (path, want, links.get(path)))
    dirs = set(facts.get("dir", []))
    for d in plan.dirs:
        if d not in dirs:
            problems.append("directory %s printed, not there" % d)
    files = set(facts.get("file", []))
    for f in plan.files:
        if f not in files and f not in plan.optional:
            problems.append("file %s printed, not there" % f)
    if plan.hostname is not None and facts.get("hostname", [""])[0] != plan.hostname:
        problems.append("host name printed %s, found %s" % (plan.hostname, facts.get("hostname")))
    if plan.lo_up:
        flags = facts.get("loflags", ["0x0"])[0]
        if not int(flags, 16) & 1:
            problems.append("lo printed up, flags %s" % flags)
    for p in problems:
        print("plantruth: " + p)
    if not problems:
        print("plantruth: %d lines, %d mounts: every printed line matches what was made" %
              (len(dry), len(expected)))
    return 1 if problems else 0


def main(argv):
    if len(argv) == 3 and argv[1] == "script":
        sys.stdout.write(script(open(argv[2]).read()))
        return 0
    if len(argv) == 5 and argv[1] == "check":
        return check(*(open(p).read() for p in argv[2:5]))
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
