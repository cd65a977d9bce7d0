#!/usr/bin/env python3
"""A seeded, bounded, model-based walk of live queries (GET /v1/objects/{Entity}/live) against
the real server: the answers that live queries hold, built from their snapshot, diff, progress
and reset events, must equal what a plain fetch with the same parameters answers.

    python3 scripts/live/live_walk.py --seed 1 --commits 300 --seconds 150 --faults

It starts `managedstore serve --demo` on a fresh SQLite file (or three servers on one
PostgreSQL database with --postgres), seeds some data, opens --subscriptions live queries
(random where, sort, limit and fields; some identical), and then goes in rounds:

  1. 1 to --writers random writes run at once (inserts, PATCH, PUT, DELETE, batch PATCH and
     DELETE, transactions, changes of related projects and tags; 4xx answers are counted);
  2. the round's target is the highest History-Token of its 2xx answers; every subscription
     must reach a token >= the target within 15 s (a diff or a progress event);
  3. each distinct query is fetched, and every subscription's list (whole objects, in order)
     and its `more` must equal the fetch's objects and `next != null`.

Every event is applied by the contract's rules as it comes (scripts/live/livelist.py): an
index out of range, a diff from a token not held, an update that changes nothing, a token
going backwards are failures at once. With --faults, some rounds also drop a connection and
resume it (Last-Event-ID or ?since=), make one subscription a slow reader, prune the history
while a subscription is away, or restart a server. The first divergence prints the seed, the
round, the query, the expected and held lists and the events since the last check, and the
exit status is 1; a clean run ends with one line `live walk: seed S, ... no divergence`.

The same seed makes the same choices, but concurrent writes commit in the order the server
takes them, so a rerun with the same seed is close to, not exactly, the same walk; --writers 1
makes it nearly exact.
"""
import argparse
import asyncio
import collections
import json
import os
import random
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import generate  # noqa: E402
import httpio  # noqa: E402
import servers  # noqa: E402
from livelist import ContractError, LiveList, short, token_int  # noqa: E402

ROUND_WAIT = 15.0  # seconds a round waits for every subscription to reach its target token
LATE = 3.0  # progress comes at most 1 s after a commit; past 3 s (a loaded machine) it is noted
STREAM_READ_TIMEOUT = 45.0  # an idle stream gets a comment every 15 s: 45 s of nothing is wrong
SLOW_BUFFER = 4096  # SO_RCVBUF and asyncio buffer of a slow reader
LAG_BYTES = 256 * 1024  # --max-live-lag-bytes with --faults (when the binary has it): reachable
FAULT_CHANCE = 0.2
FAULTS = [("drop", 4), ("slow", 2), ("prune", 2), ("restart", 1)]
LOG_KEEP = 300  # events kept per subscription between checks


class NoLiveQueries(Exception):
    """The binary has no /live endpoint: nothing to walk (exit status 2)."""


class Divergence(Exception):
    """What the walk reports and stops on: a live answer unlike the fetch, or a stream or
    server breaking the contract."""


# Subscriptions ------------------------------------------------------------------------------

