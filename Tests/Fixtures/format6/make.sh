#!/usr/bin/env bash
# How store.sqlite and changes.json were made (2026-12-07, by the release build of 49781ed, the
# last to write store format 6): every kind of change through the server, then the change feed
# with objects as that build answered it. A later build must open the store, upgrade it and
# answer the same (StoreFormat6FixtureTests).
#
#   Tests/Fixtures/format6/make.sh /path/to/managedstore-of-format-6 PORT
set -euo pipefail
binary=$1 port=$2 out=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
"$binary" serve --demo --store "$work/store.sqlite" --port "$port" --durability full --log-requests off >"$work/log" 2>&1 &
server=$!
sleep 2
M=http://127.0.0.1:$port
p() { curl -sf -X "$1" "$M$2" -H 'Content-Type: application/json' ${3:+-d "$3"} -o /dev/null; }
p POST /v1/objects/Project '{"name":"Garden"}'
p POST /v1/objects/Project '{"name":"House"}'
p POST /v1/objects/Tag '[{"label":"urgent"},{"label":"later"},{"label":"home"}]'
p POST /v1/objects/Task '[{"title":"Dig","priority":2,"project":"Project/1"},{"title":"Plant","priority":3,"project":"Project/1","tags":["Tag/1"]},{"title":"Water","priority":1},{"title":"Paint","priority":4,"project":"Project/2","tags":["Tag/2","Tag/3"]},{"title":"Sweep","priority":0}]'
p PATCH /v1/objects/Task/2 '{"priority":5,"title":"Plant roses"}'
p PUT /v1/objects/Task/3 '{"title":"Water daily","priority":2,"done":true}'
p DELETE /v1/objects/Task/5
p PATCH /v1/objects/Task/4 '{"tags":["Tag/1"]}'
p POST /v1/transactions '{"operations":[{"op":"insert","entity":"Tag","ref":"n","values":{"label":"new"}},{"op":"insert","entity":"Task","ref":"t","values":{"title":"Fence","priority":3,"project":"Project/2","tags":["n"]}},{"op":"insert","entity":"Task","values":{"title":"Gate","priority":1}},{"op":"update","object":"Task/1","version":1,"values":{"done":true}},{"op":"delete","object":"Tag/2","version":1}]}'
p POST /v1/objects/Task '{"title":"Mow","priority":2}'
p DELETE /v1/objects/Project/1
curl -sf "$M/v1/changes?since=0&limit=100&objects=true" >"$out/changes.json"
kill -TERM "$server"; wait "$server" || true
sqlite3 "$work/store.sqlite" 'PRAGMA wal_checkpoint(TRUNCATE);' >/dev/null
cp "$work/store.sqlite" "$out/store.sqlite"
