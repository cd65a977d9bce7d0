#!/usr/bin/env python3
"""What a connection flood and slow heads cost other clients (issue 43), measured side by side.

    python3 Benchmarks/http/flood.py [--seconds 5] [--binary .build/release/managedstore]

Starts `managedstore serve --demo` (default flags: 64 connections per client address, 10 s for a
head) on a store of 10,000 tasks, then measures GET by key from 127.0.0.1 with wrk (4
connections, --latency) three ways, one after the other: quiet; while 127.0.0.2 opens
connections as fast as it can and keeps those the server lets it hold; and while 300 connections
from 127.0.0.10-14 send a head one line a second. Prints each rate and p99 and their ratios to
the quiet run. Timings are noisy on a shared machine: compare the ratios of one run.
"""
import argparse, os, re, socket, subprocess, sys, tempfile, threading, time

def wrk(port, seconds):
    script = os.path.join(os.path.dirname(__file__), "get_random.lua")
    out = subprocess.run(["wrk", "-t1", "-c4", f"-d{seconds}s", "--latency", "-s", script, f"http://127.0.0.1:{port}"],
                         capture_output=True, text=True, env=dict(os.environ, TASKS="10000")).stdout
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)", out)
    scale = {"us": 1e-3, "ms": 1.0, "s": 1e3}[p99.group(2)]
    errors = re.search(r"Socket errors: (.*)", out)
    return rate, float(p99.group(1)) * scale, errors.group(1) if errors else "none"

def closed_by_server(sock):
    """Whether the server has closed `sock` (it reads as ended or reset), without waiting."""
    sock.setblocking(False)
    try:
        return sock.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True
    finally:
        sock.setblocking(True)

def flood(port, stop, counts):
    held = []
    while not stop.is_set() and counts["tried"] < 200_000:
        s = socket.socket()
        try:
            s.bind(("127.0.0.2", 0)); s.connect(("127.0.0.1", port))
        except OSError:
            s.close(); continue
        counts["tried"] += 1
        held.append(s)
        if counts["tried"] % 64 == 0:  # let go of those the server closed
            alive = []
            for h in held:
                (h.close() if closed_by_server(h) else alive.append(h))
            held = alive
    for h in held: h.close()

def slow_heads(port, stop, counts):
    conns = []
    for i in range(300):
        s = socket.socket(); s.bind((f"127.0.0.{10 + i % 5}", 0)); s.connect(("127.0.0.1", port))
        s.sendall(b"GET /v1/healthz HTTP/1.1\r\n"); conns.append(s)
    while not stop.is_set():
        time.sleep(1)
        for s in list(conns):
            if closed_by_server(s):
                conns.remove(s); counts["closed"] += 1; s.close()
            else:
                s.sendall(b"X-Slow: 1\r\n")
    for s in conns: s.close()

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--binary", default=".build/release/managedstore")
    args = parser.parse_args()
    work = tempfile.mkdtemp()
    store = os.path.join(work, "store.sqlite")
    subprocess.run([args.binary, "demo", "--store", store, "--tasks", "10000", "--batch", "10000"], check=True, capture_output=True)
    server = subprocess.Popen([args.binary, "serve", "--demo", "--store", store, "--port", "18190", "--log-requests", "off"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(1.5)
        wrk(18190, 2)  # warm up
        rows = [("quiet", *wrk(18190, args.seconds), "")]
        for name, attack in (("connection flood from 127.0.0.2", flood), ("300 slow heads, a line a second", slow_heads)):
            stop, counts = threading.Event(), {"tried": 0, "closed": 0}
            thread = threading.Thread(target=attack, args=(18190, stop, counts)); thread.start()
            time.sleep(1)
            measured = wrk(18190, args.seconds)
            stop.set(); thread.join()
            note = f"{counts['tried']} connections tried" if attack is flood else f"{counts['closed']} slow heads closed"
            rows.append((name, *measured, note))
            time.sleep(1)
        quiet_rate, quiet_p99 = rows[0][1], rows[0][2]
        print(f"{'GET by key, wrk -c4':34} {'req/s':>9} {'ratio':>6} {'p99 ms':>7} {'ratio':>6}  socket errors; attack")
        for name, rate, p99, errors, note in rows:
            print(f"{name:34} {rate:9,.0f} {rate / quiet_rate:6.2f} {p99:7.2f} {p99 / quiet_p99:6.2f}  {errors}; {note}")
    finally:
        server.terminate(); server.wait()

if __name__ == "__main__":
    sys.exit(main())
