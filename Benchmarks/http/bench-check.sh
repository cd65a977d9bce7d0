#!/usr/bin/env bash
# make bench-check: the guard to run before saying an issue is resolved (never in CI: timings
# are noisy). Builds release, runs GET by key, POST insert and an NDJSON import against their C
# ceilings in alternating rounds (about a minute; the default configuration, request log on,
# to a file), then the library (the benchmark package, release): the insert of LIBRARY_COUNT
# Tasks with history on, in two rounds, against raw SQLite and against the same insert with
# history off, and the 3-clause fetch against raw SQLite, in one process
# (`managedstore-bench --check`). Prints each ratio beside its goal and beside the
# last one recorded in Benchmarks/last-check.txt, marking any that fell by more than 10%. Then
# records this run there (commit it with the change it measured).
#
# Environment: ROUNDS (2), SECONDS_EACH (5), ROWS (200000, the import's size), LIBRARY_COUNT
# (300000).
set -euo pipefail
cd "$(dirname "$0")/../.."
./scripts/install-deps.sh wrk gcc curl
swift build -c release --product managedstore >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 Benchmarks/http/alternate.py --config "now=$PWD/.build/release/managedstore" --scenarios get,post,ndjson \
    --rounds "${ROUNDS:-2}" --seconds "${SECONDS_EACH:-5}" --rows "${ROWS:-200000}" --json "$work/check.json" >"$work/table.txt"
# The library's lines (its package builds the library once more, in release, on the first run).
(cd Benchmarks && swift build -c release --product managedstore-bench >/dev/null \
    && .build/release/managedstore-bench --check --count "${LIBRARY_COUNT:-300000}") >"$work/library.txt"
python3 - "$work/check.json" Benchmarks/last-check.txt "$(git rev-parse --short HEAD)$(git diff --quiet || echo '+changes')" "$work/library.txt" <<'PY'
import datetime, json, os, platform, re, sys
results, record, commit, library = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3], sys.argv[4]
goals = {"get": ("GET by key / ceiling.c", 0.75), "post": ("POST insert / write_ceiling.c store", 0.75),
         "ndjson": ("NDJSON import / raw_bulk_insert.c", 0.35),
         "insert": ("library insert, history on / raw SQLite (managedstore-bench --check)", 0.6),
         "history": ("library insert, history on / off (history costing at most 10%)", 0.9),
         "fetch3": ("library 3-clause fetch / raw SQLite (managedstore-bench --check)", 0.8)}
# managedstore-bench --check prints "check NAME RATIO (details)".
for line in open(library):
    match = re.match(r"check (\w+) ([\d.]+) \((.*)\)$", line.strip())
    if match:
        results["summary"][match.group(1)] = {"ratios": {"now": float(match.group(2))}, "details": match.group(3)}
last = {}
if os.path.exists(record):
    for line in open(record):
        match = re.match(r"(\w+)\s+([\d.]+)\s", line)
        if match and match.group(1) in goals:
            last[match.group(1)] = float(match.group(2))
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.machine())
lines = [f"# make bench-check, {datetime.date.today()}, commit {commit}, {os.cpu_count()} cores ({cpu})",
         "# scenario  ratio  goal  (rate, ceiling; or the library's figures)"]
print(f"{'':8} {'ratio':>7} {'goal':>6} {'last':>7}")
for key, (label, goal) in goals.items():
    summary = results["summary"][key]
    ratio = summary["ratios"]["now"]
    previous = last.get(key)
    marks = []
    if ratio < goal:
        marks.append("below the goal")
    if previous and ratio < previous * 0.9:
        marks.append(f"FELL {100 * (1 - ratio / previous):.0f}% since the last check")
    print(f"{key:8} {ratio:7.3f} {goal:6.2f} {previous if previous else float('nan'):7.3f}  {label}"
          + (f"  <-- {'; '.join(marks)}" if marks else ""))
    detail = summary.get("details") or f"{summary['rates']['now']:,.0f}/s, ceiling {summary['ceiling']:,.0f}/s"
    lines.append(f"{key} {ratio:.3f} {goal:.2f} ({detail})")
with open(record, "w") as f:
    f.write("\n".join(lines) + "\n")
print(f"recorded in {record}")
PY
