"""Just enough asyncio HTTP/1.1 for the live walk: one request per connection, and the body of a
server-sent event stream read chunk by chunk.

Written on asyncio streams rather than urllib so that a live stream, a slow reader (a small
SO_RCVBUF, reading paused) and many writes can share one event loop, and so that every socket
read has its own timeout.
"""
import asyncio
import json
import socket


class HTTPError(Exception):
    """The peer broke HTTP framing, or closed the connection in the middle of an answer."""


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers  # lower-case names
        self.body = body

    def json(self):
        return json.loads(self.body)

    def short(self, limit=300):
        text = self.body.decode("utf-8", "replace")
        return text if len(text) <= limit else text[:limit] + "..."


async def connect(host, port, rcvbuf=None, limit=1 << 16, timeout=5.0):
    """A connection; with rcvbuf, the socket's receive buffer is set before connecting (a
    buffer set afterwards does not shrink the window the kernel already advertised)."""
    if rcvbuf is None:
        return await asyncio.wait_for(asyncio.open_connection(host, port, limit=limit), timeout)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        sock.setblocking(False)
        await asyncio.wait_for(asyncio.get_running_loop().sock_connect(sock, (host, port)), timeout)
        return await asyncio.open_connection(sock=sock, limit=limit)
    except BaseException:
        sock.close()
        raise


def request_bytes(method, path, host, port, body=None, headers=None):
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}:{port}", "Connection: close"]
    for name, value in (headers or {}).items():
        lines.append(f"{name}: {value}")
    if body is not None:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + (body or b"")


async def read_line(reader, timeout):
    line = await asyncio.wait_for(reader.readline(), timeout)
    if not line.endswith(b"\n"):
        raise HTTPError("connection closed in the middle of a line")
    return line.rstrip(b"\r\n")


async def read_head(reader, timeout):
    """The status and headers (lower-case names; repeated headers joined with ', ')."""
    status_line = await read_line(reader, timeout)
    parts = status_line.split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1."):
        raise HTTPError(f"not an HTTP status line: {status_line[:100]!r}")
    headers = {}
    while True:
        line = await read_line(reader, timeout)
        if not line:
            return int(parts[1]), headers
        name, _, value = line.decode("latin-1").partition(":")
        name, value = name.strip().lower(), value.strip()
        headers[name] = f"{headers[name]}, {value}" if name in headers else value


async def body_chunks(reader, headers, timeout):
    """Yields the body as it arrives: chunk by chunk when chunked (the live stream is), else
    by Content-Length, else until the connection closes. Ends at the last chunk; raises
    HTTPError when the connection closes before it."""
    if "chunked" in headers.get("transfer-encoding", "").lower():
        while True:
            size_line = await read_line(reader, timeout)
            try:
                size = int(size_line.split(b";")[0].strip(), 16)
            except ValueError:
                raise HTTPError(f"bad chunk size line {size_line[:60]!r}") from None
            if size == 0:
                while await read_line(reader, timeout):  # trailers, up to the blank line
                    pass
                return
            data = await asyncio.wait_for(reader.readexactly(size + 2), timeout)
            if data[-2:] != b"\r\n":
                raise HTTPError("a chunk is not followed by CRLF")
            yield data[:-2]
    elif "content-length" in headers:
        length = int(headers["content-length"])
        if length:
            yield await asyncio.wait_for(reader.readexactly(length), timeout)
    else:
        while True:
            data = await asyncio.wait_for(reader.read(1 << 16), timeout)
            if not data:
                return
            yield data


async def request(host, port, method, path, body=None, headers=None, timeout=30.0):
    """One request on its own connection. body: bytes, or any JSON value (sent as JSON)."""
    headers = dict(headers or {})
    if body is not None and not isinstance(body, bytes):
        body = json.dumps(body).encode()
        headers.setdefault("Content-Type", "application/json")
    reader, writer = await connect(host, port, timeout=timeout)
    try:
        writer.write(request_bytes(method, path, host, port, body, headers))
        await asyncio.wait_for(writer.drain(), timeout)
        status, answer_headers = await read_head(reader, timeout)
        data = b""
        if status not in (204, 304) and method != "HEAD":
            async for chunk in body_chunks(reader, answer_headers, timeout):
                data += chunk
        return Response(status, answer_headers, data)
    finally:
        writer.close()


class SSEParser:
    """Server-sent events (the WHATWG rules the walk needs): fed bytes in any pieces, returns
    the complete events, each {"event", "id", "data"}, and counts comment lines.
    Lines end in LF or CRLF (a lone CR as a line end is not supported)."""

    def __init__(self):
        self.buffer = bytearray()
        self.comments = 0
        self._reset()

    def _reset(self):
        self.event, self.id, self.data = None, None, []

    def feed(self, data):
        self.buffer += data
        events = []
        while True:
            end = self.buffer.find(b"\n")
            if end < 0:
                return events
            line = bytes(self.buffer[:end]).rstrip(b"\r").decode("utf-8")
            del self.buffer[:end + 1]
            if not line:
                if self.data or self.event is not None:
                    events.append({"event": self.event or "message", "id": self.id, "data": "\n".join(self.data)})
                self._reset()
            elif line.startswith(":"):
                self.comments += 1
            else:
                name, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                if name == "event":
                    self.event = value
                elif name == "data":
                    self.data.append(value)
                elif name == "id":
                    self.id = value
                # "retry" and unknown fields are ignored, as a browser does.
