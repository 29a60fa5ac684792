"""Live updates across processes: a Task streamed and run on server B, its
client gone mid-answer and back on server A with ``Last-Event-ID``, loses no
character — A reads the run's coalesced chunks from the database (woken by
NOTIFY on PostgreSQL, by its poll on SQLite), then the final event."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.fakes import FakeLLM, Text
from tests.servers import fake_env, serve
from tests.sse import open_stream

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

WORDS = " ".join(f"word{i}" for i in range(40))


def message(text: str) -> dict[str, Any]:
    return {
        "kind": "message",
        "messageId": str(uuid.uuid4()),
        "role": "user",
        "parts": [{"kind": "text", "text": text}],
    }


def assemble(text: str, result: dict[str, Any]) -> str:
    """``text`` after one v0.3 artifact update, as a client applies it."""
    piece = "".join(p.get("text", "") for p in result["artifact"]["parts"])
    return text + piece if result["append"] else piece


def test_a_client_back_on_another_server_loses_no_character(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    fake_llm.push(Text(WORDS, pace=0.05))  # 40 pieces, about 2 s
    with serve(tmp_path, env=fake_env(fake_llm)) as a, serve(tmp_path, env=fake_env(fake_llm)) as b:
        a.wait_ready()
        b.wait_ready()
        text, last_id, task_id = "", None, None
        params = {"message": message(f"write on B {uuid.uuid4()}")}
        with open_stream(f"{b.base}/agent/", "message/stream", params) as on_b:
            while (event := on_b.next()) is not None:
                result = event["data"]["result"]
                task_id = task_id or result.get("id") or result.get("taskId")
                if result.get("kind") == "artifact-update" and not result["lastChunk"]:
                    text, last_id = assemble(text, result), event["id"]
                    if len(text.split()) >= 3:
                        break  # the client goes away mid-answer
        assert last_id is not None and task_id is not None
        assert last_id.split(".")[1] == "0", "a live update's id: <seq>.0.<n>"
        assert WORDS.startswith(text) and text != WORDS

        headers = {"Last-Event-ID": last_id}
        with open_stream(
            f"{a.base}/agent/", "tasks/resubscribe", {"id": task_id}, headers=headers
        ) as on_a:
            rest = [e["data"]["result"] for e in on_a.rest()]
        chunks = [r for r in rest if r.get("kind") == "artifact-update" and not r["lastChunk"]]
        assert chunks, "server A showed the run's live chunks, read from the database"
        for result in chunks:
            text = assemble(text, result)
        assert text == WORDS, "no character lost or doubled across the two servers"
        final = [r for r in rest if r.get("kind") == "artifact-update" and r["lastChunk"]]
        assert [assemble("", f) for f in final] == [WORDS]
        assert final[0]["artifact"]["artifactId"] == chunks[0]["artifact"]["artifactId"]
        assert rest[-1]["status"]["state"] == "completed" and rest[-1]["final"] is True
