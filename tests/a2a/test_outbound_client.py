"""toolnexus's own outbound A2A client against this endpoint."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import toolnexus

from tests.fakes import FakeLLM, Text

pytestmark = pytest.mark.django_db(transaction=True)


def test_toolnexus_agent_tool_gets_the_completed_text(
    live_server: Any, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm, store="django")
    fake_llm.on("summarise the memo", Text("The memo says: ship on Friday."))
    card_url = f"{live_server.url}/agent/.well-known/agent-card.json"

    async def call() -> toolnexus.ToolResult:
        # agent() timeouts are milliseconds.
        toolkit = await toolnexus.create_toolkit(
            builtins=False, agents=[toolnexus.agent(card_url, timeout=20_000, poll_every=50)]
        )
        try:
            names = sorted(t.name for t in toolkit.tools())
            assert names == ["filing-desk_expense-filing", "filing-desk_summarize"]
            return await toolkit.execute("filing-desk_summarize", {"task": "summarise the memo"})
        finally:
            await toolkit.close()

    result = asyncio.run(call())
    assert result.is_error is False, result.output
    assert result.output == "The memo says: ship on Friday."
    assert result.metadata["state"] == "completed"
    assert result.metadata["taskId"]


def test_toolnexus_agent_tool_reports_a_failed_task(
    live_server: Any, configure: Any, fake_llm: FakeLLM
) -> None:
    from tests.fakes import Fail

    configure(fake_llm, store="memory")
    fake_llm.on("doomed", Fail(500, "kaput"))
    card_url = f"{live_server.url}/agent/.well-known/agent-card.json"

    async def call() -> toolnexus.ToolResult:
        tools = await toolnexus.agent_tools(
            toolnexus.agent(card_url, timeout=20_000, poll_every=50)
        )
        tool = next(t for t in tools if t.name.endswith("_summarize"))
        return await tool.execute({"task": "doomed"})

    result = asyncio.run(call())
    assert result.is_error is True
    # The failure in words (issue 18): never the model service's own error text.
    assert "failed" in result.output
    assert "The model service answered HTTP 500" in result.output
    assert "kaput" not in result.output


def test_toolnexus_agent_tool_waits_out_an_input_required_task_until_its_timeout(
    live_server: Any, configure: Any, fake_llm: FakeLLM
) -> None:
    """What the README's Clients section says: toolnexus 0.21's agent() knows
    only completed/failed/canceled as final, so a Task waiting on a person is
    polled until the tool's own timeout, then reported as timed out."""
    from tests.fakes import ToolCall

    configure(fake_llm, store="memory")
    fake_llm.on("expense a taxi", ToolCall("file_expense", {"amount": 9, "description": "taxi"}))
    card_url = f"{live_server.url}/agent/.well-known/agent-card.json"

    async def call() -> toolnexus.ToolResult:
        tools = await toolnexus.agent_tools(toolnexus.agent(card_url, timeout=1_500, poll_every=50))
        tool = next(t for t in tools if t.name.endswith("_expense-filing"))
        return await tool.execute({"task": "expense a taxi"})

    result = asyncio.run(call())
    assert result.is_error is True
    assert "timed out" in result.output and "state=input-required" in result.output
