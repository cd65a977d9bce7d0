#!/usr/bin/env bash
# Run inside the image by `make docker-check` (scripts/docker-check.sh), as the image's user:
# starts the server as the image would (0.0.0.0, no tokens file: it makes /data/tokens.json and
# prints an admin token once), waits for `managedstore healthcheck`, writes one object and reads
# it back over HTTP with bash's /dev/tcp (the image has no curl), then stops it with SIGTERM
# and expects exit 0.
set -euo pipefail
# Not the image's 8080: the build shares the host's network, where 8080 may be taken.
export MANAGEDSTORE_PORT=${SMOKE_PORT:-18089}
store=/data/smoke/store.sqlite
log=/tmp/smoke-serve.log
echo "smoke: as $(id -un) (uid $(id -u)), store $store, port $MANAGEDSTORE_PORT"
managedstore serve --demo --store "$store" 2>"$log" >/dev/null &
server=$!
for _ in $(seq 1 150); do
  managedstore healthcheck 2>/dev/null && break
  kill -0 "$server" 2>/dev/null || { echo "smoke: the server exited"; cat "$log"; exit 1; }
  sleep 0.2
done
managedstore healthcheck
echo "smoke: ready"
token=$(grep -A1 "shown this once" "$log" | tail -1 | tr -d ' ')
[ -n "$token" ] || { echo "smoke: no admin token in the log"; cat "$log"; exit 1; }

# request METHOD PATH [BODY]: the whole answer, headers and body; with the admin token when
# $auth is set.
auth=""
request() {
  local body=${3:-}
  exec 3<>"/dev/tcp/127.0.0.1/$MANAGEDSTORE_PORT"
  printf '%s %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n%sContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s' \
    "$1" "$2" "$auth" "${#body}" "$body" >&3
  cat <&3
  exec 3<&-
}

unauthorized=$(request GET /v1/objects/Project | head -1 | tr -d '\r')
echo "smoke: without the token: $unauthorized"
echo "$unauthorized" | grep -q " 401 " || { echo "smoke: expected 401 without the token"; exit 1; }
auth="Authorization: Bearer $token"$'\r\n'
written=$(request POST /v1/objects/Project '{"name": "From the container"}')
echo "$written" | head -1 | grep -q " 201 " || { echo "smoke: the write failed:"; echo "$written"; exit 1; }
echo "smoke: write: $(echo "$written" | head -1 | tr -d '\r')"
read=$(request GET /v1/objects/Project/1)
echo "$read" | grep -q '"name":"From the container"' || { echo "smoke: the read failed:"; echo "$read"; exit 1; }
echo "smoke: read: $(echo "$read" | head -1 | tr -d '\r'), $(echo "$read" | tail -1)"
kill -TERM "$server"
status=0
wait "$server" || status=$?
echo "smoke: stopped with exit status $status"
echo "smoke: the server's log:"
sed 's/^  [A-Za-z0-9_-]\{20,\}$/  <the admin token>/' "$log"
rm -rf /data/smoke
[ "$status" -eq 0 ]
