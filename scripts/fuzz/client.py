"""A raw HTTP/1.1 client on a socket, so that the fuzzer can send what http.client refuses to:
bytes that are not UTF-8 in the request target and headers, repeated or contradictory
headers, Content-Length lies, chunked bodies, or no request line at all.

A request is a dict (also the JSON-lines form of a reproduction file); every text field holds
bytes as a latin-1 string, so any byte sequence survives JSON:

    {"method": "POST", "target": "/v1/objects/Task?x=1", "headers": [["Content-Type", "application/json"]],
     "body": "{...}", "length": null, "chunked": false, "what": "how it was made"}

- "length": null sends the true Content-Length (when there is a body), "omit" sends none, a
  number sends that number (a lie when it is not the body's length).
- "chunked": true sends the body with Transfer-Encoding: chunked in random-sized chunks.
- "raw": when present, these bytes are sent as they are instead of a request built from the
  fields above ("pause": seconds to wait between pieces of it, slowloris-style but bounded).
- "no_answer_ok": true when closing without an answer is a fine reaction (malformed HTTP, lies).
"""
import random
import socket
import time


def b(text):
    """latin-1 string -> bytes (the reproduction files' encoding of bytes)."""
    return text.encode("latin-1")


def s(data):
    """bytes -> latin-1 string."""
    return data.decode("latin-1")


class Response:
    def __init__(self):
        self.status = None
        self.reason = ""
        self.headers = []
        self.body = b""
        self.error = None
        self.elapsed = 0.0
        self.timed_out = False

    def header(self, name):
        name = name.lower()
        for key, value in reversed(self.headers):
            if key.lower() == name:
                return value
        return None

    def json(self):
        import json
        try:
            return json.loads(self.body.decode("utf-8"))
        except Exception:
            return None

    def summary(self, limit=600):
        if self.status is None:
            return f"no answer ({self.error or 'connection closed'}) after {self.elapsed:.2f}s"
        head = f"HTTP {self.status} {self.reason} ({self.elapsed:.3f}s)"
        headers = "".join(f"\n  {k}: {v}" for k, v in self.headers)
        body = self.body[:limit].decode("utf-8", "replace")
        more = f"... ({len(self.body)} bytes)" if len(self.body) > limit else ""
        return f"{head}{headers}\n  {body}{more}"


def build(request, host, port, rng=None):
    """The bytes of `request` (a dict as above), split into the pieces to send."""
    if "raw" in request:
        raw = b(request["raw"])
        cuts = request.get("cuts")
        if cuts:
            pieces, last = [], 0
            for cut in cuts:
                pieces.append(raw[last:cut])
                last = cut
            pieces.append(raw[last:])
            return [p for p in pieces if p]
        return [raw]
    body = b(request["body"]) if request.get("body") is not None else None
    lines = [b(request["method"]) + b" " + b(request["target"]) + b" HTTP/1.1"]
    names = {k.lower() for k, _ in request.get("headers", [])}
    if "host" not in names:
        lines.append(f"Host: {host}:{port}".encode())
    for key, value in request.get("headers", []):
        lines.append(b(key) + b": " + b(value))
    if "connection" not in names:
        lines.append(b"Connection: close")
    chunked = request.get("chunked") and body is not None
    length = request.get("length")
    if chunked:
        lines.append(b"Transfer-Encoding: chunked")
    elif length == "omit":
        pass
    elif length is not None:
        lines.append(f"Content-Length: {length}".encode())
    elif body is not None:
        lines.append(f"Content-Length: {len(body)}".encode())
    head = b"\r\n".join(lines) + b"\r\n\r\n"
    if body is None:
        return [head]
    if not chunked:
        return [head + body]
    rng = rng or random.Random(len(body))
    out, i = bytearray(), 0
    while i < len(body):
        n = rng.choice([1, 7, 100, 4096, 65536])
        piece = body[i:i + n]
        out += f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
        i += n
    out += b"0\r\n\r\n"
    return [head + bytes(out)]


