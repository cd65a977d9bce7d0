#!/usr/bin/env bash
# A throw-away PostgreSQL cluster on loopback, for the tests and the benchmarks:
#   scripts/postgres-cluster.sh start DIR   creates and starts one in DIR, prints its URI (also in DIR/uri)
#   scripts/postgres-cluster.sh stop DIR    stops it and removes DIR
# Uses initdb and pg_ctl from Debian's postgresql package (scripts/install-deps.sh installs it).
# PostgreSQL refuses to run as root: as root, the cluster belongs to the postgres user (made by
# the package) and its programs run as that user. POSTGRES_FSYNC=on keeps fsync on (the
# benchmarks); the tests turn it off, since the cluster is thrown away.
set -euo pipefail

bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -n "$bin" ] || { echo "postgres-cluster: no PostgreSQL server programs (apt-get install postgresql)" >&2; exit 1; }
command=${1:?start or stop}
dir=${2:?a directory}

as_owner() {
    if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "$command" in
start)
    mkdir -p "$dir"
    [ "$(id -u)" -ne 0 ] || chown postgres "$dir"
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    as_owner "$bin/initdb" -D "$dir/data" -U managedstore --auth=trust -E UTF8 --no-locale >"$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log" >&2; exit 1; }
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=500 -c fsync=${POSTGRES_FSYNC:-off}" start >/dev/null \
        || { cat "$dir/server.log" >&2; exit 1; }
    as_owner "$bin/createdb" -h 127.0.0.1 -p "$port" -U managedstore managedstore
    echo "postgres://managedstore@127.0.0.1:$port/managedstore" | tee "$dir/uri"
    ;;
stop)
    if [ -d "$dir/data" ]; then as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true; fi
    rm -rf "$dir"
    ;;
*)
    echo "postgres-cluster: start or stop, not $command" >&2
    exit 2
    ;;
esac
