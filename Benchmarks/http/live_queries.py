#!/usr/bin/env python3
"""Live queries (GET /v1/objects/{Entity}/live, server-sent events): what they cost, measured.

    python3 Benchmarks/http/live_queries.py [--binary .build/release/managedstore] [--quick]
        [--only latency,throughput,memory,bytes] [--json results.json]

Copies the binary (a rebuild during the run changes nothing), seeds one store with --tasks tasks
(default 5,000: title "seed 00042", priority n % 6, estimate n, one JSON-array POST), and runs
each part on a fresh `managedstore serve --demo` over a copy of that store, on 127.0.0.1, with
`--log-requests off --max-connections-per-client 0` (every stream comes from 127.0.0.1) and
`--max-live-queries 20000` when `serve --help` lists it. Standard library and wrk only.

1. latency: with 1, 100 and 10,000 live queries open (--quick: 1, 100, 1,000), all distinct:
   groups of six `priority >= t AND title BEGINSWITH "lqGGGGG-"` (t = 0..5), sort=-priority,title,
   limit=10, and 1 per 100 (at least 4) `title BEGINSWITH "lq" AND estimate >= j`, sort=-estimate,
   that every write changes. A writer POSTs Tasks at --rate a second for --seconds (title
   "lqGGGGG-wIIIIII" for one group, a random priority, estimate 1e6 + i). The script works out
   which queries each write changes (the store holds no other "lq" titles); latency is from the
   write's 2xx answer (its History-Token T) to the first diff event with id >= T on each of
   them. Prints p50/p99 over those pairs and the pairs missing (none may be).
2. throughput: POST insert (wrk -t2 -c16 -s post_insert.lua) in alternating runs, a fresh server a round:
   without streams and with 10,000 (--quick: 1,000) idle ones open (`title == "idle-i"`, which
   no POST matches; read all the time, so none is a slow consumer), --rounds times in ABBA order;
   each run and the ratio with/without (goal >= 0.95). The streams are held and read by
   Benchmarks/http/sse_sink.c (compiled here; --reader python for the asyncio reader, which
   takes most of a core by itself).
3. memory: the server's VmRSS with 0, 1,000 and 10,000 (--quick: 100, 1,000) idle live queries
   open (`estimate >= x`, sort=estimate, every window full), limit 10 and limit 100, each limit
   on a fresh server: (RSS - RSS at 0) / N.
4. bytes: one limit-100 window (`estimate >= 1000`, sort=estimate) and --changes single-object
   writes that each change it (PATCH in place, PATCH that moves, POST into it, DELETE from it),
   one at a time: the diff events' bytes against changes x the snapshot event's bytes.

Every stream's diffs are applied to its snapshot and the windows compared at the end with the
writes (1) or with a GET of the same fetch (1, 4); what contradicts the contract (a missing
History-Token, a diff whose `from` is not the token held, empty ops, bad indexes, a progress
event past a write that changed the answer, a wrong window) is listed under "contract".
Lines of /v1/metrics that mention "live" are printed where streams are open. Ends with Markdown
tables for Benchmarks/RESULTS.md. Bounded: every read has a timeout, every part a deadline.
Numbers from a debug build say little: use a release build.
"""
import argparse
import asyncio
import bisect
import datetime
import json
import os
import random
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
HTTP = os.path.join(ROOT, "Benchmarks", "http")
HOST = "127.0.0.1"
START = time.monotonic()


# ---------------------------------------------------------------------------------------------
# Small helpers

def free_port():
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def tkey(token):
    """Order of history tokens: whole numbers as numbers (they are, with SQLite), else as text."""
    token = str(token)
    return (0, int(token), "") if token.isdigit() else (1, len(token), token)


def pct(values, p):
    """Nearest-rank percentile, or None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, int(-(-p * len(ordered) // 100)) - 1))
    return ordered[k]


def ms(seconds):
    return None if seconds is None else round(seconds * 1000, 2)


def fmt(value, spec=",.0f", none="-"):
    return none if value is None else format(value, spec)


def q(text):
    return urllib.parse.quote(text, safe="")


def live_path(where=None, sort=None, limit=None, fields=None, entity="Task"):
    parts = []
    if where is not None:
        parts.append("where=" + q(where))
    if sort is not None:
        parts.append("sort=" + q(sort))
    if limit is not None:
        parts.append(f"limit={limit}")
    if fields is not None:
        parts.append("fields=" + q(fields))
    return f"/v1/objects/{entity}/live" + ("?" + "&".join(parts) if parts else "")


def fetch_path(live):
    """The plain fetch with the same parameters as a live query's path."""
    return live.replace("/live", "", 1)


class Contract:
    """What the server did that the contract does not allow: counted by kind, a few examples kept."""

    def __init__(self):
        self.counts = {}
        self.examples = {}

    def note(self, kind, example):
        self.counts[kind] = self.counts.get(kind, 0) + 1
        keep = self.examples.setdefault(kind, [])
        if len(keep) < 3:
            keep.append(example[:300])

    def lines(self):
        return [f"{kind}: {n} (e.g. {' | '.join(self.examples[kind])})" for kind, n in sorted(self.counts.items())]


CONTRACT = Contract()


def log(*parts):
    print(f"[{time.monotonic() - START:6.1f}s]", *parts, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# HTTP: one keep-alive connection for plain requests, and a server-sent-event stream reader

class Client:
    def __init__(self, port):
        self.port = port
        self.reader = self.writer = None

    async def request(self, method, path, body=None, headers=None, timeout=30):
        return await asyncio.wait_for(self._request(method, path, body, headers or {}), timeout)

    async def _request(self, method, path, body, headers):
        if self.writer is None or self.writer.is_closing():
            self.reader, self.writer = await asyncio.open_connection(HOST, self.port, limit=1 << 22)
        head = f"{method} {path} HTTP/1.1\r\nHost: {HOST}:{self.port}\r\n"
        data = b""
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            head += f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
        for name, value in headers.items():
            head += f"{name}: {value}\r\n"
        try:
            self.writer.write(head.encode() + b"\r\n" + data)
            await self.writer.drain()
            status, answer_headers = await read_head(self.reader)
            payload = await read_body(self.reader, answer_headers)
        except BaseException:
            self.close()
            raise
        if answer_headers.get("connection", "").lower() == "close":
            self.close()
        return status, answer_headers, payload

    def close(self):
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


async def read_head(reader):
    line = await reader.readline()
    if not line:
        raise ConnectionError("closed before an answer")
    status = int(line.split()[1])
    headers = {}
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b"\n", b""):
            break
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    return status, headers


async def read_body(reader, headers):
    if "chunked" in headers.get("transfer-encoding", "").lower():
        parts = []
        while True:
            size = int((await reader.readline()).split(b";")[0], 16)
            if size == 0:
                await reader.readline()
                return b"".join(parts)
            parts.append(await reader.readexactly(size))
            await reader.readexactly(2)
    length = int(headers.get("content-length", "0"))
    return await reader.readexactly(length) if length else b""


