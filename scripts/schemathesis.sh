#!/usr/bin/env bash
# Schemathesis against the OpenAPI document the server itself serves (/v1/openapi.json): starts
# `managedstore serve --demo --store :memory:` on a free port, runs `st run` with a fixed seed and
# a bounded number of examples per operation, and fails on a server error, an answer the
# document does not describe, or a crash of the server. `make test-schemathesis` runs it.
#
# Environment: MANAGEDSTORE_BIN (default .build/debug/managedstore), ST_SEED (default 1),
# ST_MAX_EXAMPLES (default 50), ST_TIMEOUT (wall-clock bound in seconds, default 300),
# ST_EXTRA (more arguments for `st run`, e.g. "--include-path /v1/transactions"), ST_MODEL (the
# model arguments of `serve`, default --demo; e.g. "--model Tests/CoreDataModels/Notebook.xcdatamodeld"
# for fetch request templates, fetched properties, transients and Transformables, or
# "--model ../shared/coredata-models/Moody.xcdatamodeld" for a model with inheritance).
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${MANAGEDSTORE_BIN:-.build/debug/managedstore}
SEED=${ST_SEED:-1}
EXAMPLES=${ST_MAX_EXAMPLES:-50}
LIMIT=${ST_TIMEOUT:-300}
[ -x "$BIN" ] || { echo "schemathesis: no $BIN: run \`swift build --product managedstore\` first" >&2; exit 2; }
python3 -c "import schemathesis" 2>/dev/null || { echo "schemathesis: pip install schemathesis (make test-schemathesis does)" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/managedstore-schemathesis.XXXXXX")
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# shellcheck disable=SC2086  # ST_MODEL is split into arguments on purpose.
"$BIN" serve ${ST_MODEL:---demo} --store :memory: --port "$port" >"$work/stdout.txt" 2>"$work/stderr.txt" &
server=$!
cleanup() {
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
}
trap cleanup EXIT

base="http://127.0.0.1:$port"
python3 - "$base" <<'EOF'
import sys, time, urllib.request
for _ in range(300):
    try:
        if urllib.request.urlopen(sys.argv[1] + "/v1/readyz", timeout=2).status == 200:
            sys.exit(0)
    except OSError:
        time.sleep(0.1)
sys.exit("schemathesis: the server was not ready (/v1/readyz)")
EOF

# Checks: all of them, the positive-data check too (ST202: a request the served document calls
# valid must not be refused). What no schema can say is refused anyway (a reused Idempotency-Key,
# an object that does not exist, a predicate that does not parse...): scripts/schemathesis_triage.py
# reads the JUnit report, counts those by kind, and fails the run on anything else.
echo "schemathesis: $base/v1/openapi.json, seed $SEED, at most $EXAMPLES examples per operation, ${LIMIT}s at most"
status=0
config="$PWD/scripts/schemathesis.toml"
triage="$PWD/scripts/schemathesis_triage.py"
# The live queries' streams (/v1/objects/{Entity}/live) are left out: a 200 never ends, and
# schemathesis reads each answer whole. Their parameters are those of a fetch, which it covers;
# the streams themselves are checked by scripts/live/live_walk.py (`make test-live`).
# Run in the work dir: schemathesis keeps a cache of past failures (.schemathesis/) and hypothesis
# its data (.hypothesis/) in the current directory; a cache left in the tree would replay old
# failures first and make runs differ.
cd "$work"
timeout --signal=INT --kill-after=10 "$LIMIT" python3 -c 'import sys; from schemathesis.cli import schemathesis; sys.exit(schemathesis(prog_name="st"))' \
    --config-file "$config" run "$base/v1/openapi.json" --url "$base" \
    --checks all \
    --exclude-path-regex '/live$' \
    --max-examples "$EXAMPLES" --seed "$SEED" --workers 1 --generation-database none --no-color \
    --report junit --report-dir "$work/report" ${ST_EXTRA:-} || status=$?
if [ "$status" = 124 ] || [ "$status" = 130 ]; then
    echo "schemathesis: stopped after ${LIMIT}s (ST_TIMEOUT)" >&2
elif [ "$status" = 1 ]; then
    # Failures: fine only when each is one that no schema can say.
    report=$(ls "$work"/report/*.xml 2>/dev/null | head -1)
    if [ -n "$report" ] && python3 "$triage" "$report"; then
        status=0
    fi
elif [ "$status" = 0 ]; then
    report=$(ls "$work"/report/*.xml 2>/dev/null | head -1)
    [ -z "$report" ] || python3 "$triage" "$report" || status=1
fi

if ! kill -0 "$server" 2>/dev/null || grep -qE "Fatal error|Program crashed|Precondition failed" "$work/stderr.txt"; then
    echo "schemathesis: the server crashed; its stderr:" >&2
    grep -E -A12 "Fatal error|Program crashed|Precondition failed" "$work/stderr.txt" | head -60 >&2 || tail -40 "$work/stderr.txt" >&2
    status=1
fi
if [ "$status" = 0 ]; then
    cd / && rm -rf "$work"
else
    echo "schemathesis: failed (status $status); server logs and the JUnit report in $work" >&2
fi
exit "$status"
