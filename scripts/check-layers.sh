#!/usr/bin/env bash
# `make test-layers`: each of the package's library targets built alone, with SwiftPM's check
# that a target imports only the targets it declares. Without the check a target may import any
# module already built beside it (SwiftPM puts them all on one search path): the server could
# name the SQLite store although its manifest says it depends on the core alone. With it, that
# import is an error.
#
# After `make test-sqlite-store` (same flags) the targets are built already: this takes seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
for target in ManagedStoreCore ManagedStoreSQLite ManagedStorePostgreSQL ManagedStore ManagedStoreHTTP ManagedStoreOpenAPI \
              ManagedStoreServer ManagedStoreCodegen; do
    if ! out=$("${SWIFT:-swift}" build --target "$target" --explicit-target-dependency-import-check error 2>&1); then
        echo "$out" | grep -E "error" | head -20
        echo "check-layers: $target imports what it does not declare, or does not build alone"
        exit 1
    fi
    echo "check-layers: $target builds alone, importing only what it declares"
done
