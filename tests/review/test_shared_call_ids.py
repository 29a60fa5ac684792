"""A stored turn whose tool calls share an id (issue 29, item 6).

A model turn ``[my_expenses(id X), pay_supplier(id X)]`` halted on
pay_supplier's four-eyes Request, yet the Task recorded the halt as
``my_expenses`` (the halt was found by id, and the first call with it won):
one reviewer "approved" the payment, and the answer went to my_expenses; with
a requester-answerable tool behind the shared id the requester's answers
went round for ever (the wrong tool resumed, then the asking one asked anew).

Such answers are refused at read now (tests/fulfilment/test_model_answer_bounds.py);
a Task stored before, with the halt recorded that way, must still resume the
call that asked and be reviewed by that call's rules. The Tasks are written
through the lifecycle into the store, their halt rewritten as the old reading
recorded it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from toolnexus import Answer

from tests import tools
from tests.admin.test_review_admin import staff
from tests.fakes import FakeLLM, Text
from tests.utils import private_of, task_in
from toolnexus_django import lifecycle
from toolnexus_django.agent.transcript import find_halt, turns, with_arguments
from toolnexus_django.lifecycle.requests import REQUESTER, answerers_of
from toolnexus_django.review import answer_task
from toolnexus_django.review.reviewers import review_state
from toolnexus_django.stores import get_task_store
from toolnexus_django.testing import answer

REVIEW = "admin:toolnexus_django_awaitinghumantask_review"
LOOKUP = {"code": "A1"}
PAYMENT = {"supplier": "ACME", "amount": 120.0}


def shared_transcript(style: str, tool: str, arguments: dict[str, Any]) -> list[dict[str, Any]]:
    """``[lookup(X), tool(X)]``: lookup answered, ``tool`` halted (both id X)."""
    if style == "anthropic":
        uses = [("lookup", LOOKUP), (tool, arguments)]
        return [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "X", "name": n, "input": a} for n, a in uses
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "X", "content": "looked up A1"},
                    {"type": "tool_result", "tool_use_id": "X", "content": "?", "is_error": True},
                ],
            },
        ]
    calls = [("lookup", LOOKUP), (tool, arguments)]
    return [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "X", "function": {"name": n, "arguments": json.dumps(a)}} for n, a in calls
            ],
        },
        {"role": "tool", "tool_call_id": "X", "content": "looked up A1"},
        {"role": "tool", "tool_call_id": "X", "content": "?"},
    ]


@pytest.mark.parametrize("style", ["openai", "anthropic"])
def test_the_halted_call_is_found_by_its_place_not_its_id(style: str) -> None:
    transcript = shared_transcript(style, "pay_supplier", PAYMENT)
    halt = find_halt(transcript, style)
    assert (halt.halted.name, halt.halted.arguments, halt.later) == ("pay_supplier", PAYMENT, [])
    # An edit rewrites that call, never the first one with its id.
    edited = with_arguments(transcript, style, halt, {"amount": 1})
    assert find_halt(edited, style).halted.arguments == {"amount": 1}
    assert turns(edited, style)[1].calls[0].arguments == LOOKUP
    assert find_halt(transcript, style).halted.arguments == PAYMENT  # the original is untouched


def stored_as_before(tool: str, request: dict[str, Any], style: str = "openai", **kw: Any) -> str:
    """A waiting Task on ``tool``'s Request behind the shared id, its halt
    recorded as the reading by id did: the first call, ``lookup``."""
    arguments = PAYMENT if tool == "pay_supplier" else {"question": "Which day?"}
    task = task_in(
        "input-required",
        request=request,
        transcript=shared_transcript(style, tool, arguments),
        style=style,
        **kw,
    )
    store = get_task_store()
    private = lifecycle.read(task)
    lookup_schema = {"type": "object", "properties": {"code": {"type": "string"}}}
    private.halt = {"tool": "lookup", "arguments": LOOKUP, "source": "native",
                    "schema": lookup_schema, "skill": ""}  # fmt: skip
    lifecycle.write(task, private)
    store.save(task)
    return str(task["id"])


PAY_REQUEST = {"id": "pay-1", "kind": "approval", "prompt": "Pay 120.00 to ACME?", "data": None}


@pytest.mark.django_db
@pytest.mark.parametrize("style", ["openai", "anthropic"])
def test_four_eyes_counts_the_halted_tool(style: str, django_user_model: Any) -> None:
    """The settings ask two approvals of pay_supplier (testproject's REVIEW)."""
    task_id = stored_as_before("pay_supplier", PAY_REQUEST, style)
    assert review_state(get_task_store().get(task_id))["needed"] == 2
    rita = staff(django_user_model, "rita", "answer_task")
    sam = staff(django_user_model, "sam", "answer_task")
    said = Answer(id="pay-1", ok=True)
    answer_task(task_id, said, decision="approve", user=rita, actor="rita")
    assert lifecycle.phase_of(get_task_store().get(task_id)) == lifecycle.states.WAITING
    answer_task(task_id, said, decision="approve", user=sam, actor="sam")
    assert lifecycle.phase_of(get_task_store().get(task_id)) == lifecycle.states.ANSWERED
    assert private_of(task_id).approved_by == ["rita", "sam"]


@pytest.mark.django_db
def test_the_review_page_offers_no_edit_of_another_calls_recorded_arguments(
    settings: Any, django_user_model: Any
) -> None:
    """The halt recorded lookup's schema and arguments: editing them would
    rewrite the payment with lookup's fields."""
    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "REVIEW": {"APPROVALS": {}}}
    task_id = stored_as_before("pay_supplier", PAY_REQUEST)
    client = Client()
    client.force_login(staff(django_user_model, "rita", "answer_task"))
    page = client.get(reverse(REVIEW, args=[task_id]))
    assert page.status_code == 200
    assert page.context["call"].name == "pay_supplier"
    assert "edit" not in page.context["forms"] and "approve" in page.context["forms"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("style", ["openai", "anthropic"])
def test_the_requesters_answer_resumes_the_tool_that_asked(
    configure: Any, request: pytest.FixtureRequest, style: str
) -> None:
    fake: FakeLLM = request.getfixturevalue(
        "fake_anthropic" if style == "anthropic" else "fake_llm"
    )
    configure(fake, TOOLKIT=tools.toolkit_setting())
    tools.CALLS.clear()
    fake.push(Text("Booked for Tuesday."))
    asked = {"id": "ask-1", "kind": "input", "prompt": "Which day?", "data": None}
    task_id = stored_as_before("ask_requester", asked, style)
    assert REQUESTER in answerers_of(private_of(task_id))
    done = answer(task_id, role=REQUESTER, data={"output": "Tuesday"})
    # Before: lookup ran with the answer, then ask_requester asked again.
    assert (done.state, done.text) == ("completed", "Booked for Tuesday.")
    assert tools.CALLS == []  # lookup is not run again
    sent = json.dumps(fake.requests[-1].body)
    assert "The requester says: Tuesday" in sent
