"""A model that does not stream, streamed: a server that ignores ``"stream":
true`` and answers one JSON body is handed to toolnexus's streaming loop as
the events of its stream (agent/sseanswer.py, through the default transport,
agent/transport.py), so ``client.stream`` yields what ``client.run`` reads
from the same answer: its text, its tool calls, its usage; an answer the app
refuses fails the stream in the same words as the run.

The model is the fake over real HTTP (tests/fakes/llm.py), each answer a
:class:`~tests.fakes.Raw` JSON body sent as ``application/json``, whatever
the request asked for.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

import pytest
import toolnexus

from tests.fakes import FakeLLM, Raw, Style
from toolnexus_django.agent.modelanswer import ModelAnswerError
from toolnexus_django.agent.runtime import build_client
from toolnexus_django.agent.sseanswer import SSEResponse, sse_of, word_pieces
from toolnexus_django.agent.transport import BoundedTransport

STYLES: list[Style] = ["openai", "anthropic"]


def text_answer(style: Style, text: str) -> dict[str, Any]:
    if style == "anthropic":
        return {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 11, "output_tokens": 7},
        }
    return {
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


def call_answer(style: Style, name: str, args: dict[str, Any]) -> dict[str, Any]:
    if style == "anthropic":
        return {
            "type": "message",
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Adding. "},
                {"type": "tool_use", "id": "toolu_1", "name": name, "input": args},
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 3, "output_tokens": 2},
        }
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    return {
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
    }


def as_json(answer: dict[str, Any]) -> Raw:
    """The answer as a server that does not stream sends it."""
    return Raw(json.dumps(answer).encode(), content_type="application/json")


def client_for(fake: FakeLLM) -> toolnexus.Client:
    """The app's client (its default transport), with no retries."""
    config = {"base_url": fake.url, "style": fake.style, "model": "m", "api_key": "k"}
    return build_client({**config, "retries": 0})


@toolnexus.tool
def add(a: int, b: int) -> str:
    """Add two numbers."""
    return str(a + b)


async def toolkit() -> toolnexus.Toolkit:
    return await toolnexus.create_toolkit(extra_tools=[add], builtins=False)


async def streamed(client: toolnexus.Client, prompt: str, tools: Any = None) -> list[Any]:
    return [event async for event in client.stream(prompt, tools)]


def texts(events: list[dict[str, Any]]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "text")


def done(events: list[dict[str, Any]]) -> Any:
    [result] = [e["result"] for e in events if e["type"] == "done"]
    return result


# -- over HTTP, through the app's transport ------------------------------------


@pytest.mark.parametrize("style", STYLES)
def test_a_json_answer_streams_the_text_the_run_reads(style: Style) -> None:
    text = "The receipt is filed.\nNothing else to do."
    with FakeLLM(style=style) as fake:
        fake.push(as_json(text_answer(style, text)), as_json(text_answer(style, text)))
        client = client_for(fake)
        run = asyncio.run(client.run("file it"))
        events = asyncio.run(streamed(client, "file it"))
        ran, streaming = fake.requests
    assert "stream" not in ran.body and streaming.body["stream"] is True  # and got JSON
    assert run.text == text
    assert texts(events) == text
    assert done(events).text == text
    assert (
        done(events).usage
        == run.usage
        == {
            "prompt_tokens": 11,
            "completion_tokens": 7,
            "total_tokens": 18,
        }
    )


@pytest.mark.parametrize("style", STYLES)
def test_a_json_tool_call_streams_as_the_run_makes_it(style: Style) -> None:
    answers = [call_answer(style, "add", {"a": 2, "b": 3}), text_answer(style, "It is 5.")]
    with FakeLLM(style=style) as fake:
        fake.push(*map(as_json, answers * 2))
        client = client_for(fake)

        async def both() -> tuple[Any, list[Any]]:
            tools = await toolkit()
            return await client.run("add 2 and 3", tools), await streamed(
                client, "add 2 and 3", tools
            )

        run, events = asyncio.run(both())
    calls = [(e["name"], e["args"]) for e in events if e["type"] == "tool_call"]
    assert calls == [(c["name"], c["args"]) for c in run.tool_calls] == [("add", {"a": 2, "b": 3})]
    outputs = [e["output"] for e in events if e["type"] == "tool_result"]
    assert outputs == [c["output"] for c in run.tool_calls] == ["5"]
    assert done(events).text == run.text == "It is 5."
    assert done(events).usage == run.usage
    assert texts(events) == ("Adding. It is 5." if style == "anthropic" else "It is 5.")


@pytest.mark.parametrize(
    ("style", "body", "words"),
    [
        ("openai", b'{"choices": "x"}', "The model's answer could not be read (it has no choices)"),
        (
            "anthropic",
            b'{"content": "x"}',
            "The model's answer could not be read (its content is not a list of blocks)",
        ),
        ("openai", b"<html>busy</html>", "The model's answer could not be read (it is not JSON)"),
    ],
)
def test_a_refused_json_answer_fails_the_stream_in_words(
    style: Style, body: bytes, words: str
) -> None:
    with FakeLLM(style=style) as fake:
        fake.push(Raw(body), Raw(body, content_type="text/html"))
        client = client_for(fake)
        with pytest.raises(ModelAnswerError) as run_failed:
            asyncio.run(client.run("file it"))
        with pytest.raises(ModelAnswerError) as stream_failed:
            asyncio.run(streamed(client, "file it"))
    assert str(stream_failed.value) == str(run_failed.value) == words


