#!/usr/bin/env python3
"""Fetches and a count whose predicate PostgreSQL leaves to the server's evaluator (CONTAINS[c])
over many tasks on one PostgreSQL store: each build's answer time and the server's peak memory
(VmHWM), one server at a time over the same seeded store, the builds alternating.

A throw-away PostgreSQL cluster on loopback (scripts/postgres-cluster.sh) holds the store,
seeded once by the first build's `demo`. Each round starts each build's server afresh (so its
peak memory is that round's), asks every query `--repeat` times and keeps the median time; the
answers must be the same for every build.

  Benchmarks/http/postgres_residual.py --config before=BIN --config now=BIN [--tasks 200000]
      [--rounds 2] [--repeat 3] [--json results.json]

Servers listen on 127.0.0.1 only; every request has a timeout.
"""
import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from alternate import ROOT, Process, free_port  # noqa: E402
from postgres_servers import CLUSTER, wait_ready  # noqa: E402

# The demo's titles are "Task N of run 1", N the key: "99 of" matches every hundredth task (a
# page fills within the first few thousand), "task 1999" only 111 of them, the 21st near the end.
QUERIES = [
    ("page, key order, common matches", {"where": 'title CONTAINS[c] "99 of"', "limit": "20"}),
    ("page, key order, rare matches", {"where": 'title CONTAINS[c] "task 1999"', "limit": "20"}),
    ("page, sorted", {"where": 'title CONTAINS[c] "5"', "sort": "-priority,title", "limit": "20"}),
    ("count", {"where": 'title CONTAINS[c] "7"', "count": "true", "limit": "1"}),
]


def peak_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def ask(base, params, timeout=600):
    url = f"{base}/v1/objects/Task?" + urllib.parse.urlencode(params)
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=timeout) as response:
        body = response.read()
        status = response.status
    elapsed = (time.perf_counter() - started) * 1000
    if status != 200:
        sys.exit(f"postgres_residual: {status} for {url}")
    return elapsed, hashlib.sha256(body).hexdigest()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", action="append", required=True, help="NAME=BINARY")
    parser.add_argument("--tasks", type=int, default=200000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json")
    args = parser.parse_args()
    configs = [tuple(c.split("=", 1)) for c in args.config]
    work = tempfile.mkdtemp(prefix="ms-pg-residual-")
    # A folder of its own: as root, the cluster's owner (postgres) must be able to reach it.
    cluster = tempfile.mkdtemp(prefix="ms-pg-residual-cluster-")
    uri = subprocess.run([CLUSTER, "start", cluster], capture_output=True, text=True, check=True).stdout.strip()
    try:
        subprocess.run([configs[0][1], "demo", "--store", uri, "--tasks", str(args.tasks), "--batch", "5000"],
                       check=True, capture_output=True, timeout=3600)
        results = {name: {"peak_mib": [], **{q: [] for q, _ in QUERIES}} for name, _ in configs}
        answers = {}
        for round_number in range(args.rounds):
            order = configs if round_number % 2 == 0 else list(reversed(configs))
            for name, binary in order:
                port = free_port()
                server = Process([binary, "serve", "--demo", "--store", uri, "--port", str(port), "--log-requests", "off",
                                  "--query-timeout", "600"], os.path.join(work, f"{name}.log"))
                try:
                    base = f"http://127.0.0.1:{port}"
                    wait_ready(base + "/v1/readyz")
                    for query, params in QUERIES:
                        times = []
                        for _ in range(args.repeat):
                            elapsed, digest = ask(base, params)
                            if answers.setdefault(query, digest) != digest:
                                sys.exit(f"postgres_residual: {name} answered {query} differently")
                            times.append(elapsed)
                        results[name][query].append(statistics.median(times))
                    results[name]["peak_mib"].append(peak_kib(server.process.pid) / 1024)
                finally:
                    server.stop()
                line = ", ".join(f"{q} {results[name][q][-1]:.1f} ms" for q, _ in QUERIES)
                print(f"round {round_number + 1}: {name}: {line}, peak {results[name]['peak_mib'][-1]:.1f} MiB", flush=True)
        print(f"\n{args.rounds} rounds, {args.tasks:,} tasks on one PostgreSQL store; medians of {args.repeat} asks, then of the rounds\n")
        print("| build | " + " | ".join(f"{q} ms" for q, _ in QUERIES) + " | server peak MiB |")
        print("|---|" + "---:|" * (len(QUERIES) + 1))
        for name, _ in configs:
            cells = [f"{statistics.median(results[name][q]):.1f}" for q, _ in QUERIES]
            print(f"| {name} | " + " | ".join(cells) + f" | {statistics.median(results[name]['peak_mib']):.1f} |")
        if args.json:
            with open(args.json, "w") as out:
                json.dump({"tasks": args.tasks, "rounds": args.rounds, "results": results}, out, indent=2)
    finally:
        subprocess.run([CLUSTER, "stop", cluster], capture_output=True)


if __name__ == "__main__":
    main()
