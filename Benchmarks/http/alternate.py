#!/usr/bin/env python3
"""Servers measured side by side, in alternating rounds, against the C ceilings.

Each configuration is a managedstore binary with its flags (two builds of the code, or one build
with two settings). Every round runs each scenario once for the ceiling and once per
configuration, one after the other, so that the machine's load moves all of them alike; the
report gives, per scenario, each configuration's median over the rounds and its median ratio to
the ceiling of the same round.

  Benchmarks/http/alternate.py --config now=.build/release/managedstore \\
      --config "off=.build/release/managedstore --log-requests off" --rounds 5 --seconds 5 \\
      --scenarios get,post [--json results.json]

Scenarios (each run bounded in time; servers on 127.0.0.1 only):
  get      GET /v1/objects/Task/{random pk}, 64 connections   ceiling: ceiling.c (a bare MHD server)
  post     POST insert, 64 connections, --durability full,    ceiling: write_ceiling.c store mode
           history on                                                 (the same SQL and group commit from C)
  patch    PATCH with If-Match, 64 connections                 ceiling: none (ratio to the first config)
  fetch    GET ?where=2 clauses&limit=20                        ceiling: none
  ndjson   an NDJSON import of --rows tasks, one POST           ceiling: raw_bulk_insert.c (1000 rows a
                                                                         transaction, prepared statement)
Servers log to a file (their stderr), as the default configuration does: the log is on.
"""
import argparse
import json
import os
import re
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
HTTP = os.path.join(ROOT, "Benchmarks", "http")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(url, seconds=60):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except urllib.error.HTTPError:
            return  # it answers
        except OSError:
            time.sleep(0.05)
    sys.exit(f"alternate: {url} did not answer")


