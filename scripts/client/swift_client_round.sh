#!/usr/bin/env bash
# The Swift client generated from the served documents (`make test-swift-client`, part of `make
# test`): starts `managedstore serve` on the demo model and on Tests/Models/catalog.json (every
# attribute type, a to-many relationship), writes each served /v1/openapi.yaml into its client
# target, builds scripts/client/swift with Apple's swift-openapi-generator, fails on any warning
# the generator prints (for those documents and the other test models', Tests/Models/*.json),
# and runs the round (scripts/client/swift/Sources/client-round).
#
# Environment: MANAGEDSTORE_BIN (default .build/debug/managedstore), SWIFT (default swift),
# SWIFT_BUILD_FLAGS (more `swift build` arguments).
set -euo pipefail
cd "$(dirname "$0")/../.."

BIN=${MANAGEDSTORE_BIN:-.build/debug/managedstore}
SWIFT=${SWIFT:-swift}
read -r -a build_flags <<<"${SWIFT_BUILD_FLAGS:-}"
PACKAGE=scripts/client/swift
[ -x "$BIN" ] || { echo "swift client: no $BIN: run \`swift build --product managedstore\` first" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/managedstore-swift-client.XXXXXX")
# The servers' process IDs go into a file, not a variable: `start` runs inside $(...), a
# subshell whose variables the EXIT trap never sees (the servers outlived the script so).
cleanup() {
    if [ -f "$work/pids" ]; then
        while read -r pid; do kill "$pid" 2>/dev/null || true; done <"$work/pids"
        # Each gets 15 s to stop cleanly (a server stops within its 10 s), then is killed.
        while read -r pid; do
            for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
            kill -9 "$pid" 2>/dev/null || true
        done <"$work/pids"
    fi
    rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# start NAME ARGS...: a server on a free port; prints its base URL once /v1/readyz answers.
start() {
    local name=$1 port
    shift
    port=$(free_port)
    "$BIN" serve "$@" --store :memory: --port "$port" >"$work/$name.out" 2>"$work/$name.err" &
    echo $! >>"$work/pids"
    for _ in $(seq 1 200); do
        if curl -sf "http://127.0.0.1:$port/v1/readyz" >/dev/null 2>&1; then
            echo "http://127.0.0.1:$port"
            return 0
        fi
        sleep 0.05
    done
    echo "swift client: the $name server did not get ready; its stderr:" >&2
    cat "$work/$name.err" >&2
    return 1
}

tracker=$(start tracker --demo)
catalog=$(start catalog --model Tests/Models/catalog.json)

# The documents the servers serve, as a user would fetch them. Written only when they changed,
# so that an unchanged document does not make the generator run again.
refresh() {
    local url=$1 target=$2
    curl -sf "$url/v1/openapi.yaml" -o "$work/openapi.yaml"
    cmp -s "$work/openapi.yaml" "$target" || cp "$work/openapi.yaml" "$target"
}
refresh "$tracker" "$PACKAGE/Sources/TrackerClient/openapi.yaml"
refresh "$catalog" "$PACKAGE/Sources/CatalogClient/openapi.yaml"

started=$(date +%s)
status=0
"$SWIFT" build "${build_flags[@]}" --package-path "$PACKAGE" >"$work/build.log" 2>&1 || status=$?
echo "swift client: the client package built in $(( $(date +%s) - started ))s (status $status)"
if [ "$status" -ne 0 ]; then
    grep -E "error|warning" "$work/build.log" | head -60 >&2
    exit 1
fi
# The generator's own diagnostics ("warning: Schema ... is not supported ... [context: ...]")
# start a line or carry a context; the compiler's name a Swift file, and the generated code's
# unused-import warnings are the generator's style, not a schema it skipped.
generator_warnings() { grep -E "^warning: |warning: .*\[context: " "$work/build.log" | sort -u; }
if [ -n "$(generator_warnings)" ]; then
    echo "swift client: swift-openapi-generator warned about the served documents:" >&2
    generator_warnings >&2
    exit 1
fi

# The other test models' documents through the generator built above (types and client, not
# compiled): no warning either.
generator=$(find "$PACKAGE/.build" -type f -perm -u+x -name swift-openapi-generator-tool -path "*debug*" | head -1)
[ -n "$generator" ] || { echo "swift client: no swift-openapi-generator under $PACKAGE/.build" >&2; exit 1; }
for model in Tests/Models/*.json; do
    name=$(basename "$model" .json)
    [ "$name" = catalog ] && continue
    url=$(start "$name" --model "$model")
    mkdir -p "$work/$name"
    curl -sf "$url/v1/openapi.yaml" -o "$work/$name/openapi.yaml"
    cp "$PACKAGE/Sources/TrackerClient/openapi-generator-config.yaml" "$work/$name/"
    "$generator" generate "$work/$name/openapi.yaml" --config "$work/$name/openapi-generator-config.yaml" \
        --output-directory "$work/$name/out" >"$work/$name/generate.log" 2>&1 || { cat "$work/$name/generate.log" >&2; exit 1; }
    if grep -qiE "warning" "$work/$name/generate.log"; then
        echo "swift client: swift-openapi-generator warned about the $name model's document:" >&2
        grep -iE "warning" "$work/$name/generate.log" | sort -u >&2
        exit 1
    fi
    echo "swift client: the $name model's document generates without a warning"
done

"$PACKAGE/.build/debug/client-round" "$tracker" "$catalog"
