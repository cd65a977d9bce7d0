#!/usr/bin/env bash
# make bench-http: the HTTP benchmark. Builds managedstore (release) and a minimal
# libmicrohttpd C server (the ceiling), seeds 100,000 tasks, and runs each scenario with wrk on
# loopback for $DURATION, printing req/s, p50 and p99 and the ratios the issue asks for, all
# from this one run. Every wrk run is bounded in time; servers are stopped on exit.
set -euo pipefail
trap 'echo "bench-http: failed at line $LINENO: $BASH_COMMAND" >&2' ERR
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-64}
WRK_THREADS=${WRK_THREADS:-2}
TASKS=${TASKS:-100000}
export TASKS WRK_THREADS

./scripts/install-deps.sh wrk gcc
swift build -c release --product managedstore >/dev/null
BIN="$ROOT/.build/release/managedstore"
WORK=$(mktemp -d)
PIDS=()
cleanup() { for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT
gcc -O2 -o "$WORK/ceiling" Benchmarks/http/ceiling.c $(pkg-config --cflags --libs libmicrohttpd)
gcc -O2 -o "$WORK/raw_insert" Benchmarks/http/raw_insert.c $(pkg-config --cflags --libs sqlite3)
gcc -O2 -o "$WORK/write_ceiling" Benchmarks/http/write_ceiling.c $(pkg-config --cflags --libs libmicrohttpd sqlite3) -lpthread

echo "seeding $TASKS tasks..." >&2
"$BIN" demo --store "$WORK/store.sqlite" --tasks "$TASKS" --batch 10000 >/dev/null
cp "$WORK/store.sqlite" "$WORK/store-nogroup.sqlite"
cp "$WORK/store.sqlite" "$WORK/store-nohistory.sqlite"
cp "$WORK/store.sqlite" "$WORK/store-c.sqlite"

wait_for() { for _ in $(seq 1 100); do curl -sf -o /dev/null "http://127.0.0.1:$1/${2:-}" && return 0; sleep 0.1; done; echo "port $1 did not answer" >&2; exit 1; }

"$WORK/ceiling" 18100 4 >/dev/null & PIDS+=($!)
"$BIN" serve --demo --store "$WORK/store.sqlite" --port 18101 --durability full >/dev/null 2>"$WORK/serve.log" & PIDS+=($!)
"$BIN" serve --demo --store "$WORK/store-nogroup.sqlite" --port 18102 --durability full --no-group-commit >/dev/null 2>"$WORK/serve-nogroup.log" & PIDS+=($!)
"$BIN" serve --demo --store "$WORK/store-nohistory.sqlite" --port 18103 --durability full --no-history >/dev/null 2>"$WORK/serve-nohistory.log" & PIDS+=($!)
"$WORK/write_ceiling" 18104 "$WORK/store-c.sqlite" store >/dev/null & PIDS+=($!)
wait_for 18100; wait_for 18104; wait_for 18101 v1/readyz; wait_for 18102 v1/readyz; wait_for 18103 v1/readyz

# run NAME URL [wrk options...]: one bounded wrk run; leaves its report in $WORK/NAME.txt.
run() {
  local name=$1 url=$2; shift 2
  echo "running $name..." >&2
  wrk -t"$WRK_THREADS" -d"$DURATION" --latency "$@" "$url" > "$WORK/$name.txt"
}
S=Benchmarks/http
run ceiling  http://127.0.0.1:18100/ -c"$CONNECTIONS"
run get      http://127.0.0.1:18101 -c"$CONNECTIONS" -s $S/get_random.lua
run fetch    http://127.0.0.1:18101 -c"$CONNECTIONS" -s $S/fetch_where.lua
run post     http://127.0.0.1:18101 -c64 -s $S/post_insert.lua
run post-no-history http://127.0.0.1:18103 -c64 -s $S/post_insert.lua
run post-one-commit-each http://127.0.0.1:18102 -c64 -s $S/post_insert.lua
run post-c-ceiling http://127.0.0.1:18104 -c64 -s $S/post_insert.lua
echo "running raw SQLite, one INSERT per COMMIT..." >&2
case $DURATION in  # wrk's duration (10s, 1m) in seconds
  *m) RAW_SECONDS=$(( ${DURATION%m} * 60 )) ;;
  *s) RAW_SECONDS=${DURATION%s} ;;
  *) RAW_SECONDS=$DURATION ;;
