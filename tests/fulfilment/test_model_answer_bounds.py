"""What a model sends is bounded where it is read (issue 29, items 4, 6 and 7).

Three answers a model sent broke what came after:

- a tool argument nested 600 lists deep made a Task nobody could answer or
  cancel (tests/lifecycle/test_deep_tasks.py has the stored side);
- a 401-digit integer failed the run with "internal error" (OverflowError in
  the approval prompt's ``{amount:.2f}``);
- two calls of one turn sharing an id made the review point at the wrong
  call: a four-eyes payment approved by one reviewer, the answer resumed
  in the other tool.

The default transport now refuses such an answer in words (the failed Task's
status message), both wire shapes. Past the read checks — a project's own
``http_transport`` — the approval prompt still renders, and a turn sharing
ids still halts on the call that asked. The model is the fake over real HTTP;
runs are made on the test's thread (``toolnexus_django.testing``).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import toolnexus

from tests import tools
from tests.admin.test_review_admin import staff
from tests.fakes import FakeLLM, Text, ToolCall
from tests.utils import private_of
from toolnexus_django.agent.modelanswer import ModelAnswerUnreadable, parse_answer
from toolnexus_django.testing import answer, run_task
from toolnexus_django.tools import Approval
from toolnexus_django.tools.approval import MAX_FIELD_CHARS, MAX_PROMPT_CHARS, format_prompt

UNREADABLE = "The model's answer could not be read"
TOO_DEEP = f"{UNREADABLE} (a tool call's arguments are nested deeper than 32 levels)"
TOO_LONG = f"{UNREADABLE} (a number in it has more than 20 digits)"
HUGE = 10**400  # 401 digits


def nested(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


# -- the checks, as the transport applies them -----------------------------------------------


def openai_answer(*calls: tuple[str, Any, Any]) -> bytes:
    """An openai answer calling each ``(id, name, arguments)``; arguments as
    the JSON text openai sends, or as given when already text."""
    tool_calls = [
        {
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": a if isinstance(a, str) else json.dumps(a)},
        }
        for call_id, name, a in calls
    ]
    message = {"role": "assistant", "content": None, "tool_calls": tool_calls}
    return json.dumps({"choices": [{"index": 0, "message": message}]}).encode()


def anthropic_answer(*calls: tuple[str, Any, Any]) -> bytes:
    blocks = [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in calls]
    return json.dumps({"content": blocks}).encode()


def refused_for(body: bytes, style: str) -> str | None:
    try:
        parse_answer(body, style)
    except ModelAnswerUnreadable as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("style", ["openai", "anthropic"])
def test_the_bounds_on_a_models_answer(style: str) -> None:
    made = anthropic_answer if style == "anthropic" else openai_answer
    fine = {"amount": nested(31), "count": -(10**19), "price": 0.1234567890123456789012345}
    assert refused_for(made(("a", "f", fine), ("b", "f", {})), style) is None
    assert refused_for(made(("a", "f", {"amount": nested(32)})), style) == TOO_DEEP
    assert refused_for(made(("a", "f", {"amount": nested(600)})), style) == TOO_DEEP
    assert refused_for(made(("a", "f", {"amount": 10**20})), style) == TOO_LONG
    assert refused_for(made(("a", "f", {"amount": HUGE})), style) == TOO_LONG
    shared = made(("X", "my_expenses", {}), ("X", "pay_supplier", {"amount": 1}))
    assert refused_for(shared, style) == f"{UNREADABLE} (two tool calls share the id 'X')"
    # Numbers that are not JSON's: refused wherever they are.
    for number in (b"1e400", b"NaN", b"-Infinity"):
        body = made(("a", "f", {"x": "number"})).replace(b'\\"number\\"', number)
        body = body.replace(b'"number"', number)
        assert refused_for(body, style) == (
            f"{UNREADABLE} (a number in it is NaN, Infinity or too large for a double)"
        ), body
    # Deeper than Python parses at all: refused in words, not a RecursionError
    # (an answer of the right shape, so the words are the depth's whether this
    # process's recursion limit lets json parse it or not).
    shape = b'"choices": [{"message": {"content": "x"}}]' if style == "openai" else b'"content": []'
    body = b"{" + shape + b', "extra": ' + b"[" * 5000 + b"]" * 5000 + b"}"
    assert refused_for(body, style) == f"{UNREADABLE} (it is nested deeper than 64 levels)"


def test_openai_arguments_are_checked_as_toolnexus_parses_them() -> None:
    """openai sends arguments as JSON text, which toolnexus parses itself."""
    deep_text = "[" * 5000 + "]" * 5000  # past json.loads on this stack
    assert refused_for(openai_answer(("a", "f", deep_text)), "openai") == TOO_DEEP
    digits = '{"amount": ' + "9" * 401 + "}"
    assert refused_for(openai_answer(("a", "f", digits)), "openai") == TOO_LONG
    # Text that is not JSON: toolnexus calls the tool with {} (not our bound).
    assert refused_for(openai_answer(("a", "f", "{not json")), "openai") is None
    long_id = "x" * 100
    said = refused_for(openai_answer((long_id, "f", {}), (long_id, "g", {})), "openai")
    assert said == f"{UNREADABLE} (two tool calls share the id '{'x' * 39}…')"


# -- a run whose model sends them --------------------------------------------------------------


@pytest.fixture
def toolkit(settings: Any) -> None:
    """The test tools (lookup, two_step record their calls) and the example's."""
    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "TOOLKIT": tools.toolkit_setting()}
    tools.CALLS.clear()


