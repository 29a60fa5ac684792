"""A model in this process that streams (agent/inprocess.py): toolnexus's
in-process client refuses a streamed run; ``in_process_client``'s streams
its model's answer word by word, at a pace if asked, calls tools as the run
does, and runs as toolnexus's does. The demo's offline model is one."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
import toolnexus

from testproject.demo import demo_generate, offline_client
from toolnexus_django.agent.inprocess import in_process_client

TEXT = "The receipt for 42.50 is filed,\nand nothing else is needed."


def says(text: str) -> Any:
    def generate(request: dict[str, Any]) -> dict[str, Any]:
        return {"content": text, "usage": {"prompt_tokens": 4, "completion_tokens": 9}}

    return generate


def adds(request: dict[str, Any]) -> dict[str, Any]:
    """Calls ``add``, then says what it returned."""
    last = request["messages"][-1]
    if last.get("role") == "tool":
        return {"content": f"The sum is {last['content']}."}
    return {"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}]}


@toolnexus.tool
def add(a: int, b: int) -> str:
    """Add two numbers."""
    return str(a + b)


async def streamed(client: toolnexus.Client, prompt: str, with_tools: bool = False) -> list[Any]:
    tools = (
        await toolnexus.create_toolkit(extra_tools=[add], builtins=False) if with_tools else None
    )
    return [event async for event in client.stream(prompt, tools)]


def deltas(events: list[dict[str, Any]]) -> list[str]:
    return [e["delta"] for e in events if e["type"] == "text"]


def test_a_stream_comes_word_by_word() -> None:
    events = asyncio.run(streamed(in_process_client(model="m", generate=says(TEXT)), "file it"))
    pieces = deltas(events)
    assert len(pieces) == len(TEXT.split()) > 1
    assert "".join(pieces) == TEXT
    [result] = [e["result"] for e in events if e["type"] == "done"]
    assert result.text == TEXT
    assert result.usage == {"prompt_tokens": 4, "completion_tokens": 9, "total_tokens": 13}


def test_the_words_come_at_the_pace_asked() -> None:
    client = in_process_client(
        model="m", generate=says("one two three four five"), words_per_second=20
    )
    started = time.monotonic()
    assert len(deltas(asyncio.run(streamed(client, "go")))) == 5
    assert time.monotonic() - started >= 0.2  # four pauses of 1/20 s


def test_a_streamed_run_calls_tools() -> None:
    events = asyncio.run(streamed(in_process_client(model="m", generate=adds), "add", True))
    calls = [(e["name"], e["args"]) for e in events if e["type"] == "tool_call"]
    assert calls == [("add", {"a": 2, "b": 3})]
    assert [e["output"] for e in events if e["type"] == "tool_result"] == ["5"]
    assert "".join(deltas(events)) == "The sum is 5."


def test_a_run_runs_as_toolnexuss_in_process_client_does() -> None:
    async def run(client: toolnexus.Client) -> Any:
        tools = await toolnexus.create_toolkit(extra_tools=[add], builtins=False)
        return await client.run("add", tools)

    ours = asyncio.run(run(in_process_client(model="m", generate=adds, words_per_second=1)))
    theirs = asyncio.run(run(toolnexus.create_in_process_client(model="m", generate=adds)))
    assert ours.text == theirs.text == "The sum is 5."
    assert ours.tool_calls == theirs.tool_calls
    assert ours.messages == theirs.messages


def test_a_generate_that_fails_fails_the_stream_at_once() -> None:
    def broken(request: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("the model broke")

    client = in_process_client(model="m", generate=broken)
    with pytest.raises(RuntimeError, match="the model broke"):
        asyncio.run(streamed(client, "go"))


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"words_per_second": -1}, ValueError),
        ({"words_per_second": float("inf")}, ValueError),
        ({"base_url": "http://x"}, TypeError),
        ({"http_transport": object()}, TypeError),
        ({"generate": "not callable"}, TypeError),
    ],
)
def test_what_it_refuses(options: dict[str, Any], error: type[Exception]) -> None:
    with pytest.raises(error):
        in_process_client(**{"model": "m", "generate": says("x"), **options})


def test_the_demo_model_streams_its_answer_word_by_word(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEMO_WORDS_PER_SECOND", "0")
    prompt = "Summarise: Django is a web framework"
    events = asyncio.run(streamed(offline_client(), prompt))
    expected = demo_generate({"messages": [{"role": "user", "content": prompt}]})["content"]
    assert (
        "".join(deltas(events))
        == expected
        == "Summary (6 words): Summarise: Django is a web framework"
    )
    assert len(deltas(events)) == 9


def test_the_demo_models_pace_must_be_a_number(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEMO_WORDS_PER_SECOND", "fast")
    with pytest.raises(ValueError, match="DEMO_WORDS_PER_SECOND must be a number"):
        offline_client()