def parse_event(raw):
    """(type, id, data bytes) of one server-sent event block, or None for a comment-only block."""
    etype = eid = None
    data = []
    for line in raw.split(b"\n"):
        if not line or line.startswith(b":"):
            continue
        name, _, value = line.partition(b":")
        if value.startswith(b" "):
            value = value[1:]
        if name == b"event":
            etype = value.decode()
        elif name == b"id":
            eid = value.decode()
        elif name == b"data":
            data.append(value)
    if etype is None and eid is None and not data:
        return None
    return etype or "message", eid, b"\n".join(data)


def apply_ops(window, ops):
    """Applies a diff's ops in order; returns what was wrong with them (empty when nothing)."""
    wrong = []
    for op in ops:
        kind = op.get("op")
        try:
            if kind == "delete":
                i = op["index"]
                if not 0 <= i < len(window):
                    wrong.append(f"delete index {i} of {len(window)}"); continue
                del window[i]
            elif kind == "insert":
                i = op["index"]
                if not 0 <= i <= len(window):
                    wrong.append(f"insert index {i} of {len(window)}"); continue
                window.insert(i, op["object"])
            elif kind == "move":
                i, j = op["from"], op["to"]
                if not 0 <= i < len(window):
                    wrong.append(f"move from {i} of {len(window)}"); continue
                item = window.pop(i)
                if not 0 <= j <= len(window):
                    window.insert(i, item)
                    wrong.append(f"move to {j} of {len(window) + 1}"); continue
                window.insert(j, item)
            elif kind == "update":
                i = op["index"]
                if not 0 <= i < len(window):
                    wrong.append(f"update index {i} of {len(window)}"); continue
                window[i] = op["object"]
            else:
                wrong.append(f"unknown op {op!r}")
        except (KeyError, TypeError) as error:
            wrong.append(f"malformed op {op!r} ({error})")
    return wrong


class Live:
    """One live-query stream. parse=True keeps every event (type, id, arrival, bytes) and the
    window the diffs make of the snapshot; parse=False only reads and counts (idle streams)."""

    def __init__(self, path, parse=True, limit=None):
        self.path, self.parse, self.limit = path, parse, limit
        self.status = None
        self.error = None
        self.reader = self.writer = None
        self.task = None
        self.chunked = False
        self.buf = bytearray()
        self.last_read = 0.0
        self.snapshot = None        # the parsed snapshot data (parse mode)
        self.snapshot_bytes = 0     # bytes of the snapshot event block
        self.snapshot_objects = 0
        self.snapshot_more = None
        self.window = None
        self.more = None            # the answer's "more" (parse mode)
        self.token = None           # the token the window is at
        self.acceptable = set()     # tokens a diff may start from: self.token and progress since
        self.diffs = []             # (to key, arrival, bytes, from, to, ops count) in order
        self.progress = []          # (key, arrival)
        self.resets = 0
        self.bytes = 0              # all bytes after the head
        self.counts = {}            # event type -> count (drain mode counts by looking at text)
        self.ended = None           # why the stream ended early, if it did
        self.opened_at = None

    async def open(self, port, timeout):
        await asyncio.wait_for(self._open(port), timeout)

    async def _open(self, port):
        self.reader, self.writer = await asyncio.open_connection(HOST, port, limit=1 << 22)
        self.writer.write(f"GET {self.path} HTTP/1.1\r\nHost: {HOST}:{port}\r\nAccept: text/event-stream\r\n\r\n".encode())
        await self.writer.drain()
        self.status, headers = await read_head(self.reader)
        if self.status != 200:
            body = b""
            try:
                body = await asyncio.wait_for(read_body(self.reader, headers), 5)
            except Exception:
                pass
            self.error = f"{self.status}: {body[:200].decode('utf-8', 'replace')}"
            self.close()
            return
        if "text/event-stream" not in headers.get("content-type", ""):
            CONTRACT.note("stream content type not text/event-stream", headers.get("content-type", "(none)"))
        self.chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        raw = await self.next_event()
        event = parse_event(raw)
        while event is None:  # a comment before the snapshot
            raw = await self.next_event()
            event = parse_event(raw)
        etype, eid, data = event
        self.opened_at = self.last_read
        self.snapshot_bytes = len(raw)
        if etype != "snapshot":
            CONTRACT.note("first event not a snapshot", f"{etype} id {eid}: {data[:120]!r}")
        if self.parse:
            snap = json.loads(data)
            self.snapshot = snap
            self.window = list(snap.get("objects", []))
            self.snapshot_objects = len(self.window)
            self.snapshot_more = snap.get("more")
            self.more = snap.get("more")
            self.token = snap.get("token", eid)
            if eid is not None and str(snap.get("token")) != eid:
                CONTRACT.note("snapshot id differs from its token", f"id {eid} token {snap.get('token')}")
        else:
            self.snapshot_objects = data.count(b'"_id"')
            self.snapshot_more = b'"more":true' in data.replace(b" ", b"")
            self.token = eid
        self.acceptable = {self.token}
        self.counts["snapshot"] = 1

    async def read_more(self):
        if self.chunked:
            line = await self.reader.readline()
            if not line:
                raise EOFError("closed")
            size = int(line.split(b";")[0], 16)
            if size == 0:
                raise EOFError("the stream ended (last chunk)")
            data = await self.reader.readexactly(size)
            await self.reader.readexactly(2)
        else:
            data = await self.reader.read(65536)
            if not data:
                raise EOFError("closed")
        self.last_read = time.monotonic()
        self.bytes += len(data)
        return data

    async def next_event(self):
        while True:
            end = self.buf.find(b"\n\n")
            if end >= 0:
                raw = bytes(self.buf[:end + 2])
                del self.buf[:end + 2]
                return raw
            data = await self.read_more()
            if b"\r" in data:
                data = data.replace(b"\r\n", b"\n")
            self.buf += data

    def start(self):
        self.task = asyncio.ensure_future(self.run())

    async def run(self):
        try:
            if self.parse:
                while True:
                    raw = await self.next_event()
                    self.record(raw)
            else:
                while True:
                    data = await self.read_more()
                    for kind in ("diff", "progress", "reset", "snapshot"):
                        n = data.count(b"event: " + kind.encode())
                        if n:
                            self.counts[kind] = self.counts.get(kind, 0) + n
        except asyncio.CancelledError:
            raise
        except (EOFError, ConnectionError, asyncio.IncompleteReadError, OSError, ValueError) as error:
            self.ended = f"{type(error).__name__}: {error}"

    def record(self, raw):
        event = parse_event(raw)
        if event is None:
            self.counts["comment"] = self.counts.get("comment", 0) + 1
            return
        etype, eid, data = event
        now = self.last_read
        self.counts[etype] = self.counts.get(etype, 0) + 1
        if etype == "progress":
            key = tkey(eid) if eid is not None else None
            if key is None:
                CONTRACT.note("progress without id", data[:100].decode("utf-8", "replace"))
                return
            if self.progress and now - self.progress[-1][1] < 0.8:
                CONTRACT.note("progress more often than once a second", f"{self.path} {now - self.progress[-1][1]:.2f}s apart")
            if key < tkey(self.token):
                CONTRACT.note("progress token behind the token held", f"progress {eid} holding {self.token}")
            self.progress.append((key, now))
            self.acceptable.add(eid)
            return
        if etype in ("snapshot", "reset"):
            self.resets += 1
            snap = json.loads(data)
            self.window = list(snap.get("objects", []))
            self.more = snap.get("more")
            self.token = snap.get("token", eid)
            self.acceptable = {self.token}
            return
        if etype != "diff":
            CONTRACT.note("unknown event type", f"{etype} id {eid}")
            return
        diff = json.loads(data)
        source, target, ops = str(diff.get("from")), str(diff.get("to")), diff.get("ops")
        if eid is not None and eid != target:
            CONTRACT.note("diff id differs from its to", f"id {eid} to {target}")
        if source not in self.acceptable:
            CONTRACT.note("diff from a token the client does not hold", f"{self.path}: from {source}, holding {self.token} (progress since: {sorted(self.acceptable - {self.token})[-3:]})")
        if tkey(target) <= tkey(source):
            CONTRACT.note("diff to not after from", f"from {source} to {target}")
        if not ops and diff.get("more") == self.more:  # no ops is allowed only when "more" changed
            CONTRACT.note("diff with no ops", f"{self.path}: {data[:150]!r}")
        self.more = diff.get("more")
        wrong = apply_ops(self.window, ops or [])
        if wrong:
            CONTRACT.note("diff ops that do not apply", f"{self.path}: {'; '.join(wrong[:3])}")
        if self.limit is not None and len(self.window) > self.limit:
            CONTRACT.note("window longer than limit after a diff", f"{self.path}: {len(self.window)}")
        self.token = target
        self.acceptable = {target}
        self.diffs.append((tkey(target), now, len(raw), source, target, len(ops or [])))

    def close(self):
        if self.task is not None and not self.task.done():
            self.task.cancel()
        if self.writer is not None:
            try:
                self.writer.close()
            except Exception:
                pass


