"""A failed run says what failed in words; the exception is in the log only.

The model is the fake over real HTTP (tests/fakes/llm.py), answering with
each entry of the corpus (tests/corpus/model_answers.py): bytes that are not
UTF-8, JSON of the wrong shape, HTTP errors, silence past the timeout. The
Task fails with the entry's words in every dialect and in the event that
streams and push notifications render, with no exception class nor Python
text; the server log has the exception, under the reference the fail event
keeps. Answers larger than ``MAX_MODEL_RESPONSE_BYTES`` fail the run
unread. Runs are sent to the ASGI endpoint (what ``toolnexus_serve`` runs).
"""

from __future__ import annotations

import io
import logging
import re
from typing import Any

import pytest
from django.urls import reverse

from tests.conftest import RpcClient
from tests.corpus.model_answers import BAD_ANSWERS, PYTHON_TEXT, BadAnswer
from tests.fakes import Fail, FakeLLM, Raw, Text
from tests.utils import events_of
from toolnexus_django.agent.modelanswer import ModelAnswerTooLarge
from toolnexus_django.agent.transport import read_bounded

pytestmark = pytest.mark.django_db(transaction=True)

V1 = {"A2A-Version": "1.0"}


@pytest.fixture
def endpoint(transactional_db: Any, asgi_server: Any) -> RpcClient:
    return RpcClient(f"{asgi_server.url}/agent/")


def text_of(message: dict[str, Any] | None) -> str:
    return "".join(str(p.get("text", "")) for p in (message or {}).get("parts") or [])


def failed_with(rpc: RpcClient, fake: FakeLLM, reply: Any, marker: str) -> dict[str, Any]:
    fake.on(marker, reply)
    task = rpc.send(f"{marker}: file my receipt")
    failed = rpc.wait(task["id"], timeout=30)
    assert failed["status"]["state"] == "failed", failed
    return failed


def on_the_wire(rpc: RpcClient, task_id: str) -> dict[str, str]:
    """The failed Task's status message as each dialect shows it, and as
    its last event (what streams and push notifications send) holds it."""
    seen = {
        "toolnexus": text_of(rpc.get(task_id)["result"]["status"].get("message")),
        "v0.3": text_of(rpc.get(task_id, method="tasks/get")["result"]["status"].get("message")),
        "v1.0": text_of(
            rpc.call("GetTask", {"id": task_id}, headers=V1)["result"]["status"].get("message")
        ),
    }
    last = events_of(task_id)[-1]
    assert last["kind"] == "fail"
    seen["event"] = text_of(last["public"]["status"].get("message"))
    return seen


@pytest.mark.parametrize("bad", BAD_ANSWERS, ids=[b.id for b in BAD_ANSWERS])
def test_a_broken_model_answer_fails_the_task_in_words(
    endpoint: RpcClient,
    configure: Any,
    fake_llm: FakeLLM,
    fake_anthropic: FakeLLM,
    caplog: pytest.LogCaptureFixture,
    bad: BadAnswer,
) -> None:
    fake = fake_anthropic if bad.style == "anthropic" else fake_llm
    client = configure(fake)["CLIENT"]
    configure(fake, client={**client, **bad.client})
    caplog.set_level(logging.INFO, logger="toolnexus_django")

    failed = failed_with(endpoint, fake, bad.reply, bad.id)
    fake.release()

    seen = on_the_wire(endpoint, failed["id"])
    assert set(seen.values()) == {bad.words}, seen
    assert not re.search(PYTHON_TEXT, bad.words), bad.words
    # The exception, for operators: in the fail event's private detail and
    # in the log line its reference finds, with the traceback.
    detail = events_of(failed["id"])[-1]["private"]
    assert detail["error"] == bad.words
    [line] = [r for r in caplog.records if f"[reference {detail['reference']}]" in r.getMessage()]
    assert f"Task {failed['id']}" in line.getMessage()
    assert line.exc_text is not None and bad.logged in line.exc_text, line.exc_text


def test_operators_see_the_exception_on_the_tasks_admin_page(
    endpoint: RpcClient, configure: Any, fake_llm: FakeLLM, admin_client: Any
) -> None:
    configure(fake_llm)
    failed = failed_with(endpoint, fake_llm, Raw(b"\xff garbage"), "admin-sees")
    detail = events_of(failed["id"])[-1]["private"]
    assert detail["cause"].startswith(
        "ModelAnswerUnreadable: The model's answer could not be read (it is not UTF-8 text)"
        " (from UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff"
    ), detail
    page = admin_client.get(
        reverse("admin:toolnexus_django_taskrecord_change", args=[failed["id"]])
    ).content.decode()
    assert f"[reference {detail['reference']}]" in page
    assert "UnicodeDecodeError" in page


def test_an_unknown_failure_names_a_reference_the_log_has(
    endpoint: RpcClient, configure: Any, fake_llm: FakeLLM, caplog: pytest.LogCaptureFixture
) -> None:
    """A failure with no words of its own (a bug: here a CLIENT hook's
    KeyError) is an internal error: the message says so and names the log
    line's reference."""

    def after_llm(event: dict[str, Any]) -> None:
        raise KeyError("no such key")

    client = configure(fake_llm)["CLIENT"]
    configure(fake_llm, client={**client, "hooks": {"after_llm": after_llm}})
    caplog.set_level(logging.INFO, logger="toolnexus_django")
    failed = failed_with(endpoint, fake_llm, Text("fine"), "hook-bug")
    text = text_of(failed["status"]["message"])
    match = re.fullmatch(
        r"The run failed \(an internal error; see the server log, reference ([0-9a-f]{12})\)",
        text,
    )
    assert match, text
    [line] = [r for r in caplog.records if f"[reference {match.group(1)}]" in r.getMessage()]
    assert line.levelno == logging.ERROR
    assert line.exc_text is not None and "KeyError: 'no such key'" in line.exc_text


