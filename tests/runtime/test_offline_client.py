"""The shipped offline model (toolnexus_django/offline.py), driven as toolnexus
drives any model: a Client's run and stream, with a toolkit. It calls a tool
the message names, with arguments read against the tool's schema; reports the
result; never calls a tool the run does not offer, nor makes an argument up;
echoes anything else; and a project selects it by its dotted path."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from typing import Any

import pytest
import toolnexus
from django.test import Client

import toolnexus_django
from tests.conftest import agent_settings
from toolnexus_django import offline

#: A project's tool with an explicit schema: an integer, a string, defaults.
TICKET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "ticket_id": {"type": "integer"},
        "reason": {"type": "string"},
        "priority": {"type": "integer", "default": 3},
        "notify": {"type": "boolean", "default": True},
    },
    "required": ["ticket_id", "reason"],
    "additionalProperties": False,
}


@toolnexus.tool(input_schema=TICKET_SCHEMA)
def close_ticket(ticket_id: int, reason: str, priority: int = 3, notify: bool = True) -> str:
    """Close a support ticket."""
    return f"Closed ticket {ticket_id} ({reason}), priority {priority}, notify {notify}."


@toolnexus.tool
def add(a: int, b: int) -> str:
    """Add two numbers."""
    return str(a + b)


def run(prompt: str, *tools: Any, rules: tuple[offline.Rule, ...] = ()) -> Any:
    async def go() -> Any:
        toolkit = await toolnexus.create_toolkit(extra_tools=list(tools), builtins=False)
        return await offline.client(rules=rules).run(prompt, toolkit)

    return asyncio.run(go())


def calls(result: Any) -> list[tuple[str, dict[str, Any]]]:
    return [(call["name"], call["args"]) for call in result.tool_calls]


def test_a_named_tool_is_called_with_numbers_quoted_text_and_defaults() -> None:
    result = run('Close ticket 7 "a duplicate of 5"', close_ticket)
    args = {"ticket_id": 7, "reason": "a duplicate of 5", "priority": 3, "notify": True}
    assert calls(result) == [("close_ticket", args)]


def test_after_a_tool_result_it_answers_plainly_with_it() -> None:
    result = run("add 2 and 3", add)
    assert calls(result) == [("add", {"a": 2, "b": 3})]
    assert result.text == "Done. 5"


@pytest.mark.parametrize(
    "prompt", ["close_ticket 7 'spam'", "Close Ticket 7 'spam'", "please CLOSE  TICKET 7 'spam'"]
)
def test_a_tool_is_named_by_its_name_or_with_spaces_for_underscores_in_any_case(
    prompt: str,
) -> None:
    assert calls(run(prompt, close_ticket))[0][1]["ticket_id"] == 7


def test_name_value_pairs_come_before_numbers_and_quotes_in_order() -> None:
    result = run("close_ticket 12 reason: spam priority=1 notify=no 'ignored'", close_ticket)
    args = {"reason": "spam", "priority": 1, "notify": False, "ticket_id": 12}
    assert calls(result) == [("close_ticket", args)]


def test_numbers_and_quotes_fill_their_parameters_in_order() -> None:
    result = run("close ticket 8 5 'first' 'second'", close_ticket)
    args = {"ticket_id": 8, "reason": "first", "priority": 5, "notify": True}
    assert calls(result) == [("close_ticket", args)]


def test_a_missing_required_argument_is_named_and_nothing_is_called() -> None:
    result = run("close ticket 7", close_ticket)
    assert result.tool_calls == []
    assert result.text.startswith("I cannot call close_ticket: I found no reason in your message")


def test_a_value_the_parameter_cannot_take_is_refused_and_nothing_is_called() -> None:
    result = run("close ticket 7.5 'spam'", close_ticket)
    assert result.tool_calls == []
    assert result.text == "I cannot call close_ticket: ticket_id must be a whole number, not '7.5'."


def test_a_tool_the_run_does_not_offer_is_never_called() -> None:
    """close_ticket exists but is not in this run's toolkit (as for a person
    who lacks its permission): named, it is refused; in words, nothing matches."""
    refused = run("close_ticket 7 'spam'", add)
    assert refused.tool_calls == []
    assert (
        refused.text
        == offline.not_offered("close_ticket")
        == (
            "I cannot call close_ticket: this run does not offer it "
            "(there is no such tool, or you may not use it)."
        )
    )
    assert run("close ticket 7 'spam'", add).text.startswith("Summary (")


def test_anything_else_gets_a_short_deterministic_echo() -> None:
    prompt = (
        "Summarise: Django is a high-level Python web framework that encourages rapid clean work"
    )
    first, again = run(prompt, close_ticket), run(prompt, close_ticket)
    assert first.tool_calls == []
    assert (
        first.text
        == again.text
        == (
            "Summary (13 words): Summarise: Django is a high-level Python web framework "
            "that encourages rapid clean ..."
        )
    )


def test_the_tool_named_first_is_called_the_longest_name_at_one_place() -> None:
    @toolnexus.tool
    def close(ticket_id: int) -> str:
        """Close something."""
        return "closed"

    assert calls(run("close ticket 4 'x'", close, close_ticket))[0][0] == "close_ticket"
    assert calls(run("add 1 2, then close ticket 4 'x'", add, close_ticket))[0][0] == "add"


def test_rules_answer_first_and_none_leaves_the_turn_to_the_next() -> None:
    seen: list[offline.Prompt] = []

    def watch(prompt: offline.Prompt) -> None:
        seen.append(prompt)
        return None

    def taxi(prompt: offline.Prompt) -> dict[str, Any] | None:
        if "taxi" in prompt.text:
            return {"tool_calls": [{"name": "add", "arguments": {"a": 40, "b": 2}}]}
        return None

    result = run("a taxi, 7 'spam'", add, rules=(watch, taxi))
    assert calls(result) == [("add", {"a": 40, "b": 2})]
    assert result.text == "Done. 42"
    assert seen[0].text == "a taxi, 7 'spam'" and set(seen[0].offered) == {"add"}
    assert len(seen) == 1  # rules see user turns only: the tool's result is answered "Done."
    assert calls(run("add 1 2", add, rules=(watch, taxi))) == [("add", {"a": 1, "b": 2})]


def test_a_rules_call_of_a_tool_not_offered_is_answered_as_not_offered() -> None:
    def eager(prompt: offline.Prompt) -> dict[str, Any]:
        return {"tool_calls": [{"name": "close_ticket", "arguments": {"ticket_id": 1}}]}

    result = run("anything", add, rules=(eager,))
    assert result.tool_calls == []
    assert result.text == offline.not_offered("close_ticket")


def streamed(prompt: str, words_per_second: float | None = None) -> list[str]:
    async def go() -> list[dict[str, Any]]:
        toolkit = await toolnexus.create_toolkit(extra_tools=[add], builtins=False)
        client = offline.client(words_per_second=words_per_second)
        return [event async for event in client.stream(prompt, toolkit)]

    return [e["delta"] for e in asyncio.run(go()) if e["type"] == "text"]


def test_a_streamed_answer_comes_in_word_chunks_at_once_by_default() -> None:
    started = time.monotonic()
    assert streamed("add 2 and 3") == ["Done. ", "5"]
    assert streamed("one two three") == ["Summary ", "(3 ", "words): ", "one ", "two ", "three"]
    assert time.monotonic() - started < 2


def test_a_streamed_answer_comes_at_the_pace_asked() -> None:
    started = time.monotonic()
    assert len(streamed("one two three", words_per_second=50)) == 6
    assert time.monotonic() - started >= 0.1  # five pauses of 1/50 s


# -- a project selects it ---------------------------------------------------------------


@toolnexus_django.tool
def reopen_ticket(ticket_id: int, note: str) -> str:
    """Reopen a support ticket (a project's tool)."""
    return f"Reopened ticket {ticket_id}: {note}."


@toolnexus_django.tool(permission="auth.delete_user")
def delete_account(username: str) -> str:
    """Delete an account (only for people who may delete users)."""
    raise AssertionError("never offered to an anonymous caller")


def sent(client: Client, text: str) -> dict[str, Any]:
    """A v0.3 ``message/send`` to the endpoint, in this process: it blocks to the run's end."""
    message = {"kind": "message", "messageId": str(uuid.uuid4()), "role": "user",
               "parts": [{"kind": "text", "text": text}]}  # fmt: skip
    body = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": message}}
    reply = client.post("/agent/", json.dumps(body), content_type="application/json")
    assert reply.status_code == 200, reply.content[:500]
    result: dict[str, Any] = reply.json()["result"]
    return result


@pytest.mark.django_db(transaction=True)
def test_a_project_selecting_it_gets_its_own_tools_called_by_a_task(
    settings: Any, client: Client
) -> None:
    tools = [f"{__name__}.reopen_ticket", f"{__name__}.delete_account"]
    settings.TOOLNEXUS = agent_settings(
        client="toolnexus_django.offline.client", TOOLKIT={"builtins": False, "tools": tools}
    )
    task = sent(client, "Reopen ticket 31 'the fix did not hold'")
    assert task["status"]["state"] == "completed"
    assert task["artifacts"][0]["parts"][0]["text"] == (
        "Done. Reopened ticket 31: the fix did not hold."
    )

    refused = sent(client, "delete_account 'alice'")  # anonymous: no permission, not offered
    assert refused["status"]["state"] == "completed"
    assert refused["artifacts"][0]["parts"][0]["text"] == offline.not_offered("delete_account")
