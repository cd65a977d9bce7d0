"""The managedstore servers the walk runs against: started, stopped with SIGTERM and started
again on the same port and store, each with its own log file."""
import asyncio
import signal
import socket
import subprocess
import time

import httpio


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_flags(binary):
    """The flags of `serve --help`: the walk passes a new flag only when the binary has it."""
    result = subprocess.run([binary, "serve", "--help"], capture_output=True, text=True, timeout=30)
    text = result.stdout + result.stderr
    return {word.rstrip(",") for word in text.split() if word.startswith("--")}


class Server:
    def __init__(self, name, binary, store, port, extra_args, log_path):
        self.name, self.binary, self.store, self.port = name, binary, store, port
        self.host = "127.0.0.1"
        self.extra_args, self.log_path = extra_args, log_path
        self.process = None
        self.starts = 0

    def args(self):
        return [self.binary, "serve", "--demo", "--store", self.store, "--port", str(self.port),
                "--host", self.host] + self.extra_args

    async def start(self, timeout=30.0):
        """Starts it and waits until /v1/readyz is 200. A restart on the same port may find the
        port still held for a moment: it tries again, within the timeout."""
        deadline = time.monotonic() + timeout
        while True:
            self.starts += 1
            with open(self.log_path, "ab") as log:
                log.write(f"\n=== start {self.starts}: {' '.join(self.args())}\n".encode())
                log.flush()
                self.process = subprocess.Popen(self.args(), stdout=log, stderr=log, stdin=subprocess.DEVNULL)
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    break  # exited: the port was busy, or a real failure (the log says)
                try:
                    answer = await httpio.request(self.host, self.port, "GET", "/v1/readyz", timeout=2)
                    if answer.status == 200:
                        return
                except (OSError, asyncio.TimeoutError, httpio.HTTPError):
                    pass
                await asyncio.sleep(0.1)
            if time.monotonic() >= deadline:
                self.kill()
                raise RuntimeError(f"server {self.name} did not get ready within {timeout:.0f} s (log: {self.log_path})")
            await asyncio.sleep(0.5)

    async def stop(self, timeout=20.0):
        """SIGTERM, and the exit status and the seconds it took (None: killed after timeout)."""
        if self.process is None or self.process.poll() is not None:
            return (self.process.returncode if self.process else None), 0.0
        began = time.monotonic()
        self.process.send_signal(signal.SIGTERM)
        while self.process.poll() is None and time.monotonic() - began < timeout:
            await asyncio.sleep(0.05)
        took = time.monotonic() - began
        if self.process.poll() is None:
            self.kill()
            return None, took
        return self.process.returncode, took

    def kill(self):
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)

    def alive(self):
        return self.process is not None and self.process.poll() is None

    def log_tail(self, lines=20):
        try:
            with open(self.log_path, "rb") as f:
                text = f.read()[-20000:].decode("utf-8", "replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])
