#!/usr/bin/env python3
"""Write the parts of docs/gpurun.1.md that `gpurun --help` already says: the
synopsis (its usage lines), the run options (its option list) and the exit
status (its last paragraph), each between a pair of markers
(<!-- generated:NAME --> ... <!-- generated:end -->).  --help is the one
source; this keeps the man page from drifting away from it.

  tools/gen-options.py [--check] [GPURUN]     GPURUN defaults to ./gpurun

--check changes nothing: it prints what would change and exits 1 when the
man page is not what --help makes of it (tests/docs.bats runs it)."""
import difflib
import re
import subprocess
import sys

MAN = "docs/gpurun.1.md"


def md_escape(text):
    """Text from --help as literal markdown: nothing in it is markup."""
    return re.sub(r"([\\`*_<>\[\]|])", r"\\\1", text)


def term(field):
    """'-e, --env K[=V]' -> '**-e**, **--env** *K\\[=V\\]*'."""
    parts = []
    for name in field.split(", "):
        words = name.split(" ", 1)
        out = "**" + md_escape(words[0]) + "**"
        if len(words) > 1:
            out += " *" + md_escape(words[1]) + "*"
        parts.append(out)
    return ", ".join(parts)


def parse(help_text):
    paras = help_text.rstrip("\n").split("\n\n")
    usage = [re.sub(r"^(usage:)? +", "", l) for l in paras[0].splitlines()]
    options = []  # [option field, description]
    for line in paras[2].splitlines():
        indent = len(line) - len(line.lstrip(" "))
        fields = re.split(r" {2,}", line.strip())
        if indent >= 10:  # a description goes on
            options[-1][1] += " " + " ".join(fields)
            continue
        for f in fields:
            if f.startswith("-"):
                options.append([f, ""])
            else:
                options[-1][1] = (options[-1][1] + " " + f).strip()
    # Between the options and the exit status: docker's options that gpurun
    # refuses, when --help lists them.
    refused = []
    for para in paras[3:-1]:
        refused += [w for w in " ".join(para.splitlines()[2:]).split() if w.startswith("-")]
    status = " ".join(paras[-1].split())
    if not status.startswith("Exit status: "):
        sys.exit("gen-options: the last paragraph of --help is not the exit status")
    return usage, options, refused, status[len("Exit status: "):].rstrip(".").split("; ")


def render(help_text):
    usage, options, refused, status = parse(help_text)
    parts = {}
    parts["synopsis"] = "".join("    %s\n" % u for u in usage)
    parts["options"] = "".join("%s\n: %s\n\n" % (term(f), md_escape(d.rstrip(";"))) for f, d in options)
    lines = []
    for item in status:
        m = re.match(r"(\d+(\+N)?) (.*)", item)
        if m:
            lines.append("**%s**\n: %s\n\n" % (m.group(1), md_escape(m.group(3))))
        else:
            lines.insert(0, "gpurun exits with %s status, or:\n\n" % md_escape(item))
    parts["exit-status"] = "".join(lines)
    parts["refused"] = ", ".join("**%s**" % md_escape(r) for r in refused) + "\n"
    return parts


def splice(page, parts):
    for name, body in parts.items():
        pat = re.compile(r"(<!-- generated:%s -->\n).*?(<!-- generated:end -->)" % re.escape(name), re.S)
        if not pat.search(page):
            sys.exit("gen-options: %s has no <!-- generated:%s --> marker" % (MAN, name))
        page = pat.sub(lambda m: m.group(1) + "\n" + body + m.group(2), page)
    return page


def main():
    args = sys.argv[1:]
    check = "--check" in args
    args = [a for a in args if a != "--check"]
    gpurun = args[0] if args else "./gpurun"
    help_text = subprocess.run([gpurun, "--help"], check=True, capture_output=True, text=True).stdout
    with open(MAN) as f:
        old = f.read()
    new = splice(old, render(help_text))
    if check:
        if new != old:
            sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), new.splitlines(True), MAN, MAN + " (from --help)"))
            print("gen-options: %s differs from `gpurun --help`: run tools/gen-options.py" % MAN)
            return 1
        return 0
    if new != old:
        with open(MAN, "w") as f:
            f.write(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
