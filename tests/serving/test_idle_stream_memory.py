"""What an idle SSE stream keeps (issue 32: 10,000 idle streams on one
``toolnexus_serve --workers 2`` at <= 20 KB of RSS each).

The streams are opened in-process through the ASGI application, as a server
calls it (scope, receive, send), on Tasks that stay ``submitted``: each gets
its first event (the Task) and then waits. An idle stream is two asyncio
tasks (the request's own, waiting in its follower, and the one waiting for
the client to go away), keeps no copy of its Task, and costs a bounded
number of traced bytes; a client that goes away ends its stream at once.
benchmarks/stream_capacity.py measures the same in RSS, end to end.
"""

from __future__ import annotations

import asyncio
import gc
import json
import sys
import tracemalloc
import uuid
from typing import Any

import pytest

from tests.serving.test_asgi_app import RPC_PATH, Django, scope
from toolnexus_django import lifecycle
from toolnexus_django.asgi import AgentApplication
from toolnexus_django.lifecycle import wakeups
from toolnexus_django.stores import get_task_store

pytestmark = pytest.mark.django_db(transaction=True)

STREAMS = 200


def submitted(store: Any, text: str) -> str:
    message: dict[str, Any] = {"messageId": str(uuid.uuid4()), "role": "user"}
    message["parts"] = [{"kind": "text", "text": text}]
    return str(lifecycle.submit(store, message, owner=None, text=text).task["id"])


class Client:
    """One SubscribeToTask stream: its client's side of receive() and send()."""

    def __init__(self, task_id: str) -> None:
        body = {"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": task_id}}
        self.body = json.dumps(body).encode()
        self.events: list[bytes] = []
        self.opened = asyncio.Event()
        self.gone = asyncio.Event()
        self.sent_body = False

    async def receive(self) -> dict[str, Any]:
        if not self.sent_body:
            self.sent_body = True
            return {"type": "http.request", "body": self.body, "more_body": False}
        await self.gone.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body" and message.get("body"):
            self.events.append(message["body"][:64])  # the client keeps no Task either
            self.opened.set()


def test_an_idle_stream_is_two_tasks_keeps_no_task_and_ends_when_its_client_goes(
    settings: Any,
) -> None:
    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "STREAM_HEARTBEAT": 3600}
    store = get_task_store()
    # A history no stream should keep: 64 KB each, 200 streams.
    ids = [submitted(store, "x" * 65536) for _ in range(STREAMS)]
    app: Any = AgentApplication(Django())

    async def run() -> tuple[int, int, float, list[Client]]:
        clients = [Client(task_id) for task_id in ids]
        calls = []
        head = scope(RPC_PATH, a2a_version="1.0", content_type="application/json")
        # The first stream warms the caches (imports, the hub's poller, settings).
        warm = asyncio.ensure_future(app(head, clients[0].receive, clients[0].send))
        await asyncio.wait_for(clients[0].opened.wait(), 10)
        gc.collect()
        tasks_before = len(asyncio.all_tasks())
        tracemalloc.start()
        before = tracemalloc.take_snapshot()
        for client in clients[1:]:
            calls.append(asyncio.ensure_future(app(dict(head), client.receive, client.send)))
        await asyncio.wait_for(asyncio.gather(*(c.opened.wait() for c in clients)), 30)
        await asyncio.sleep(0.2)  # every stream waiting
        gc.collect()
        after = tracemalloc.take_snapshot()
        tracemalloc.stop()
        traced = sum(s.size_diff for s in after.compare_to(before, "filename"))
        tasks = len(asyncio.all_tasks()) - tasks_before
        # Every client goes away: every stream ends at once.
        began = asyncio.get_running_loop().time()
        for client in clients:
            client.gone.set()
        await asyncio.wait_for(asyncio.gather(warm, *calls), 10)
        return tasks, traced, asyncio.get_running_loop().time() - began, clients

    tasks, traced, ended_in, clients = asyncio.run(run())
    n = STREAMS - 1
    assert tasks == 2 * n, f"{tasks / n:.2f} asyncio tasks per idle stream"
    # Each stream got its Task (64 KB of history) and keeps none of it: what
    # it keeps (the follower, the watch, two tasks, a future and a timer, the
    # scope and the parsed request) is a few KB.
    per_stream = traced / n
    assert per_stream < 12 * 1024, f"{per_stream:.0f} traced bytes per idle stream"
    assert all(b'"task"' in c.events[0] for c in clients)
    assert ended_in < 5
    assert wakeups.hub().watching == 0


def test_the_bounded_protocol_keeps_the_compact_instance_dict_of_uvicorns() -> None:
    """Past 30 attributes CPython gives an instance a dict of its own
    (1.3 KB more per connection): the bounds take one attribute."""
    from uvicorn.config import Config
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    from uvicorn.server import ServerState

    from toolnexus_django.serving.httpprotocol import BoundedHttpProtocol

    class Transport:
        def get_extra_info(self, name: str, default: Any = None) -> Any:
            return ("127.0.0.1", 8000) if name in ("sockname", "peername") else default

        def is_closing(self) -> bool:
            return False

        def pause_reading(self) -> None: ...
        def resume_reading(self) -> None: ...

    async def app(scope: Any, receive: Any, send: Any) -> None: ...

    async def sizes() -> list[int]:
        config = Config(app=app, log_config=None)
        config.load()
        out = []
        for cls in (HttpToolsProtocol, BoundedHttpProtocol):
            protocol = cls(config=config, server_state=ServerState(), app_state={})
            protocol.connection_made(Transport())  # type: ignore[arg-type]
            protocol.data_received(b"POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\n{}")
            out.append(sys.getsizeof(protocol.__dict__))
            protocol.cycle = None  # type: ignore[assignment]
        return out

    plain, bounded = asyncio.run(sizes())
    assert bounded <= plain + 64, (plain, bounded)
