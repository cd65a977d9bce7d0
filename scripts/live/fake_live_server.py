#!/usr/bin/env python3
"""A stand-in for the server's live queries, to test the walk itself (not the server):

    python3 scripts/live/live_walk.py --binary scripts/live/fake_live_server.py ...

Run as `fake_live_server.py serve ARGS`, it starts the real binary (MANAGEDSTORE_REAL, default
.build/debug/managedstore) with ARGS on another port, and answers on the asked port as a proxy
that adds what the real server may lack yet: a History-Token on 2xx writes (its own counter,
kept beside the store file) and GET /v1/objects/{Entity}/live, made naively by fetching each
live query again after every write and sending the difference. It resumes with a diff while
it remembers the answer at the token asked (its last 50), else with a reset.

FAKE_LIVE_BUG makes it wrong on purpose, to see that the walk notices: `index` (an insert one
place off now and then), `update` (updates left out), `more` (`more` always false),
`same-update` (an update that changes nothing), `progress` (no progress events), `resume`
(a resume answered by a snapshot). `serve --help` is the real binary's.
"""
import asyncio
import json
import os
import random
import re
import signal
import subprocess
import sys
from urllib.parse import parse_qsl, urlsplit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import httpio  # noqa: E402

REAL = os.environ.get("MANAGEDSTORE_REAL", ".build/debug/managedstore")
BUG = os.environ.get("FAKE_LIVE_BUG", "")
LIVE = re.compile(r"^/v1/objects/(\w+)/live$")
HISTORY_KEEP = 50


def make_ops(old, new):
    """Deletes (back to front), then moves and inserts front to back, then updates."""
    ops, cur = [], list(old)
    new_ids = [o["_id"] for o in new]
    for i in reversed(range(len(cur))):
        if cur[i]["_id"] not in new_ids:
            ops.append({"op": "delete", "index": i})
            cur.pop(i)
    for j, o in enumerate(new):
        ids = [c["_id"] for c in cur]
        if o["_id"] in ids:
            i = ids.index(o["_id"])
            if i != j:
                ops.append({"op": "move", "from": i, "to": j})
                cur.insert(j, cur.pop(i))
        else:
            index = j + 1 if BUG == "index" and j < len(cur) and random.random() < 0.1 else j
            ops.append({"op": "insert", "index": index, "object": o})
            cur.insert(j, o)
    for j, o in enumerate(new):
        if cur[j] != o and BUG != "update":
            ops.append({"op": "update", "index": j, "object": o})
        cur[j] = o
    if BUG == "same-update" and cur and random.random() < 0.05:
        ops.append({"op": "update", "index": 0, "object": cur[0]})
    return ops


class Stream:
    def __init__(self, key, writer):
        self.key, self.writer = key, writer
        self.objects, self.more, self.token = None, None, None

    def send(self, kind, token, data):
        text = f"event: {kind}\nid: {token}\ndata: {json.dumps(data)}\n\n".encode()
        self.writer.write(b"%x\r\n%s\r\n" % (len(text), text))


