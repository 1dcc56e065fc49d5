#!/usr/bin/env python3
"""tests/bench/ratios.py — read a hyperfine --export-json file and print each
command's median and mean, its ratio to the reference command, and PASS/MISS
lines for the targets given on the command line.

  ratios.py RESULTS.json REFERENCE [TARGET ...]

TARGET is  NAME<=FACTOR  (reference median at most FACTOR x NAME's median)
or  NAME>  (reference faster than NAME).
"""
import json
import sys


def main():
    path, ref = sys.argv[1], sys.argv[2]
    with open(path) as f:
        results = {r["command"]: r for r in json.load(f)["results"]}
    if ref not in results:
        print(f"ratios: no result for {ref}", file=sys.stderr)
        return 1
    base = results[ref]["median"]
    print(f"  {'command':<24} {'median':>10} {'mean ± sd':>20} {'vs ' + ref:>12}")
    for name, r in results.items():
        print(f"  {name:<24} {r['median'] * 1e3:>8.2f}ms "
              f"{r['mean'] * 1e3:>10.2f} ± {r['stddev'] * 1e3:<6.2f}ms "
              f"{r['median'] / base:>10.2f}x")
    for target in sys.argv[3:]:
        if "<=" in target:
            name, factor = target.split("<=")
            if name not in results:
                print(f"  SKIP {ref} within {factor}x of {name}: {name} did not run")
                continue
            other = results[name]["median"]
            ok = base <= float(factor) * other
            goal = (f"no slower than {name}" if float(factor) == 1.0
                    else f"within {factor}x of {name}'s median")
            print(f"  {'PASS' if ok else 'MISS'} {ref} {goal} "
                  f"({base * 1e3:.2f}ms vs {other * 1e3:.2f}ms, {base / other:.2f}x)")
        elif target.endswith(">"):
            name = target[:-1]
            if name not in results:
                print(f"  SKIP {ref} faster than {name}: {name} did not run")
                continue
            other = results[name]["median"]
            ok = base < other
            print(f"  {'PASS' if ok else 'MISS'} {ref} faster than {name} "
                  f"({base * 1e3:.2f}ms vs {other * 1e3:.2f}ms, {base / other:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
