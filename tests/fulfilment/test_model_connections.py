"""The default model transport keeps its HTTP/1.1 connection open between a
thread's calls (urllib opened and closed one per call), replaces one the
model's server closed meanwhile, and fails as urllib did when the model
cannot be reached."""

from __future__ import annotations

import json
import socket
import threading
import urllib.error
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from toolnexus.client import ProviderError

from tests.conftest import wait_until
from toolnexus_django.agent import transport as transport_module
from toolnexus_django.agent.transport import BoundedTransport

ANSWER = {"choices": [{"message": {"role": "assistant", "content": "fine"}}]}
PAYLOAD = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
HEADERS = {"Content-Type": "application/json", "Authorization": "Bearer k"}


class Model(ThreadingHTTPServer):
    """An HTTP/1.1 model: counts the connections it accepted and the
    requests it answered; ``drop`` closes each connection after its answer
    without saying so (as a server does with an idle kept connection)."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Answer)
        self.connections = 0
        self.requests: list[dict[str, str]] = []
        self.drop = False
        self.status = 200
        self.closed = 0  # connections the server closed

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1/chat/completions"


class _Answer(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Model

    def setup(self) -> None:
        super().setup()
        self.server.connections += 1

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.server.requests.append(dict(self.headers))
        body = json.dumps(ANSWER if self.server.status == 200 else {"error": "busy"}).encode()
        self.send_response(self.server.status)
        if self.server.status != 200:
            self.send_header("Retry-After", "0")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        if self.server.drop:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True

    def finish(self) -> None:
        super().finish()
        self.server.closed += 1

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def model() -> Iterator[Model]:
    server = Model()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_one_connection_carries_a_threads_calls(model: Model) -> None:
    transport = BoundedTransport(10_000)
    for _ in range(3):
        assert transport.post(model.url, HEADERS, PAYLOAD, 5) == ANSWER
    assert model.connections == 1
    # What urllib sent, less its "Connection: close".
    sent = model.requests[0]
    assert sent["Authorization"] == "Bearer k"
    assert sent["Content-Type"] == "application/json"
    assert sent["User-Agent"].startswith("Python-urllib/")


def test_a_connection_the_server_closed_is_replaced(
    model: Model, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent_on_open: list[bool] = []  # per send: over a connection already open?
    real = transport_module._send

    def send(conn: Any, *args: Any) -> Any:
        sent_on_open.append(conn.sock is not None)
        return real(conn, *args)

    monkeypatch.setattr(transport_module, "_send", send)
    transport = BoundedTransport(10_000)
    model.drop = True
    for _ in range(3):
        assert transport.post(model.url, HEADERS, PAYLOAD, 5) == ANSWER
        wait_until(lambda: model.closed == model.connections, timeout=5, what="the close")
    assert model.connections == 3
    assert len(model.requests) == 3  # each call sent once: none was lost or doubled
    # Seen closed while idle, a connection is never written to again.
    assert sent_on_open == [False, False, False]


def test_an_error_status_is_toolnexus_provider_error(model: Model) -> None:
    transport = BoundedTransport(10_000)
    model.status = 503
    with pytest.raises(ProviderError) as refused:
        transport.post(model.url, HEADERS, PAYLOAD, 5)
    assert (refused.value.status, refused.value.retry_after) == (503, "0")
    model.status = 200
    assert transport.post(model.url, HEADERS, PAYLOAD, 5) == ANSWER


def test_an_unreachable_model_fails_as_urllib_did() -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    with pytest.raises(urllib.error.URLError) as failed:
        BoundedTransport(10_000).post(f"http://127.0.0.1:{port}/v1", HEADERS, PAYLOAD, 5)
    assert isinstance(failed.value.reason, ConnectionRefusedError)


def test_a_kept_connection_past_descriptor_1024_is_reused(model: Model) -> None:
    """A busy worker holds more than 1,024 descriptors (streams, database
    connections): its kept model connection's is past select()'s bound, and
    checking it idle failed the Task ("filedescriptor out of range")."""
    import os
    import resource

    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] < 1200:
        pytest.skip("this process may not open 1,200 files")
    read, write = os.pipe()
    held = [read, write]
    try:
        while held[-1] < 1100:  # the next socket's descriptor is past 1,024
            held.append(os.dup(read))
        transport = BoundedTransport(10_000)
        for _ in range(2):
            assert transport.post(model.url, HEADERS, PAYLOAD, 5) == ANSWER
        assert model.connections == 1
    finally:
        for fd in held:
            os.close(fd)