def cpu_seconds(pid):
    """User and system CPU seconds the process has used (its threads included)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / ticks, int(fields[12]) / ticks


class Process:
    """A server process, stopped (SIGTERM, then SIGKILL) when done."""

    def __init__(self, argv, log_path):
        self.log = open(log_path, "ab")
        self.process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=self.log)

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


def wrk(url, seconds, connections, script=None, threads=2):
    argv = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--latency"]
    if script:
        argv += ["-s", os.path.join(HTTP, script)]
    out = subprocess.run(argv + [url], capture_output=True, text=True, timeout=seconds + 60).stdout
    match = re.search(r"Requests/sec:\s+([\d.]+)", out)
    if not match:
        sys.exit(f"alternate: wrk gave no rate for {url}:\n{out}")
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    total = int(re.search(r"(\d+) requests in", out).group(1))
    return float(match.group(1)), (int(bad.group(1)) if bad else 0), total


class Bench:
    def __init__(self, args, work):
        self.args = args
        self.work = work
        # (scenario, name) -> [(user µs, system µs) per request], a pair per round.
        self.cpu = {}
        env_tasks = str(args.tasks)
        os.environ["TASKS"] = env_tasks
        os.environ["WRK_THREADS"] = "2"
        self.cc("ceiling", "ceiling.c", "libmicrohttpd")
        self.cc("write_ceiling", "write_ceiling.c", "libmicrohttpd sqlite3", extra=["-lpthread"])
        self.cc("raw_bulk_insert", "raw_bulk_insert.c", "sqlite3")
        # One seeded store, copied for every server that reads or writes.
        first = args.config[0][1][0]
        self.seed = os.path.join(work, "seed.sqlite")
        subprocess.run([first, "demo", "--store", self.seed, "--tasks", env_tasks, "--batch", "10000"],
                       check=True, stdout=subprocess.DEVNULL)
        if "ndjson" in args.scenarios:
            self.ndjson = os.path.join(work, "tasks.ndjson")
            with open(self.ndjson, "w") as f:
                for i in range(args.rows):
                    f.write('{"title": "t%d", "priority": %d, "estimate": %s}\n' % (i, i % 6, i * 0.5))

    def cc(self, name, source, packages, extra=()):
        flags = subprocess.run(["pkg-config", "--cflags", "--libs"] + packages.split(), capture_output=True, text=True, check=True).stdout.split()
        subprocess.run(["gcc", "-O2", "-o", os.path.join(self.work, name), os.path.join(HTTP, source)] + flags + list(extra), check=True)

    def store_copy(self, name):
        path = os.path.join(self.work, f"{name}-{time.time_ns()}.sqlite")
        shutil.copy(self.seed, path)
        return path

    def serve(self, name, argv):
        port = free_port()
        store = self.store_copy(name)
        process = Process(argv + ["serve", "--demo", "--store", store, "--port", str(port), "--durability", "full"] + self.extra(name),
                          os.path.join(self.work, f"{name}.log"))
        wait_ready(f"http://127.0.0.1:{port}/v1/readyz")
        return process, f"http://127.0.0.1:{port}", store

    def extra(self, name):
        return dict((n, a[1:]) for n, a in self.args.config)[name]

    def measured(self, name, scenario, process, run, whole=False):
        """Runs `run` (a wrk run), noting the server's user and system CPU microseconds per request."""
        user0, system0 = cpu_seconds(process.process.pid)
        result = run()
        user1, system1 = cpu_seconds(process.process.pid)
        requests = result[2]
        if requests:
            self.cpu.setdefault((scenario, name), []).append(((user1 - user0) * 1e6 / requests, (system1 - system0) * 1e6 / requests))
        return result if whole else result[0]

    def ceiling(self, scenario):
        seconds, connections = self.args.seconds, 64
        if scenario == "get":
            port = free_port()
            process = Process([os.path.join(self.work, "ceiling"), str(port), "4"], os.path.join(self.work, "ceiling.log"))
            wait_ready(f"http://127.0.0.1:{port}/")
            try:
                return self.measured("ceiling", scenario, process, lambda: wrk(f"http://127.0.0.1:{port}/", seconds, connections))
            finally:
                process.stop()
        if scenario == "post":
            port = free_port()
            process = Process([os.path.join(self.work, "write_ceiling"), str(port), self.store_copy("c"), "store"],
                              os.path.join(self.work, "write_ceiling.log"))
            wait_ready(f"http://127.0.0.1:{port}/")
            try:
                return self.measured("ceiling", scenario, process, lambda: wrk(f"http://127.0.0.1:{port}", seconds, connections, "post_insert.lua"))
            finally:
                process.stop()
        if scenario == "ndjson":
            raw = os.path.join(self.work, f"raw-{time.time_ns()}.sqlite")
            out = subprocess.run([os.path.join(self.work, "raw_bulk_insert"), raw, str(self.args.rows)], capture_output=True, text=True, check=True)
            for suffix in ("", "-wal", "-shm"):
                if os.path.exists(raw + suffix):
                    os.remove(raw + suffix)
            return float(out.stdout.strip())
        return None

    def run(self, name, scenario):
        process, base, store = self.serve(name, [self.args.config_map[name][0]])
        try:
            seconds = self.args.seconds
            if scenario == "get":
                rate, bad, _ = self.measured(name, scenario, process, lambda: wrk(base, seconds, 64, "get_random.lua"), whole=True)
            elif scenario == "post":
                rate, bad, _ = self.measured(name, scenario, process, lambda: wrk(base, seconds, 64, "post_insert.lua"), whole=True)
            elif scenario == "patch":
                rate, bad, total = wrk(base, seconds, 64, "patch_ifmatch.lua")
                bad = 0  # 409s are answers too (two requests of one thread on one object)
            elif scenario == "fetch":
                rate, bad, _ = wrk(base, seconds, 64, "fetch_where.lua")
            elif scenario == "ndjson":
                started = time.time()
                out = subprocess.run(["curl", "-s", "-X", "POST", base + "/v1/objects/Task", "-H", "Content-Type: application/x-ndjson",
                                      "--data-binary", "@" + self.ndjson], capture_output=True, text=True, timeout=600).stdout
                elapsed = time.time() - started
                if f'"count":{self.args.rows},' not in out:
                    sys.exit(f"alternate: the import of {name} did not store {self.args.rows} rows: {out[:300]}")
                rate, bad = self.args.rows / elapsed, 0
            if bad:
                print(f"alternate: {name} {scenario}: {bad} answers were not 2xx", file=sys.stderr)
            return rate
        finally:
            process.stop()
            for suffix in ("", "-wal", "-shm"):
                if os.path.exists(store + suffix):
                    os.remove(store + suffix)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", action="append", required=True, help="NAME=BINARY [flags...]")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--scenarios", default="get,post")
    parser.add_argument("--tasks", type=int, default=100000)
    parser.add_argument("--rows", type=int, default=200000)
    parser.add_argument("--json", help="write the rounds and medians here")
    args = parser.parse_args()
    configs = []
    for text in args.config:
        name, _, command = text.partition("=")
        argv = shlex.split(command)
        if not name or not argv or not os.access(argv[0], os.X_OK):
            sys.exit(f"alternate: --config {text}: NAME=BINARY [flags...] with an executable binary")
        configs.append((name, argv))
    args.config = configs
    args.config_map = dict(configs)
    args.scenarios = args.scenarios.split(",")
    work = tempfile.mkdtemp(prefix="managedstore-alternate-")
    try:
        bench = Bench(args, work)
        rounds = []
        for round_index in range(args.rounds):
            result = {}
            for scenario in args.scenarios:
                result[scenario] = {"ceiling": bench.ceiling(scenario)}
                order = configs if round_index % 2 == 0 else list(reversed(configs))
                for name, _ in order:
                    result[scenario][name] = bench.run(name, scenario)
            rounds.append(result)
            line = "; ".join(f"{s}: " + ", ".join(f"{k} {v:,.0f}" for k, v in r.items() if v is not None) for s, r in result.items())
            print(f"round {round_index + 1}: {line}", file=sys.stderr)
        report(args, configs, rounds, bench.cpu)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def report(args, configs, rounds, cpu):
    summary = {}
    print(f"{args.rounds} alternating rounds of {args.seconds}s each (wrk -t2 -c64), medians; ratios are per round, then the median")
    print()
    print("| scenario | " + " | ".join(f"{name} /s" for name, _ in configs) + " | ceiling /s | " + " | ".join(f"{name} / ceiling" for name, _ in configs) + " |")
    print("|---|" + "---:|" * (2 * len(configs) + 1))
    for scenario in args.scenarios:
        rates = {name: [r[scenario][name] for r in rounds] for name, _ in configs}
        ceilings = [r[scenario]["ceiling"] for r in rounds]
        row = {"rates": {n: statistics.median(v) for n, v in rates.items()}, "rounds": rounds}
        cells = [f"{statistics.median(rates[name]):,.0f}" for name, _ in configs]
        if ceilings[0] is not None:
            ratios = {name: statistics.median([rates[name][i] / ceilings[i] for i in range(len(ceilings))]) for name, _ in configs}
            row["ceiling"] = statistics.median(ceilings)
            row["ratios"] = ratios
            cells += [f"{statistics.median(ceilings):,.0f}"] + [f"{ratios[name]:.3f}" for name, _ in configs]
        else:
            cells += ["-"] + ["-" for _ in configs]
        print(f"| {scenario} | " + " | ".join(cells) + " |")
        summary[scenario] = row
    if cpu:
        print()
        print("Server CPU per request (median over the rounds; the ceilings' too), microseconds:")
        print()
        print("| scenario | server | user µs | system µs |")
        print("|---|---|---:|---:|")
        for (scenario, name), pairs in sorted(cpu.items()):
            print(f"| {scenario} | {name} | {statistics.median(p[0] for p in pairs):.1f} | {statistics.median(p[1] for p in pairs):.1f} |")
    if len(configs) > 1:
        first = configs[0][0]
        print()
        for name, _ in configs[1:]:
            pairs = ", ".join(f"{s} {statistics.median([r[s][name] / r[s][first] for r in rounds]):.3f}" for s in args.scenarios)
            print(f"- {name} / {first}, per round then median: {pairs}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"configs": [n for n, _ in configs], "rounds": rounds,
                       "summary": {s: {k: v for k, v in row.items() if k != "rounds"} for s, row in summary.items()}}, f, indent=1)


if __name__ == "__main__":
    main()
