"""Streams deliver every transition of a Task, in order, each with an SSE id;
a client that reconnects with ``Last-Event-ID`` gets exactly what it missed,
then the live events — also across processes and with the run on a db_worker.

A streamed run's stream also shows live updates between its moves (chunks of
the answer, tool calls: toolnexus_django/a2a/liveevents.py); :func:`split`
sets them apart, and what these tests assert of the moves is what they always
asserted."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from tests.conftest import RpcClient, wait_until
from tests.fakes import FakeLLM, Hang, Text
from tests.servers import ROOT, database_url, fake_env, serve
from tests.sse import open_stream, ordinal, split
from tests.utils import events_of, pending_id, private_of
from toolnexus_django.stores import DjangoTaskStore

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

V1 = {"A2A-Version": "1.0"}
SUMMARY = "Summarise: the meeting moved to Friday at ten."
EXPENSE = "file an expense of 12.5 for a taxi"


def v1_message(text: str, **fields: Any) -> dict[str, Any]:
    return {
        "messageId": str(uuid.uuid4()),
        "role": "ROLE_USER",
        "parts": [{"text": text}],
        **fields,
    }


def v03_message(text: str, **fields: Any) -> dict[str, Any]:
    return {
        "kind": "message",
        "messageId": str(uuid.uuid4()),
        "role": "user",
        "parts": [{"kind": "text", "text": text}],
        **fields,
    }


def v1_seen(events: list[dict[str, Any]]) -> list[str]:
    """What a v1.0 stream showed: ``task:<STATE>``, ``status:<STATE>``, ``artifact``."""
    out = []
    for event in events:
        result = event["data"]["result"]
        if "task" in result:
            out.append(f"task:{result['task']['status']['state']}")
        elif "statusUpdate" in result:
            out.append(f"status:{result['statusUpdate']['status']['state']}")
        elif "artifactUpdate" in result:
            out.append("artifact")
        else:
            raise AssertionError(result)
    return out


def v03_seen(events: list[dict[str, Any]]) -> list[str]:
    out = []
    for event in events:
        result = event["data"]["result"]
        if result["kind"] == "task":
            out.append(f"task:{result['status']['state']}")
        elif result["kind"] == "status-update":
            final = " final" if result["final"] else ""
            out.append(f"status:{result['status']['state']}{final}")
        else:
            out.append("artifact")
    return out


def assert_increasing(events: list[dict[str, Any]]) -> None:
    ids = [ordinal(e["id"]) for e in events]
    assert ids == sorted(ids) and len(set(ids)) == len(ids), ids


def stream(url: str, method: str, params: dict[str, Any], **kw: Any) -> list[dict[str, Any]]:
    with open_stream(url, method, params, **kw) as opened:
        assert opened.is_sse
        return opened.rest()


def subscribe(url: str, task_id: str, last_event_id: str, *, v1: bool = True) -> list[Any]:
    headers = {**(V1 if v1 else {}), "Last-Event-ID": last_event_id}
    method = "SubscribeToTask" if v1 else "tasks/resubscribe"
    return stream(url, method, {"id": task_id}, headers=headers)


def follow_in_thread(
    url: str, task_id: str, last_event_id: str
) -> tuple[threading.Thread, list[Any]]:
    """Resubscribe on a thread; events land in the list as they arrive."""
    got: list[Any] = []

    def read() -> None:
        headers = {**V1, "Last-Event-ID": last_event_id}
        with open_stream(url, "SubscribeToTask", {"id": task_id}, headers=headers) as opened:
            while (event := opened.next()) is not None:
                got.append(event)

    reader = threading.Thread(target=read)
    reader.start()
    return reader, got


# -- one process, the instant offline model ------------------------------------------------


def test_a_run_streams_submitted_working_artifact_completed(agent_url: str, configure: Any) -> None:
    configure(None)  # the demo's offline model answers at once
    events = stream(agent_url, "SendStreamingMessage", {"message": v1_message(SUMMARY)}, headers=V1)
    streamed = split(events)
    assert v1_seen(streamed.moves) == [
        "task:TASK_STATE_SUBMITTED",
        "status:TASK_STATE_WORKING",
        "artifact",
        "status:TASK_STATE_COMPLETED",
    ]
    assert [e["id"] for e in streamed.moves] == ["1", "2", "2.1", "3"]
    streamed.assert_answer_streamed(required=True)  # the demo writes word by word
    task_id = events[0]["data"]["result"]["task"]["id"]
    assert [e["seq"] for e in events_of(task_id, DjangoTaskStore())] == [1, 2, 3]


def test_v03_streams_the_same_with_kinds_and_final_flags(agent_url: str, configure: Any) -> None:
    configure(None)
    events = stream(agent_url, "message/stream", {"message": v03_message(SUMMARY)})
    streamed = split(events)
    assert v03_seen(streamed.moves) == [
        "task:submitted",
        "status:working",
        "artifact",
        "status:completed final",
    ]
    assert_increasing(events)
    streamed.assert_answer_streamed(required=True)


def test_an_expense_streams_to_input_required_and_a_reviewers_answer_is_replayed(
    agent_url: str, configure: Any, admin_user: Any
) -> None:
    configure(None)
    events = stream(agent_url, "SendStreamingMessage", {"message": v1_message(EXPENSE)}, headers=V1)
    assert v1_seen(split(events).moves) == [
        "task:TASK_STATE_SUBMITTED",
        "status:TASK_STATE_WORKING",
        "status:TASK_STATE_INPUT_REQUIRED",
    ]
    task_id = events[0]["data"]["result"]["task"]["id"]
    seen = events[-1]["id"]

    # A reviewer approves in the admin; the run finishes before anyone looks.
    reviewer = Client()
    reviewer.force_login(admin_user)
    review = reverse("admin:toolnexus_django_awaitinghumantask_review", args=[task_id])
    posted = reviewer.post(
        review,
        {"_answer": "approve", "request_id": pending_id(task_id, DjangoTaskStore())},
    )
    assert posted.status_code == 302
    rpc = RpcClient(agent_url)
    wait_until(lambda: rpc.get(task_id)["result"]["status"]["state"] == "completed")

    # Resubscribing from INPUT_REQUIRED replays what came after, then ends.
    replayed = subscribe(agent_url, task_id, seen)
    assert v1_seen(split(replayed).moves) == [
        "status:TASK_STATE_WORKING",  # answered
        "status:TASK_STATE_WORKING",  # resumed
        "artifact",
        "status:TASK_STATE_COMPLETED",
    ]
    assert ordinal(replayed[0]["id"]) > ordinal(seen)
    assert_increasing(events + replayed)
    # Without Last-Event-ID a finished Task has nothing to subscribe to, as before.
    plain = rpc.call("SubscribeToTask", {"id": task_id}, headers=V1)
    assert plain["error"]["code"] == -32004
    # The same replay in v0.3.
    assert v03_seen(split(subscribe(agent_url, task_id, seen, v1=False)).moves) == [
        "status:working",
        "status:working",
        "artifact",
        "status:completed final",
    ]


def test_the_requesters_answering_stream_shows_working_then_completed(
    agent_url: str, configure: Any
) -> None:
    configure(None)
    asked = stream(agent_url, "message/stream", {"message": v03_message("book a trip")})
    assert v03_seen(split(asked).moves) == [
        "task:submitted",
        "status:working",
        "status:input-required final",
    ]
    first = asked[0]["data"]["result"]
    answer = v03_message("Lisbon, 3-5 May", taskId=first["id"], contextId=first["contextId"])
    answered = split(stream(agent_url, "message/stream", {"message": answer}))
    assert v03_seen(answered.moves) == [
        "task:working",
        "status:working",
        "artifact",
        "status:completed final",
    ]
    artifact = answered.moves[2]["data"]["result"]["artifact"]["parts"][0]["text"]
    assert artifact == "Done. The requester says: Lisbon, 3-5 May"
    answered.assert_answer_streamed(required=True)
    # A client that saw INPUT_REQUIRED and resubscribes gets the rest exactly once.
    replayed = subscribe(agent_url, first["id"], asked[-1]["id"], v1=False)
    assert v03_seen(split(replayed).moves) == [
        "status:working",
        "status:working",
        "artifact",
        "status:completed final",
    ]
    assert_increasing(asked + replayed)


def test_a_client_that_drops_after_the_first_event_misses_nothing_and_gets_nothing_twice(
    agent_url: str, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm)
    fake_llm.push(Hang(then=Text("slowly done")))
    with open_stream(
        agent_url, "SendStreamingMessage", {"message": v1_message("slow")}, headers=V1
    ) as opened:
        first = opened.next()
    assert first is not None and first["id"] == "1"
    task_id = first["data"]["result"]["task"]["id"]
    fake_llm.wait_held(1)
    fake_llm.release()
    rpc = RpcClient(agent_url)
    wait_until(lambda: rpc.get(task_id)["result"]["status"]["state"] == "completed")

    rest = subscribe(agent_url, task_id, "1")
    logged = events_of(task_id, DjangoTaskStore())
    assert [e["seq"] for e in logged] == [1, 2, 3]
    assert [e["id"] for e in rest] == ["2", "2.1", "3"]
    assert v1_seen(rest) == ["status:TASK_STATE_WORKING", "artifact", "status:TASK_STATE_COMPLETED"]
    # From the artifact on: only what came after it.
    assert v1_seen(subscribe(agent_url, task_id, "2.1")) == ["status:TASK_STATE_COMPLETED"]
    # From the end: nothing, and the stream ends.
    assert subscribe(agent_url, task_id, "3") == []


def test_a_resubscribed_client_then_gets_the_live_events(
    agent_url: str, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm)
    fake_llm.push(Hang(then=Text("live")))
    with open_stream(
        agent_url, "SendStreamingMessage", {"message": v1_message("live")}, headers=V1
    ) as opened:
        first = opened.next()
    assert first is not None
    task_id = first["data"]["result"]["task"]["id"]
    fake_llm.wait_held(1)
    reader, got = follow_in_thread(agent_url, task_id, "1")
    # The stream is open (it replayed WORKING) before the model answers.
    wait_until(lambda: len(got) >= 1, what="the replayed WORKING")
    fake_llm.release()
    reader.join(30)
    followed = split(got)
    assert v1_seen(followed.moves) == [
        "status:TASK_STATE_WORKING",
        "artifact",
        "status:TASK_STATE_COMPLETED",
    ]
    # The model answers at once: chunks, when the stream caught any, make the answer.
    followed.assert_answer_streamed(required=False)


# -- across processes --------------------------------------------------------------------------


def test_the_stream_of_one_server_follows_a_run_in_another(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    fake_llm.push(Hang(then=Text("ran elsewhere")))
    with (
        serve(tmp_path, env=fake_env(fake_llm)) as runner,
        serve(tmp_path, env=fake_env(fake_llm)) as streamer,
    ):
        runner.wait_ready()
        streamer.wait_ready()
        task = RpcClient(f"{runner.base}/agent/").send("run it over there")
        fake_llm.wait_held(1)
        reader, got = follow_in_thread(f"{streamer.base}/agent/", task["id"], "1")
        # Open on the other server before the run ends: the rest arrives live,
        # found by that server's one poll of the event log.
        wait_until(lambda: len(got) >= 1, what="the replayed WORKING")
        fake_llm.release()
        reader.join(30)
    assert v1_seen(got) == ["status:TASK_STATE_WORKING", "artifact", "status:TASK_STATE_COMPLETED"]
    assert_increasing(got)


def test_workers_2_every_stream_gets_every_event(fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.push(Hang(then=Text("for everyone")))
    with serve(tmp_path, "--workers", "2", "--threads", "8", env=fake_env(fake_llm)) as server:
        server.wait_ready()
        url = f"{server.base}/agent/"
        task = RpcClient(url).send("watched by many")
        fake_llm.wait_held(1)
        followers = [follow_in_thread(url, task["id"], "1") for _ in range(4)]
        wait_until(lambda: all(got for _, got in followers), what="every stream to open")
        fake_llm.release()
        for reader, _ in followers:
            reader.join(30)
        results = [got for _, got in followers]
    for got in results:
        assert v1_seen(got) == [
            "status:TASK_STATE_WORKING",
            "artifact",
            "status:TASK_STATE_COMPLETED",
        ]


@pytest.fixture
def db_worker(fake_llm: FakeLLM, tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "TOOLNEXUS_STORE": "django",
        "TOOLNEXUS_TASK_BACKEND": "database",
        "LLM_BASE_URL": fake_llm.url,
        "LLM_RETRIES": "0",
    }
    log = open(tmp_path / "db_worker.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "db_worker", "--backend", "database", "--interval", "0.1",
         "--no-startup-delay", "--no-reload", "--worker-id", "stream-test"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        log.close()


def test_a_stream_follows_a_run_on_a_db_worker(
    agent_url: str, configure: Any, fake_llm: FakeLLM, db_worker: subprocess.Popen[str]
) -> None:
    configure(fake_llm, store="django", TASK_BACKEND="database")
    fake_llm.default = Text("done by the worker")
    events = stream(
        agent_url,
        "SendStreamingMessage",
        {"message": v1_message("for the worker")},
        headers=V1,
        timeout=60,
    )
    # The worker's run streams too: what its stream did not catch of the
    # answer before the run ended comes as one chunk, then the final event.
    streamed = split(events)
    streamed.assert_answer_streamed(required=True)
    assert v1_seen(streamed.moves) == [
        "task:TASK_STATE_SUBMITTED",
        "status:TASK_STATE_WORKING",
        "artifact",
        "status:TASK_STATE_COMPLETED",
    ]
    task_id = events[0]["data"]["result"]["task"]["id"]
    assert db_worker.poll() is None
    # The run was the worker's; the stream, this process's.
    assert str(private_of(task_id, DjangoTaskStore()).worker).endswith(f":{db_worker.pid}")
