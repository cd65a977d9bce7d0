#!/usr/bin/env bash
# Installs what building and testing ManagedStore needs on a fresh Debian machine, and does
# nothing (quickly) when it is already there. Used by `make run`, `make test` and CI.
set -euo pipefail

need=()
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
if command -v pkg-config >/dev/null 2>&1; then
    pkg-config --exists sqlite3 || need+=(libsqlite3-dev)
    pkg-config --exists libmicrohttpd || need+=(libmicrohttpd-dev)
    pkg-config --exists libpq || need+=(libpq-dev)
    pkg-config --exists libcrypto || need+=(libssl-dev)
else
    need+=(libsqlite3-dev libmicrohttpd-dev libpq-dev libssl-dev)
fi
# The stock sqlite3 tool: the tests check that store files stay readable by plain SQLite, and
# the fuzzer (make test-fuzz) checks the live store with it.
command -v sqlite3 >/dev/null 2>&1 || need+=(sqlite3)
# curl: the README's examples, and the client rounds start servers and fetch their documents with it.
command -v curl >/dev/null 2>&1 || need+=(curl)
# PostgreSQL's server programs: make test runs the store-independent suites on a throw-away
# cluster too (scripts/postgres-cluster.sh).
[ -x "$(ls /usr/lib/postgresql/*/bin/initdb 2>/dev/null | head -1)" ] || need+=(postgresql)
for extra in "$@"; do
    command -v "$extra" >/dev/null 2>&1 || need+=("$extra")
done

if [ ${#need[@]} -eq 0 ]; then
    exit 0
fi

echo "installing: ${need[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "need root (or sudo) to install: ${need[*]}" >&2; exit 1; }
    sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq "${need[@]}" >/dev/null