def test_a_json_answer_past_the_bound_fails_the_stream_unparsed() -> None:
    with FakeLLM() as fake:
        fake.push(as_json(text_answer("openai", "x" * 500)))
        client = toolnexus.create_client(
            base_url=fake.url,
            style="openai",
            model="m",
            api_key="k",
            retries=0,
            http_transport=BoundedTransport(200, "openai"),
        )
        with pytest.raises(ModelAnswerError, match="larger than 200 bytes"):
            asyncio.run(streamed(client, "file it"))


def test_a_real_stream_is_still_read_as_one() -> None:
    events = b"".join(sse_of(text_answer("openai", "streamed for real"), "openai", words=True))
    with FakeLLM() as fake:
        fake.push(Raw(events, content_type="text/event-stream; charset=utf-8"))
        got = asyncio.run(streamed(client_for(fake), "hi"))
    # Read as the stream it is (its text deltas merged: agent/ssemerge.py).
    assert "".join(e["delta"] for e in got if e["type"] == "text") == "streamed for real"


# -- the conversion ------------------------------------------------------------


def data_of(events: list[bytes]) -> list[Any]:
    """Each event's data, parsed (``[DONE]`` as is)."""
    found = []
    for event in events:
        for line in event.decode().splitlines():
            if line.startswith("data: "):
                data = line[len("data: ") :]
                found.append(data if data == "[DONE]" else json.loads(data))
    return found


@pytest.mark.parametrize(
    "text", ["one two  three\n", "  leading and trailing  ", "word", "", "   ", "a\tb\r\nc"]
)
def test_word_pieces_join_to_the_text(text: str) -> None:
    pieces = word_pieces(text)
    assert "".join(pieces) == text
    assert all(p.strip() and len(p.split()) == 1 for p in pieces) or not text.strip()


def test_openai_events_carry_the_text_in_pieces_and_the_calls_whole() -> None:
    answer = text_answer("openai", "Filed it for you.")
    answer["choices"][0]["message"]["tool_calls"] = [
        {"id": "c1", "function": {"name": "add", "arguments": {"a": 1}}},
        {"id": "c2", "function": {"name": "add", "arguments": '{"a": 2.5, "b": [1]}'}},
        {"id": "c3", "function": {"name": "add"}},
    ]
    events = data_of(list(sse_of(answer, "openai", words=True)))
    deltas = [e["choices"][0]["delta"] for e in events[:-2]]
    assert "".join(d.get("content", "") for d in deltas) == "Filed it for you."
    assert [d["content"] for d in deltas if "content" in d] == ["Filed ", "it ", "for ", "you."]
    calls = [c for d in deltas for c in d.get("tool_calls", [])]
    assert [(c["index"], c["id"], c["function"]["name"]) for c in calls] == [
        (0, "c1", "add"),
        (1, "c2", "add"),
        (2, "c3", "add"),
    ]
    arguments = [c["function"]["arguments"] for c in calls]
    assert json.loads(arguments[0]) == {"a": 1}
    assert arguments[1:] == ['{"a": 2.5, "b": [1]}', ""]  # a string as sent; none: nothing
    assert events[-2] == {"choices": [], "usage": answer["usage"]}
    assert events[-1] == "[DONE]"


def test_anthropic_events_split_the_usage_and_say_tool_use() -> None:
    answer = call_answer("anthropic", "add", {"a": 1, "b": {"c": [2]}})
    answer["stop_reason"] = "end_turn"  # run acts on the tool_use block all the same
    answer["content"].insert(0, {"type": "thinking", "thinking": "hm"})
    events = data_of(list(sse_of(answer, "anthropic")))
    kinds = [e["type"] for e in events]
    assert kinds == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert events[0]["message"]["usage"] == {"input_tokens": 3}
    assert events[1]["content_block"] == {"type": "text", "text": ""}
    assert events[2]["delta"] == {"type": "text_delta", "text": "Adding. "}
    assert events[4]["content_block"]["id"] == "toolu_1"
    assert json.loads(events[5]["delta"]["partial_json"]) == {"a": 1, "b": {"c": [2]}}
    assert events[7]["delta"]["stop_reason"] == "tool_use"
    assert events[7]["usage"] == {"output_tokens": 2}


def test_a_response_reads_an_event_at_a_time_pausing_between() -> None:
    response = SSEResponse([b"data: 1\n\n", b"data: 2\n\n", b"data: 3\n\n"], pause=0.05)
    started = time.monotonic()
    assert response.read1(8192) == b"data: 1\n\n"
    assert response.read1(4) == b"data"
    assert response.readline() == b": 2\n"
    assert response.read() == b"\ndata: 3\n\n"
    assert response.read1(8192) == b""
    assert time.monotonic() - started >= 0.1


def test_closing_a_response_ends_its_pause_at_once() -> None:
    response = SSEResponse([b"data: 1\n\n", b"data: 2\n\n"], pause=30)
    assert response.read1(8192) == b"data: 1\n\n"
    threading.Timer(0.1, response.close).start()
    started = time.monotonic()
    assert response.read1(8192) == b""
    assert time.monotonic() - started < 5