class Subscription:
    """One live query on its own connection, kept open (and resumed) by its task."""

    def __init__(self, walk, number, query, server):
        self.walk, self.number, self.query, self.server = walk, number, query, server
        self.rng = random.Random(f"{walk.seed}/{number}")  # its own: tasks run in any order
        self.held = LiveList(query.effective_limit)
        self.log = []  # what happened since the last check
        self.away = False  # disconnected on purpose, not checked until it comes back
        self.back = asyncio.Event()
        self.back.set()
        self.reading = asyncio.Event()  # cleared: a slow reader that reads nothing for now
        self.reading.set()
        self.slow_until = None  # the round at which a slow reader reads again
        self.small_buffer = False
        self.fresh_next = False  # the next connection starts afresh (no resume)
        self.dropping = False  # the walk closed the connection (not the server)
        self.writer = None
        self.connected_once = False
        self.connections = 0
        self.server_ends = 0  # streams the server ended outside restarts
        self.resumes = collections.Counter()  # how resumes were answered: diff, reset, progress
        self.task = None

    def label(self):
        return f"subscription #{self.number} on server {self.server.name}: GET {self.query}"

    def checked(self):
        return not self.away and self.reading.is_set()

    def note(self, text):
        self.log.append(f"{time.monotonic() - self.walk.began:8.3f}s {text}")
        del self.log[:-LOG_KEEP]

    # The walk's levers.

    def drop(self, away):
        """Closes the connection; away: stay disconnected until come_back()."""
        self.away = away
        if away:
            self.back.clear()
        self.dropping = True
        if self.writer is not None:
            self.writer.transport.abort()

    def come_back(self):
        self.away = False
        self.back.set()

    def close(self):
        if self.writer is not None:
            self.writer.transport.abort()
            self.writer = None

    # The connection loop.

    async def run(self):
        while not self.walk.stopping:
            await self.back.wait()
            self.dropping = False
            try:
                await self.stream()
                ended = "the server ended the stream (last chunk)"
            except ContractError as error:
                self.walk.fail(Divergence(f"the stream broke the contract: {error}"), self)
                return
            except (OSError, EOFError, asyncio.IncompleteReadError, asyncio.TimeoutError, httpio.HTTPError,
                    UnicodeDecodeError) as error:
                ended = f"connection ended: {type(error).__name__} {error}".rstrip()
            finally:
                self.close()
            if self.dropping or self.walk.stopping:
                self.note("dropped by the walk")
                continue
            self.note(ended)
            if not self.walk.restarting and self.connected_once:
                self.server_ends += 1
            await asyncio.sleep(0.2)  # then resume

    async def stream(self):
        """One connection: asks (resuming from the token held, if any), then applies events
        until the stream ends."""
        self.connected_once = False
        if self.fresh_next:
            self.fresh_next, self.held = False, LiveList(self.query.effective_limit)
        resume = self.held.token
        headers, extra = {"Accept": "text/event-stream"}, []
        via = None
        if resume is not None:
            # Both ways of resuming that the contract gives.
            via = "since" if self.rng.random() < 0.3 else "Last-Event-ID"
            if via == "since":
                extra = [("since", str(resume))]
            else:
                headers["Last-Event-ID"] = str(resume)
        path = self.query.live_path(extra)
        small = self.small_buffer
        host, port = self.server.host, self.server.port
        reader, self.writer = await httpio.connect(host, port, rcvbuf=SLOW_BUFFER if small else None,
                                                   limit=SLOW_BUFFER if small else 1 << 16)
        if self.dropping:  # the walk dropped it while it was connecting
            return
        self.writer.write(httpio.request_bytes("GET", path, host, port, headers=headers))
        await asyncio.wait_for(self.writer.drain(), 10)
        status, head = await httpio.read_head(reader, 10)
        if status == 503:  # not ready yet (a restart), or --max-live-queries: try again soon
            self.note(f"503 (Retry-After {head.get('retry-after')})")
            await asyncio.sleep(0.5)
            return
        if status != 200:
            body = b"".join([chunk async for chunk in httpio.body_chunks(reader, head, 10)])
            raise ContractError(f"GET {path} answered {status}: {body[:300].decode('utf-8', 'replace')}")
        if not head.get("content-type", "").startswith("text/event-stream"):
            raise ContractError(f"GET {path} answered Content-Type {head.get('content-type')!r}, not text/event-stream")
        self.connected_once = True
        self.connections += 1
        self.note(f"connected{' (small buffer)' if small else ''}, " +
                  (f"resuming from {resume} by {via}" if resume is not None else "afresh"))
        parser = httpio.SSEParser()
        resuming = resume is not None
        chunks = httpio.body_chunks(reader, head, STREAM_READ_TIMEOUT)
        while True:
            await self.reading.wait()  # a slow reader stops here, leaving the bytes unread
            try:
                chunk = await chunks.__anext__()
            except StopAsyncIteration:
                return
            for event in parser.feed(chunk):
                description = self.held.apply(event, resuming)
                if resuming:
                    self.resumes[event["event"]] += 1
                    self.walk.resumes[event["event"]] += 1
                resuming = False
                self.walk.events += 1
                self.note(description)
            self.walk.comments += parser.comments
            parser.comments = 0


