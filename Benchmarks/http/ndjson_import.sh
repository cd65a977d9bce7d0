#!/usr/bin/env bash
# The NDJSON import benchmark of issue 11: ROWS tasks (1,000,000 by default) POSTed as one
# application/x-ndjson stream to a release server (--durability full), against raw SQLite
# inserting the same rows 1000 per transaction (raw_bulk_insert.c) in the same run; the
# server's peak resident memory; and GET-by-key p99 while the import runs against its idle
# value (wrk, bounded in time). Prints the ratios. Run from the repository root:
#   ROWS=1000000 Benchmarks/http/ndjson_import.sh
set -euo pipefail
ROWS=${ROWS:-1000000}
DURATION=${DURATION:-10s}
PORT=${PORT:-18191}
WORK=$(mktemp -d /tmp/managedstore-ndjson.XXXXXX)
SERVER=""
cleanup() { [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; wait 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT

./scripts/install-deps.sh wrk gcc
swift build -c release --product managedstore > "$WORK/build.log" 2>&1 || { cat "$WORK/build.log"; exit 1; }
gcc -O2 -o "$WORK/raw_bulk_insert" Benchmarks/http/raw_bulk_insert.c $(pkg-config --cflags --libs sqlite3)
python3 - "$ROWS" > "$WORK/tasks.ndjson" <<'PY'
import sys
for i in range(int(sys.argv[1])):
    print('{"title": "t%d", "priority": %d, "estimate": %s}' % (i, i % 6, i * 0.5))
PY

RAW=$("$WORK/raw_bulk_insert" "$WORK/raw.sqlite" "$ROWS")

./.build/release/managedstore serve --demo --store "$WORK/store.sqlite" --port "$PORT" > "$WORK/server.log" 2>&1 &
SERVER=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/v1/readyz" > /dev/null && break; sleep 0.1; done
curl -sf -X POST "http://127.0.0.1:$PORT/v1/objects/Task" -H 'Content-Type: application/json' -d '{"title": "probe"}' > /dev/null
URL="http://127.0.0.1:$PORT/v1/objects/Task/1"
p99() { awk '/ 99%/ { v=$2; if (v ~ /us$/) { sub(/us/, "", v); v/=1000 } else if (v ~ /ms$/) { sub(/ms/, "", v) } else if (v ~ /s$/) { sub(/s/, "", v); v*=1000 } print v }' "$1"; }

wrk -t1 -c8 -d"$DURATION" --latency "$URL" > "$WORK/idle.txt"
START=$(date +%s.%N)
curl -s -X POST "http://127.0.0.1:$PORT/v1/objects/Task" -H 'Content-Type: application/x-ndjson' --data-binary @"$WORK/tasks.ndjson" -o "$WORK/answer.json" &
IMPORT=$!
wrk -t1 -c8 -d"$DURATION" --latency "$URL" > "$WORK/during.txt"
wait "$IMPORT"
END=$(date +%s.%N)
grep -q "\"count\":$ROWS," "$WORK/answer.json" || { echo "the import did not store $ROWS rows:"; head -c 400 "$WORK/answer.json"; exit 1; }
RSS_KB=$(awk '/VmHWM/ { print $2 }' /proc/$SERVER/status)
SERVED=$(python3 -c "print(round($ROWS / ($END - $START)))")

echo "rows: $ROWS (durability full, chunks of 1000 lines)"
echo "raw SQLite, 1000 rows a transaction: $RAW rows/s"
echo "managedstore NDJSON import over HTTP: $SERVED rows/s (ratio to raw: $(python3 -c "print(round($SERVED / $RAW, 2))"))"
echo "peak RSS of the server: $((RSS_KB / 1024)) MB (target under 250 MB)"
echo "GET by key p99: idle $(p99 "$WORK/idle.txt") ms, during the import $(p99 "$WORK/during.txt") ms (ratio $(python3 -c "print(round($(p99 "$WORK/during.txt") / $(p99 "$WORK/idle.txt"), 2))"), target at most 2)"
