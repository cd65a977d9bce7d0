#!/usr/bin/env bash
# How the cost of a request grows with the store: GET by key, a limited sorted list both ways
# (and its second page), a count and an aggregate, each on a store of 20,000 and of 2,000,000
# tasks (the demo model: priority n % 6, done for every third), timed over HTTP (median of
# REPEAT requests, one connection, curl's total time) beside raw SQLite running the same SQL
# (the system's libsqlite3 through Python's sqlite3 module, every row stepped, median of the
# same number of runs). Run from the repository root:
#
#   Benchmarks/http/growth.sh            (SIZES="20000 2000000", REPEAT=15)
set -euo pipefail
cd "$(dirname "$0")/../.."
SIZES=${SIZES:-"20000 2000000"}
REPEAT=${REPEAT:-15}
./scripts/install-deps.sh curl
swift build -c release --product managedstore >/dev/null
BIN=$PWD/.build/release/managedstore
WORK=$(mktemp -d /tmp/managedstore-growth.XXXXXX)
SERVER=""
cleanup() { [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; wait 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT

# name | HTTP path | the SQL the store runs for it (the server's statement, as compiledSQL gives it)
QUERIES=$(cat <<'EOF'
get by key|/v1/objects/Task/{MID}|SELECT t0."_pk", t0."_version", t0."title", t0."priority", t0."done", t0."estimate", t0."due", t0."project" FROM "Task" t0 WHERE t0."_pk" = {MID}
sorted ascending|/v1/objects/Task?where=done%20%3D%3D%20NO%20AND%20priority%20%3E%3D%204&sort=priority&limit=20|SELECT t0."_pk" FROM "Task" t0 WHERE t0."done" = 0 AND t0."priority" >= 4 ORDER BY t0."priority" ASC, t0."_pk" ASC LIMIT 21
sorted descending|/v1/objects/Task?where=done%20%3D%3D%20NO%20AND%20priority%20%3E%3D%204&sort=-priority&limit=20|SELECT t0."_pk" FROM "Task" t0 WHERE t0."done" = 0 AND t0."priority" >= 4 ORDER BY t0."priority" DESC, t0."_pk" ASC LIMIT 21
count|/v1/objects/Task?where=done%20%3D%3D%20NO%20AND%20priority%20%3E%3D%204&limit=1&count=true|SELECT count(*) FROM "Task" t0 WHERE t0."done" = 0 AND t0."priority" >= 4
aggregate|/v1/objects/Task/aggregate?select=priority,count()&where=done%20%3D%3D%20NO|SELECT t0."priority", count(*) FROM "Task" t0 WHERE t0."done" = 0 GROUP BY 1 ORDER BY 1 LIMIT 100
EOF
)

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

printf "| query | objects | HTTP ms | raw SQLite ms |\n|---|---:|---:|---:|\n"
for size in $SIZES; do
    store="$WORK/tasks-$size.sqlite"
    "$BIN" demo --store "$store" --tasks "$size" --batch 20000 >/dev/null
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    "$BIN" serve --demo --store "$store" --port "$port" --log-requests off >/dev/null 2>&1 &
    SERVER=$!
    for _ in $(seq 300); do curl -sf "http://127.0.0.1:$port/v1/readyz" >/dev/null && break; sleep 0.1; done
    mid=$((size / 2))
    while IFS='|' read -r name path sql; do
        path=${path//\{MID\}/$mid}
        sql=${sql//\{MID\}/$mid}
        curl -s -o /dev/null "http://127.0.0.1:$port$path"  # warm
        http=$(for _ in $(seq "$REPEAT"); do curl -s -o /dev/null -w '%{time_total}\n' "http://127.0.0.1:$port$path"; done | median)
        raw=$(python3 - "$store" "$sql" "$REPEAT" <<'PY'
import sqlite3, statistics, sys, time
db = sqlite3.connect(sys.argv[1])
times = []
for _ in range(int(sys.argv[3])):
    started = time.perf_counter()
    db.execute(sys.argv[2]).fetchall()
    times.append(time.perf_counter() - started)
print(statistics.median(times))
PY
)
        printf "| %s | %s | %.2f | %.2f |\n" "$name" "$size" "$(python3 -c "print($http * 1000)")" "$(python3 -c "print($raw * 1000)")"
    done <<< "$QUERIES"
    # The descending list's second page, after the first page's cursor (keyset pagination).
    first="/v1/objects/Task?where=done%20%3D%3D%20NO%20AND%20priority%20%3E%3D%204&sort=-priority&limit=20"
    cursor=$(curl -s "http://127.0.0.1:$port$first" | python3 -c 'import json, sys; print(json.load(sys.stdin)["next"])')
    http=$(for _ in $(seq "$REPEAT"); do curl -s -o /dev/null -w '%{time_total}\n' "http://127.0.0.1:$port$first&after=$cursor"; done | median)
    printf "| %s | %s | %.2f | - |\n" "sorted descending, page 2 (after=)" "$size" "$(python3 -c "print($http * 1000)")"
    kill "$SERVER"; wait "$SERVER" 2>/dev/null || true; SERVER=""
    rm -f "$store"*
done
