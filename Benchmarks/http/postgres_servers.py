#!/usr/bin/env python3
"""GET by key and POST insert on 1, 2 and 3 servers over one PostgreSQL database, beside one
server on an SQLite file and beside pgbench on the same cluster (16 clients, prepared: select by
key, and a one-row INSERT a transaction), in alternating rounds on this machine.

A throw-away PostgreSQL cluster on loopback (scripts/postgres-cluster.sh, fsync on: a 2xx write
is as durable as SQLite's --durability full) holds one seeded store per configuration. Every
round runs each configuration once, the order turning; N servers are driven by N wrk processes
at once (64 connections in all, split among them), and their rates are added up. The report
gives each configuration's median rate and its median ratio to SQLite in the same round.

  Benchmarks/http/postgres_servers.py [--binary .build/release/managedstore] [--rounds 3]
      [--seconds 5] [--tasks 20000] [--json results.json]

Servers listen on 127.0.0.1 only; every run is bounded in time.
"""
import argparse
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from alternate import HTTP, ROOT, Process, free_port  # noqa: E402

CLUSTER = os.path.join(ROOT, "scripts", "postgres-cluster.sh")


def wait_ready(url, seconds=120):
    """Until /v1/readyz answers 200: a server answers 503 while its store opens."""
    import urllib.request
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            if urllib.request.urlopen(url, timeout=2).status == 200:
                return
        except OSError:
            pass
        time.sleep(0.05)
    sys.exit(f"postgres_servers: {url} was not ready")


