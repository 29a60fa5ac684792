"""Self-tests for tests.fakes.FakeLLM, driven by toolnexus's real client over real HTTP.

No Django needed: runs with ``pytest -p no:django tests/test_fake_llm.py``.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request
from typing import Any

import pytest
import toolnexus
from toolnexus.client import ProviderError

from tests.fakes import (
    Fail,
    FakeLLM,
    Hang,
    Raw,
    Style,
    Text,
    ToolCall,
    Trickle,
    first_user_text,
)
from tests.fakes.llm import text_pieces

pytest_plugins = ["tests.fakes.pytest_plugin"]
pytestmark: list[pytest.MarkDecorator] = []


def _client(fake: FakeLLM, style: Style, **options: Any) -> Any:
    options.setdefault("retries", 0)
    return toolnexus.create_client(
        base_url=fake.url, style=style, model="m", api_key="k", **options
    )


async def _run(
    fake: FakeLLM, style: Style, prompt: str = "hi", tools: list[Any] | None = None, **options: Any
) -> Any:
    toolkit = await toolnexus.create_toolkit(extra_tools=tools or [], builtins=False)
    return await _client(fake, style, **options).run(prompt, toolkit)


def _approval_tool(calls: list[int]) -> Any:
    @toolnexus.tool
    def ask_approval(amount: int) -> str:
        """Ask a human to approve an amount."""
        calls.append(amount)
        return f"approved {amount}"

    return ask_approval


# --------------------------------------------------------------------------- #
# Plain text replies
# --------------------------------------------------------------------------- #


def test_openai_text_reply(fake_llm: FakeLLM) -> None:
    fake_llm.push(Text("filed"))

    result = asyncio.run(_run(fake_llm, "openai"))

    assert result.text == "filed"
    assert result.status == "done"
    assert result.usage == {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    [req] = fake_llm.requests
    assert req.method == "POST"
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == "Bearer k"
    assert req.headers["content-type"] == "application/json"
    assert req.body["model"] == "m"
    assert req.body["messages"] == [{"role": "user", "content": "hi"}]
    assert "tools" not in req.body  # empty toolkit => no tools key
    assert req.first_user_text == "hi"
    assert fake_llm.remaining == 0


def test_anthropic_text_reply(fake_anthropic: FakeLLM) -> None:
    fake_anthropic.push(Text("filed"))

    result = asyncio.run(_run(fake_anthropic, "anthropic"))

    assert result.text == "filed"
    assert result.usage == {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    [req] = fake_anthropic.requests
    assert req.path == "/v1/messages"
    assert req.headers["x-api-key"] == "k"
    assert req.headers["anthropic-version"] == "2023-06-01"
    assert req.body["model"] == "m"
    assert req.body["max_tokens"] == 4096
    assert req.body["messages"] == [{"role": "user", "content": "hi"}]


def test_default_answers_when_nothing_is_scripted(fake_llm: FakeLLM) -> None:
    assert asyncio.run(_run(fake_llm, "openai")).text == "done"
    fake_llm.default = Text("fallback")
    assert asyncio.run(_run(fake_llm, "openai")).text == "fallback"


# --------------------------------------------------------------------------- #
# Native tool round trips
# --------------------------------------------------------------------------- #


def test_openai_tool_round_trip(fake_llm: FakeLLM) -> None:
    calls: list[int] = []
    fake_llm.push(ToolCall("ask_approval", {"amount": 5}, id="call_1"), Text("done"))

    result = asyncio.run(_run(fake_llm, "openai", tools=[_approval_tool(calls)]))

    assert calls == [5]
    assert result.text == "done"
    assert result.turns == 2
    assert result.tool_calls[0]["name"] == "ask_approval"
    assert result.tool_calls[0]["args"] == {"amount": 5}
    first, second = fake_llm.wait_for_requests(2)
    [declared] = first.body["tools"]
    assert declared["type"] == "function"
    assert declared["function"]["name"] == "ask_approval"
    assert first.body["tool_choice"] == "auto"
    assert second.body["messages"] == [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "ask_approval", "arguments": '{"amount": 5}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "approved 5"},
    ]


def test_anthropic_tool_round_trip(fake_anthropic: FakeLLM) -> None:
    calls: list[int] = []
    fake_anthropic.push(ToolCall("ask_approval", {"amount": 5}, id="toolu_1"), Text("done"))

    result = asyncio.run(_run(fake_anthropic, "anthropic", tools=[_approval_tool(calls)]))

    assert calls == [5]
    assert result.text == "done"
    assert result.usage["total_tokens"] == 30
    first, second = fake_anthropic.wait_for_requests(2)
    [declared] = first.body["tools"]
    assert declared["name"] == "ask_approval"
    # toolnexus infers JSON-schema "number" for an ``int`` annotation.
    assert declared["input_schema"]["properties"]["amount"]["type"] == "number"
    assert second.body["messages"] == [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "ask_approval",
                    "input": {"amount": 5},
                }
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": "approved 5",
                    "is_error": False,
                }
            ],
        },
    ]
    # The tool_result-only user message is skipped: the marker text is still the prompt.
    assert second.first_user_text == "hi"


def test_several_tool_calls_in_one_turn_with_generated_ids(fake_llm: FakeLLM) -> None:
    calls: list[int] = []
    fake_llm.push(
        ToolCall.many([("ask_approval", {"amount": 1}), ("ask_approval", {"amount": 2})]),
        Text("both done"),
    )

    result = asyncio.run(_run(fake_llm, "openai", tools=[_approval_tool(calls)]))

    assert sorted(calls) == [1, 2]
    assert result.text == "both done"
    _, second = fake_llm.requests
    assistant, tool_a, tool_b = second.body["messages"][1:]
    ids = [c["id"] for c in assistant["tool_calls"]]
    assert len(set(ids)) == 2
    assert [json.loads(c["function"]["arguments"]) for c in assistant["tool_calls"]] == [
        {"amount": 1},
        {"amount": 2},
    ]
    assert [tool_a["tool_call_id"], tool_b["tool_call_id"]] == ids
    assert [tool_a["content"], tool_b["content"]] == ["approved 1", "approved 2"]


# --------------------------------------------------------------------------- #
# Failures, retries, hangs
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("style", ["openai", "anthropic"])
def test_fail_500_raises_readable_provider_error(style: Style) -> None:
    with FakeLLM(style=style) as fake:
        fake.push(Fail(500, "boom"))
        with pytest.raises(ProviderError) as excinfo:
            asyncio.run(_run(fake, style))
        assert str(excinfo.value) == "LLM 500: boom"
        assert excinfo.value.status == 500
        assert excinfo.value.body == "boom"
        assert len(fake.requests) == 1  # retries=0: exactly one attempt


def test_fail_json_body_and_retry_after_is_retried(fake_llm: FakeLLM) -> None:
    fake_llm.push(Fail(503, {"error": {"message": "busy"}}, {"Retry-After": "0"}), Text("ok"))

    result = asyncio.run(_run(fake_llm, "openai", retries=1))

    assert result.text == "ok"
    assert len(fake_llm.requests) == 2


def test_hang_times_out_the_run_and_stop_returns_promptly() -> None:
    fake = FakeLLM(style="openai").start()
    try:
        fake.push(Hang())
        started = time.monotonic()
        with pytest.raises(toolnexus.RunTimeout, match=r"run timeout after 500ms"):
            asyncio.run(_run(fake, "openai", timeout_ms=500))
        assert time.monotonic() - started < 5
        assert fake.held == 1  # the client gave up; the server still holds its request
    finally:
        stopping = time.monotonic()
        fake.stop()
        assert time.monotonic() - stopping < 2
    assert fake.held == 0
    fake.stop()  # idempotent


def test_release_lets_held_requests_answer(fake_anthropic: FakeLLM) -> None:
    fake_anthropic.push(Hang(), Hang(then=Text("after release")))

    async def scenario() -> list[str]:
        async def release_when_held() -> None:
            await asyncio.to_thread(fake_anthropic.wait_held, 2)
            fake_anthropic.release()

        first, second, _ = await asyncio.gather(
            _run(fake_anthropic, "anthropic", "one"),
            _run(fake_anthropic, "anthropic", "two"),
            release_when_held(),
        )
        return sorted([first.text, second.text])

    # One Hang answers fake.default ("done"), the other its `then`.
    assert asyncio.run(scenario()) == ["after release", "done"]
    assert fake_anthropic.held == 0


def test_hang_max_seconds_answers_500(fake_llm: FakeLLM) -> None:
    fake_llm.push(Hang(max_seconds=0.2))
    with pytest.raises(ProviderError, match=r"LLM 500: .*expired without release"):
        asyncio.run(_run(fake_llm, "openai"))


# --------------------------------------------------------------------------- #
# Keyed scripts and respond()
# --------------------------------------------------------------------------- #


def test_keyed_scripts_serve_concurrent_runs(fake_llm: FakeLLM) -> None:
    # Both requests are held until both arrived, so the runs really overlap.
    fake_llm.on("task-A", Hang(then=Text("reply for A")))
    fake_llm.on("task-B", Hang(then=Text("reply for B")))
    fake_llm.push(Text("shared reply"))  # keyed scripts take precedence: left unused

    async def scenario() -> tuple[str, str]:
        async def release_when_both_held() -> None:
            await asyncio.to_thread(fake_llm.wait_held, 2)
            fake_llm.release()

        a, b, _ = await asyncio.gather(
            _run(fake_llm, "openai", "please handle task-A"),
            _run(fake_llm, "openai", "please handle task-B"),
            release_when_both_held(),
        )
        return a.text, b.text

    assert asyncio.run(scenario()) == ("reply for A", "reply for B")
    assert len(fake_llm.requests_for("task-A")) == 1
    assert len(fake_llm.requests_for("task-B")) == 1
    assert fake_llm.remaining == 1


def test_keyed_tool_scripts_follow_their_run(fake_anthropic: FakeLLM) -> None:
    calls: list[int] = []
    tool = _approval_tool(calls)
    fake_anthropic.on("[A]", ToolCall("ask_approval", {"amount": 1}), Text("A done"))
    fake_anthropic.on("[B]", ToolCall("ask_approval", {"amount": 2}), Text("B done"))

    async def scenario() -> list[str]:
        results = await asyncio.gather(
            _run(fake_anthropic, "anthropic", "[A] go", tools=[tool]),
            _run(fake_anthropic, "anthropic", "[B] go", tools=[tool]),
        )
        return [r.text for r in results]

    assert asyncio.run(scenario()) == ["A done", "B done"]
    assert sorted(calls) == [1, 2]
    followup_a = fake_anthropic.requests_for("[A]")[1]
    assert followup_a.body["messages"][-1]["content"][0]["content"] == "approved 1"
    assert fake_anthropic.remaining == 0


def test_respond_callable_runs_first_and_can_fall_through(fake_llm: FakeLLM) -> None:
    seen: list[dict[str, Any]] = []

    def respond(body: dict[str, Any]) -> Text | None:
        seen.append(body)
        return Text("from respond") if "special" in first_user_text(body, "openai") else None

    fake_llm.respond = respond
    fake_llm.push(Text("from queue"))

    assert asyncio.run(_run(fake_llm, "openai", "special")).text == "from respond"
    assert asyncio.run(_run(fake_llm, "openai", "plain")).text == "from queue"
    assert len(seen) == 2


# --------------------------------------------------------------------------- #
# Waiting, routing, lifecycle
# --------------------------------------------------------------------------- #


def test_wait_for_requests_times_out_with_clear_message(fake_llm: FakeLLM) -> None:
    started = time.monotonic()
    with pytest.raises(TimeoutError, match=r"waited 0.2s for 1 request\(s\), got 0"):
        fake_llm.wait_for_requests(1, timeout=0.2)
    assert 0.15 < time.monotonic() - started < 2
    with pytest.raises(TimeoutError, match=r"held request"):
        fake_llm.wait_held(1, timeout=0.05)


def test_wrong_style_gets_a_readable_404(fake_llm: FakeLLM) -> None:
    with pytest.raises(ProviderError) as excinfo:
        asyncio.run(_run(fake_llm, "anthropic"))
    assert excinfo.value.status == 404
    assert "openai-style" in str(excinfo.value)
    assert fake_llm.requests[0].path == "/v1/messages"


def test_health_check_and_loopback_only(fake_llm: FakeLLM) -> None:
    assert fake_llm.url == f"http://127.0.0.1:{fake_llm.port}/v1"
    root = fake_llm.url.removesuffix("/v1")
    with urllib.request.urlopen(root + "/", timeout=5) as resp:
        assert resp.status == 200
        assert resp.read() == b"fake-llm"
    with pytest.raises(urllib.error.HTTPError) as excinfo:
        urllib.request.urlopen(root + "/nope", timeout=5)
    assert excinfo.value.code == 404
    excinfo.value.close()
    assert fake_llm.requests == []  # GETs are not recorded


def test_context_manager_and_restart() -> None:
    with FakeLLM(style="anthropic") as fake:
        url = fake.url
        with pytest.raises(RuntimeError):
            fake.start()
    with pytest.raises(RuntimeError):
        _ = fake.url
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(url.removesuffix("/v1") + "/", timeout=2)
    with pytest.raises(TypeError):
        fake.push("not a reply")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- #
# Streaming ("stream": true), driven by toolnexus's client.stream()
# --------------------------------------------------------------------------- #

STYLES: list[Style] = ["openai", "anthropic"]


async def _stream(
    fake: FakeLLM,
    style: Style,
    tools: list[Any] | None = None,
    cancel: asyncio.Event | None = None,
    **options: Any,
) -> list[dict[str, Any]]:
    toolkit = await toolnexus.create_toolkit(extra_tools=tools or [], builtins=False)
    client = _client(fake, style, **options)
    return [ev async for ev in client.stream("hi", toolkit, cancel=cancel)]


def _texts(events: list[dict[str, Any]]) -> list[str]:
    return [ev["delta"] for ev in events if ev["type"] == "text"]


def test_text_pieces_keep_their_whitespace() -> None:
    assert text_pieces("Done. Filed") == ["Done.", " Filed"]
    assert text_pieces("  two  spaces\nand a line \n") == [
        "  two",
        "  spaces",
        "\nand",
        " a",
        " line",
        " \n",
    ]
    assert text_pieces("") == []
    for text in ("one", " lead", "trail ", "a\tb\n\nc", "   "):
        assert "".join(text_pieces(text)) == text


@pytest.mark.parametrize("style", STYLES)
def test_streamed_text_arrives_in_pieces(style: Style) -> None:
    text = "Done. Filed the ticket for you."
    with FakeLLM(style=style) as fake:
        fake.push(Text(text))

        events = asyncio.run(_stream(fake, style))

        [req] = fake.requests
    pieces = _texts(events)
    assert len(pieces) > 1
    assert "".join(pieces) == text
    assert pieces == text_pieces(text)
    assert [ev["type"] for ev in events[len(pieces) :]] == ["usage", "done"]
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    assert events[-2]["usage"] == usage
    result = events[-1]["result"]
    assert (result.text, result.status, result.usage) == (text, "done", usage)
    assert req.body["stream"] is True
    assert req.first_user_text == "hi"
    if style == "openai":
        assert req.body["stream_options"] == {"include_usage": True}


@pytest.mark.parametrize("style", STYLES)
def test_streamed_tool_round_trip(style: Style) -> None:
    calls: list[int] = []
    with FakeLLM(style=style) as fake:
        fake.push(
            ToolCall("ask_approval", {"amount": 5}, id="call_7"),
            Text("Approved and filed.", usage=(7, 3)),
        )

        events = asyncio.run(_stream(fake, style, tools=[_approval_tool(calls)]))

        first, second = fake.requests
    assert calls == [5]
    pieces = _texts(events)
    assert [ev["type"] for ev in events] == [
        "tool_call",
        "tool_result",
        *["text"] * len(pieces),
        "usage",
        "done",
    ]
    call, result_ev = events[:2]
    assert (call["id"], call["name"], call["args"]) == ("call_7", "ask_approval", {"amount": 5})
    assert (result_ev["name"], result_ev["output"], result_ev["is_error"]) == (
        "ask_approval",
        "approved 5",
        False,
    )
    assert len(pieces) > 1
    assert "".join(pieces) == "Approved and filed."
    usage = {"prompt_tokens": 17, "completion_tokens": 8, "total_tokens": 25}
    assert events[-2]["usage"] == usage
    result = events[-1]["result"]
    assert (result.text, result.turns, result.usage) == ("Approved and filed.", 2, usage)
    assert first.body["stream"] is second.body["stream"] is True
    last = second.body["messages"][-1]
    if style == "openai":
        assert last == {"role": "tool", "tool_call_id": "call_7", "content": "approved 5"}
    else:
        assert last["content"][0]["tool_use_id"] == "call_7"
        assert last["content"][0]["content"] == "approved 5"


@pytest.mark.parametrize("style", STYLES)
def test_streamed_turn_with_several_calls(style: Style) -> None:
    calls: list[int] = []
    with FakeLLM(style=style) as fake:
        fake.push(
            ToolCall.many([("ask_approval", {"amount": 1}), ("ask_approval", {"amount": 2})]),
            Text("both"),
        )

        events = asyncio.run(_stream(fake, style, tools=[_approval_tool(calls)]))

    assert sorted(calls) == [1, 2]
    announced = [ev for ev in events if ev["type"] == "tool_call"]
    assert [ev["args"] for ev in announced] == [{"amount": 1}, {"amount": 2}]
    assert len({ev["id"] for ev in announced}) == 2
    outputs = [ev["output"] for ev in events if ev["type"] == "tool_result"]
    assert sorted(outputs) == ["approved 1", "approved 2"]
    assert events[-1]["result"].text == "both"


def _wire_stream(fake: FakeLLM, path: str, body: dict[str, Any]) -> tuple[str, list[list[str]]]:
    """POST ``body`` with urllib; the Content-Type and the SSE events, each as its lines."""
    request = urllib.request.Request(
        fake.url.removesuffix("/v1") + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as resp:
        content_type, raw = resp.headers["Content-Type"], resp.read().decode()
    assert raw.endswith("\n\n")
    return content_type, [event.split("\n") for event in raw.split("\n\n") if event]


def test_openai_stream_on_the_wire(fake_llm: FakeLLM) -> None:
    fake_llm.push(
        ToolCall.many([("lookup", {"q": "red shoes", "n": 2}, "call_a"), ("lookup", {"q": "x"})]),
        Text("Two found.", usage=(4, 2)),
    )
    body: dict[str, Any] = {"model": "m", "stream": True, "messages": []}

    content_type, events = _wire_stream(
        fake_llm, "/v1/chat/completions", {**body, "stream_options": {"include_usage": True}}
    )

    assert content_type == "text/event-stream"
    assert all(len(lines) == 1 and lines[0].startswith("data: ") for lines in events)
    data = [lines[0].removeprefix("data: ") for lines in events]
    assert data[-1] == "[DONE]"
    *deltas, finish, usage = [json.loads(d) for d in data[:-1]]
    assert deltas[0]["choices"][0]["delta"]["role"] == "assistant"
    assert finish["choices"][0]["finish_reason"] == "tool_calls"
    assert usage["choices"] == []
    assert usage["usage"] == {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    calls = [tc for c in deltas for tc in c["choices"][0]["delta"].get("tool_calls", [])]
    opened = [(tc["index"], tc["function"]["name"]) for tc in calls if "id" in tc]
    assert opened == [(0, "lookup"), (1, "lookup")]
    assert calls[0]["id"] == "call_a"
    for index, args in ((0, {"q": "red shoes", "n": 2}), (1, {"q": "x"})):
        parts = [tc["function"]["arguments"] for tc in calls if tc["index"] == index]
        assert len([p for p in parts if p]) > 1
        assert json.loads("".join(parts)) == args

    # Without stream_options.include_usage there is no usage chunk.
    _, events = _wire_stream(fake_llm, "/v1/chat/completions", body)
    chunks = [json.loads(lines[0].removeprefix("data: ")) for lines in events[:-1]]
    assert all(chunk["choices"] for chunk in chunks)
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks) == "Two found."
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    assert len(fake_llm.requests) == 2


def test_anthropic_stream_on_the_wire(fake_anthropic: FakeLLM) -> None:
    fake_anthropic.push(
        ToolCall("lookup", {"q": "red shoes"}, id="toolu_a"), Text("Found it.", usage=(4, 2))
    )
    body = {"model": "m", "max_tokens": 9, "stream": True, "messages": []}

    content_type, wire = _wire_stream(fake_anthropic, "/v1/messages", body)

    assert content_type == "text/event-stream"
    events = []
    for name, data in wire:
        payload = json.loads(data.removeprefix("data: "))
        assert name == f"event: {payload['type']}"
        events.append(payload)
    deltas = [e["delta"] for e in events[2:-3]]
    assert [e["type"] for e in events] == [
        "message_start",
        "content_block_start",
        *["content_block_delta"] * len(deltas),
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert events[0]["message"]["usage"]["input_tokens"] == 10
    assert events[1]["content_block"] == {
        "type": "tool_use",
        "id": "toolu_a",
        "name": "lookup",
        "input": {},
    }
    assert len(deltas) > 1
    assert {d["type"] for d in deltas} == {"input_json_delta"}
    assert json.loads("".join(d["partial_json"] for d in deltas)) == {"q": "red shoes"}
    assert events[-2]["delta"]["stop_reason"] == "tool_use"
    assert events[-2]["usage"] == {"output_tokens": 5}

    _, wire = _wire_stream(fake_anthropic, "/v1/messages", body)
    events = [json.loads(data.removeprefix("data: ")) for _, data in wire]
    assert events[1]["content_block"] == {"type": "text", "text": ""}
    deltas = [e["delta"] for e in events if e["type"] == "content_block_delta"]
    assert deltas == [
        {"type": "text_delta", "text": "Found"},
        {"type": "text_delta", "text": " it."},
    ]
    assert events[0]["message"]["usage"]["input_tokens"] == 4
    assert events[-2]["delta"]["stop_reason"] == "end_turn"
    assert events[-2]["usage"] == {"output_tokens": 2}


@pytest.mark.parametrize(
    ("style", "paced_by"), [("openai", "reply"), ("anthropic", "fake")], ids=["reply", "fake"]
)
def test_a_paced_stream_sends_its_pieces_one_at_a_time(style: Style, paced_by: str) -> None:
    # 20 pieces, 0.2 s apart: the client cancels on its first piece, long before the last
    # is due -- it has a strict prefix of the text, and the fake sees the hang-up.
    text = " ".join(f"w{i}" for i in range(20))
    pace = 0.2
    with FakeLLM(style=style, stream_pace=pace if paced_by == "fake" else 0.0) as fake:
        fake.push(Text(text, pace=pace if paced_by == "reply" else None))
        got: list[str] = []

        async def scenario() -> None:
            cancel = asyncio.Event()
            toolkit = await toolnexus.create_toolkit(builtins=False)
            async for ev in _client(fake, style).stream("hi", toolkit, cancel=cancel):
                if ev["type"] == "text":
                    got.append(ev["delta"])
                    cancel.set()

        with pytest.raises(toolnexus.RunCancelled):
            asyncio.run(scenario())
        fake.wait_hung_up(1)

    pieces = text_pieces(text)
    assert 1 <= len(got) < len(pieces)
    assert got == pieces[: len(got)]


def test_a_reply_pace_overrides_the_fake_stream_pace() -> None:
    # At the fake's pace this answer would take a minute (and the client's 10 s budget
    # would end the run); the reply's pace=0 sends it at once.
    with FakeLLM(style="anthropic", stream_pace=20.0) as fake:
        fake.push(Text("not paced at all", pace=0))

        events = asyncio.run(_stream(fake, "anthropic", timeout_ms=10_000))

        assert _texts(events) == ["not", " paced", " at", " all"]
        fake.stream_pace = 0.0
        fake.reset()
        assert fake.stream_pace == 20.0  # reset() restores the constructor's pace
    with pytest.raises(ValueError, match="pace"):
        Text("x", pace=-1)
    with pytest.raises(ValueError, match="pace"):
        FakeLLM(stream_pace=-0.5)


def test_fail_raw_trickle_and_hang_keep_their_meaning_when_streamed(fake_llm: FakeLLM) -> None:
    fake_llm.push(Fail(503, "busy"))
    with pytest.raises(ProviderError) as excinfo:
        asyncio.run(_stream(fake_llm, "openai"))
    assert excinfo.value.status == 503

    sse = b'data: {"choices": [{"index": 0, "delta": {"content": "raw"}}]}\n\ndata: [DONE]\n\n'
    fake_llm.push(Raw(sse, content_type="text/event-stream"))
    assert _texts(asyncio.run(_stream(fake_llm, "openai"))) == ["raw"]

    fake_llm.push(Trickle(every=0, then=Text("byte by byte")))
    events = asyncio.run(_stream(fake_llm, "openai"))
    assert _texts(events) == ["byte", " by", " byte"]
    assert events[-1]["result"].usage["total_tokens"] == 15

    fake_llm.push(Hang(then=Text("after the hold")))

    async def held_then_released() -> list[dict[str, Any]]:
        async def release_when_held() -> None:
            await asyncio.to_thread(fake_llm.wait_held, 1)
            fake_llm.release()

        events, _ = await asyncio.gather(_stream(fake_llm, "openai"), release_when_held())
        return events

    assert "".join(_texts(asyncio.run(held_then_released()))) == "after the hold"
    assert [r.body["stream"] for r in fake_llm.requests] == [True] * 4
