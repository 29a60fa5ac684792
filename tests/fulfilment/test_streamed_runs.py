"""Which runs stream from the model, and what a streamed run records: a Task
sent by a streaming method runs through toolnexus's ``Client.stream`` (first
runs and resumes, OpenAI and Anthropic styles), its answer's artifact keeps
the id its chunks named, and its run record says when its first text came
and what it used; a Task sent otherwise runs as before, never streamed."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
import toolnexus
from toolnexus import Answer

from tests.conftest import RpcClient
from tests.fakes import FakeLLM, Text, ToolCall
from tests.utils import pending_id, private_of
from toolnexus_django.lifecycle.live import answer_artifact_id
from toolnexus_django.review import answer_task
from toolnexus_django.serving.handler import EndpointActions
from toolnexus_django.stores import get_task_store

pytestmark = pytest.mark.django_db(transaction=True)


EXPENSE = ToolCall("file_expense", {"amount": 12.5, "description": "taxi"})


def streamed_send(text: str) -> dict[str, Any]:
    """A Task started as a streaming method starts one (the stream itself aside)."""
    message = {"messageId": str(uuid.uuid4()), "role": "user", "kind": "message"}
    message["parts"] = [{"kind": "text", "text": text}]
    return EndpointActions(get_task_store()).start(message, owner=None, text=text, streamed=True)


def streamed_calls(fake: FakeLLM) -> list[bool]:
    return [bool((r.body or {}).get("stream")) for r in fake.requests]


@pytest.mark.parametrize("style", ["openai", "anthropic"])
def test_a_streamed_task_runs_through_the_models_stream_and_records_it(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM, fake_anthropic: FakeLLM, style: str
) -> None:
    fake = fake_llm if style == "openai" else fake_anthropic
    configure(fake, store="django")
    fake.push(Text("Filed expense claim EXP-1 under travel."))
    task = streamed_send("file my claim")
    done = rpc.wait(task["id"])
    assert done["status"]["state"] == "completed"
    assert done["artifacts"][0]["parts"][0]["text"] == "Filed expense claim EXP-1 under travel."
    assert done["artifacts"][0]["artifactId"] == answer_artifact_id(task["id"])
    assert streamed_calls(fake) == [True]
    record = private_of(task["id"])
    assert record.streamed
    assert isinstance(record.first_text_ms, int) and record.first_text_ms >= 0
    assert record.usage and sum(record.usage.values()) > 0


def test_a_task_sent_without_a_stream_never_streams_from_the_model(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm, store="django")
    fake_llm.push(Text("filed"))
    done = rpc.wait(rpc.send("file my claim")["id"])
    assert done["artifacts"][0]["parts"][0]["text"] == "filed"
    assert streamed_calls(fake_llm) == [False]
    record = private_of(done["id"])
    assert not record.streamed and record.first_text_ms is None


@pytest.mark.parametrize("style", ["openai", "anthropic"])
def test_a_resumed_streamed_task_streams_its_continuation(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM, fake_anthropic: FakeLLM, style: str
) -> None:
    fake = fake_llm if style == "openai" else fake_anthropic
    configure(fake, store="django")
    fake.push(EXPENSE, Text("Your claim is filed."))
    task = streamed_send("file an expense of 12.5 for a taxi")
    waiting = rpc.wait(task["id"])
    assert waiting["status"]["state"] == "input-required", waiting
    assert private_of(task["id"]).usage  # the run to its suspension is recorded too
    answer_task(task["id"], Answer(id=pending_id(task["id"]), ok=True), decision="approve")
    done = rpc.wait(task["id"], states=("completed", "failed"))
    assert done["status"]["state"] == "completed", done
    assert done["artifacts"][0]["parts"][0]["text"] == "Your claim is filed."
    assert done["artifacts"][0]["artifactId"] == answer_artifact_id(task["id"])
    assert streamed_calls(fake) == [True, True]
    # The continuation is the same transcript as an unstreamed one's: no new user turn.
    resumed = fake.requests[1].body["messages"]
    assert [m["role"] for m in resumed].count("user") == (1 if style == "openai" else 2)
    assert "Filed expense claim EXP-" in json.dumps(resumed)


def test_a_client_that_cannot_stream_runs_as_before(
    rpc: RpcClient, settings: Any, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm, store="django")
    settings.TOOLNEXUS = {
        **settings.TOOLNEXUS,
        "CLIENT": "tests.fulfilment.test_streamed_runs.whole",
    }
    task = streamed_send("file my claim")
    done = rpc.wait(task["id"])
    assert done["status"]["state"] == "completed", done
    assert done["artifacts"][0]["parts"][0]["text"] == "answered whole"
    assert private_of(task["id"]).first_text_ms is None


def whole() -> toolnexus.Client:
    """toolnexus's in-process client: it refuses to stream."""
    return toolnexus.create_in_process_client(
        model="whole", generate=lambda request: {"content": "answered whole"}
    )
