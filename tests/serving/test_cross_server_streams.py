"""A stream on one server follows a run on another by PostgreSQL NOTIFY: two
``toolnexus_serve`` instances on the same test database, both polls 30 s
apart, so only the notification of each move (migration 0012's trigger,
heard by the streaming server's one listener) can bring the events within
the stream's deadline. On SQLite each process polls (no NOTIFY): skipped."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from tests.conftest import RpcClient, wait_until
from tests.fakes import FakeLLM, Hang, Text
from tests.servers import Served, fake_env, serve
from tests.sse import open_stream

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

V1 = {"A2A-Version": "1.0"}
#: Every read of a stream ends by then: far under the 30 s polls.
DEADLINE = 15.0


@pytest.fixture
def postgresql() -> None:
    if connection.vendor != "postgresql":
        pytest.skip(f"NOTIFY is PostgreSQL's; on {connection.vendor} each process polls")


def subscribe(url: str, task_id: str, last_event_id: str) -> list[dict[str, Any]]:
    headers = {**V1, "Last-Event-ID": last_event_id}
    with open_stream(url, "SubscribeToTask", {"id": task_id}, headers=headers) as opened:
        return opened.rest()


def seen(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Each event's SSE id and what it says: a state, or ``artifact``."""
    out = []
    for event in events:
        result = event["data"]["result"]
        if "statusUpdate" in result:
            out.append((event["id"], result["statusUpdate"]["status"]["state"]))
        else:
            assert "artifactUpdate" in result, result
            out.append((event["id"], "artifact"))
    return out


def listening(server: Served) -> bool:
    """The server's listener has connected, listened and seen its probe."""
    return "listening for task events on database 'default'" in server.output()


def test_a_stream_on_one_server_follows_a_run_on_another_by_notify(
    postgresql: None, fake_llm: FakeLLM, tmp_path: Path
) -> None:
    env = {
        **fake_env(fake_llm),
        "TOOLNEXUS_EVENT_POLL_INTERVAL": "30",
        "TOOLNEXUS_EVENT_FALLBACK_POLL_INTERVAL": "30",
        # An idle stream re-reads its Task every heartbeat: 30 s too, past the deadline.
        "TOOLNEXUS_STREAM_HEARTBEAT": "30",
    }
    fake_llm.push(Hang(then=Text("ran on B")))
    with serve(tmp_path, env=env) as a, serve(tmp_path, env=env) as b:
        a.wait_ready()
        b.wait_ready()
        task = RpcClient(f"{b.base}/agent/").send(f"run it on B {uuid.uuid4()}")
        fake_llm.wait_held(1)  # B's run is working, its model call held
        got: list[dict[str, Any]] = []
        failed: list[BaseException] = []

        def read() -> None:  # on A, from after "submitted": the log, then what is live
            headers = {**V1, "Last-Event-ID": "1"}
            url, params = f"{a.base}/agent/", {"id": task["id"]}
            try:
                with open_stream(
                    url, "SubscribeToTask", params, headers=headers, timeout=DEADLINE
                ) as opened:
                    while (event := opened.next()) is not None:
                        got.append(event)
            except BaseException as e:  # the deadline: said by the test's thread
                failed.append(e)

        reader = threading.Thread(target=read)
        reader.start()
        try:
            # A's stream replayed WORKING from the log, and A listens (its
            # catch-up beat done): what B does next reaches A only by NOTIFY.
            wait_until(lambda: len(got) == 1 and listening(a), timeout=DEADLINE, what="A")
            fake_llm.release()
        finally:
            reader.join(DEADLINE + 5)
        assert not reader.is_alive() and failed == [], failed
        assert seen(got) == [
            ("2", "TASK_STATE_WORKING"),
            ("2.1", "artifact"),
            ("3", "TASK_STATE_COMPLETED"),
        ]
        # Resumed on A with Last-Event-ID: exactly the rest, in order.
        assert seen(subscribe(f"{a.base}/agent/", task["id"], "2")) == seen(got)[1:]
        assert seen(subscribe(f"{a.base}/agent/", task["id"], "2.1")) == seen(got)[2:]
        assert subscribe(f"{a.base}/agent/", task["id"], "3") == []
