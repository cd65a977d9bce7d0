#!/usr/bin/env python3
"""Two builds of the library benchmark (managedstore-bench) side by side, in alternating rounds.

Each round runs every build once, the order alternating, so that the machine's load moves them
alike. Every run measures the library and raw SQLite on the same data (managedstore-bench's
table); the report gives, per row, each build's median rate and the median over the rounds of
after / before (the library's own rates), and of each build's ratio to raw SQLite in its run.

  Benchmarks/scripts/alternate-library.py --build before=/tmp/bench-before --build after=.build/release/managedstore-bench \\
      --rounds 5 [--count 200000] [--json results.json]
"""
import argparse
import json
import re
import statistics
import subprocess
import sys

ROW = re.compile(r"^\| (?P<name>[^|]+?) \| (?P<ms>[0-9,]+) [a-z/]+ \([0-9.]+ s\) \| (?P<raw>[0-9,]+) [a-z/]+ \([0-9.]+ s\) \|")


def run(binary, count):
    out = subprocess.run([binary, "--count", str(count)], capture_output=True, text=True, timeout=1800)
    if out.returncode != 0:
        sys.exit(f"alternate-library: {binary} failed:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    rows = {}
    for line in out.stdout.splitlines():
        m = ROW.match(line)
        if m:
            # Names start with counts that depend on --count: keep the words after them.
            name = re.sub(r"^[0-9,]+ ", "", m.group("name")).replace("Insert " + f"{count:,} ", "Insert ")
            rows[name] = (float(m.group("ms").replace(",", "")), float(m.group("raw").replace(",", "")))
    if not rows:
        sys.exit(f"alternate-library: no table in {binary}'s output:\n{out.stdout[-2000:]}")
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", action="append", required=True, help="NAME=PATH of a managedstore-bench binary")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--count", type=int, default=200_000)
    parser.add_argument("--json")
    args = parser.parse_args()
    builds = [b.split("=", 1) for b in args.build]
    if len(builds) != 2:
        sys.exit("alternate-library: give two --build NAME=PATH")
    results = {name: [] for name, _ in builds}
    for round_number in range(args.rounds):
        order = builds if round_number % 2 == 0 else list(reversed(builds))
        for name, path in order:
            results[name].append(run(path, args.count))
        first, second = builds[0][0], builds[1][0]
        summary = ", ".join(f"{row}: {results[second][-1][row][0] / results[first][-1][row][0]:.3f}"
                            for row in results[first][-1] if row in results[second][-1])
        print(f"round {round_number + 1}: {second}/{first} {summary}", flush=True)
    (first, _), (second, _) = builds
    rows = [row for row in results[first][0] if all(row in r for r in results[first] + results[second])]
    print(f"\n{args.rounds} alternating rounds, --count {args.count:,}; medians\n")
    print(f"| row | {first} /s | {second} /s | {second} / {first} | {first} / raw | {second} / raw |")
    print("|---|---:|---:|---:|---:|---:|")
    report = {}
    for row in rows:
        a = [r[row][0] for r in results[first]]
        b = [r[row][0] for r in results[second]]
        ratio = statistics.median(y / x for x, y in zip(a, b))
        a_raw = statistics.median(r[row][0] / r[row][1] for r in results[first])
        b_raw = statistics.median(r[row][0] / r[row][1] for r in results[second])
        report[row] = {"first": statistics.median(a), "second": statistics.median(b), "ratio": ratio, "first_raw": a_raw, "second_raw": b_raw}
        print(f"| {row} | {statistics.median(a):,.0f} | {statistics.median(b):,.0f} | {ratio:.3f} | {a_raw:.3f} | {b_raw:.3f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"builds": builds, "rounds": results, "summary": report}, f, indent=1)


if __name__ == "__main__":
    main()
