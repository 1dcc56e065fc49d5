#!/usr/bin/env python3
"""tests/bench/ratios.py — read a hyperfine --export-json file and print each
command's median, mean ± sd, CPU time (user + system, all its processes),
its ratio to the reference command,
and PASS/MISS lines for the targets given on the command line.

  ratios.py RESULTS.json REFERENCE [TARGET ...] [--md TABLE.md LABEL]

TARGET is  NAME<=FACTOR  (reference median at most FACTOR x NAME's median),
NAME>  (reference faster than NAME), or  <=Nms  (reference median at most
N milliseconds).

With --md, the same figures are appended to TABLE.md as markdown rows (the
tables of docs/performance.md are made of them: tests/bench/run.sh splices
the file into docs/performance.md, so that no figure there is typed by hand).

  ratios.py --splice FILE.md TABLE.md [NAME]   replace what lies between
      the <!-- bench:NAME:begin --> and <!-- bench:NAME:end --> lines of
      FILE.md (without NAME: <!-- bench:begin --> and <!-- bench:end -->,
      the launch table).  Each benchmark table has its own NAME and
      its own TABLE.md, written by the script that measures it.

  ratios.py --pool OUT.json IN.json...   pool hyperfine runs of the same
      commands (rounds in alternating order, so that a machine whose load
      drifts favours none of them) into one results file: medians over all
      the times, CPU as the mean weighted by each run's number of launches.
"""
import json
import statistics
import sys


def markers(name=None):
    tag = f"bench:{name}:" if name else "bench:"
    return f"<!-- {tag}begin -->", f"<!-- {tag}end -->"


def ms(s):
    return f"{s * 1e3:.2f} ms" if s < 1 else f"{s * 1e3:.0f} ms"


def cpu(r):
    # user + system: the kernel charges a process that ran for less than a
    # tick all of its time as user time, so for a launch of a few
    # milliseconds the split means nothing and only the sum does.
    return r["user"] + r["system"]


def splice(doc, table, name=None):
    BEGIN, END = markers(name)
    with open(doc) as f:
        text = f.read()
    with open(table) as f:
        rows = f.read()
    if BEGIN not in text or END not in text:
        print(f"ratios: {doc} has no {BEGIN} ... {END} block", file=sys.stderr)
        return 1
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    with open(doc, "w") as f:
        f.write(head + BEGIN + "\n" + rows + END + tail)
    return 0


def pool(out, parts):
    times, cpus = {}, {}
    for path in parts:
        with open(path) as f:
            for r in json.load(f)["results"]:
                times.setdefault(r["command"], []).extend(r["times"])
                cpus.setdefault(r["command"], []).append((len(r["times"]), r["user"], r["system"]))
    results = []
    for c, t in times.items():
        n = len(t)
        results.append({"command": c, "times": t, "median": statistics.median(t),
                        "mean": statistics.mean(t), "stddev": statistics.stdev(t) if n > 1 else 0.0,
                        "user": sum(k * u for k, u, _ in cpus[c]) / n,
                        "system": sum(k * s for k, _, s in cpus[c]) / n})
    with open(out, "w") as f:
        json.dump({"results": results}, f)
    return 0


def main(argv):
    if argv[1:2] == ["--splice"]:
        return splice(*argv[2:5])
    if argv[1:2] == ["--pool"]:
        return pool(argv[2], argv[3:])
    md = None
    if "--md" in argv:
        i = argv.index("--md")
        md, label = argv[i + 1], argv[i + 2]
        argv = argv[:i] + argv[i + 3:]
    path, ref = argv[1], argv[2]
    with open(path) as f:
        results = {r["command"]: r for r in json.load(f)["results"]}
    if ref not in results:
        print(f"ratios: no result for {ref}", file=sys.stderr)
        return 1
    base = results[ref]["median"]
    w = max([24] + [len(n) for n in results])
    print(f"  {'command':<{w}} {'median':>10} {'mean ± sd':>20} {'CPU':>10} {'vs ' + ref:>10}")
    for name, r in results.items():
        print(f"  {name:<{w}} {r['median'] * 1e3:>8.2f}ms "
              f"{r['mean'] * 1e3:>10.2f} ± {r['stddev'] * 1e3:<6.2f}ms "
              f"{cpu(r) * 1e3:>8.2f}ms {r['median'] / base:>9.2f}x")
    verdicts = {}  # peer name (or None for absolute targets) -> text
    for target in argv[3:]:
        if target.startswith("<=") and target.endswith("ms"):
            limit = float(target[2:-2]) / 1e3
            ok = base <= limit
            line = f"{'PASS' if ok else 'MISS'} at most {limit * 1e3:g} ms"
            print(f"  {line} ({ref} {base * 1e3:.2f}ms)")
            verdicts.setdefault(None, []).append(line)
        elif "<=" in target:
            name, factor = target.split("<=")
            if name not in results:
                print(f"  SKIP {ref} within {factor}x of {name}: {name} did not run")
                continue
            other = results[name]["median"]
            ok = base <= float(factor) * other
            goal = (f"no slower than {name}" if float(factor) == 1.0
                    else f"within {factor}x of {name}")
            print(f"  {'PASS' if ok else 'MISS'} {ref} {goal} "
                  f"({base * 1e3:.2f}ms vs {other * 1e3:.2f}ms, {base / other:.2f}x)")
            verdicts.setdefault(name, []).append(f"{'PASS' if ok else 'MISS'} {goal}")
        elif target.endswith(">"):
            name = target[:-1]
            if name not in results:
                print(f"  SKIP {ref} faster than {name}: {name} did not run")
                continue
            other = results[name]["median"]
            ok = base < other
            print(f"  {'PASS' if ok else 'MISS'} {ref} faster than {name} "
                  f"({base * 1e3:.2f}ms vs {other * 1e3:.2f}ms, {base / other:.2f}x)")
            verdicts.setdefault(name, []).append(f"{'PASS' if ok else 'MISS'} faster than {name}")
    if md:
        r = results[ref]
        mine = f"{ms(base)} ± {ms(r['stddev'])} (CPU {ms(cpu(r))})"
        rows = []
        peers = [n for n in results if n != ref] or [None]
        for i, name in enumerate(peers):
            what = label if i == 0 else "same"
            got = mine if i == 0 else ""
            v = verdicts.get(name, []) + (verdicts.get(None, []) if i == 0 else [])
            if name is None:
                rows.append(f"| {what} | {got} | | | {'; '.join(v)} |")
                continue
            p = results[name]
            rows.append(f"| {what} | {got} | {name} {ms(p['median'])} ± {ms(p['stddev'])} "
                        f"(CPU {ms(cpu(p))}) | {base / p['median']:.2f}x | {'; '.join(v)} |")
        with open(md, "a") as f:
            f.write("\n".join(rows) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