def fake_for(style: str, request: pytest.FixtureRequest) -> FakeLLM:
    return request.getfixturevalue("fake_anthropic" if style == "anthropic" else "fake_llm")


CASES = {
    "600-deep": (ToolCall("file_expense", {"amount": nested(600), "description": "t"}), TOO_DEEP),
    "401-digits": (ToolCall("file_expense", {"amount": HUGE, "description": "taxi"}), TOO_LONG),
    "shared-id": (
        ToolCall.many([("lookup", {"code": "A1"}, "X"), ("two_step", {"topic": "pay"}, "X")]),
        f"{UNREADABLE} (two tool calls share the id 'X')",
    ),
}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("style", ["openai", "anthropic"])
@pytest.mark.parametrize("case", list(CASES))
def test_the_run_fails_in_words_and_no_tool_runs(
    configure: Any, toolkit: None, request: pytest.FixtureRequest, style: str, case: str
) -> None:
    fake = fake_for(style, request)
    configure(fake, TOOLKIT=tools.toolkit_setting())
    reply, words = CASES[case]
    fake.push(reply)
    failed = run_task(f"{case}: go")
    assert (failed.state, failed.text) == ("failed", words)
    assert "internal error" not in failed.text
    assert tools.CALLS == []  # refused before toolnexus ran any call of the turn


# -- past the read checks (a project's own transport) ------------------------------------------


class OwnTransport(toolnexus.UrllibTransport):
    """A project's own transport (toolnexus's exact one is replaced by the
    bounded default): the model's answer reaches toolnexus unchecked."""


def unchecked(configure: Any, fake: FakeLLM) -> None:
    client = configure(fake, TOOLKIT=tools.toolkit_setting())["CLIENT"]
    configure(
        fake, TOOLKIT=tools.toolkit_setting(), client={**client, "http_transport": OwnTransport()}
    )


@pytest.mark.django_db(transaction=True)
def test_a_401_digit_amount_still_asks_with_a_bounded_prompt(
    configure: Any, toolkit: None, fake_llm: FakeLLM
) -> None:
    unchecked(configure, fake_llm)
    fake_llm.push(ToolCall("file_expense", {"amount": HUGE, "description": "taxi"}))
    waiting = run_task("huge: file it")
    assert waiting.state == "input-required", waiting.text
    shown = str(HUGE)[: MAX_FIELD_CHARS - 1] + "…"
    assert waiting.text == f"Approve an expense claim of {shown} for 'taxi'?"


@pytest.mark.django_db(transaction=True)
def test_calls_sharing_an_id_halt_on_the_call_that_asked(
    configure: Any, toolkit: None, fake_llm: FakeLLM, django_user_model: Any
) -> None:
    """[lookup(X), file_expense(X)]: the Request is file_expense's, so its
    approval runs file_expense — never lookup again, then file_expense
    asking anew (the loop a requester's answers went round for ever)."""
    unchecked(configure, fake_llm)
    expense = {"amount": 12.5, "description": "taxi"}
    fake_llm.push(
        ToolCall.many([("lookup", {"code": "A1"}, "X"), ("file_expense", expense, "X")]),
        Text("Filed."),
    )
    waiting = run_task("shared: file it")
    assert waiting.state == "input-required"
    assert private_of(waiting.task_id).halt["tool"] == "file_expense"  # type: ignore[index]
    done = answer(waiting, as_user=staff(django_user_model, "rita", "answer_task"))
    assert (done.state, done.text) == ("completed", "Filed.")
    assert [name for name, _, _ in tools.CALLS] == ["lookup"]  # once, in the first turn
    resumed = [m for m in fake_llm.requests[-1].body["messages"] if m["role"] == "tool"]
    assert resumed[-1]["content"].startswith("Filed expense claim EXP-")


# -- the approval prompt -----------------------------------------------------------------------


#: ``{amount:.2f}`` of what a model may send, and what the prompt shows.
SHOWN = [
    (HUGE, str(HUGE)[: MAX_FIELD_CHARS - 1] + "…"),  # OverflowError before
    ("lots", "lots"),
    (None, "None"),
    ({"value": {"cents": [1250]}}, '{"value": {"cents": [1250]}}'),
    ("x" * 10_000, "x" * (MAX_FIELD_CHARS - 1) + "…"),
]


def test_the_approval_prompt_renders_whatever_the_model_sent() -> None:
    spec = Approval.of("Pay {amount:.2f} to {supplier!r}?")
    for amount, shown in SHOWN:
        made = spec.request("pay", {"amount": amount, "supplier": "ACME"})
        request = toolnexus.pending_of(made)
        assert request is not None and request.prompt == f"Pay {shown} to 'ACME'?", amount


def test_the_approval_prompt_is_bounded() -> None:
    deep = format_prompt("Pay {amount!r} ({amount:.2f})?", {"amount": nested(5000)})
    assert deep.startswith("Pay [[[[") and len(deep) <= 2 * MAX_FIELD_CHARS + 10
    # A width taken from the model's own arguments is not a gigabyte of padding.
    assert format_prompt("Pay {amount:>{width}}?", {"amount": 5, "width": 10**9}) == "Pay 5?"
    many = format_prompt("{a} " * 50, {"a": "y" * 1000})
    assert len(many) == MAX_PROMPT_CHARS and many.endswith("…")
    assert format_prompt("Pay {amount:.2f}?", ["not", "a", "mapping"]) == "Pay ?"
