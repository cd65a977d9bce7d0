#!/usr/bin/env bash
# User-space instructions per request, counted by callgrind, for (1) the C ceiling and (2) GET
# by key on the real server (Benchmarks' server-profile), each under a light wrk load. Counts do
# not move with the machine's load, unlike req/s; kernel time (TCP) is not counted.
#
#   Benchmarks/http/instructions.sh [SECONDS]     (default 8; needs valgrind, wrk, gcc)
#
# KEEP=dir keeps the callgrind files (dir/ceiling, dir/get) for callgrind_annotate.
# SERVER_PROFILE=path measures that server-profile binary (another build) instead of building
# this one's; SERVER_FLAGS adds its flags (--log-requests off). SCRIPT=fetch_where.lua counts
# another wrk script's requests instead of get_random.lua's (GET by key).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
SECONDS_RUN="${1:-8}"
export TASKS=${TASKS:-100000}
if [[ -n "${KEEP:-}" ]]; then out="$KEEP"; mkdir -p "$out"; else out=$(mktemp -d); trap 'rm -rf "$out"' EXIT; fi
PROFILE=${SERVER_PROFILE:-$ROOT/Benchmarks/.build/release/server-profile}
[[ -n "${SERVER_PROFILE:-}" ]] || (cd Benchmarks && swift build -c release --product server-profile >/dev/null)
swift build -c release --product managedstore >/dev/null
gcc -O2 -o "$out/ceiling-server" Benchmarks/http/ceiling.c $(pkg-config --cflags --libs libmicrohttpd)
"$ROOT/.build/release/managedstore" demo --store "$out/store.sqlite" --tasks "$TASKS" --batch 10000 >/dev/null

# measure NAME PORT URL [wrk options] -- COMMAND...: requests and instructions of one server.
measure() {
  local name=$1 port=$2 url=$3; shift 3
  local options=(); while [[ $1 != -- ]]; do options+=("$1"); shift; done; shift
  valgrind --tool=callgrind --callgrind-out-file="$out/$name" "$@" >/dev/null 2>"$out/$name.log" & local pid=$!
  for _ in $(seq 1 150); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.2; done
  wrk -t1 -c4 -d2s "${options[@]}" "$url" >/dev/null  # warm up, not counted
  callgrind_control -z "$pid" >/dev/null
  local requests; requests=$(wrk -t1 -c4 -d"${SECONDS_RUN}s" "${options[@]}" "$url" | awk '/requests in/ {print $1}')
  callgrind_control -d "$pid" >/dev/null
  kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true
  local dump="$out/$name.1"  # the dump taken right after the measured run
  local total; total=$(awk '/^(summary|totals):/ {print $2; exit}' "$dump")
  echo "$name $requests $total"
}
read -r _ cn ct < <(measure ceiling 18120 http://127.0.0.1:18120/ -- "$out/ceiling-server" 18120 4)
read -r _ gn gt < <(measure get 18121 http://127.0.0.1:18121 -s "Benchmarks/http/${SCRIPT:-get_random.lua}" -- \
    "$PROFILE" "$out/store.sqlite" 18121 3600 ${SERVER_FLAGS:-})
python3 - "$cn" "$ct" "$gn" "$gt" "${SCRIPT:-get_random.lua (GET by key)}" <<'PY'
import sys
cn, ct, gn, gt = map(int, sys.argv[1:5])
c, g = ct / cn, gt / gn
print(f"(1) ceiling: {c / 1000:.1f}k instructions per request ({cn} requests)")
print(f"(2) {sys.argv[5]}: {g / 1000:.1f}k instructions per request ({gn} requests)")
print(f"ceiling / GET = {c / g:.2f} (user space only)")
PY