class Fake:
    def __init__(self, args):
        self.args = args
        self.port = int(value_of(args, "--port", "8080"))
        store = value_of(args, "--store", ":memory:")
        self.token_file = None if store == ":memory:" or "://" in store else store + ".fake-token"
        self.token = int(open(self.token_file).read()) if self.token_file and os.path.exists(self.token_file) else 0
        self.backend_port = free_port()
        self.lock = asyncio.Lock()
        self.streams = set()
        self.history = {}  # query key -> {token: (objects, more)}

    def backend_args(self):
        args, skip = [], False
        for i, arg in enumerate(self.args):
            if skip:
                skip = False
            elif arg == "--port":
                args += ["--port", str(self.backend_port)]
                skip = True
            elif arg.startswith("--max-live"):
                skip = True
            else:
                args.append(arg)
        return [REAL, "serve"] + args

    async def backend(self, method, path, body=None, headers=None):
        return await httpio.request("127.0.0.1", self.backend_port, method, path, body, headers, timeout=30)

    async def fetch(self, key):
        entity, query = key
        answer = await self.backend("GET", f"/v1/objects/{entity}?{query}" if query else f"/v1/objects/{entity}")
        if answer.status != 200:
            return None, answer
        data = answer.json()
        return (data["objects"], data["next"] is not None if BUG != "more" else False), answer

    def remember(self, key, token, state):
        kept = self.history.setdefault(key, {})
        kept[token] = state
        for old in sorted(kept)[:-HISTORY_KEEP]:
            del kept[old]

    async def committed(self):
        """A write committed (self.lock held): a new token, every live query told what changed."""
        self.token += 1
        if self.token_file:
            with open(self.token_file, "w") as f:
                f.write(str(self.token))
        for key in {s.key for s in self.streams}:
            state, _ = await self.fetch(key)
            if state is None:
                continue
            self.remember(key, self.token, state)
            for stream in [s for s in self.streams if s.key == key]:
                self.tell(stream, state, self.token)
        return self.token

    def tell(self, stream, state, token):
        objects, more = state
        if stream.objects == objects and stream.more == more:
            if BUG != "progress":
                stream.send("progress", token, {"token": str(token)})
        else:
            stream.send("diff", token, {"from": str(stream.token), "to": str(token),
                                        "ops": make_ops(stream.objects, objects), "more": more})
        stream.objects, stream.more, stream.token = objects, more, token

    async def live(self, entity, query, headers, writer):
        params = parse_qsl(query)
        names = {name for name, _ in params}
        if names & {"offset", "after", "include", "count"} or any(
                n == "limit" and v.isdigit() and int(v) > 1000 for n, v in params):
            return respond(writer, 400, b'{"code":"bad-request"}')
        since = headers.get("last-event-id") or dict(params).get("since")
        key = (entity, re.sub(r"(^|&)since=[^&]*", "", query).strip("&"))
        stream = Stream(key, writer)
        async with self.lock:
            state, answer = await self.fetch(key)
            if state is None:
                return respond(writer, answer.status, answer.body)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
            old = self.history.get(key, {}).get(int(since)) if since and since.isdigit() else None
            if old is not None and BUG != "resume":
                stream.objects, stream.more, stream.token = old[0], old[1], int(since)
                self.tell(stream, state, self.token)
            else:
                kind = "reset" if since and BUG != "resume" else "snapshot"
                stream.send(kind, self.token, {"token": str(self.token), "objects": state[0], "more": state[1]})
                stream.objects, stream.more, stream.token = state[0], state[1], self.token
            self.remember(key, self.token, state)
            self.streams.add(stream)
        return stream

    async def handle(self, reader, writer):
        stream = None
        try:
            line = (await httpio.read_line(reader, 30)).decode()
            method, target, _ = line.split(" ", 2)
            headers = {}
            while True:
                header = (await httpio.read_line(reader, 30)).decode()
                if not header:
                    break
                name, _, value = header.partition(":")
                headers[name.strip().lower()] = value.strip()
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            url = urlsplit(target)
            live = LIVE.match(url.path)
            if method == "GET" and live and live.group(1) in ("Task", "Project", "Tag"):
                stream = await self.live(live.group(1), url.query, headers, writer)
                if stream is None:
                    return
                while await reader.read(1024):  # until the client goes
                    pass
                return
            forwarded = {k: v for k, v in headers.items() if k in ("content-type", "if-match", "accept")}
            if method == "GET":
                answer = await self.backend(method, target, body or None, forwarded)
            else:
                # Writes one at a time, each given its token before anything else reads: so the
                # answer at a token is one state (this stand-in's tokens are its own).
                async with self.lock:
                    answer = await self.backend(method, target, body or None, forwarded)
                    writes_objects = url.path.startswith("/v1/objects") or url.path == "/v1/transactions"
                    token = await self.committed() if 200 <= answer.status < 300 and writes_objects else None
            extra = {}
            if method != "GET" and 200 <= answer.status < 300:
                if url.path.startswith("/v1/objects") or url.path == "/v1/transactions":
                    extra["History-Token"] = str(token)
                    if url.path == "/v1/transactions":
                        data = answer.json()
                        data["token"] = str(token)
                        answer.body = json.dumps(data).encode()
                elif url.path == "/v1/changes":  # pruned: resumes from before it get a reset
                    before = dict(parse_qsl(url.query)).get("before", "0")
                    for kept in self.history.values():
                        for token in [t for t in kept if t < int(before)]:
                            del kept[token]
            respond(writer, answer.status, answer.body, answer.headers.get("content-type"), extra)
        except (OSError, ValueError, asyncio.IncompleteReadError, asyncio.TimeoutError, httpio.HTTPError):
            pass
        finally:
            self.streams.discard(stream)
            writer.close()

    async def main(self):
        process = subprocess.Popen(self.backend_args())
        for _ in range(300):
            try:
                if (await self.backend("GET", "/v1/readyz")).status == 200:
                    break
            except OSError:
                pass
            await asyncio.sleep(0.1)
        server = await asyncio.start_server(self.handle, "127.0.0.1", self.port, reuse_address=True)
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        await stop.wait()
        server.close()
        for stream in list(self.streams):
            stream.writer.transport.abort()
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=20)


def respond(writer, status, body, content_type=None, extra=None):
    head = [f"HTTP/1.1 {status} X", f"Content-Length: {len(body)}", "Connection: close"]
    if content_type:
        head.append(f"Content-Type: {content_type}")
    head += [f"{k}: {v}" for k, v in (extra or {}).items()]
    writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)


def value_of(args, flag, default):
    return args[args.index(flag) + 1] if flag in args else default


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    if sys.argv[1:2] != ["serve"] or "--help" in sys.argv:
        sys.exit(subprocess.run([REAL] + sys.argv[1:]).returncode)
    asyncio.run(Fake(sys.argv[2:]).main())
