#!/usr/bin/env bash
# `swift test` with its arguments, and on failure the failing tests repeated at the end:
# a CI log is often read from its tail, where the test run's one-line verdict names no test.
set -uo pipefail
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"${SWIFT:-swift}" test "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
if [ "$status" -ne 0 ]; then
    echo
    echo "=== what failed (repeated from above) ==="
    # swift-testing: an issue and the lines that explain it; XCTest and the compiler: "error:".
    grep -E -A14 "^✘ Test .* recorded an issue" "$log" | grep -v "^◇" | cut -c1-600 | head -120
    grep -E "(: error: |error: fatalError|Fatal error)" "$log" | cut -c1-600 | head -20
    echo "=== swift test exited with $status ==="
fi
exit "$status"
