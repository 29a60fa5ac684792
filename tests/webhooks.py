"""A real webhook receiver for the push notification tests: an HTTP server on
127.0.0.1 that records every request and answers as it is told."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: Any
    at: float
    raw: bytes = b""

    @property
    def state(self) -> str:
        """The state a notification carries (v1.0 status update, or a v0.3 Task)."""
        body = self.body or {}
        if "statusUpdate" in body:
            return str(body["statusUpdate"]["status"]["state"])
        if "task" in body:
            return str(body["task"]["status"]["state"])
        return str((body.get("status") or {}).get("state") or "")


class Receiver:
    """``with Receiver() as hook: hook.url ...``; ``hook.answer(503, 503)``
    queues the next answers (then 200s); ``hook.connections`` counts every
    connection made, answered or not."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.received: list[Received] = []
        self.connections = 0
        self._answers: deque[tuple[int, dict[str, str]]] = deque()
        self._always: tuple[int, dict[str, str]] | None = None
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                status, headers = receiver._next()
                with receiver._lock:
                    receiver.received.append(
                        Received(
                            self.path,
                            {k.lower(): v for k, v in self.headers.items()},
                            body,
                            time.monotonic(),
                            raw,
                        )
                    )
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def verify_request(self, request: Any, client_address: Any) -> bool:
                with receiver._lock:
                    receiver.connections += 1
                return True

        self.server = Server((host, 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def _next(self) -> tuple[int, dict[str, str]]:
        with self._lock:
            if self._answers:
                return self._answers.popleft()
            return self._always or (200, {})

    def answer(self, *statuses: int, headers: dict[str, str] | None = None) -> None:
        with self._lock:
            self._answers.extend((s, headers or {}) for s in statuses)

    def always(self, status: int, headers: dict[str, str] | None = None) -> None:
        with self._lock:
            self._always = (status, headers or {})

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def wait_for(self, n: int, timeout: float = 20) -> list[Received]:
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                got = list(self.received)
            if len(got) >= n:
                return got
            if time.monotonic() > deadline:
                raise AssertionError(f"the receiver got {len(got)} of {n} notifications: {got}")
            time.sleep(0.02)

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
