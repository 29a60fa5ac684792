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

from tests.fakes import Fail, FakeLLM, Hang, Style, Text, ToolCall, first_user_text

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
