#!/usr/bin/env python3
"""A count, an aggregate and fetches over many tasks on one PostgreSQL store: the server's answer
time beside PostgreSQL's own time for the same SQL (psql's \\timing, the query alone, no client
work), and the server's peak memory (VmHWM) after all of them.

A throw-away cluster on loopback (scripts/postgres-cluster.sh) holds the store, seeded by the
build's `demo`. Each query is asked `--repeat` times of each side, alternating, and the medians
are compared: the ratio is server / PostgreSQL (1.0: the server adds nothing).

  Benchmarks/http/postgres_queries.py --binary BIN [--tasks 200000] [--repeat 5] [--json out.json]

Servers listen on 127.0.0.1 only; every request has a timeout.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from alternate import Process, free_port  # noqa: E402
from postgres_servers import CLUSTER, wait_ready  # noqa: E402
from postgres_residual import peak_kib  # noqa: E402

# (name, HTTP path and query, PostgreSQL's own SQL for the same answer). The demo's titles are
# "Task N of run 1"; done is every third task, priority N % 6, estimate (N % 8) / 2.
QUERIES = [
    ("count", "/v1/objects/Task?" + urllib.parse.urlencode({"where": "done == NO AND priority >= 2", "count": "true", "limit": "1"}),
     'SELECT count(*) FROM "Task" WHERE done = false AND priority >= 2'),
    ("aggregate", "/v1/objects/Task/aggregate?" + urllib.parse.urlencode(
        {"select": "priority,n:count(),total:estimate.sum(),mean:estimate.avg(),first:due.min()", "where": "done == NO"}),
     'SELECT priority, count(*), sum(estimate), avg(estimate), min(due) FROM "Task" WHERE done = false GROUP BY priority ORDER BY priority'),
    ("sorted page", "/v1/objects/Task?" + urllib.parse.urlencode({"where": "priority == 3", "sort": "-estimate", "limit": "20"}),
     'SELECT * FROM "Task" WHERE priority = 3 ORDER BY estimate DESC NULLS LAST, _pk LIMIT 20'),
    ("CONTAINS[c] page", "/v1/objects/Task?" + urllib.parse.urlencode({"where": 'title CONTAINS[c] "task 1999"', "limit": "20"}),
     """SELECT * FROM "Task" WHERE title ILIKE '%task 1999%' ORDER BY _pk LIMIT 20"""),
]


def ask_server(base, path, timeout=900):
    started = time.perf_counter()
    with urllib.request.urlopen(base + path, timeout=timeout) as response:
        response.read()
        if response.status != 200:
            sys.exit(f"postgres_queries: {response.status} for {path}")
    return (time.perf_counter() - started) * 1000


def ask_postgres(uri, sql):
    out = subprocess.run(["psql", uri, "-X", "-At", "-c", "\\timing on", "-c", sql], capture_output=True, text=True, check=True, timeout=900).stdout
    times = re.findall(r"^Time: ([0-9.]+) ms", out, re.MULTILINE)
    if not times:
        sys.exit(f"postgres_queries: no timing from psql for {sql}: {out[-300:]}")
    return float(times[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", required=True)
    parser.add_argument("--tasks", type=int, default=200000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="ms-pg-queries-")
    # A folder of its own: as root, the cluster's owner (postgres) must be able to reach it.
    cluster = tempfile.mkdtemp(prefix="ms-pg-queries-cluster-")
    uri = subprocess.run([CLUSTER, "start", cluster], capture_output=True, text=True, check=True).stdout.strip()
    try:
        started = time.perf_counter()
        subprocess.run([args.binary, "demo", "--store", uri, "--tasks", str(args.tasks), "--batch", "5000"],
                       check=True, capture_output=True, timeout=7200)
        print(f"seeded {args.tasks:,} tasks in {time.perf_counter() - started:.0f} s", flush=True)
        subprocess.run(["psql", uri, "-X", "-q", "-c", "VACUUM ANALYZE"], check=True, capture_output=True)
        port = free_port()
        server = Process([args.binary, "serve", "--demo", "--store", uri, "--port", str(port), "--log-requests", "off",
                          "--query-timeout", "900"], os.path.join(work, "server.log"))
        results = {}
        try:
            base = f"http://127.0.0.1:{port}"
            wait_ready(base + "/v1/readyz")
            for name, path, sql in QUERIES:
                ours, theirs = [], []
                for _ in range(args.repeat):
                    ours.append(ask_server(base, path))
                    theirs.append(ask_postgres(uri, sql))
                results[name] = {"server_ms": statistics.median(ours), "postgres_ms": statistics.median(theirs)}
                print(f"{name}: server {results[name]['server_ms']:.1f} ms, PostgreSQL {results[name]['postgres_ms']:.1f} ms", flush=True)
            peak = peak_kib(server.process.pid) / 1024
        finally:
            server.stop()
        print(f"\n{args.tasks:,} tasks on one PostgreSQL store; medians of {args.repeat} asks each side\n")
        print("| query | server ms | PostgreSQL's SQL ms | server / PostgreSQL |")
        print("|---|---:|---:|---:|")
        for name, _, _ in QUERIES:
            r = results[name]
            print(f"| {name} | {r['server_ms']:.1f} | {r['postgres_ms']:.1f} | {r['server_ms'] / max(r['postgres_ms'], 0.001):.2f} |")
        print(f"\nserver peak memory: {peak:.1f} MiB")
        if args.json:
            with open(args.json, "w") as out:
                json.dump({"tasks": args.tasks, "repeat": args.repeat, "results": results, "peak_mib": peak}, out, indent=2)
    finally:
        subprocess.run([CLUSTER, "stop", cluster], capture_output=True)


if __name__ == "__main__":
    main()
