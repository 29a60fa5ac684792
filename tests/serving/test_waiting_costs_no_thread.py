"""Waiting costs no thread: one ``toolnexus_serve`` process keeps hundreds of
streams open and hundreds of runs waiting on their model at once, refuses
none of them, closes slow clients by its own timeout, and holds no more
database connections than its budget while it does."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import RpcClient, wait_until
from tests.fakes import Fail, FakeLLM, Text
from tests.servers import database_url, fake_env, serve
from tests.sse import Split, split

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

V1 = {"A2A-Version": "1.0"}
FULL_STREAM = [
    "task:TASK_STATE_SUBMITTED",
    "status:TASK_STATE_WORKING",
    "artifact",
    "status:TASK_STATE_COMPLETED",
]


@pytest.fixture
def gated_model(fake_llm: FakeLLM) -> Iterator[threading.Event]:
    """The model answers every call only once the gate opens (a slow model
    whose calls the test can count while they wait)."""
    gate = threading.Event()

    def respond(body: dict[str, Any]) -> Any:
        return Text("worth the wait") if gate.wait(90) else Fail(500, "the gate never opened")

    fake_llm.respond = respond
    try:
        yield gate
    finally:
        gate.set()
        fake_llm.respond = None


def seen(result: dict[str, Any]) -> str:
    if "task" in result:
        return f"task:{result['task']['status']['state']}"
    if "statusUpdate" in result:
        return f"status:{result['statusUpdate']['status']['state']}"
    if "artifactUpdate" in result:
        return "artifact"
    return f"other:{json.dumps(result)[:200]}"


async def one_stream(client: httpx.AsyncClient, url: str, n: int) -> Split:
    payload = {
        "jsonrpc": "2.0",
        "id": n,
        "method": "SendStreamingMessage",
        "params": {
            "message": {
                "messageId": str(uuid.uuid4()),
                "role": "ROLE_USER",
                "parts": [{"text": f"stream number {n}"}],
            }
        },
    }
    shown: list[Any] = []
    headers = {**V1, "Accept": "text/event-stream"}
    async with client.stream("POST", url, json=payload, headers=headers) as response:
        assert response.status_code == 200
        async for line in response.aiter_lines():
            if line.startswith("data:"):
                envelope = json.loads(line[5:])
                assert "error" not in envelope, envelope
                shown.append(envelope["result"])
    # Its moves, and between them the run's live updates (the answer as it is written).
    return split(shown)


def connections_of(application: str) -> list[str]:
    """The states of the PostgreSQL sessions opened by ``application`` (asked
    on a connection of its own, closed at once: callable from a coroutine)."""
    import psycopg
    from django.db import connection

    s = connection.settings_dict
    with psycopg.connect(
        host=s["HOST"] or "127.0.0.1", port=s["PORT"] or 5432, user=s["USER"], dbname=s["NAME"]
    ) as conn:
        rows = conn.execute(
            "SELECT coalesce(state, '') FROM pg_stat_activity WHERE application_name = %s",
            [application],
        ).fetchall()
    return [row[0] for row in rows]


def on_postgresql() -> bool:
    from django.db import connection

    return connection.vendor == "postgresql"


def named_database(application: str) -> dict[str, str]:
    """DATABASE_URL for a server whose sessions ``pg_stat_activity`` can name."""
    url = database_url()
    return {"DATABASE_URL": f"{url}?application_name={application}"} if on_postgresql() else {}


#: At most this many connections per process: its database threads (16 by
#: default) plus the lease keeper, the wake-up poller, the sweep and the main thread.
BUDGET = 20
STREAMS = 300


def test_300_concurrent_streams_on_one_process_all_complete_with_every_event(
    fake_llm: FakeLLM, gated_model: threading.Event, tmp_path: Path
) -> None:
    application = f"tnx-streams-{uuid.uuid4().hex[:8]}"
    env = {**fake_env(fake_llm), **named_database(application)}
    with serve(tmp_path, "--workers", "1", env=env) as server:
        server.wait_ready()
        url = f"{server.base}/agent/"
        in_use: list[int] = []

        async def scenario() -> list[Split]:
            limits = httpx.Limits(max_connections=STREAMS + 10, max_keepalive_connections=0)
            async with httpx.AsyncClient(limits=limits, timeout=120) as client:
                streams = [
                    asyncio.ensure_future(one_stream(client, url, n)) for n in range(STREAMS)
                ]
                # Every stream is open and every run waits on the model (MAX_RUNS
                # = 256 of them; the rest wait their turn as submitted).
                deadline = time.monotonic() + 90
                while len(fake_llm.requests) < 256:
                    assert time.monotonic() < deadline, f"{len(fake_llm.requests)} model calls"
                    assert not any(s.done() for s in streams), "a stream ended early"
                    await asyncio.sleep(0.1)
                if on_postgresql():
                    in_use.append(len(connections_of(application)))
                gated_model.set()
                return list(await asyncio.gather(*streams))

        streams = asyncio.run(scenario())
    shown = [[seen(result) for result in s.moves] for s in streams]
    assert [s for s in shown if s != FULL_STREAM] == []
    assert len(shown) == STREAMS
    for s in streams:  # the gate opens and every model answers at once
        s.assert_answer_streamed(required=True)
    assert len(fake_llm.requests) == STREAMS  # one model call per Task, none repeated
    if in_use:
        assert in_use[0] <= BUDGET, in_use


def test_slow_header_connections_are_closed_by_the_timeout_while_gettask_answers(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    fake_llm.default = Text("done")
    env = {**fake_env(fake_llm), "TOOLNEXUS_READ_TIMEOUT": "2"}
    with serve(tmp_path, "--workers", "1", env=env) as server:
        server.wait_ready()
        url = f"{server.base}/agent/"
        rpc = RpcClient(url)
        task = rpc.wait(rpc.send("a finished task")["id"])
        host, port = server.base.removeprefix("http://").split(":")
        slow = []
        for _ in range(50):
            sock = socket.create_connection((host, int(port)), timeout=10)
            sock.sendall(b"POST /agent/ HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            slow.append(sock)
        stop = threading.Event()

        def trickle() -> None:
            # One more byte of the header every 0.2 s: never idle, never done.
            while not stop.wait(0.2):
                for sock in slow:
                    try:
                        sock.sendall(b"a")
                    except OSError:
                        pass

        trickler = threading.Thread(target=trickle, daemon=True)
        trickler.start()
        try:
            answered = 0
            deadline = time.monotonic() + 2
            while time.monotonic() < deadline:  # while the slow clients hold on
                assert rpc.get(task["id"])["result"]["status"]["state"] == "completed"
                answered += 1
            assert answered >= 10

            def closed(sock: socket.socket) -> bool:
                sock.settimeout(10)
                try:
                    return sock.recv(1024) == b""
                except (ConnectionResetError, BrokenPipeError):
                    return True

            # The server closed every one of them (none got a response).
            assert all(closed(sock) for sock in slow)
        finally:
            stop.set()
            trickler.join(5)
            for sock in slow:
                sock.close()
        assert rpc.get(task["id"])["result"]["status"]["state"] == "completed"


def test_300_runs_waiting_on_their_model_hold_no_database_connection(
    fake_llm: FakeLLM, gated_model: threading.Event, tmp_path: Path
) -> None:
    if not on_postgresql():
        pytest.skip("counts connections in pg_stat_activity; this run's database is sqlite")
    application = f"tnx-runs-{uuid.uuid4().hex[:8]}"
    env = {**fake_env(fake_llm), **named_database(application), "TOOLNEXUS_MAX_RUNS": "300"}
    with serve(tmp_path, "--workers", "1", env=env) as server:
        server.wait_ready()
        rpc = RpcClient(f"{server.base}/agent/")
        ids = [rpc.send(f"run number {n}")["id"] for n in range(300)]
        wait_until(lambda: len(fake_llm.requests) >= 300, timeout=90, what="300 model calls")
        # Every run is in flight, waiting on its model: the process holds no
        # more connections than its budget (one per run would be 300), and
        # none of them is held open in a transaction.
        states = connections_of(application)
        assert 0 < len(states) <= BUDGET, states
        assert not any(state.startswith("idle in transaction") for state in states), states
        gated_model.set()
        for task_id in ids:
            assert rpc.wait(task_id, timeout=60)["status"]["state"] == "completed"
        assert len(connections_of(application)) <= BUDGET