# The walk ----------------------------------------------------------------------------------

class Walk:
    def __init__(self, args):
        self.args = args
        self.seed = args.seed if args.seed is not None else random.randrange(1, 10 ** 9)
        self.rng = random.Random(self.seed)
        self.began = time.monotonic()
        self.deadline = self.began + args.seconds
        self.work = tempfile.mkdtemp(prefix="live-walk-")
        self.servers, self.subs = [], []
        self.failure = None
        self.stopping = self.restarting = False
        self.round = 0
        self.commits = 0
        self.max_token = 0
        self.events = self.comments = 0
        self.rejected = collections.Counter()  # 4xx writes by status and kind
        self.written = collections.Counter()  # 2xx writes by kind
        self.faults = collections.Counter()
        self.resumes = collections.Counter()
        self.notes = []  # odd but allowed things, printed at the end
        self.slowest_wait = 0.0
        self.update_ops_checked = 0

    # Reporting.

    def say(self, text):
        print(text, flush=True)

    def verbose(self, text):
        if self.args.verbose:
            self.say(f"[{time.monotonic() - self.began:7.2f}s r{self.round}] {text}")

    def remember(self, text):
        self.notes.append(f"round {self.round}: {text}")
        self.verbose(f"note: {text}")

    def fail(self, divergence, sub=None):
        if self.failure is None:
            self.failure = (divergence, sub)

    def check_failure(self):
        if self.failure is not None:
            raise self.failure[0]

    def time_left(self):
        return self.deadline - time.monotonic()

    # Servers.

    async def start_servers(self):
        flags = servers.serve_flags(self.args.binary)
        extra = []
        for flag, value in [("--max-connections-per-client", "0"), ("--log-requests", "off"),
                            ("--shutdown-timeout", "5")]:
            if flag in flags:
                extra += [flag, value]
        if self.args.faults and "--max-live-lag-bytes" in flags:
            extra += ["--max-live-lag-bytes", str(LAG_BYTES)]  # so a slow reader can really be closed
        if self.args.postgres:
            stores = [self.args.postgres] * 3
        else:
            stores = [os.path.join(self.work, "walk.sqlite")]
        for n, store in enumerate(stores):
            server = servers.Server(str(n), self.args.binary, store, servers.free_port(), extra,
                                    os.path.join(self.work, f"server{n}.log"))
            self.servers.append(server)
            await server.start()  # one after another: the first one migrates a new database
        self.verbose(f"servers on ports {[s.port for s in self.servers]}, flags {' '.join(extra)}")

    async def restart(self, server):
        """SIGTERM, which the contract says ends in exit 0 within --shutdown-timeout, then the
        same command again: same port, same store."""
        self.restarting = True
        try:
            status, took = await server.stop()
            if status != 0:
                raise Divergence(f"server {server.name} answered SIGTERM with exit status {status} after {took:.1f} s "
                                 f"(the contract: exit 0 within --shutdown-timeout, 5 s here)\n{server.log_tail()}")
            if took > 3:
                self.remember(f"server {server.name} took {took:.1f} s to stop on SIGTERM")
            await server.start()
        finally:
            self.restarting = False
        self.verbose(f"restarted server {server.name} (stopped in {took:.2f} s)")

    # HTTP.

    def any_server(self):
        return self.rng.choice(self.servers)

    async def get_json(self, server, path, what):
        answer = await httpio.request(server.host, server.port, "GET", path, timeout=30)
        if answer.status != 200:
            raise Divergence(f"{what}: GET {path} answered {answer.status}: {answer.short()}")
        return answer.json()

    async def send_write(self, server, write):
        """A write; its History-Token when 2xx (counted as a commit), None when 4xx."""
        answer = await httpio.request(server.host, server.port, write.method, write.path, write.body,
                                      write.headers, timeout=30)
        if 200 <= answer.status < 300:
            token = self.history_token(answer, write)
            self.commits += 1
            self.written[write.kind] += 1
            self.verbose(f"{answer.status} @{token} {write}")
            return token
        if answer.status in (404, 409, 422):
            # Another writer got there first (404, a stale If-Match), a uniqueness clash (409),
            # an invalid value, a deny rule or a relationship to an object just deleted (422):
            # all written nothing, as the contract says.
            self.rejected[f"{answer.status} {write.kind}"] += 1
            self.verbose(f"{answer.status} {write}: {answer.short(160)}")
            return None
        raise Divergence(f"a write answered {answer.status} (the walk expects 2xx, 404, 409 or 422):\n"
                         f"  {write}\n  {answer.short()}")

    def history_token(self, answer, write):
        header = answer.headers.get("history-token")
        if header is None:
            raise Divergence(f"a {answer.status} write answer has no History-Token header: {write}")
        try:
            token = token_int(header, "History-Token")
        except ContractError as error:
            raise Divergence(f"{error}: {write}") from None
        if write.path == "/v1/transactions":
            body_token = answer.json().get("token")
            if body_token != header:
                raise Divergence(f"a transaction answered token {body_token!r} in its body and History-Token {header}")
        return token

    # Set-up.

    async def check_live_exists(self):
        server = self.servers[0]
        reader, writer = await httpio.connect(server.host, server.port)
        try:
            writer.write(httpio.request_bytes("GET", "/v1/objects/Task/live", server.host, server.port,
                                              headers={"Accept": "text/event-stream"}))
            status, head = await httpio.read_head(reader, 10)
        finally:
            writer.close()
        if status != 200:
            raise NoLiveQueries(f"live walk: GET /v1/objects/Task/live answered {status}: this binary "
                                f"({self.args.binary}) has no live queries yet")

    async def check_live_refusals(self):
        """What the contract says /live refuses with 400, beside the fetch accepting it."""
        server = self.servers[0]
        for extra in ["offset=1", "after=abc", "include=project", "count=true", "limit=1001"]:
            answer = await self.live_head(server, f"/v1/objects/Task/live?{extra}")
            if answer != 400:
                raise Divergence(f"GET /v1/objects/Task/live?{extra} answered {answer}: the contract says 400")

    async def live_head(self, server, path):
        reader, writer = await httpio.connect(server.host, server.port)
        try:
            writer.write(httpio.request_bytes("GET", path, server.host, server.port,
                                              headers={"Accept": "text/event-stream"}))
            status, _ = await httpio.read_head(reader, 10)
            return status
        finally:
            writer.close()

    async def accepted(self, entity, name, values):
        """The values of one parameter that the server accepts in a fetch; the others are
        left out of the walk and said (a predicate or sort the server does not support is
        not the live query's business)."""
        kept = []
        for value in values:
            if value is None:
                kept.append(value)
                continue
            path = generate.Query(entity, **{name: value}, limit=1).fetch_path()
            answer = await httpio.request(self.servers[0].host, self.servers[0].port, "GET", path)
            if answer.status == 200:
                kept.append(value)
            else:
                self.say(f"live walk: the fetch refuses {name}={value!r} ({answer.status}): left out of the walk")
        return kept

    async def empty_store(self):
        """With --postgres the database may hold an earlier run's objects."""
        server = self.servers[0]
        for entity in ("Task", "Tag", "Project"):
            await httpio.request(server.host, server.port, "DELETE", f"/v1/objects/{entity}?where=TRUEPREDICATE")

    async def seed_data(self):
        """Projects, tags and tasks to start from, so that the first windows are full."""
        server = self.servers[0]
        for name in generate.PROJECT_NAMES[:6]:
            await self.send_write(server, generate.Write("seed", "POST", "/v1/objects/Project",
                                                         {"name": name, "archived": name == "p3"}))
        for label in generate.TAG_LABELS[:6]:
            await self.send_write(server, generate.Write("seed", "POST", "/v1/objects/Tag", {"label": label}))
        registry = await self.read_registry()
        tasks = [generate.task_values(self.rng, registry, every=True) for _ in range(80)]
        for values in tasks:
            values["priority"] = min(max(values["priority"], 0), 5)
        token = await self.send_write(server, generate.Write("seed", "POST", "/v1/objects/Task", tasks))
        self.max_token = max(self.max_token, token or 0)
        self.commits = 0
        self.written.clear()

    async def read_registry(self):
        server = self.servers[0]
        lists = []
        for entity in ("Task", "Project", "Tag"):
            lists.append((await self.get_json(server, f"/v1/objects/{entity}?limit=1000", "the writers' registry"))["objects"])
        return generate.Registry(*lists)

    async def open_subscriptions(self):
        pools = (await self.accepted("Task", "where", generate.TASK_WHERE),
                 await self.accepted("Task", "sort", generate.TASK_SORT),
                 await self.accepted("Project", "where", generate.PROJECT_WHERE),
                 await self.accepted("Project", "sort", generate.PROJECT_SORT))
        queries = generate.subscription_queries(self.rng, self.args.subscriptions, pools)
        for number, query in enumerate(queries):
            # Identical queries sometimes sit on different servers (PostgreSQL), sometimes on one.
            sub = Subscription(self, number, query, self.servers[number % len(self.servers)])
            sub.task = asyncio.create_task(sub.run())
            self.subs.append(sub)
        for sub in self.subs:
            self.verbose(f"#{sub.number} server {sub.server.name}: {sub.query}")

    # Rounds.

    async def one_round(self):
        self.round += 1
        registry = await self.read_registry()
        fault = self.pick_fault()
        victim = await self.fault_before(fault) if fault else None
        writes = [(self.any_server(), generate.random_write(self.rng, registry))
                  for _ in range(self.rng.randint(1, self.args.writers))]
        tokens = await asyncio.gather(*(self.send_write(server, write) for server, write in writes))
        if fault == "slow":
            # While it reads nothing, a few writes that change every large window pile up
            # behind it: the server must squash them, or close the stream past its lag bound.
            for _ in range(self.rng.randint(2, 6)):
                tokens.append(await self.send_write(self.any_server(), generate.sweeping_patch(self.rng, registry)))
        self.max_token = max([self.max_token] + [t for t in tokens if t is not None])
        if fault:
            await self.fault_after(fault, victim)
        self.wake_slow_readers()
        await self.check(self.max_token)

    async def check(self, target):
        """Waits until every subscription checked holds a token >= target, then compares each
        with a fetch of its query."""
        checked = [sub for sub in self.subs if sub.checked()]
        began = time.monotonic()
        while True:
            self.check_failure()
            behind = [sub for sub in checked if sub.held.token is None or sub.held.token < target]
            if not behind:
                break
            if time.monotonic() - began > ROUND_WAIT:
                sub = behind[0]
                raise Divergence(f"{len(behind)} of {len(checked)} subscriptions did not reach token {target} within "
                                 f"{ROUND_WAIT:.0f} s; the first: {sub.label()} holds {sub.held.token}"
                                 f"{self.events_since(sub)}")
            await asyncio.sleep(0.01)
        waited = time.monotonic() - began
        self.slowest_wait = max(self.slowest_wait, waited)
        if waited > LATE:
            self.remember(f"the subscriptions took {waited:.1f} s to reach token {target}")
        answers = await self.fetch_all(checked)
        for sub in checked:
            objects, more = answers[sub.query.key()]
            if sub.held.objects != objects or sub.held.more != more:
                raise Divergence(self.difference(sub, objects, more, target))
            sub.log.clear()
        self.verbose(f"checked {len(checked)} subscriptions at token {target} (waited {waited:.2f} s)")

    async def fetch_all(self, checked):
        """Each distinct query fetched once (four at a time, the server's read contexts)."""
        queries = {}
        for sub in checked:
            queries.setdefault(sub.query.key(), (sub.query, sub.server))
        limit = asyncio.Semaphore(4)

        async def fetch(query, server):
            async with limit:
                answer = await self.get_json(server, query.fetch_path(), "the fetch a live query is checked against")
            return answer["objects"], answer.get("next") is not None

        keys = list(queries)
        results = await asyncio.gather(*(fetch(*queries[key]) for key in keys))
        return dict(zip(keys, results))

    def difference(self, sub, objects, more, target):
        held = sub.held
        first = next((i for i in range(max(len(objects), len(held.objects)))
                      if (objects[i:i + 1] or [None]) != (held.objects[i:i + 1] or [None])), None)
        start = max(0, (first or 0) - 5)
        lines = [f"{sub.label()}",
                 f"  holds token {held.token} (the round's target: {target})",
                 f"  fetch (expected): more={more} {ids(objects, start)}",
                 f"  live (held):      more={held.more} {ids(held.objects, start)}"]
        if first is not None:
            expected = objects[first] if first < len(objects) else None
            got = held.objects[first] if first < len(held.objects) else None
            lines += [f"  first difference at index {first}:",
                      f"    expected {json.dumps(expected, sort_keys=True)}",
                      f"    held     {json.dumps(got, sort_keys=True)}"]
        return "\n".join(lines) + self.events_since(sub)

    def events_since(self, sub):
        return "\n  events since its last check:\n" + "\n".join(f"    {line}" for line in sub.log[-60:])

    # Faults.

    def pick_fault(self):
        if not self.args.faults or self.rng.random() > FAULT_CHANCE:
            return None
        choices = [(name, weight) for name, weight in FAULTS if name != "restart" or self.time_left() > 60]
        return self.rng.choices([n for n, _ in choices], [w for _, w in choices])[0]

    def normal_subscription(self, prefer_large=False):
        candidates = [sub for sub in self.subs if sub.checked() and sub.slow_until is None]
        if prefer_large:  # a slow reader of a large window falls behind in bytes fastest
            candidates = [sub for sub in candidates if sub.query.effective_limit >= 50] or candidates
        return self.rng.choice(candidates) if candidates else None

    async def fault_before(self, fault):
        """What happens before the round's writes; the subscription it concerns."""
        self.faults[fault] += 1
        if fault in ("drop", "prune"):
            sub = self.normal_subscription()
            if sub:
                sub.fresh_next = fault == "drop" and self.rng.random() < 0.15  # sometimes a new snapshot instead
                sub.drop(away=True)
                self.verbose(f"fault {fault}: #{sub.number} disconnected at token {sub.held.token}")
            return sub
        if fault == "slow":
            sub = self.normal_subscription(prefer_large=True)
            if sub:
                # Reconnects with a small receive buffer, then reads nothing for some rounds.
                sub.small_buffer = True
                sub.slow_until = self.round + self.rng.randint(1, 4)
                sub.reading.clear()
                sub.drop(away=False)
                self.verbose(f"fault slow: #{sub.number} reads nothing until round {sub.slow_until}")
            return sub
        return None  # restart: after the writes

    async def fault_after(self, fault, sub):
        if fault == "drop" and sub:
            sub.come_back()
        elif fault == "prune" and sub:
            server = self.any_server()
            answer = await httpio.request(server.host, server.port, "DELETE", f"/v1/changes?before={self.max_token}")
            if answer.status != 200:
                raise Divergence(f"DELETE /v1/changes?before={self.max_token} answered {answer.status}: {answer.short()}")
            self.verbose(f"fault prune: history before {self.max_token} pruned {answer.short(100)}; "
                         f"#{sub.number} resumes from {sub.held.token}")
            sub.come_back()
        elif fault == "restart":
            await self.restart(self.any_server())

    def wake_slow_readers(self):
        for sub in self.subs:
            if sub.slow_until is not None and self.round >= sub.slow_until:
                sub.slow_until, sub.small_buffer = None, False
                sub.reading.set()
                self.verbose(f"#{sub.number} reads again (it holds {sub.held.token})")

    # The whole run.

    async def run(self):
        self.say(f"live walk: seed {self.seed} (rerun: python3 scripts/live/live_walk.py --seed {self.seed} "
                 f"--commits {self.args.commits} --seconds {self.args.seconds:g}"
                 f"{' --faults' if self.args.faults else ''}{' --postgres URI' if self.args.postgres else ''})")
        await self.start_servers()
        await self.check_live_exists()
        await self.check_live_refusals()
        if self.args.postgres:
            await self.empty_store()
        await self.seed_data()
        await self.open_subscriptions()
        await self.check(self.max_token)
        reserve = min(20.0, self.args.seconds * 0.15)
        while self.commits < self.args.commits and self.time_left() > reserve:
            await self.one_round()
        # The last round's slow readers read again, and everyone is checked once more.
        for sub in self.subs:
            sub.slow_until = self.round if sub.slow_until is not None else None
        self.wake_slow_readers()
        await self.check(self.max_token)
        self.summary()

    def summary(self):
        self.verbose(f"writes: {dict(self.written)}")
        self.verbose(f"refused (4xx, wrote nothing): {dict(self.rejected)}")
        self.verbose(f"faults: {dict(self.faults)}; resumes answered by: {dict(self.resumes)}; "
                     f"streams ended by the server outside restarts: {sum(s.server_ends for s in self.subs)}; "
                     f"slowest wait for a round's token: {self.slowest_wait:.2f} s")
        for note in self.notes[:20]:
            self.say(f"live walk: note: {note}")
        if self.commits < self.args.commits:
            self.say(f"live walk: --seconds {self.args.seconds:g} ended the run before {self.args.commits} commits")
        self.say(f"live walk: seed {self.seed}, {self.commits} commits, {len(self.subs)} subscriptions, "
                 f"{self.events} events, {sum(self.faults.values())} faults, no divergence")

    async def shutdown(self):
        self.stopping = True
        for sub in self.subs:
            if sub.task:
                sub.task.cancel()
            sub.close()
        await asyncio.gather(*(sub.task for sub in self.subs if sub.task), return_exceptions=True)
        for server in self.servers:
            await server.stop(timeout=10)
            server.kill()


