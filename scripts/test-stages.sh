#!/usr/bin/env bash
# `make test`: each stage given (`make STAGE`) in turn, and what each took, so that a CI log
# says where its minutes went.
#
# ThreadSanitizer's build (`make build-tsan`, a scratch folder of its own) runs in the
# background from the end of the SQLite run on, beside the stages after it, which leave some of
# the two cores idle (the PostgreSQL run waits on its server). Measured on 2026-12-07 the gain is
# small, since the machine is busy throughout (the PostgreSQL run took 145 s alone and 194-253 s
# beside the build), but it keeps the build off the end of the run. `make test-tsan` waits for
# it, then builds nothing more. On a failure the background build is stopped with the rest.
#
# Environment: MAKE (default make).
set -uo pipefail
MAKE=${MAKE:-make}
PREBUILD_AFTER=test-sqlite-store
prebuild_log=$(mktemp "${TMPDIR:-/tmp}/managedstore-tsan-build.XXXXXX")
prebuild=""

stop_prebuild() {
    # setsid made the build a process group of its own: stop all of it (make, swift-build, the compilers).
    [ -n "$prebuild" ] && kill -- "-$prebuild" 2>/dev/null
    rm -f "$prebuild_log"
}
trap stop_prebuild EXIT

started=$(date +%s)
for stage in "$@"; do
    begun=$(date +%s)
    if [ "$stage" = test-tsan ] && [ -n "$prebuild" ]; then
        wait "$prebuild"
        status=$?
        prebuild=""
        echo "=== make test: ThreadSanitizer's build, in the background since $PREBUILD_AFTER, exited $status after waiting $(( $(date +%s) - begun )) s for it"
        # A failed build is built again by the stage itself, which shows its errors in full.
        [ "$status" -eq 0 ] || tail -20 "$prebuild_log"
    fi
    "$MAKE" --no-print-directory "$stage" || exit 1
    echo "=== make test: $stage took $(( $(date +%s) - begun )) s"
    if [ "$stage" = "$PREBUILD_AFTER" ] && [[ " $* " == *" test-tsan "* ]]; then
        setsid "$MAKE" --no-print-directory build-tsan >"$prebuild_log" 2>&1 &
        prebuild=$!
    fi
done
echo "=== make test: every stage passed in $(( $(date +%s) - started )) s"