esac
"$WORK/raw_insert" "$WORK/raw.sqlite" "$RAW_SECONDS" > "$WORK/raw.txt"
run patch    http://127.0.0.1:18101 -c"$CONNECTIONS" -s $S/patch_ifmatch.lua
run patch-no-history http://127.0.0.1:18103 -c"$CONNECTIONS" -s $S/patch_ifmatch.lua
# (6): GETs while 64 connections insert, both for the same time.
wrk -t1 -d"$DURATION" -c64 -s $S/post_insert.lua http://127.0.0.1:18101 > "$WORK/writers.txt" & WRITERS=$!
run get-under-writes http://127.0.0.1:18101 -c"$CONNECTIONS" -s $S/get_random.lua
wait $WRITERS
# (8): 100 clients long-polling the change feed while one writer saves 50 transactions a second.
echo "running change-feed fan-out..." >&2
python3 $S/changefeed_fanout.py http://127.0.0.1:18101 --pollers 100 --writes 200 --rate 50 > "$WORK/fanout.json"

python3 - "$WORK" <<'PY'
import re, sys, pathlib
work = pathlib.Path(sys.argv[1])
def ms(text):
    value, unit = re.match(r"([\d.]+)(us|ms|s)", text).groups()
    return float(value) * {"us": 0.001, "ms": 1, "s": 1000}[unit]
def parse(name):
    text = (work / f"{name}.txt").read_text()
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
    p50 = ms(re.search(r"\n\s+50%\s+(\S+)", text).group(1))
    p99 = ms(re.search(r"\n\s+99%\s+(\S+)", text).group(1))
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    total = int(re.search(r"(\d+) requests in", text).group(1))
    errors = re.search(r"Socket errors: (.*)", text)
    return rps, p50, p99, int(non2xx.group(1)) if non2xx else 0, total, errors.group(1) if errors else ""
rows = [("ceiling", "(1) C libmicrohttpd, fixed 200-byte JSON"), ("get", "(2) GET /v1/objects/Task/{random pk}"),
        ("fetch", "(3) GET ?where=2 clauses&limit=20"), ("post", "(4) POST insert, 64 connections, group commit"),
        ("post-no-history", "(4h) (4) with history off (--no-history)"),
        ("post-one-commit-each", "(4') POST insert, 64 connections, one commit per request"),
        ("post-c-ceiling", "(4c) (4)'s SQL from C: write_ceiling.c, same daemon, no JSON or objects"),
        ("patch", "(5) PATCH with If-Match, random objects"), ("patch-no-history", "(5h) (5) with history off (--no-history)"),
        ("get-under-writes", "(6) (2) while 64 connections insert")]
r = {name: parse(name) for name, _ in rows}
print("| scenario | req/s | p50 ms | p99 ms | non-2xx | requests |")
print("|---|---:|---:|---:|---:|---:|")
for name, label in rows:
    rps, p50, p99, bad, total, errors = r[name]
    print(f"| {label} | {rps:,.0f} | {p50:.2f} | {p99:.2f} | {bad} | {total:,}{' (' + errors + ')' if errors else ''} |")
print()
print(f"- (2) / (1) = {r['get'][0] / r['ceiling'][0]:.2f}  (target 0.5 or better)")
print(f"- (4) / (4') = {r['post'][0] / r['post-one-commit-each'][0]:.1f}x  (target 5x or better; both --durability full)")
print(f"- p99 (6) / p99 (2) = {r['get-under-writes'][2] / r['get'][2]:.2f}  (target 3 or less)")
raw = float((work / "raw.txt").read_text())
print(f"- (4) / (4h) = {r['post'][0] / r['post-no-history'][0]:.2f}, (5) / (5h) = {r['patch'][0] / r['patch-no-history'][0]:.2f}"
      "  (history's cost; target 0.75 or better: under 25% slower)")
print(f"- (7) raw SQLite, one INSERT per COMMIT, synchronous=FULL: {raw:,.0f}/s; (4) / (7) = {r['post'][0] / raw:.1f}x  (target 5x or better)")
print(f"- (4c) / (7) = {r['post-c-ceiling'][0] / raw:.1f}x, (4) / (4c) = {r['post'][0] / r['post-c-ceiling'][0]:.2f}"
      "  (the same statements and group commit in C, without JSON, validation or managed objects)")
import json
f = json.loads((work / "fanout.json").read_text())
print(f"- (8) change feed, {f['pollers']} long-pollers, {f['writes']} writes at {f['rate']:.0f}/s: {f['deliveries']:,} deliveries, "
      f"{f['missing']} missing; commit to delivery p50 {f['latency_p50_ms']} ms, p99 {f['latency_p99_ms']} ms; "
      f"write p50 {f['write_p50_ms_with_pollers']} ms with the pollers, {f['write_p50_ms_alone']} ms alone ({f['write_p50_ratio']}x)")
PY
