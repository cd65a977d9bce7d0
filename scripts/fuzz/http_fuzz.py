#!/usr/bin/env python3
"""A crash fuzzer for `managedstore serve` over HTTP.

It starts the real binary on a temporary store, sends valid requests on every endpoint of the
contract and many mutated ones (hostile numbers, strings, JSON structure, refs, IDs, versions,
cursors, predicates, include paths, headers, malformed HTTP), and after every batch checks
that the process is alive, /v1/healthz answers 200, the stock sqlite3 CLI finds the store
intact, and no answer was a 500 or leaked SQL, "SQLite" or a temporary object ID.

    scripts/fuzz/http_fuzz.py --requests 3000 --seconds 60          # a bounded run (make test-fuzz)
    scripts/fuzz/http_fuzz.py --seed 1234 --requests 200000 --seconds 1200 --keep-going   # make fuzz
    scripts/fuzz/http_fuzz.py --replay /tmp/managedstore-fuzz-xyz/failure-1.jsonl          # reproduce

Dependency-free (the standard library only). The seed is printed; the same seed against the
same build sends the same requests. On a failure it prints the seed, the last requests and
answers, the server's stderr tail, writes the failing batch as JSON lines (the setup requests
first) and exits 1. With --keep-going it restarts the server after a failure, tries the
failing request alone on a fresh store, and goes on, reporting every distinct failure at the end.
"""
import argparse
import json
import os
import pathlib
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import client  # noqa: E402
from generate import Generator, State, setup_requests  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
CRASH_MARKERS = re.compile(r"Fatal error|Program crashed|\*\*\* Signal \d+|Backtrac|Segmentation fault|Illegal instruction|"
                           r"Aborted|Assertion failed|Precondition failed|terminating due to uncaught")
LEAKS = [re.compile(p) for p in [r"SQLite", r"INSERT INTO", r'UPDATE "', r"\b[A-Z][A-Za-z0-9_]*/t\d+\b"]]
LEAK_NAMES = ["SQLite", "SQL text", "SQL text", "a temporary object ID"]
SOFT_LEAKS = [re.compile(p) for p in [r"SELECT ", r"sqlite", r"ManagedStore\.", r"Swift\."]]
PROBLEM_CODES = {"bad-request", "invalid-json", "unknown-entity", "unknown-property", "invalid-predicate", "not-found", "conflict",
                 "validation", "precondition-required", "payload-too-large", "unsupported-media-type", "method-not-allowed",
                 "unavailable", "query-timeout", "unauthorized", "forbidden", "gone", "idempotency-key-reused", "internal",
                 "not-implemented"}
# Mutations of the HTTP layer itself: libmicrohttpd may close such a connection without an answer.
HTTP_WEIRD = re.compile(r"header:(huge|many|repeat|length-lie|length-omit|chunked|odd-names|host|expect|no-body)|bytes:target|"
                        r"path:(long|nul|absolute|fragment|backslash)|method->|path->'Task/1\\x00'|entity->'x{5}|raw HTTP")


def log(*parts):
    print(*parts, flush=True)


class PortTaken(Exception):
    pass