def ids(objects, start=0, most=30):
    """The ids and versions of objects[start:start + most], with the count of all."""
    text = ", ".join(f"{i}:{short(obj)}" for i, obj in enumerate(objects[start:start + most], start))
    return f"[{'..., ' if start else ''}{text}{', ...' if len(objects) > start + most else ''}] ({len(objects)} in all)"


def report(walk, divergence, sub):
    print(f"live walk: DIVERGENCE (seed {walk.seed}, round {walk.round}, {walk.commits} commits)", flush=True)
    if sub is not None:  # a stream broke the contract: which one, and what it had sent
        print(f"  {sub.label()}\n  {divergence}" + walk.events_since(sub))
    else:
        print(f"  {divergence}")
    print(f"  server logs: {walk.work}")


async def main(args):
    walk = Walk(args)
    try:
        await asyncio.wait_for(walk.run(), timeout=max(1.0, walk.time_left()))
        status = 0
    except Divergence as divergence:
        failed_sub = walk.failure[1] if walk.failure and walk.failure[0] is divergence else None
        report(walk, divergence, failed_sub)
        status = 1
    except NoLiveQueries as error:
        print(error, file=sys.stderr)
        status = 2
    except asyncio.TimeoutError:
        print(f"live walk: seed {walk.seed}: the run passed --seconds {args.seconds:g} (something hung in round "
              f"{walk.round}); server logs: {walk.work}", flush=True)
        status = 1
    finally:
        await walk.shutdown()
    if status != 1:  # the logs stay for a failure only
        shutil.rmtree(walk.work, ignore_errors=True)
    return status


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default=os.environ.get("MANAGEDSTORE", ".build/debug/managedstore"))
    parser.add_argument("--seed", type=int, help="default: a random one, printed")
    parser.add_argument("--commits", type=int, default=1000, help="stop after this many committed writes")
    parser.add_argument("--seconds", type=float, default=600, help="the bound on the whole run")
    parser.add_argument("--subscriptions", type=int, default=40)
    parser.add_argument("--writers", type=int, default=3, help="writes at once in a round (1 to this many)")
    parser.add_argument("--faults", action="store_true",
                        help="drop and resume connections, slow readers, history pruning, server restarts")
    parser.add_argument("--postgres", metavar="URI",
                        help="three servers on this PostgreSQL database (its Task, Tag and Project objects are "
                             "deleted at the start)")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    if args.writers < 1 or args.subscriptions < 1:
        parser.error("--writers and --subscriptions are at least 1")
    return args


if __name__ == "__main__":
    sys.exit(asyncio.run(main(parse_args())))