def send(request, host, port, timeout=20.0):
    """Sends `request` on a new connection and reads the answer (until the server closes the
    connection or the declared length arrived). Never raises: errors land in `error`."""
    response = Response()
    started = time.monotonic()
    pieces = build(request, host, port)
    pause = float(request.get("pause", 0))
    sock = None
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            for i, piece in enumerate(pieces):
                if i and pause:
                    time.sleep(pause)
                sock.sendall(piece)
            if request.get("half_close"):
                try:
                    sock.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
            if request.get("abandon"):
                response.error = "abandoned by the client"
                return response
        except (BrokenPipeError, ConnectionResetError) as error:
            # The server may answer (413) and close before reading everything: read on.
            response.error = f"send: {error}"
        data = bytearray()
        deadline = started + timeout
        expected = None
        header_end = -1
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                response.timed_out = True
                response.error = f"no complete answer within {timeout:.0f}s"
                break
            sock.settimeout(remaining)
            try:
                chunk = sock.recv(65536)
            except socket.timeout:
                response.timed_out = True
                response.error = f"no complete answer within {timeout:.0f}s"
                break
            except ConnectionResetError as error:
                response.error = f"recv: {error}"
                break
            if not chunk:
                break
            data += chunk
            while header_end < 0 and data.startswith(b"HTTP/1.1 100 ") and b"\r\n\r\n" in data:
                del data[:data.index(b"\r\n\r\n") + 4]  # an interim 100 Continue: the answer follows
            if header_end < 0:
                header_end = data.find(b"\r\n\r\n")
                if header_end >= 0:
                    expected = _expected_length(bytes(data[:header_end]), request)
            if header_end >= 0 and expected is not None and len(data) >= header_end + 4 + expected:
                break
        _parse(bytes(data), response, request)
    except OSError as error:
        response.error = f"{type(error).__name__}: {error}"
    finally:
        if sock is not None:
            try:
                sock.close()
            except OSError:
                pass
    response.elapsed = time.monotonic() - started
    return response


def _expected_length(head, request):
    if request.get("method") == "HEAD":
        return 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            try:
                return int(value.strip())
            except ValueError:
                return None
    return None


def _parse(data, response, request):
    header_end = data.find(b"\r\n\r\n")
    if header_end < 0:
        if data:
            response.error = (response.error or "") + f" partial answer: {data[:200]!r}"
        return
    lines = data[:header_end].split(b"\r\n")
    parts = lines[0].split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/"):
        response.error = f"not an HTTP answer: {lines[0][:100]!r}"
        return
    try:
        response.status = int(parts[1])
    except ValueError:
        response.error = f"bad status line: {lines[0][:100]!r}"
        return
    response.reason = parts[2].decode("latin-1") if len(parts) > 2 else ""
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        response.headers.append((name.decode("latin-1").strip(), value.decode("latin-1").strip()))
    body = data[header_end + 4:]
    if request.get("method") == "HEAD":
        body = b""
    length = response.header("Content-Length")
    if length is not None and length.isdigit():
        body = body[:int(length)]
    elif (response.header("Transfer-Encoding") or "").lower() == "chunked":
        body = _dechunk(body)
    response.body = body


def _dechunk(data):
    out, i = bytearray(), 0
    while i < len(data):
        end = data.find(b"\r\n", i)
        if end < 0:
            break
        try:
            size = int(data[i:end].split(b";")[0], 16)
        except ValueError:
            break
        if size == 0:
            break
        out += data[end + 2:end + 2 + size]
        i = end + 2 + size + 2
    return bytes(out)


def _shell(text):
    """A shell word for a latin-1 string of bytes: quoted as is when it is printable UTF-8, else
    in bash's $'...' form with \\xHH escapes, so the very bytes reach curl."""
    import shlex
    data = b(text)
    try:
        decoded = data.decode("utf-8")
        if decoded.isprintable():
            return shlex.quote(decoded)
    except UnicodeDecodeError:
        pass
    out = []
    for byte in data:
        char = chr(byte)
        if 0x20 <= byte < 0x7f and char not in "\\'":
            out.append(char)
        else:
            out.append(f"\\x{byte:02x}")
    return "$'" + "".join(out) + "'"


def curl(request, base):
    """A bash command that resends `request` (as closely as curl can; raw HTTP goes through nc)."""
    if "raw" in request:
        host, port = base.split("//")[1].split(":")
        return f"printf %s {_shell(request['raw'])} | nc -q 2 {host} {port}"
    parts = ["curl", "-sS", "-i", "-X", _shell(request["method"])]
    for key, value in request.get("headers", []):
        parts += ["-H", _shell(f"{key}: {value}")]
    if request.get("chunked"):
        parts += ["-H", "'Transfer-Encoding: chunked'"]
    body = request.get("body")
    note = ""
    if body is not None:
        if len(body) > 4000:
            parts += ["--data-binary", "@body.bin"]
            note = f"# body.bin: the request's {len(body)}-byte body (in the reproduction file)\n"
        else:
            parts += ["--data-binary", _shell(body)]
    parts.append(_shell(base + request["target"]))
    return note + " ".join(parts)