class Server:
    """The binary under test, on a temporary store, with stdout and stderr in files."""

    def __init__(self, binary, workdir, port=None, extra=()):
        self.binary = binary
        self.workdir = pathlib.Path(workdir)
        self.fixed_port = port
        self.extra = list(extra)
        self.proc = None
        self.generation = 0

    def start(self, attempts=3):
        for attempt in range(attempts):
            try:
                return self._start()
            except PortTaken:
                if attempt == attempts - 1:
                    raise RuntimeError(f"could not start the server on a free port:\n{self.stderr_tail()}")

    def _start(self):
        self.generation += 1
        run = self.workdir / f"server-{self.generation}"
        run.mkdir(parents=True, exist_ok=True)
        self.store = run / "store.sqlite"
        self.stdout_path = run / "stdout.txt"
        self.stderr_path = run / "stderr.txt"
        self.port = self.fixed_port or free_port()
        command = [str(self.binary), "serve", "--demo", "--store", str(self.store), "--port", str(self.port),
                   "--durability", "normal"] + self.extra
        self.command = command
        self.stderr_offset = 0
        self.crash_seen = False
        self.proc = subprocess.Popen(command, stdout=open(self.stdout_path, "wb"), stderr=open(self.stderr_path, "wb"),
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                if not self.fixed_port and "cannot listen" in self.stderr_text():
                    raise PortTaken()  # another process took the free port in between: try another
                raise RuntimeError(f"the server exited with {self.proc.returncode} at start:\n{self.stderr_tail()}")
            response = client.send({"method": "GET", "target": "/v1/readyz"}, "127.0.0.1", self.port, timeout=2)
            if response.status == 200:
                return
            time.sleep(0.1)
        raise RuntimeError(f"the server was not ready (/v1/readyz) within 60s:\n{self.stderr_tail()}")

    def stop(self):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait(10)
        self.proc = None

    @property
    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def crashed_on_stderr(self):
        """Whether stderr holds a crash report; reads only what was written since the last call."""
        if self.crash_seen:
            return True
        try:
            with open(self.stderr_path, "rb") as f:
                f.seek(max(0, self.stderr_offset - 200))  # a marker may straddle two reads
                data = f.read()
                self.stderr_offset = f.tell()
        except OSError:
            return False
        self.crash_seen = bool(CRASH_MARKERS.search(data.decode("utf-8", "replace")))
        return self.crash_seen

    def stderr_text(self):
        try:
            return self.stderr_path.read_bytes().decode("utf-8", "replace")
        except OSError:
            return ""

    def stderr_tail(self, lines=30):
        text = self.stderr_text().splitlines()
        # A Swift crash report is long: show what came before it, its first lines and the
        # crashed thread's frames, not the other threads and the image list.
        start = next((i for i, line in enumerate(text) if CRASH_MARKERS.search(line)), None)
        if start is None:
            return "\n".join(text[-lines:])
        shown = text[max(0, start - 8):start + 4]
        crashed = next((i for i, line in enumerate(text) if line.endswith(" crashed:")), None)
        if crashed is not None:
            shown += ["..."] + text[crashed:crashed + 18]
        return "\n".join(shown)

    def crash_frames(self):
        """The first frames of the crashing thread that are in this project's sources."""
        frames = []
        text = self.stderr_text()
        crashed = text.find(" crashed:")
        for line in text[crashed if crashed >= 0 else 0:].splitlines():
            m = re.search(r"\d+ +(?:\[\w+\] +)*0x[0-9a-f]+ (.+?) \+ \d+ in \S+ at (\S*Sources/\S+)", line)
            if m:
                frames.append(f"{m.group(1)} at {m.group(2).split('Sources/', 1)[1]}")
            if len(frames) >= 4:
                break
        fatal = re.search(r"(Fatal error|Precondition failed|Assertion failed)[^\n]*", text)
        return (fatal.group(0)[:200] + "\n" if fatal else "") + "\n".join(frames)

    def integrity(self):
        sqlite3 = shutil.which("sqlite3")
        if sqlite3 is None:
            return "the sqlite3 command-line tool is missing (scripts/install-deps.sh sqlite3 installs it)"
        if not self.store.exists():
            return None
        try:
            out = subprocess.run([sqlite3, str(self.store), "PRAGMA integrity_check"], capture_output=True, timeout=60)
        except subprocess.TimeoutExpired:
            return "sqlite3 PRAGMA integrity_check did not finish within 60s"
        text = out.stdout.decode("utf-8", "replace").strip()
        if out.returncode != 0 or text != "ok":
            return f"PRAGMA integrity_check: {text} {out.stderr.decode('utf-8', 'replace').strip()}"
        return None


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Failure(Exception):
    def __init__(self, kind, message, index=None):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.index = index  # the request in the batch that showed it, if one did
        self.key = None     # what makes two failures the same, when the message's first line does not


def request_bytes(request):
    parts = [request.get("target", ""), request.get("body") or "", request.get("raw", "")]
    parts += [k + ":" + v for k, v in request.get("headers", [])]
    return "\n".join(parts).encode("latin-1", "replace")


def is_weird(request):
    """Whether the request plays with HTTP itself, so that libmicrohttpd may answer it (or close) before the API sees it."""
    if request.get("no_answer_ok") or HTTP_WEIRD.search(request.get("what", "")):
        return True
    if re.search(r"[\x00-\x20\x7f]", request.get("method", "") + request.get("target", "")):
        return True
    return any(re.search(r"[\x00-\x08\x0a-\x1f\x7f]", k + v) for k, v in request.get("headers", []))


def remember_sent(request, seen):
    """Adds what `request` sends that a leak pattern matches (a label "Task/t1" is data, read back later)."""
    text = request_bytes(request).decode("latin-1")
    text += "\n" + urllib.parse.unquote(text, encoding="latin-1")  # "Task%2Ft1" in a path is "Task/t1"
    for pattern in LEAKS + SOFT_LEAKS:
        seen.update(m.group(0) for m in pattern.finditer(text))


def check_response(request, response, notes, seen=frozenset()):
    """Raises Failure for an answer the contract never allows; adds soft findings to `notes`.
    `seen`: strings that clients sent earlier, so not a leak when they come back."""
    weird = is_weird(request)
    if response.status is None:
        if weird:
            return
        if response.timed_out:
            raise Failure("hang", f"no answer within the request timeout ({response.error})")
        raise Failure("no-answer", f"the connection closed without an answer ({response.error})")
    body = response.body
    data = response.json() if body[:1] == b"{" else None
    code = data.get("code") if isinstance(data, dict) else None
    status = response.status
    if status >= 500:
        allowed = ((status == 503 and code in ("unavailable", "query-timeout")) or (status == 501 and code == "not-implemented")
                   or (status == 505 and weird))  # libmicrohttpd's answer to "HTTP/9.9"
        if not allowed:
            raise Failure(f"http-{status}", f"{status} with code {code!r}: {body[:300].decode('utf-8', 'replace')}")
    text = body.decode("utf-8", "replace")
    if status == 200 and (body.startswith(b'{"openapi"') or body.startswith(b"openapi:")):
        text = ""  # the API's own documents may say "SQLite"
    for pattern, name in zip(LEAKS, LEAK_NAMES):
        m = pattern.search(text)
        if m and m.group(0) not in seen:
            failure = Failure("leak", f"the answer holds {m.group(0)!r}: {text[max(0, m.start() - 150):m.end() + 150]}")
            failure.key = f"{name} in a {status} answer" + (f" (code {code})" if code else "")
            raise failure
    for pattern in SOFT_LEAKS:
        m = pattern.search(text)
        if m and m.group(0) not in seen:
            notes.add(f"answer mentions {m.group(0)!r}", request, response)
    if status >= 400 and not weird and request.get("method") != "HEAD":
        ctype = (response.header("Content-Type") or "").split(";")[0].strip()
        if ctype != "application/problem+json":
            notes.add(f"{status} answer is {ctype or 'without Content-Type'}, not application/problem+json", request, response)
        elif not isinstance(data, dict) or any(k not in data for k in ("type", "title", "status", "detail", "code")):
            notes.add(f"{status} problem body lacks type/title/status/detail/code", request, response)
        elif code not in PROBLEM_CODES:
            notes.add(f"problem code {code!r} is not one of the contract's", request, response)
        elif data.get("status") != status:
            notes.add(f"problem status {data.get('status')!r} differs from the HTTP status {status}", request, response)
    if response.elapsed > 5:
        notes.add("an answer took more than 5 s (the contract's query-timeout)", request, response)
    if 200 <= status < 300 and not weird:
        path, _, query = request.get("target", "").partition("?")
        segments = [s for s in path.split("/") if s]
        for name, value in urllib.parse.parse_qsl(query, keep_blank_values=True):
            if name == "include" and any(len(p.split(".")) > 3 for p in value.split(",")):
                notes.add("an include path deeper than 3 relationships was answered (the contract: 400)", request, response)
        single = len(segments) == 4 and segments[:2] == ["v1", "objects"] and segments[3] != "aggregate"
        if single and request.get("method") in ("GET", "PATCH", "PUT") and status == 200 and response.header("ETag") is None:
            notes.add(f"a {request['method']} of one object answered 200 without ETag", request, response)
        if status == 201 and response.header("ETag") is None:
            notes.add("an insert answered 201 without ETag", request, response)


class Notes:
    """Soft findings (contract deviations that are not crashes): one example of each."""

    def __init__(self):
        self.seen = {}

    def add(self, kind, request, response):
        entry = self.seen.setdefault(kind, [0, request, response.summary(300)])
        entry[0] += 1

    def report(self, base):
        if not self.seen:
            return
        log("\nnotes (contract deviations that are not failures; one example each):")
        for kind, (count, request, summary) in sorted(self.seen.items()):
            log(f"- {kind}: {count}x; e.g. {describe(request)}\n    -> {summary.splitlines()[0]}")


def shown(text):
    """A latin-1 string of bytes (the reproduction files' form) as readable text: UTF-8 when it is."""
    data = text.encode("latin-1")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("utf-8", "backslashreplace")


def describe(request, limit=300):
    if "raw" in request:
        return f"raw {shown(request['raw'])[:limit]!r}"
    headers = " ".join(f"[{shown(k)}: {shown(v)[:80]}]" for k, v in request.get("headers", []))
    body = request.get("body")
    body_text = ""
    if body is not None:
        body_text = f" body={shown(body)[:limit]!r}" + (f"...({len(body)} bytes)" if len(body) > limit else "")
    return f"{shown(request['method'])[:40]} {shown(request['target'])[:limit]} {headers}{body_text}  <{request.get('what', '')}>"


class Fuzzer:
    def __init__(self, args):
        self.args = args
        self.workdir = pathlib.Path(args.workdir or tempfile.mkdtemp(prefix="managedstore-fuzz-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.server = Server(args.binary, self.workdir, port=args.port)
        self.notes = Notes()
        self.failures = {}
        self.sent = 0
        self.failure_files = 0
        self.slowest = []
        self.seen = set()  # leak-like strings that requests sent (data, when read back)

    # MARK: sending

    def send(self, request, timeout=None):
        weird = is_weird(request)
        if timeout is None:
            timeout = self.args.request_timeout
            if weird:
                # libmicrohttpd answers these at once or waits for more bytes (it does not always
                # close on the client's half-close): do not wait long; the batch checks follow.
                timeout = min(timeout, 1 + float(request.get("pause", 0)) * len(request.get("cuts", [])))
        if weird and "half_close" not in request:
            # Let the server see the end of a request that may be incomplete (a body shorter
            # than declared, a missing blank line) instead of waiting for its connection timeout.
            request["half_close"] = True
        return client.send(request, "127.0.0.1", self.server.port, timeout=timeout)

    def run_setup(self, state):
        for request in setup_requests(state):
            response = self.send(request)
            state.observe(request, response)
            if response.status is None or response.status >= 300:
                raise RuntimeError(f"setup request failed: {describe(request)} -> {response.summary()}")

    def one(self, request, batch, state):
        """Sends one request, records it, raises Failure at once when it shows one."""
        remember_sent(request, self.seen)
        response = self.send(request)
        self.sent += 1
        self.slowest.append((response.elapsed, describe(request, 160), response.summary(100).splitlines()[0]))
        if len(self.slowest) > 50:
            self.slowest.sort(key=lambda x: -x[0])
            del self.slowest[10:]
        batch.append((request, response))
        state.observe(request, response)
        index = len(batch) - 1
        if response.status is None and not request.get("no_answer_ok"):
            # A crash shows first as a dropped connection while Swift's backtracer runs: wait for it.
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and self.server.alive and not self.server.crashed_on_stderr():
                time.sleep(0.1)
        if not self.server.alive or self.server.crashed_on_stderr():
            self.wait_for_exit()
            raise Failure("crash", f"the server crashed (exit status {self.exit_status()})\n{self.server.crash_frames()}", index)
        try:
            check_response(request, response, self.notes, self.seen)
        except Failure as failure:
            failure.index = index
            raise

    def wait_for_exit(self, seconds=15):
        if self.server.proc is None:
            return
        try:
            self.server.proc.wait(seconds)
        except subprocess.TimeoutExpired:
            pass

    def exit_status(self):
        if self.server.proc is None or self.server.proc.poll() is None:
            return "still running, with a backtrace on stderr"
        code = self.server.proc.returncode
        if code < 0:
            return f"killed by signal {-code} ({signal.Signals(-code).name})"
        return str(code)

    def after_batch(self):
        if not self.server.alive:
            raise Failure("crash", f"the server exited ({self.exit_status()})\n{self.server.crash_frames()}")
        health = client.send({"method": "GET", "target": "/v1/healthz"}, "127.0.0.1", self.server.port, timeout=10)
        if health.status != 200:
            raise Failure("unresponsive", f"GET /v1/healthz: {health.summary()}")
        problem = self.server.integrity()
        if problem:
            raise Failure("integrity", problem)
        if self.server.crashed_on_stderr():
            raise Failure("crash", f"the server wrote a crash report on stderr\n{self.server.crash_frames()}")

    # MARK: the run

    def run(self):
        args = self.args
        seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 2**31)
        log(f"fuzz: seed {seed} (rerun with --seed {seed}); {args.requests} requests or {args.seconds:.0f} s, "
            f"batches of {args.batch}; work dir {self.workdir}")
        rng = random.Random(seed)
        deadline = time.monotonic() + args.seconds
        started = time.monotonic()
        batch_number = 0
        state = self.fresh_server()
        generator = Generator(rng, state)
        while self.sent < args.requests and time.monotonic() < deadline:
            batch_number += 1
            batch = []
            statuses = {}
            t0 = time.monotonic()
            try:
                while len(batch) < args.batch and self.sent < args.requests and time.monotonic() < deadline:
                    request = generator.next(valid_share=args.valid_share)
                    self.one(request, batch, state)
                    status = batch[-1][1].status
                    statuses[status] = statuses.get(status, 0) + 1
                self.after_batch()
            except Failure as failure:
                new = self.report(seed, batch_number, batch, failure)
                if not args.keep_going:
                    self.server.stop()
                    self.notes.report(self.base())
                    log(f"\nFAILED (seed {seed}); work dir {self.workdir}")
                    return 1
                if new and failure.index is not None:
                    self.confirm_alone(batch[failure.index][0], failure)
                state = self.fresh_server()
                generator.state = state
                continue
            shown = ", ".join(f"{k}: {v}" for k, v in sorted(statuses.items(), key=lambda kv: (kv[0] is None, kv[0] or 0)))
            log(f"batch {batch_number}: {len(batch)} requests in {time.monotonic() - t0:.1f}s ({shown}); "
                f"{self.sent} sent, {time.monotonic() - started:.0f}s")
        self.server.stop()
        self.notes.report(self.base())
        self.slowest.sort(key=lambda x: -x[0])
        log("\nslowest requests:\n" + "\n".join(f"  {t:.2f}s {what}\n      -> {answer}" for t, what, answer in self.slowest[:5]))
        elapsed = time.monotonic() - started
        if self.failures:
            log(f"\n{len(self.failures)} distinct failure(s) in {self.sent} requests, {elapsed:.0f}s (seed {seed}):")
            for signature, (count, path) in self.failures.items():
                log(f"- {count}x {signature.splitlines()[0]}\n    {path}")
            log(f"FAILED (seed {seed})")
            return 1
        log(f"\nok: {self.sent} requests in {elapsed:.0f}s, seed {seed}: no crash, no 500, no leak, store intact")
        shutil.rmtree(self.workdir, ignore_errors=True) if not args.workdir and not args.keep_work else None
        return 0

    def base(self):
        return f"http://127.0.0.1:{self.server.port}"

    def fresh_server(self):
        self.seen = set()
        self.server.stop()
        self.server.start()
        state = State()
        self.run_setup(state)
        return state

    def signature(self, failure, batch):
        request = batch[failure.index][0] if failure.index is not None and failure.index < len(batch) else {}
        if failure.kind == "crash":
            frames = self.server.crash_frames().splitlines()
            key = next((f for f in frames if " at " in f), frames[0] if frames else "")
            return f"crash: {key}"
        detail = failure.key or re.sub(r"\d+", "N", failure.message.splitlines()[0])[:160]
        where = re.sub(r"/\d+", "/N", request.get("target", "raw").split("?")[0])[:60]
        return f"{failure.kind}: {request.get('method', '')} {where}: {detail}"

    def report(self, seed, batch_number, batch, failure):
        signature = self.signature(failure, batch)
        entry = self.failures.get(signature)
        if entry:
            entry[0] += 1
            log(f"\nbatch {batch_number}: again {signature.splitlines()[0]} (seen {entry[0]}x); restarting the server")
            return False
        self.failure_files += 1
        path = self.workdir / f"failure-{self.failure_files}.jsonl"
        with open(path, "w", encoding="utf-8") as out:
            out.write(json.dumps({"seed": seed, "batch": batch_number, "kind": failure.kind, "signature": signature,
                                  "server": self.server.command}) + "\n")
            for request in setup_requests(State()):
                out.write(json.dumps(dict(request, setup=True)) + "\n")
            for request, _ in batch:
                out.write(json.dumps(request) + "\n")
        self.failures[signature] = [1, str(path)]
        log("\n" + "=" * 100)
        log(f"FAILURE in batch {batch_number} (seed {seed}): {failure.kind}")
        log(failure.message)
        shown = batch[max(0, (failure.index if failure.index is not None else len(batch)) - self.args.show + 1):
                      (failure.index + 1 if failure.index is not None else len(batch))]
        log(f"\nthe last {len(shown)} request(s) of the batch, the failing one last:")
        for request, response in shown:
            log(f"> {describe(request)}")
            log("< " + response.summary(400).replace("\n", "\n  "))
        if failure.index is not None:
            log("\nas a command:\n" + client.curl(batch[failure.index][0], self.base()))
        log(f"\nserver stderr (tail):\n{self.server.stderr_tail()}")
        log(f"\nreproduction: {path}\n  scripts/fuzz/http_fuzz.py --replay {path}")
        log("=" * 100)
        return True

    def confirm_alone(self, request, failure):
        """After a new failure: does its request alone, on a fresh store after the setup, fail the same way?"""
        try:
            state = self.fresh_server()
            batch = []
            try:
                self.one(dict(request), batch, state)
                self.after_batch()
                log(f"confirm: the failing request alone on a fresh store did NOT fail ({batch[0][1].summary(200).splitlines()[0]}):"
                    " it needs the requests before it (replay the file)")
            except Failure as again:
                log(f"confirm: the failing request alone on a fresh store fails too: {again.kind}"
                    f" ({again.message.splitlines()[0][:200]})")
        except RuntimeError as error:
            log(f"confirm: could not restart the server: {error}")

    # MARK: replay

    def replay(self, path):
        lines = [json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]
        header = lines[0] if "seed" in lines[0] and "method" not in lines[0] and "raw" not in lines[0] else {}
        requests = [line for line in lines if line is not header]
        log(f"replay: {len(requests)} requests from {path}" + (f" (seed {header['seed']}, {header.get('signature', '')})" if header else ""))
        self.server.stop()
        self.server.start()
        state = State()
        batch = []
        try:
            for request in requests:
                if request.pop("setup", False):
                    state.observe(request, self.send(request))
                    continue
                self.one(request, batch, state)
                if self.args.verbose:
                    log(f"> {describe(request, 120)}\n< {batch[-1][1].summary(200).splitlines()[0]}")
            self.after_batch()
        except Failure as failure:
            self.report(header.get("seed", "?"), "replay", batch, failure)
            self.server.stop()
            return 1
        self.server.stop()
        log(f"replay: no failure in {len(batch)} requests")
        return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default=str(ROOT / ".build" / "debug" / "managedstore"), help="the managedstore binary")
    parser.add_argument("--seed", type=int, help="the random seed (printed; default: a new one)")
    parser.add_argument("--requests", type=int, default=3000, help="stop after this many requests (default 3000)")
    parser.add_argument("--seconds", type=float, default=60, help="stop after this many seconds (default 60)")
    parser.add_argument("--batch", type=int, default=200, help="requests between the liveness/health/integrity checks")
    parser.add_argument("--request-timeout", type=float, default=20, help="seconds without an answer that count as a hang")
    parser.add_argument("--valid-share", type=float, default=0.25, help="share of requests sent unmutated (they grow the store)")
    parser.add_argument("--keep-going", action="store_true", help="after a failure restart the server and go on; report all at the end")
    parser.add_argument("--replay", metavar="FILE", help="resend a reproduction file's requests and check them the same way")
    parser.add_argument("--port", type=int, help="a fixed port for the server (default: a free one)")
    parser.add_argument("--workdir", help="where stores, server logs and reproduction files go (default: a new temp dir)")
    parser.add_argument("--keep-work", action="store_true", help="keep the work dir after a passing run")
    parser.add_argument("--show", type=int, default=5, help="requests shown before the failing one")
    parser.add_argument("--verbose", "-v", action="store_true")
    args = parser.parse_args()
    if not os.access(args.binary, os.X_OK):
        print(f"fuzz: no executable {args.binary}: run `swift build --product managedstore` first", file=sys.stderr)
        return 2
    if shutil.which("sqlite3") is None:
        print("fuzz: the sqlite3 command-line tool is missing (./scripts/install-deps.sh sqlite3)", file=sys.stderr)
        return 2
    fuzzer = Fuzzer(args)
    try:
        if args.replay:
            return fuzzer.replay(args.replay)
        return fuzzer.run()
    except KeyboardInterrupt:
        log("interrupted")
        return 130
    finally:
        fuzzer.server.stop()


if __name__ == "__main__":
    sys.exit(main())