def wrk_many(urls, seconds, connections, script):
    """One wrk per URL, all at once; the sum of their rates and of their non-2xx answers."""
    per = max(1, connections // len(urls))
    runs = [subprocess.Popen(["wrk", "-t1", f"-c{per}", f"-d{seconds}s", "-s", os.path.join(HTTP, script), url],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for url in urls]
    rate, bad = 0.0, 0
    for run in runs:
        out, _ = run.communicate(timeout=seconds + 60)
        import re
        match = re.search(r"Requests/sec:\s+([\d.]+)", out)
        if not match:
            sys.exit(f"postgres_servers: wrk gave no rate:\n{out}")
        rate += float(match.group(1))
        failed = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
        bad += int(failed.group(1)) if failed else 0
    return rate, bad


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default=os.path.join(ROOT, ".build", "release", "managedstore"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--tasks", type=int, default=20000)
    parser.add_argument("--json")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="managedstore-pgbench-")
    # A folder of its own: as root, the cluster's owner (postgres) must be able to reach it.
    cluster = tempfile.mkdtemp(prefix="managedstore-pg-")
    env = dict(os.environ, POSTGRES_FSYNC="on")
    uri = subprocess.run([CLUSTER, "start", cluster], capture_output=True, text=True, env=env, check=True).stdout.strip()
    try:
        run(args, work, uri)
    finally:
        subprocess.run([CLUSTER, "stop", cluster], capture_output=True)


def seeded(args, store):
    subprocess.run([args.binary, "demo", "--store", store, "--tasks", str(args.tasks), "--batch", "5000"],
                   check=True, capture_output=True, timeout=900)


PGBENCH_INSERT = "\\set aid random(1, 1000000)\nINSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (1, 1, :aid, 1, CURRENT_TIMESTAMP);\n"


def pgbench_binary():
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pgbench"))
    if not found:
        sys.exit("postgres_servers: no pgbench (apt-get install postgresql)")
    return found[-1]


def pgbench(uri, seconds, work, script=None):
    """PostgreSQL's own rate on the same cluster: 16 clients, prepared statements; `-S` (select
    by key) without a script, else the script (a one-row INSERT a transaction)."""
    argv = [pgbench_binary(), "-n", "-M", "prepared", "-c", "16", "-j", "2", "-T", str(seconds)]
    if script is None:
        argv.append("-S")
    else:
        path = os.path.join(work, "pgbench_insert.sql")
        with open(path, "w") as f:
            f.write(script)
        argv += ["-f", path]
    out = subprocess.run(argv + [uri], capture_output=True, text=True, timeout=seconds + 120).stdout
    match = re.search(r"tps = ([\d.]+)", out)
    if not match:
        sys.exit(f"postgres_servers: pgbench gave no rate:\n{out}")
    return float(match.group(1))


def run(args, work, uri):
    os.environ["TASKS"] = str(args.tasks)
    configs = ["sqlite", "pg-1", "pg-2", "pg-3", "pgbench"]
    # pgbench's tables beside the stores' schemas: 1,000,000 accounts (scale 10).
    subprocess.run([pgbench_binary(), "-i", "-q", "-s", "10", uri], check=True, capture_output=True, timeout=900)
    stores = {"sqlite": os.path.join(work, "store.sqlite")}
    seeded(args, stores["sqlite"])
    for name in configs[1:-1]:
        schema = "bench_" + name.replace("-", "_")  # "pg_" names are PostgreSQL's own
        subprocess.run(["psql", uri, "-qc", f"CREATE SCHEMA {schema}"], check=True, capture_output=True)
        stores[name] = f"{uri}?options=-csearch_path%3D{schema}"
        seeded(args, stores[name])
    rates = {(c, s): [] for c in configs for s in ("get", "post")}
    ratios = {(c, s): [] for c in configs[1:] for s in ("get", "post")}
    to_pgbench = {(c, s): [] for c in configs[1:-1] for s in ("get", "post")}
    for round_number in range(args.rounds):
        order = configs[round_number % len(configs):] + configs[:round_number % len(configs)]
        this_round = {}
        for name in order:
            if name == "pgbench":
                for scenario, script in (("get", None), ("post", PGBENCH_INSERT)):
                    this_round[(name, scenario)] = pgbench(uri, args.seconds, work, script)
                    rates[(name, scenario)].append(this_round[(name, scenario)])
                continue
            count = 1 if name == "sqlite" else int(name[-1])
            servers = []
            try:
                for i in range(count):
                    port = free_port()
                    argv = [args.binary, "serve", "--demo", "--store", stores[name], "--port", str(port), "--durability", "full"]
                    servers.append((Process(argv, os.path.join(work, f"{name}-{i}.log")), port))
                for _, port in servers:
                    wait_ready(f"http://127.0.0.1:{port}/v1/readyz")
                urls = [f"http://127.0.0.1:{port}" for _, port in servers]
                for scenario, script in (("get", "get_random.lua"), ("post", "post_insert.lua")):
                    rate, bad = wrk_many(urls, args.seconds, 64, script)
                    if bad:
                        sys.exit(f"postgres_servers: {bad} failed answers from {name} {scenario}")
                    this_round[(name, scenario)] = rate
                    rates[(name, scenario)].append(rate)
            finally:
                for process, _ in servers:
                    process.stop()
        for name in configs[1:]:
            for scenario in ("get", "post"):
                ratios[(name, scenario)].append(this_round[(name, scenario)] / this_round[("sqlite", scenario)])
                if name != "pgbench":
                    to_pgbench[(name, scenario)].append(this_round[(name, scenario)] / this_round[("pgbench", scenario)])
        print(f"round {round_number + 1}: " + ", ".join(f"{n} {s} {this_round[(n, s)]:,.0f}" for n in order for s in ("get", "post")),
              flush=True)
    print()
    print(f"{args.rounds} alternating rounds of {args.seconds}s, 64 connections in all, {args.tasks:,} tasks; medians")
    print()
    print("| configuration | GET by key /s | POST insert /s | GET / SQLite | POST / SQLite | GET / pgbench select | POST / pgbench insert |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name in configs:
        get, post = statistics.median(rates[(name, "get")]), statistics.median(rates[(name, "post")])
        if name == "sqlite":
            print(f"| SQLite, 1 server | {get:,.0f} | {post:,.0f} | 1 | 1 | | |")
        elif name == "pgbench":
            print(f"| pgbench, 16 clients, prepared (select by key; one-row INSERT) | {get:,.0f} | {post:,.0f} | "
                  f"{statistics.median(ratios[(name, 'get')]):.3f} | {statistics.median(ratios[(name, 'post')]):.3f} | 1 | 1 |")
        else:
            print(f"| PostgreSQL, {name[-1]} server{'s' if name != 'pg-1' else ''} | {get:,.0f} | {post:,.0f} | "
                  f"{statistics.median(ratios[(name, 'get')]):.3f} | {statistics.median(ratios[(name, 'post')]):.3f} | "
                  f"{statistics.median(to_pgbench[(name, 'get')]):.3f} | {statistics.median(to_pgbench[(name, 'post')]):.3f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rates": {f"{c}/{s}": v for (c, s), v in rates.items()},
                       "ratios": {f"{c}/{s}": v for (c, s), v in ratios.items()},
                       "to_pgbench": {f"{c}/{s}": v for (c, s), v in to_pgbench.items()}}, f, indent=1)


if __name__ == "__main__":
    main()
