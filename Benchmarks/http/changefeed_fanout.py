#!/usr/bin/env python3
"""Change-feed fan-out: POLLERS clients long-poll GET /v1/changes (wait=30, each on its own
keep-alive connection, asking again with since=<next> after every answer) while one writer
saves WRITES transactions at RATE a second. Prints, as one JSON line:

- deliveries: (transaction, poller) pairs received, and missing: those never received (must be 0);
- latency p50/p99 in ms: from the writer's 2xx to a poller receiving the transaction;
- write p50 in ms with the pollers, and alone (the same writes first, without pollers), and
  their ratio: what holding POLLERS long-polls costs the writes.

Usage: changefeed_fanout.py BASE_URL [--pollers 100] [--writes 200] [--rate 50]
Bounded: every request has a 35 s timeout, the whole run at most writes/rate + 40 s.
"""
import argparse
import asyncio
import json
import statistics
import time
import urllib.parse


async def http(reader, writer, method, path, host, body=None):
    head = f"{method} {path} HTTP/1.1\r\nHost: {host}\r\n"
    data = b""
    if body is not None:
        data = json.dumps(body).encode()
        head += f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
    writer.write(head.encode() + b"\r\n" + data)
    await writer.drain()
    status_line = await reader.readline()
    status = int(status_line.split()[1])
    length = 0
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b""):
            break
        name, _, value = line.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value.strip())
    payload = await reader.readexactly(length) if length else b""
    return status, payload


async def writes(host, port, count, rate, acks, label):
    reader, writer = await asyncio.open_connection(host, port)
    latencies = []
    start = time.monotonic()
    for i in range(count):
        due = start + i / rate
        delay = due - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        sent = time.monotonic()
        body = {"operations": [{"op": "insert", "entity": "Task", "values": {"title": f"fanout {label} {i}", "priority": i % 6}}]}
        status, payload = await asyncio.wait_for(http(reader, writer, "POST", "/v1/transactions", host, body), 35)
        done = time.monotonic()
        if status != 200:
            raise SystemExit(f"fanout: write answered {status}: {payload[:200]!r}")
        latencies.append(done - sent)
        if acks is not None:
            acks[json.loads(payload)["token"]] = done
    writer.close()
    return latencies


async def poller(host, port, since, seen, stop):
    reader, writer = await asyncio.open_connection(host, port)
    while not stop.is_set():
        status, payload = await asyncio.wait_for(http(reader, writer, "GET", f"/v1/changes?since={since}&wait=30", host), 35)
        arrived = time.monotonic()
        if status != 200:
            raise SystemExit(f"fanout: long-poll answered {status}: {payload[:200]!r}")
        page = json.loads(payload)
        for transaction in page["transactions"]:
            seen.setdefault(transaction["token"], arrived)
        since = page["next"]
    writer.close()


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("base")
    parser.add_argument("--pollers", type=int, default=100)
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--rate", type=float, default=50)
    args = parser.parse_args()
    url = urllib.parse.urlparse(args.base)
    host, port = url.hostname, url.port

    alone = await writes(host, port, args.writes, args.rate, None, "alone")

    # Start after everything committed so far: the newest token is the last page's next.
    since = "0"
    while True:
        reader, writer = await asyncio.open_connection(host, port)
        _, payload = await http(reader, writer, "GET", f"/v1/changes?since={since}&limit=1000", host)
        writer.close()
        page = json.loads(payload)
        if not page["transactions"]:
            break
        since = page["next"]

    stop = asyncio.Event()
    seen = [dict() for _ in range(args.pollers)]
    tasks = [asyncio.create_task(poller(host, port, since, seen[i], stop)) for i in range(args.pollers)]
    await asyncio.sleep(1)  # every poller is waiting
    acks = {}
    loaded = await writes(host, port, args.writes, args.rate, acks, "loaded")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(len(set(acks) - set(s)) for s in seen):
        await asyncio.sleep(0.1)
    stop.set()
    # The pollers are parked in a long-poll; one more write answers them all.
    await writes(host, port, 1, 1, None, "final")
    await asyncio.wait(tasks, timeout=40)

    latencies = [(s[token] - ack) * 1000 for s in seen for token, ack in acks.items() if token in s]
    missing = sum(1 for s in seen for token in acks if token not in s)
    q = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else [0] * 99
    result = {
        "pollers": args.pollers, "writes": args.writes, "rate": args.rate,
        "deliveries": len(latencies), "missing": missing,
        "latency_p50_ms": round(q[49], 2), "latency_p99_ms": round(q[98], 2),
        "write_p50_ms_with_pollers": round(statistics.median(loaded) * 1000, 2),
        "write_p50_ms_alone": round(statistics.median(alone) * 1000, 2),
    }
    result["write_p50_ratio"] = round(result["write_p50_ms_with_pollers"] / result["write_p50_ms_alone"], 2)
    print(json.dumps(result))


if __name__ == "__main__":
    asyncio.run(main())