def test_a_broken_client_configuration_fails_the_task_in_words(
    endpoint: RpcClient, configure: Any, caplog: pytest.LogCaptureFixture
) -> None:
    configure(None, store="memory", CLIENT={"base_url": None, "model": None})
    caplog.set_level(logging.INFO, logger="toolnexus_django")
    task = endpoint.send("anything")
    failed = endpoint.wait(task["id"])
    assert failed["status"]["state"] == "failed"
    text = text_of(failed["status"]["message"])
    assert text.startswith("The agent is not configured to run (a configuration error; see")
    reference = re.search(r"reference ([0-9a-f]{12})\)$", text)
    assert reference, text
    [line] = [r for r in caplog.records if f"[reference {reference.group(1)}]" in r.getMessage()]
    assert line.exc_text is not None and 'needs "base_url" and "model"' in line.exc_text


# -- the bound on what is read from the model ------------------------------------------------


@pytest.mark.parametrize("sized", [True, False], ids=["content-length", "until-close"])
def test_an_answer_over_the_bound_fails_the_run_unread(
    endpoint: RpcClient, configure: Any, fake_llm: FakeLLM, sized: bool
) -> None:
    configure(fake_llm, MAX_MODEL_RESPONSE_BYTES=4096)
    envelope = (
        b'{"choices": [{"index": 0, "message": {"role": "assistant", "content": "'
        + b"x" * 8000
        + b'"}, "finish_reason": "stop"}]}'
    )
    failed = failed_with(endpoint, fake_llm, Raw(envelope, sized=sized), f"huge-{sized}")
    assert set(on_the_wire(endpoint, failed["id"]).values()) == {
        "The model's answer was larger than 4096 bytes"
    }
    # The server keeps serving: an answer within the bound completes.
    fake_llm.on("small", Text("x" * 3000))
    done = endpoint.wait(endpoint.send("small: a normal one")["id"])
    assert done["status"]["state"] == "completed"
    assert done["artifacts"][0]["parts"][0]["text"] == "x" * 3000


def test_an_error_body_over_the_bound_is_cut_and_the_status_still_said(
    endpoint: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm, MAX_MODEL_RESPONSE_BYTES=1024)
    failed = failed_with(endpoint, fake_llm, Fail(502, "y" * 50_000), "huge-error")
    assert text_of(failed["status"]["message"]) == (
        "The model service answered HTTP 502 (Bad Gateway)"
    )


class Body(io.BytesIO):
    """A body as urllib hands it over: ``read(n)`` and its headers."""

    def __init__(self, data: bytes, length: str | None = None) -> None:
        super().__init__(data)
        self.headers = {} if length is None else {"Content-Length": length}
        self.reads = 0

    def read(self, size: int | None = -1) -> bytes:
        self.reads += 1
        return super().read(size)


def test_read_bounded_reads_no_more_than_the_bound_and_one_byte() -> None:
    assert read_bounded(Body(b"a" * 10), 10) == b"a" * 10  # exactly the bound: fine
    endless = Body(b"a" * 1_000_000)
    with pytest.raises(ModelAnswerTooLarge, match="larger than 100 bytes"):
        read_bounded(endless, 100)
    assert endless.tell() == 101, "stopped one byte past the bound"
    # A Content-Length over the bound: refused before reading anything.
    declared = Body(b"a" * 50, length="5000")
    with pytest.raises(ModelAnswerTooLarge):
        read_bounded(declared, 100)
    assert declared.reads == 0
    # An error body is cut, not refused.
    assert read_bounded(Body(b"e" * 500, length="500"), 100, cut=True) == b"e" * 100


def test_the_bounded_transport_over_real_http(fake_llm: FakeLLM) -> None:
    """What toolnexus gets from the default transport: a checked answer; its
    own ProviderError (with Retry-After, for its retries); a streamed answer
    refused once past the bound."""
    from toolnexus.client import ProviderError

    from toolnexus_django.agent.transport import BoundedTransport

    url = f"{fake_llm.url}/chat/completions"
    payload = {"model": "m", "messages": [{"role": "user", "content": "bounded"}]}
    transport = BoundedTransport(1000)
    fake_llm.push(
        Text("fine"), Fail(503, "z" * 5000, headers={"Retry-After": "0"}), Text("y" * 2000)
    )
    answer = transport.post(url, {"Content-Type": "application/json"}, payload, 5)
    assert answer["choices"][0]["message"]["content"] == "fine"
    with pytest.raises(ProviderError) as refused:
        transport.post(url, {"Content-Type": "application/json"}, payload, 5)
    assert (refused.value.status, refused.value.retry_after) == (503, "0")
    assert len(refused.value.body) == 1000, "the error body read up to the bound only"
    with transport.open(url, {}, {**payload, "stream": True}, 5) as streamed:
        # Its events come merged (agent/ssemerge.py), the first at once.
        assert streamed.read(600).startswith(b"data: ")
        with pytest.raises(ModelAnswerTooLarge):
            while streamed.read1(600):
                pass
