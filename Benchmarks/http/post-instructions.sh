#!/usr/bin/env bash
# User-space instructions per POST insert, counted by callgrind on the real server
# (Benchmarks' server-profile, --durability full) under wrk -t1 -c16. The count covers the
# front end (libmicrohttpd, parsing) and the write queue (save, group commit); it moves a little
# with the group sizes the load makes, so compare runs of the same command.
#
#   Benchmarks/http/post-instructions.sh [SECONDS]     (default 8; needs valgrind, wrk)
#
# SCRIPT=patch_ifmatch.lua counts PATCHes instead; SERVER_FLAGS=--no-history without history.
# KEEP=dir keeps the callgrind files (dir/post.1) for callgrind_annotate. SERVER_PROFILE=path
# measures that server-profile binary (another build) instead of building this one's.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
SECONDS_RUN="${1:-8}"
if [[ -n "${KEEP:-}" ]]; then out="$KEEP"; mkdir -p "$out"; else out=$(mktemp -d); trap 'rm -rf "$out"' EXIT; fi
PROFILE=${SERVER_PROFILE:-Benchmarks/.build/release/server-profile}
[[ -n "${SERVER_PROFILE:-}" ]] || (cd Benchmarks && swift build -c release --product server-profile >/dev/null)
swift build -c release --product managedstore >/dev/null
"$ROOT/.build/release/managedstore" demo --store "$out/store.sqlite" --tasks 100000 --batch 10000 >/dev/null

port=18131
SCRIPT="Benchmarks/http/${SCRIPT:-post_insert.lua}"
export TASKS=100000 WRK_THREADS=1
valgrind --tool=callgrind --callgrind-out-file="$out/post" "$PROFILE" "$out/store.sqlite" $port 3600 ${SERVER_FLAGS:-} \
    >/dev/null 2>"$out/post.log" & pid=$!
for _ in $(seq 1 150); do curl -s -o /dev/null "http://127.0.0.1:$port/v1/readyz" && break; sleep 0.2; done
wrk -t1 -c16 -d2s -s "$SCRIPT" "http://127.0.0.1:$port" >/dev/null  # warm up, not counted
callgrind_control -z "$pid" >/dev/null
requests=$(wrk -t1 -c16 -d"${SECONDS_RUN}s" -s "$SCRIPT" "http://127.0.0.1:$port" | awk '/requests in/ {print $1}')
callgrind_control -d "$pid" >/dev/null
kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true
total=$(awk '/^(summary|totals):/ {print $2; exit}' "$out/post.1")
python3 -c "print(f'$(basename "$SCRIPT" .lua) ${SERVER_FLAGS:-}: {$total / $requests / 1000:.1f}k instructions per request ({$requests} requests)')"
