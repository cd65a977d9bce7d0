#!/usr/bin/env bash
# The README's EventSource lines, run (part of `make test-live`): a server on a free loopback
# port with three tasks, the README's ```js block under node (skipped when node is absent).
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${MANAGEDSTORE:-.build/debug/managedstore}
command -v node >/dev/null || { echo "readme eventsource: no node here, skipped"; exit 0; }
work=$(mktemp -d "${TMPDIR:-/tmp}/managedstore-readme-js.XXXXXX")
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$BIN" serve --demo --store :memory: --port "$port" >"$work/log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$work"' EXIT
base="http://127.0.0.1:$port"
for _ in $(seq 1 100); do curl -sf "$base/v1/readyz" >/dev/null && break; sleep 0.1; done
for title in a b c; do
    curl -sf -X POST "$base/v1/objects/Task" -H 'Content-Type: application/json' -d "{\"title\": \"$title\", \"priority\": 1}" >/dev/null
done
python3 -c 'import re, sys; print(re.search(r"```js\n(.*?)```", open("README.md").read(), re.S).group(1))' >"$work/lines.js"
timeout 30 node scripts/live/readme_eventsource.mjs "$base" "$work/lines.js" | tail -1
