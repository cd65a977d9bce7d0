#!/usr/bin/env python3
"""An NDJSON import (one POST of --rows tasks, committed in chunks of 1000 lines) into a new
PostgreSQL store and into a new SQLite store, per build, in alternating rounds: each build's
rows a second on each store and the PostgreSQL / SQLite ratio of the same round.

A throw-away cluster on loopback (scripts/postgres-cluster.sh, fsync on) holds a new schema a
round and build; the SQLite store is a new file with --durability full, as a 2xx is as durable
on both.

  Benchmarks/http/postgres_import.py --config before=BIN --config now=BIN [--rows 200000] [--rounds 3]

Servers listen on 127.0.0.1 only; every upload has a timeout.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from alternate import Process, free_port  # noqa: E402
from postgres_servers import CLUSTER, wait_ready  # noqa: E402


def write_rows(path, rows):
    with open(path, "w") as out:
        for n in range(rows):
            out.write(json.dumps({"title": f"Imported task {n} \"quoted\" \\ {{braces}}, NULL", "priority": n % 6,
                                  "done": n % 3 == 0, "estimate": (n % 8) * 0.5}) + "\n")


def imported(binary, store, rows_path, log, rows):
    """Rows a second of one import into `store` (a new one)."""
    port = free_port()
    server = Process([binary, "serve", "--demo", "--store", store, "--port", str(port), "--durability", "full", "--log-requests", "off"], log)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_ready(base + "/v1/readyz")
        started = time.perf_counter()
        out = subprocess.run(["curl", "-s", "-X", "POST", base + "/v1/objects/Task", "-H", "Content-Type: application/x-ndjson",
                              "--data-binary", "@" + rows_path], capture_output=True, text=True, timeout=1800).stdout
        elapsed = time.perf_counter() - started
        if f'"count":{rows}' not in out.replace(" ", ""):
            sys.exit(f"postgres_import: the import did not store every row: {out[:300]}")
        return rows / elapsed
    finally:
        server.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", action="append", required=True, help="NAME=BINARY")
    parser.add_argument("--rows", type=int, default=200000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    configs = [tuple(c.split("=", 1)) for c in args.config]
    work = tempfile.mkdtemp(prefix="ms-pg-import-")
    rows_path = os.path.join(work, "tasks.ndjson")
    write_rows(rows_path, args.rows)
    # A folder of its own: as root, the cluster's owner (postgres) must be able to reach it.
    cluster = tempfile.mkdtemp(prefix="ms-pg-import-cluster-")
    env = dict(os.environ, POSTGRES_FSYNC="on")
    uri = subprocess.run([CLUSTER, "start", cluster], capture_output=True, text=True, env=env, check=True).stdout.strip()
    results = {name: {"postgres": [], "sqlite": [], "ratio": []} for name, _ in configs}
    try:
        for round_number in range(args.rounds):
            order = configs if round_number % 2 == 0 else list(reversed(configs))
            for name, binary in order:
                schema = f"import_{name}_{round_number}".replace("-", "_")
                subprocess.run(["psql", uri, "-qc", f"CREATE SCHEMA {schema}"], check=True, capture_output=True)
                pg = imported(binary, f"{uri}?options=-csearch_path%3D{schema}", rows_path, os.path.join(work, f"{schema}.log"), args.rows)
                sqlite = imported(binary, os.path.join(work, f"{schema}.sqlite"), rows_path, os.path.join(work, f"{schema}-sqlite.log"), args.rows)
                results[name]["postgres"].append(pg)
                results[name]["sqlite"].append(sqlite)
                results[name]["ratio"].append(pg / sqlite)
                print(f"round {round_number + 1}: {name}: PostgreSQL {pg:,.0f} rows/s, SQLite {sqlite:,.0f} rows/s, ratio {pg / sqlite:.3f}", flush=True)
    finally:
        subprocess.run([CLUSTER, "stop", cluster], capture_output=True)
    print(f"\n{args.rounds} alternating rounds, an NDJSON import of {args.rows:,} tasks each; medians\n")
    print("| build | PostgreSQL rows/s | SQLite rows/s | PostgreSQL / SQLite |")
    print("|---|---:|---:|---:|")
    for name, _ in configs:
        r = results[name]
        print(f"| {name} | {statistics.median(r['postgres']):,.0f} | {statistics.median(r['sqlite']):,.0f} | {statistics.median(r['ratio']):.3f} |")


if __name__ == "__main__":
    main()