async def open_many(port, lives, deadline, concurrency=64, each_timeout=30):
    """Opens the streams, at most `concurrency` at a time, each read from as soon as its snapshot
    came. Returns (opened, failed by status/error, seconds)."""
    semaphore = asyncio.Semaphore(concurrency)
    started = time.monotonic()

    async def one(live):
        async with semaphore:
            if time.monotonic() > deadline:
                live.error = "not tried: the part's deadline passed"
                return
            try:
                await live.open(port, each_timeout)
            except Exception as error:
                live.error = live.error or f"{type(error).__name__}: {error}"
                live.close()
                return
            if live.error is None:
                live.start()

    await asyncio.gather(*(one(live) for live in lives))
    failed = {}
    for live in lives:
        if live.error:
            key = live.error.split(":")[0] if live.status and live.status != 200 else live.error[:80]
            failed[key] = failed.get(key, 0) + 1
    opened = sum(1 for live in lives if live.error is None)
    return opened, failed, time.monotonic() - started


async def close_all(lives):
    for live in lives:
        live.close()
    tasks = [live.task for live in lives if live.task is not None]
    if tasks:
        await asyncio.wait(tasks, timeout=10)
    await asyncio.sleep(0)


# ---------------------------------------------------------------------------------------------
# The server

class Server:
    def __init__(self, ctx, store, name):
        self.port = free_port()
        self.log_path = os.path.join(ctx.work, f"{name}.log")
        self.log = open(self.log_path, "ab")
        argv = [ctx.binary, "serve", "--demo", "--store", store, "--port", str(self.port),
                "--log-requests", "off", "--max-connections-per-client", "0"] + ctx.server_flags
        self.process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=self.log)
        self.pid = self.process.pid
        self.argv = argv

    async def ready(self, seconds=60):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                sys.exit(f"live_queries: the server exited ({self.process.returncode}); its log: {self.log_path}")
            client = Client(self.port)
            try:
                status, _, _ = await client.request("GET", "/v1/readyz", timeout=2)
                if status == 200:
                    return
            except (OSError, asyncio.TimeoutError, ConnectionError, asyncio.IncompleteReadError):
                pass
            finally:
                client.close()
            await asyncio.sleep(0.1)
        sys.exit(f"live_queries: the server on port {self.port} was not ready in {seconds}s")

    def rss_kib(self):
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return None

    def cpu_seconds(self):
        with open(f"/proc/{self.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


async def metrics_live(port):
    """The /v1/metrics lines that mention live queries."""
    client = Client(port)
    try:
        status, _, body = await client.request("GET", "/v1/metrics", timeout=10)
    except Exception as error:
        return [f"(metrics: {type(error).__name__})"]
    finally:
        client.close()
    if status != 200:
        return [f"(metrics answered {status})"]
    return [line for line in body.decode("utf-8", "replace").splitlines() if "live" in line.lower() and not line.startswith("#")]


async def rss_settled(server, samples=3, gap=0.4):
    values = []
    for _ in range(samples):
        await asyncio.sleep(gap)
        values.append(server.rss_kib())
    return statistics.median(values)


class Context:
    pass


def fresh_store(ctx, name):
    path = os.path.join(ctx.work, f"{name}.sqlite")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(ctx.seed + suffix):
            shutil.copy(ctx.seed + suffix, path + suffix)
    return path


async def seed(ctx):
    ctx.seed = os.path.join(ctx.work, "seed.sqlite")
    server = Server(ctx, ctx.seed, "seed")
    try:
        await server.ready()
        rows = [{"title": f"seed {n:05d}", "priority": n % 6, "done": n % 3 == 0, "estimate": float(n)} for n in range(ctx.args.tasks)]
        client = Client(server.port)
        status, headers, body = await client.request("POST", "/v1/objects/Task", rows, timeout=120)
        if status != 200:
            sys.exit(f"live_queries: seeding answered {status}: {body[:300]!r}")
        if "history-token" not in headers:
            CONTRACT.note("2xx write without History-Token", f"batch insert POST /v1/objects/Task: headers {sorted(headers)}")
        status, headers, body = await client.request("POST", "/v1/objects/Task", {"title": "probe", "priority": 0}, timeout=30)
        if "history-token" not in headers:
            CONTRACT.note("2xx write without History-Token", f"single insert POST /v1/objects/Task ({status})")
        else:
            ctx.history_token = True
        pk = json.loads(body)["_id"].split("/")[1]
        await client.request("DELETE", f"/v1/objects/Task/{pk}", timeout=30)
        # Is the endpoint there?
        probe = Live(live_path(limit=1), parse=True)
        try:
            await probe.open(server.port, 5)
            ctx.live = probe.error is None
            ctx.live_status = probe.status if probe.error is None else probe.error
        except Exception as error:
            ctx.live, ctx.live_status = False, f"{type(error).__name__}: {error}"
        probe.close()
        client.close()
    finally:
        server.stop()
    log(f"seeded {ctx.args.tasks} tasks; live queries: {'served' if ctx.live else 'NOT served (' + str(ctx.live_status) + ')'}; "
        f"History-Token on writes: {'yes' if ctx.history_token else 'no'}")


# ---------------------------------------------------------------------------------------------
# 1. Commit-to-event latency

def latency_queries(n):
    """(path, kind, group, threshold, limit) for n distinct live queries."""
    a0 = 1 if n == 1 else max(4, n // 100)
    groups = (n - a0) // 6
    specs = []
    for j in range(n - groups * 6):
        fields = "title,estimate,priority" if j % 2 else None
        specs.append((live_path(f'title BEGINSWITH "lq" AND estimate >= {j}', "-estimate", 10, fields), "all", None, None, 10))
    for k in range(groups * 6):
        g, t = divmod(k, 6)
        specs.append((live_path(f'priority >= {t} AND title BEGINSWITH "lq{g:05d}-"', "-priority,title", 10), "group", g, t, 10))
    return specs, groups


async def latency_part(ctx, n):
    args = ctx.args
    specs, groups = latency_queries(n)
    server = Server(ctx, fresh_store(ctx, f"latency-{n}"), f"latency-{n}")
    result = {"queries": n}
    lives = []
    try:
        await server.ready()
        lives = [Live(path, parse=True, limit=limit) for path, _, _, _, limit in specs]
        opened, failed, seconds = await open_many(server.port, lives, time.monotonic() + ctx.open_deadline)
        result.update(opened=opened, failed=failed, open_seconds=round(seconds, 2))
        log(f"latency n={n}: {opened} streams open in {seconds:.1f}s" + (f", failed: {failed}" if failed else ""))
        for live, spec in zip(lives, specs):
            if live.error is None and live.window:
                CONTRACT.note("snapshot not empty where no object matches", f"{spec[0]}: {len(live.window)} objects")
        if opened == 0:
            return result
        await asyncio.sleep(0.5)
        result["rss_mib_open"] = round(server.rss_kib() / 1024, 1)

        # Event-loop lag of this client, to judge the timestamps.
        lag = []
        stop = asyncio.Event()

        async def ticker():
            while not stop.is_set():
                t0 = time.monotonic()
                await asyncio.sleep(0.01)
                lag.append(time.monotonic() - t0 - 0.01)
        tick = asyncio.ensure_future(ticker())

        rng = random.Random(n)
        count = int(args.rate * args.seconds)
        writes = []  # (index, token or None, ack time, object)
        write_rtt = []
        client = Client(server.port)
        begin = time.monotonic()
        for i in range(count):
            delay = begin + i / args.rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            g = i % groups if groups else 0
            body = {"title": f"lq{g:05d}-w{i:06d}", "priority": rng.randrange(6), "estimate": 1e6 + i}
            sent = time.monotonic()
            status, headers, payload = await client.request("POST", "/v1/objects/Task", body, timeout=30)
            ack = time.monotonic()
            if status // 100 != 2:
                CONTRACT.note("write refused", f"{status}: {payload[:200]!r}")
                continue
            write_rtt.append(ack - sent)
            token = headers.get("history-token")
            if token is None:
                CONTRACT.note("2xx write without History-Token", f"POST /v1/objects/Task {status}")
            obj = json.loads(payload)
            writes.append((i, token, ack, g, body["priority"], body["title"], int(obj["_id"].split("/")[1])))
        client.close()
        result["writes"] = len(writes)
        result["write_seconds"] = round(time.monotonic() - begin, 2)
        result["write_p50_ms"] = ms(pct(write_rtt, 50))

        # Which queries each write changes: simulate every window (the store has no other "lq" titles).
        expected = {}  # live index -> [(token key, ack, write index)]
        members = {}   # group -> [(sort key, pk)]
        all_members = []
        group_index = {}
        for index, (path, kind, g, t, limit) in enumerate(specs):
            if kind == "group":
                group_index[(g, t)] = index
        all_indexes = [index for index, spec in enumerate(specs) if spec[1] == "all"]
        for i, token, ack, g, priority, title, pk in writes:
            key = tkey(token) if token is not None else None   # without a token no pair can be timed
            all_members.append(pk)
            if key is not None:
                for index in all_indexes:
                    expected.setdefault(index, []).append((key, ack, i))   # the highest estimate yet: first
            if not groups:
                continue
            before = list(members.get(g, []))
            members.setdefault(g, []).append(((-priority, title, pk), pk, priority))
            members[g].sort()
            for t in range(6):
                old = [m[1] for m in before if m[2] >= t][:11]
                new = [m[1] for m in members[g] if m[2] >= t][:11]
                # The window (first 10) or its "more" (an 11th match) changed.
                if (old[:10] != new[:10] or (len(old) > 10) != (len(new) > 10)) and key is not None:
                    expected.setdefault(group_index[(g, t)], []).append((key, ack, i))
        total = sum(len(v) for v in expected.values())

        # Wait until every expected pair has its diff (or the deadline).
        deadline = time.monotonic() + args.settle
        while time.monotonic() < deadline:
            waiting = sum(1 for index, pairs in expected.items() if lives[index].error is None and
                          (not lives[index].diffs or lives[index].diffs[-1][0] < pairs[-1][0]))
            if not waiting:
                break
            await asyncio.sleep(0.1)
        await asyncio.sleep(0.3)
        stop.set()
        await tick
        result["metrics"] = await metrics_live(server.port)

        latencies, missing, early, progress_past = [], 0, 0, 0
        for index, pairs in expected.items():
            live = lives[index]
            if live.error is not None:
                continue
            keys = [d[0] for d in live.diffs]
            pkeys = [p[0] for p in live.progress]
            for key, ack, i in pairs:
                at = bisect.bisect_left(keys, key)
                if at == len(keys):
                    missing += 1
                    CONTRACT.note("expected diff never came", f"{live.path}: write {i} (token {key[1]})")
                    continue
                arrival = live.diffs[at][1]
                latency = arrival - ack
                if latency < 0:
                    early += 1
                latencies.append(latency)
                p = bisect.bisect_left(pkeys, key)
                if p < len(pkeys) and live.progress[p][1] < arrival:
                    progress_past += 1
                    CONTRACT.note("progress past a write that changed the answer", f"{live.path}: progress {pkeys[p][1]} before the diff for {key[1]}")
        # Diffs no write explains, and windows that are not what the writes made.
        unexplained, wrong_windows = 0, 0
        objects = {w[6]: w for w in writes}
        for index, live in enumerate(lives):
            if live.error is not None:
                continue
            pairs = expected.get(index, [])
            pair_keys = sorted(p[0] for p in pairs)
            for key, arrival, size, source, target, nops in live.diffs:
                lo = bisect.bisect_right(pair_keys, tkey(source))
                hi = bisect.bisect_right(pair_keys, key)
                if hi <= lo:
                    unexplained += 1
                    CONTRACT.note("diff when no write changed the answer (by the script's reckoning)", f"{live.path}: {source}..{target}")
            path, kind, g, t, limit = specs[index]
            if kind == "all":
                want = sorted(all_members, key=lambda pk: -objects[pk][0])[:limit]
            else:
                want = [m[1] for m in members.get(g, []) if m[2] >= t][:limit]
            have = [int(o.get("_id", "/0").split("/")[1]) for o in live.window]
            if have != want:
                wrong_windows += 1
                CONTRACT.note("window after the diffs is not the fetch's answer", f"{live.path}: have {have[:5]}.. want {want[:5]}..")
        # A sample checked against GET (which also checks the script's reckoning).
        client = Client(server.port)
        sample = random.Random(1).sample(range(len(lives)), min(len(lives), 40))
        get_mismatch = 0
        for index in sample:
            live = lives[index]
            if live.error is not None:
                continue
            status, _, body = await client.request("GET", fetch_path(live.path), timeout=30)
            got = [o["_id"] for o in json.loads(body)["objects"]] if status == 200 else None
            if got != [o.get("_id") for o in live.window]:
                get_mismatch += 1
                CONTRACT.note("window after the diffs differs from GET", f"{live.path}: GET {str(got)[:80]} live {[o.get('_id') for o in live.window][:5]}")
        client.close()
        ended = sum(1 for live in lives if live.ended)
        result.update(pairs=len(latencies), expected=total, missing=missing, p50_ms=ms(pct(latencies, 50)),
                      p99_ms=ms(pct(latencies, 99)), max_ms=ms(max(latencies) if latencies else None),
                      events_before_answer=early, progress_past_change=progress_past, unexplained_diffs=unexplained,
                      wrong_windows=wrong_windows, get_mismatch=f"{get_mismatch}/{len(sample)}",
                      client_loop_lag_p99_ms=ms(pct(lag, 99)), client_loop_lag_max_ms=ms(max(lag) if lag else None),
                      streams_ended=ended, resets=sum(live.resets for live in lives),
                      progress_events=sum(len(live.progress) for live in lives))
        return result
    finally:
        await close_all(lives)
        server.stop()


# ---------------------------------------------------------------------------------------------
# 2. POST throughput with and without idle live queries

WRK_RE = {
    "rate": re.compile(r"Requests/sec:\s+([\d.]+)"),
    "non2xx": re.compile(r"Non-2xx or 3xx responses: (\d+)"),
    "errors": re.compile(r"Socket errors: (.*)"),
    "p50": re.compile(r"50%\s+([\d.]+)(us|ms|s)\b"),
    "p99": re.compile(r"99%\s+([\d.]+)(us|ms|s)\b"),
}


async def wrk_post(port, seconds):
    argv = ["wrk", "-t2", "-c16", f"-d{seconds}s", "--latency", "-s", os.path.join(HTTP, "post_insert.lua"), f"http://{HOST}:{port}"]
    process = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        out, err = await asyncio.wait_for(process.communicate(), seconds + 60)
    except asyncio.TimeoutError:
        process.kill()
        await process.wait()
        sys.exit("live_queries: wrk did not finish")
    out = out.decode()
    match = WRK_RE["rate"].search(out)
    if not match:
        sys.exit(f"live_queries: wrk gave no rate:\n{out}\n{err.decode()}")
    result = {"rate": float(match.group(1))}
    bad = WRK_RE["non2xx"].search(out)
    result["non2xx"] = int(bad.group(1)) if bad else 0
    errors = WRK_RE["errors"].search(out)
    result["socket_errors"] = errors.group(1) if errors else None
    for name in ("p50", "p99"):
        m = WRK_RE[name].search(out)
        if m:
            result[name + "_ms"] = round(float(m.group(1)) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[m.group(2)], 2)
    return result


class CSink:
    """The idle streams held by Benchmarks/http/sse_sink.c (one C epoll loop, reads discarded):
    a Python reader of 10,000 streams takes most of a core of a two-core machine, which the
    server's POSTs would lose to it; the C reader takes a few percent."""

    def __init__(self, ctx, port, n, prefix, seconds):
        self.process = subprocess.Popen([ctx.sink, str(port), str(n), prefix, str(int(seconds))],
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.n = n

    def counts(self, final=False):
        """Its line "streams N bytes B events E ended K", asked for with SIGUSR1 (SIGTERM: the last)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM if final else signal.SIGUSR1)
        while True:
            line = self.process.stdout.readline()
            if not line:
                return {}
            parts = line.split()
            if parts and parts[0] == "streams":
                return {parts[i]: int(parts[i + 1]) for i in range(0, len(parts) - 1, 2)}

    def stop(self):
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


def build_sink(ctx):
    """Compiles sse_sink.c into the work folder; None without a C compiler."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        return None
    out = os.path.join(ctx.work, "sse_sink")
    done = subprocess.run([compiler, "-O2", "-o", out, os.path.join(HTTP, "sse_sink.c")], capture_output=True, text=True)
    return out if done.returncode == 0 else None


async def streams_settled(server, n, deadline):
    """Waits until the server holds n live queries and has made their windows (its CPU quiet)."""
    while time.monotonic() < deadline:
        lines = await metrics_live(server.port)
        open_now = next((float(l.split()[-1]) for l in lines if l.startswith("managedstore_live_queries_open ")), 0)
        if open_now >= n:
            cpu0 = server.cpu_seconds()
            await asyncio.sleep(0.5)
            if server.cpu_seconds() - cpu0 < 0.05:
                return True
        else:
            await asyncio.sleep(0.5)
    return False


async def throughput_part(ctx):
    args = ctx.args
    n = ctx.sizes["idle"]
    rounds = []
    server = None

    async def without_streams():
        cpu0 = server.cpu_seconds()
        result = await wrk_post(server.port, args.wrk_seconds)
        result["server_cpu_s"] = round(server.cpu_seconds() - cpu0, 2)
        return result

    async def with_streams_c(r):
        prefix = f"/v1/objects/Task/live?limit=10&where=title%20%3D%3D%20%22idle-{r}-"
        started = time.monotonic()
        sink = CSink(ctx, server.port, n, prefix, ctx.open_deadline + args.wrk_seconds + 120)
        try:
            settled = await streams_settled(server, n, started + ctx.open_deadline)
            seconds = time.monotonic() - started
            await asyncio.sleep(1)
            before = sink.counts()
            cpu0 = server.cpu_seconds()
            result = await wrk_post(server.port, args.wrk_seconds)
            result["server_cpu_s"] = round(server.cpu_seconds() - cpu0, 2)
            after = sink.counts(final=True)
            result.update(open=after.get("streams", 0) - after.get("ended", 0), failed={} if settled else {"windows not all made in time": n}, open_seconds=round(seconds, 2),
                          ended_during=after.get("ended", 0) - before.get("ended", 0),
                          bytes_read=after.get("bytes", 0) - before.get("bytes", 0),
                          progress_events=after.get("events", 0) - before.get("events", 0), reader="c")
            if result["ended_during"]:
                CONTRACT.note("idle stream closed by the server while read", f"{result['ended_during']} streams")
            if r == 0:
                ctx.results.setdefault("metrics", {})["throughput, streams open"] = await metrics_live(server.port)
            return result
        finally:
            sink.stop()
            await asyncio.sleep(1)

    async def with_streams_python(r):
        lives = [Live(live_path(f'title == "idle-{r}-{i}"', limit=10), parse=False) for i in range(n)]
        try:
            opened, failed, seconds = await open_many(server.port, lives, time.monotonic() + ctx.open_deadline)
            await asyncio.sleep(1)
            before = {id(l): dict(l.counts) for l in lives}
            bytes0 = sum(l.bytes for l in lives)
            cpu0 = server.cpu_seconds()
            result = await wrk_post(server.port, args.wrk_seconds)
            result["server_cpu_s"] = round(server.cpu_seconds() - cpu0, 2)
            result.update(open=opened, failed=failed, open_seconds=round(seconds, 2),
                          ended_during=sum(1 for l in lives if l.ended),
                          bytes_read=sum(l.bytes for l in lives) - bytes0,
                          progress_events=sum(l.counts.get("progress", 0) - before[id(l)].get("progress", 0) for l in lives),
                          diff_events=sum(l.counts.get("diff", 0) - before[id(l)].get("diff", 0) for l in lives), reader="python")
            if result["diff_events"]:
                CONTRACT.note("diff on a live query no write changed", f"{result['diff_events']} diffs on title == \"idle-...\" streams")
            if r == 0:
                ctx.results.setdefault("metrics", {})["throughput, streams open"] = await metrics_live(server.port)
            ended = [l.ended for l in lives if l.ended]
            if ended:
                CONTRACT.note("idle stream closed by the server while read", f"{len(ended)}: {ended[0]}")
            return result
        finally:
            await close_all(lives)
            await asyncio.sleep(1)

    try:
        for r in range(args.rounds):
            # A fresh server on a fresh copy of the seeded store each round: every POST grows the
            # table, and each idle stream's window is a scan of it (`title` has no index), so on
            # one server the later rounds' windows were still being made while wrk ran.
            server = Server(ctx, fresh_store(ctx, f"throughput-{r}"), f"throughput-{r}")
            await server.ready()
            await wrk_post(server.port, 2)  # warm up
            row = {}
            # ABBA: every POST grows the table, which slows the next run; the order alternates so
            # that neither side is always measured on the larger table.
            order = ["without", "with"] if r % 2 == 0 else ["with", "without"]
            for side in order:
                if side == "without":
                    row["without"] = await without_streams()
                    log(f"throughput round {r + 1}: without streams {row['without']['rate']:,.0f}/s")
                elif ctx.live:
                    row["with"] = await (with_streams_c(r) if ctx.sink else with_streams_python(r))
                    w = row["with"]
                    log(f"throughput round {r + 1}: with {w['open']} streams ({w['reader']} reader) {w['rate']:,.0f}/s "
                        f"({w['progress_events']} progress events read, opened in {w['open_seconds']:.1f}s)")
            if "with" in row:
                row["ratio"] = round(row["with"]["rate"] / row["without"]["rate"], 3)
                log(f"throughput round {r + 1}: ratio {row['ratio']:.3f}")
            rounds.append(row)
            server.stop()
            server = None
        return {"streams": n, "seconds": args.wrk_seconds, "rounds": rounds}
    finally:
        if server:
            server.stop()


# ---------------------------------------------------------------------------------------------
# 3. Memory per live query

async def memory_part(ctx, limit):
    levels = ctx.sizes["memory"]
    top = levels[-1]
    server = Server(ctx, fresh_store(ctx, f"memory-{limit}"), f"memory-{limit}")
    lives = []
    try:
        await server.ready()
        span = ctx.args.tasks - limit - 1
        # Warm up: one live query and one fetch, then closed, so first-use costs are not counted.
        warm = Live(live_path("estimate >= -1", "estimate", limit), parse=False)
        await warm.open(server.port, 30)
        await close_all([warm])
        client = Client(server.port)
        await client.request("GET", fetch_path(live_path("estimate >= -1", "estimate", limit)), timeout=30)
        client.close()
        base = await rss_settled(server)
        rows = [{"queries": 0, "rss_kib": base}]
        for level in levels:
            more = [Live(live_path(f"estimate >= {k * span / top:.4f}", "estimate", limit), parse=False, limit=limit)
                    for k in range(len(lives), level)]
            opened, failed, seconds = await open_many(server.port, more, time.monotonic() + ctx.open_deadline)
            lives += more
            alive = [l for l in lives if l.error is None]
            rss = await rss_settled(server, samples=3, gap=0.7)
            full = sum(1 for l in alive if l.snapshot_objects == limit)
            rows.append({"queries": len(alive), "rss_kib": rss, "per_query_kib": round((rss - base) / max(1, len(alive)), 2),
                         "full_windows": full, "open_seconds": round(seconds, 2), "failed": failed})
            log(f"memory limit {limit}: {len(alive)} open ({full} full windows), RSS {rss / 1024:.1f} MiB, "
                f"{(rss - base) / max(1, len(alive)):.1f} KiB a query" + (f", failed {failed}" if failed else ""))
        metrics = await metrics_live(server.port)
        ctx.results.setdefault("metrics", {})[f"memory, {len(lives)} limit-{limit} streams open"] = metrics
        await close_all(lives)
        lives = []
        after = await rss_settled(server, samples=3, gap=1.0)
        return {"limit": limit, "rows": rows, "rss_kib_after_close": after}
    finally:
        await close_all(lives)
        server.stop()


# ---------------------------------------------------------------------------------------------
# 4. Bytes of the diffs against resending the window

async def bytes_part(ctx):
    changes = ctx.args.changes
    server = Server(ctx, fresh_store(ctx, "bytes"), "bytes")
    live = None
    try:
        await server.ready()
        path = live_path("estimate >= 1000", "estimate", 100)
        live = Live(path, parse=True, limit=100)
        await live.open(server.port, 30)
        if live.error:
            return {"error": live.error}
        live.start()
        client = Client(server.port)
        status, _, get_body = await client.request("GET", fetch_path(path), timeout=30)
        rng = random.Random(4)
        kinds = {}
        waits, missing, sizes = [], 0, []
        if len(live.window) < 100:
            return {"error": f"the window holds {len(live.window)} objects, not 100: the store was not seeded as expected"}
        for w in range(changes):
            window = live.window
            if len(window) < 3 or live.ended:
                return {"error": f"after {w} writes the window holds {len(window)} objects" + (f"; the stream ended: {live.ended}" if live.ended else "")}
            kind = ("update", "move", "insert", "delete")[w % 4]
            if kind == "update":
                target = window[rng.randrange(len(window))]
                status, headers, body = await client.request("PATCH", "/v1/objects/" + target["_id"], {"title": f"bytes change {w}"})
            elif kind == "move":
                i, j = rng.sample(range(len(window) - 1), 2)
                estimate = (window[j]["estimate"] + window[j + 1]["estimate"]) / 2
                status, headers, body = await client.request("PATCH", "/v1/objects/" + window[i]["_id"], {"estimate": estimate})
            elif kind == "insert":
                j = rng.randrange(len(window) - 1)
                estimate = (window[j]["estimate"] + window[j + 1]["estimate"]) / 2
                status, headers, body = await client.request("POST", "/v1/objects/Task",
                                                             {"title": f"bytes insert {w}", "priority": w % 6, "estimate": estimate})
            else:
                target = window[rng.randrange(len(window))]
                status, headers, body = await client.request("DELETE", "/v1/objects/" + target["_id"])
            if status // 100 != 2:
                CONTRACT.note("write refused", f"{kind}: {status} {body[:200]!r}")
                continue
            kinds[kind] = kinds.get(kind, 0) + 1
            token = headers.get("history-token")
            if token is None:
                CONTRACT.note("2xx write without History-Token", f"{kind} {status}")
                await asyncio.sleep(0.2)
                continue
            key, sent = tkey(token), time.monotonic()
            deadline = sent + 5
            while time.monotonic() < deadline and not (live.diffs and live.diffs[-1][0] >= key):
                if live.ended:
                    break
                await asyncio.sleep(0.002)
            if live.diffs and live.diffs[-1][0] >= key:
                waits.append(live.diffs[-1][1] - sent)
            else:
                missing += 1
                CONTRACT.note("expected diff never came", f"{path}: {kind} write, token {token}")
        await asyncio.sleep(1.2)
        status, _, body = await client.request("GET", fetch_path(path), timeout=30)
        fetched = json.loads(body)["objects"] if status == 200 else None
        same = fetched == live.window
        if not same:
            first = next((k for k, (a, b) in enumerate(zip(fetched or [], live.window)) if a != b), None)
            CONTRACT.note("window after the diffs differs from GET", f"{path}: first difference at {first}: GET "
                          f"{json.dumps((fetched or [None])[first or 0])[:120]} live {json.dumps(live.window[first or 0] if live.window else None)[:120]}")
        client.close()
        diff_bytes = sum(d[2] for d in live.diffs)
        ops = sum(d[5] for d in live.diffs)
        result = {"changes": sum(kinds.values()), "kinds": kinds, "diffs": len(live.diffs), "ops": ops, "missing": missing,
                  "diff_bytes": diff_bytes, "mean_diff_bytes": round(diff_bytes / max(1, len(live.diffs)), 1),
                  "snapshot_bytes": live.snapshot_bytes, "get_body_bytes": len(get_body),
                  "resend_bytes": sum(kinds.values()) * live.snapshot_bytes,
                  "window_matches_get": same, "diff_wait_p50_ms": ms(pct(waits, 50))}
        result["ratio"] = round(diff_bytes / result["resend_bytes"], 4) if result["resend_bytes"] else None
        ctx.results.setdefault("metrics", {})["bytes, one stream open"] = await metrics_live(server.port)
        return result
    finally:
        if live is not None:
            await close_all([live])
        server.stop()


# ---------------------------------------------------------------------------------------------
# Report

def machine():
    model = "?"
    try:
        with open("/proc/cpuinfo") as f:
            model = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "?")
    except OSError:
        pass
    return f"{os.cpu_count()} cores ({model})"


def report(ctx):
    r = ctx.results
    out = []
    binary = ctx.args.binary
    built = datetime.datetime.fromtimestamp(os.path.getmtime(binary), datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    name = os.path.basename(binary)
    kind = ("debug" if "/debug/" in binary or "debug" in name else
            "release" if "/release/" in binary or "release" in name else "?")
    out.append(f"### Live queries, {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {machine()}")
    out.append("")
    out.append(f"`python3 Benchmarks/http/live_queries.py {' '.join(sys.argv[1:])}`; binary `{os.path.relpath(binary, ROOT) if binary.startswith(ROOT) else binary}` "
               f"({kind} build, {built}); server flags `--log-requests off --max-connections-per-client 0 {' '.join(ctx.server_flags)}`; "
               f"store of {ctx.args.tasks:,} tasks.")
    if kind == "debug":
        out.append("A debug build: these numbers say little about a release build.")
    if not ctx.live:
        out.append(f"Live queries were not served: GET /v1/objects/Task/live answered {ctx.live_status}.")
    out.append("")
    if r.get("latency"):
        out.append(f"Commit-to-event latency (writer: POST one Task at {ctx.args.rate:g}/s for {ctx.args.seconds:g} s; "
                   "from the 2xx answer to the first diff with id >= its History-Token, on each live query the write changed):")
        out.append("")
        out.append("| live queries open | opened in s | writes | (write, query) pairs | missing | p50 ms | p99 ms | max ms | events before the 2xx | write p50 ms | client loop lag p99 ms | server RSS MiB |")
        out.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for row in r["latency"]:
            out.append(f"| {row['queries']:,} ({row.get('opened', 0):,} opened) | {fmt(row.get('open_seconds'), '.1f')} | {row.get('writes', '-')} | "
                       f"{fmt(row.get('pairs'), ',')} | {fmt(row.get('missing'), ',')} | {fmt(row.get('p50_ms'), '.2f')} | {fmt(row.get('p99_ms'), '.2f')} | "
                       f"{fmt(row.get('max_ms'), '.2f')} | {fmt(row.get('events_before_answer'), ',')} | {fmt(row.get('write_p50_ms'), '.2f')} | "
                       f"{fmt(row.get('client_loop_lag_p99_ms'), '.2f')} | {fmt(row.get('rss_mib_open'), '.1f')} |")
        out.append("")
        out.append("A negative latency is a diff read before the write's answer (both timestamps are taken in one asyncio "
                   "loop; its lag, measured by a 10 ms ticker, is shown).")
        out.append("")
    if r.get("throughput"):
        t = r["throughput"]
        rounds = t["rounds"]
        readers = {x["with"].get("reader", "python") for x in rounds if "with" in x}
        out.append(f"POST insert (`wrk -t2 -c16 -d{t['seconds']}s -s Benchmarks/http/post_insert.lua`), alternating on a fresh server each round "
                   f"(ABBA: without then with in odd rounds, with then without in even ones), "
                   f"without and with {t['streams']:,} idle live queries open and read (`title == \"idle-i\"`, never changed by the POSTs; "
                   f"read by {' and '.join(sorted(readers)) or '-'}: c is Benchmarks/http/sse_sink.c):")
        out.append("")
        out.append("| run | " + " | ".join(f"round {i + 1}" for i in range(len(rounds))) + " | median |")
        out.append("|---|" + "---:|" * (len(rounds) + 1))
        wo = [x["without"]["rate"] for x in rounds]
        out.append("| without streams, req/s | " + " | ".join(f"{v:,.0f}" for v in wo) + f" | {statistics.median(wo):,.0f} |")
        if all("with" in x for x in rounds) and rounds:
            wi = [x["with"]["rate"] for x in rounds]
            ra = [x["ratio"] for x in rounds]
            out.append(f"| with {t['streams']:,} streams, req/s | " + " | ".join(f"{v:,.0f}" for v in wi) + f" | {statistics.median(wi):,.0f} |")
            out.append("| with / without | " + " | ".join(f"{v:.3f}" for v in ra) + f" | **{statistics.median(ra):.3f}** (goal >= 0.95) |")
            out.append("| streams open (failed) | " + " | ".join(f"{x['with']['open']:,} ({sum(x['with']['failed'].values())})" for x in rounds) + " | |")
            out.append("| progress events read during the run | " + " | ".join(f"{x['with']['progress_events']:,}" for x in rounds) + " | |")
            out.append("| server CPU s without / with | " + " | ".join(f"{x['without']['server_cpu_s']} / {x['with']['server_cpu_s']}" for x in rounds) + " | |")
        out.append("")
    if r.get("memory"):
        out.append("Server RSS (/proc VmRSS) with idle live queries open (`estimate >= x`, sort=estimate, distinct x, windows full):")
        out.append("")
        out.append("| limit | live queries | full windows | RSS MiB | (RSS - RSS at 0) / N, KiB |")
        out.append("|---:|---:|---:|---:|---:|")
        for m in r["memory"]:
            for row in m["rows"]:
                out.append(f"| {m['limit']} | {row['queries']:,} | {fmt(row.get('full_windows'), ',')} | {row['rss_kib'] / 1024:,.1f} | {fmt(row.get('per_query_kib'), '.1f')} |")
            out.append(f"| {m['limit']} | all closed | | {m['rss_kib_after_close'] / 1024:,.1f} | |")
        out.append("")
    if r.get("bytes"):
        b = r["bytes"]
        if "error" in b:
            out.append(f"Bytes: the stream failed: {b['error']}")
        else:
            out.append(f"Bytes of diffs against resending the window (limit 100, {b['changes']} single-object writes that each change it: "
                       + ", ".join(f"{v} {k}" for k, v in sorted(b["kinds"].items())) + "):")
            out.append("")
            out.append("| diffs | ops | diff bytes | mean diff bytes | snapshot event bytes | changes x snapshot | diff / resend | GET body bytes | window = GET |")
            out.append("|---:|---:|---:|---:|---:|---:|---:|---:|---|")
            out.append(f"| {b['diffs']} | {b['ops']} | {b['diff_bytes']:,} | {b['mean_diff_bytes']:,.0f} | {b['snapshot_bytes']:,} | {b['resend_bytes']:,} | "
                       f"{fmt(b['ratio'], '.4f')} | {b['get_body_bytes']:,} | {'yes' if b['window_matches_get'] else 'NO'} |")
        out.append("")
    metrics = r.get("metrics") or {}
    if metrics:
        shown = [(k, v) for k, v in metrics.items() if v]
        if any(v for _, v in shown):
            out.append("Server metrics mentioning live queries:")
            out.append("")
            for k, v in shown:
                out.append(f"- {k}: " + ("; ".join(f"`{line}`" for line in v[:12]) if v else "none"))
        else:
            out.append("/v1/metrics has no line mentioning live queries.")
        out.append("")
    problems = CONTRACT.lines()
    out.append("Contract: " + ("nothing the contract forbids was seen." if not problems else ""))
    for line in problems:
        out.append(f"- {line}")
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------

def default_binary():
    if os.environ.get("MANAGEDSTORE"):
        return os.environ["MANAGEDSTORE"]
    release = os.path.join(ROOT, ".build", "release", "managedstore")
    return release if os.access(release, os.X_OK) else os.path.join(ROOT, ".build", "debug", "managedstore")


async def main_async(ctx):
    args = ctx.args
    await seed(ctx)
    parts = args.only.split(",")
    budget = args.budget

    def time_left(part):
        if time.monotonic() - START > budget:
            log(f"{part}: skipped, the run's budget of {budget:.0f}s is spent")
            return False
        return True

    if "latency" in parts and ctx.live:
        ctx.results["latency"] = []
        for n in ctx.sizes["latency"]:
            if not time_left(f"latency n={n}"):
                break
            row = await latency_part(ctx, n)
            ctx.results["latency"].append(row)
            log(f"latency n={n}: " + json.dumps({k: v for k, v in row.items() if k != "metrics"}))
            if row.get("metrics"):
                ctx.results.setdefault("metrics", {})[f"latency, {row.get('opened')} streams open"] = row["metrics"]
    if "throughput" in parts and time_left("throughput"):
        ctx.results["throughput"] = await throughput_part(ctx)
    if "memory" in parts and ctx.live:
        ctx.results["memory"] = []
        for limit in (10, 100):
            if time_left(f"memory limit {limit}"):
                ctx.results["memory"].append(await memory_part(ctx, limit))
    if "bytes" in parts and ctx.live and time_left("bytes"):
        ctx.results["bytes"] = await bytes_part(ctx)
        log("bytes: " + json.dumps(ctx.results["bytes"]))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default=default_binary(), help="default: $MANAGEDSTORE, else .build/release/managedstore, else .build/debug/managedstore")
    parser.add_argument("--quick", action="store_true", help="small numbers (1/100/1000 queries, 3 s wrk runs): a smoke run")
    parser.add_argument("--only", default="latency,throughput,memory,bytes")
    parser.add_argument("--tasks", type=int, default=5000, help="tasks in the seeded store")
    parser.add_argument("--rate", type=float, default=20, help="latency: writes a second")
    parser.add_argument("--seconds", type=float, default=None, help="latency: seconds of writes (5; --quick 3)")
    parser.add_argument("--settle", type=float, default=10, help="latency: seconds to wait for the last diffs")
    parser.add_argument("--wrk-seconds", type=int, default=None, help="throughput: seconds a wrk run (8; --quick 3)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--changes", type=int, default=None, help="bytes: writes (100; --quick 40)")
    parser.add_argument("--budget", type=float, default=540, help="seconds after which no further part starts")
    parser.add_argument("--json", help="write every number here too")
    parser.add_argument("--reader", choices=["c", "python"], default="c",
                        help="throughput: who holds and reads the idle streams (c: sse_sink.c, when a C compiler is here)")
    args = parser.parse_args()
    args.seconds = args.seconds or (3 if args.quick else 5)
    args.wrk_seconds = args.wrk_seconds or (3 if args.quick else 8)
    args.changes = args.changes or (40 if args.quick else 100)
    args.binary = os.path.abspath(args.binary)
    if not os.access(args.binary, os.X_OK):
        sys.exit(f"live_queries: no executable binary at {args.binary}")
    if shutil.which("wrk") is None and "throughput" in args.only:
        sys.exit("live_queries: wrk is not installed")

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    files = resource.getrlimit(resource.RLIMIT_NOFILE)[0]

    ctx = Context()
    ctx.args = args
    ctx.results = {}
    ctx.live, ctx.live_status, ctx.history_token = False, None, False
    ctx.work = tempfile.mkdtemp(prefix="managedstore-live-")
    ctx.sizes = {"latency": [1, 100, 1000] if args.quick else [1, 100, 10000],
                 "idle": 1000 if args.quick else 10000,
                 "memory": [100, 1000] if args.quick else [1000, 10000]}
    ctx.open_deadline = 60 if args.quick else 150
    need = max(ctx.sizes["latency"][-1], ctx.sizes["idle"], ctx.sizes["memory"][-1]) + 200
    if files < need:
        log(f"warning: the open-file limit is {files}, below the {need} the largest part needs")
    try:
        ctx.binary = os.path.join(ctx.work, "managedstore")
        shutil.copy2(args.binary, ctx.binary)
        help_text = subprocess.run([ctx.binary, "serve", "--help"], capture_output=True, text=True, timeout=30).stdout
        ctx.server_flags = []
        if "--max-live-queries" in help_text:
            ctx.server_flags += ["--max-live-queries", "20000"]
        elif max(ctx.sizes["latency"][-1], ctx.sizes["idle"], ctx.sizes["memory"][-1]) > 1000:
            log("warning: serve --help lists no --max-live-queries: past the default (1000) streams are 503")
        if "--max-connections " in help_text and need > 16000:
            ctx.server_flags += ["--max-connections", str(need + 1000)]
        ctx.sink = build_sink(ctx) if args.reader == "c" else None
        if args.reader == "c" and ctx.sink is None:
            log("warning: no C compiler: the idle streams are read by Python")
        log(f"binary {args.binary} (copied), server flags {ctx.server_flags}, open-file limit {files}")
        try:
            asyncio.run(main_async(ctx))
        except Exception:
            import traceback
            traceback.print_exc()
            log("the run stopped early: the report has what was measured before")
        text = report(ctx)
        print()
        print(text)
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"results": ctx.results, "contract": CONTRACT.counts, "examples": CONTRACT.examples}, f, indent=1, default=str)
    finally:
        shutil.rmtree(ctx.work, ignore_errors=True)


if __name__ == "__main__":
    main()
