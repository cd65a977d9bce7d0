#!/usr/bin/env bash
# make bench-check: the guard to run before saying an issue is resolved (never in CI: timings
# are noisy). Builds release, runs GET by key, POST insert and an NDJSON import against their C
# ceilings in alternating rounds (about a minute; the default configuration, request log on,
# to a file), and prints each ratio beside its goal and beside the last one recorded in
# Benchmarks/last-check.txt, marking any that fell by more than 10%. Then records this run there
# (commit it with the change it measured).
#
# Environment: ROUNDS (2), SECONDS_EACH (5), ROWS (200000, the import's size).
set -euo pipefail
cd "$(dirname "$0")/../.."
./scripts/install-deps.sh wrk gcc curl
swift build -c release --product managedstore >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 Benchmarks/http/alternate.py --config "now=$PWD/.build/release/managedstore" --scenarios get,post,ndjson \
    --rounds "${ROUNDS:-2}" --seconds "${SECONDS_EACH:-5}" --rows "${ROWS:-200000}" --json "$work/check.json" >"$work/table.txt"
python3 - "$work/check.json" Benchmarks/last-check.txt "$(git rev-parse --short HEAD)$(git diff --quiet || echo '+changes')" <<'PY'
import datetime, json, os, platform, re, sys
results, record, commit = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
goals = {"get": ("GET by key / ceiling.c", 0.75), "post": ("POST insert / write_ceiling.c store", 0.75),
         "ndjson": ("NDJSON import / raw_bulk_insert.c", 0.35)}
last = {}
if os.path.exists(record):
    for line in open(record):
        match = re.match(r"(\w+)\s+([\d.]+)\s", line)
        if match and match.group(1) in goals:
            last[match.group(1)] = float(match.group(2))
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.machine())
lines = [f"# make bench-check, {datetime.date.today()}, commit {commit}, {os.cpu_count()} cores ({cpu})",
         "# scenario  ratio  goal  (rate, ceiling)"]
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
    lines.append(f"{key} {ratio:.3f} {goal:.2f} ({summary['rates']['now']:,.0f}/s, ceiling {summary['ceiling']:,.0f}/s)")
with open(record, "w") as f:
    f.write("\n".join(lines) + "\n")
print(f"recorded in {record}")
PY
