"""A stored Task, whatever it holds, can be answered and canceled (issue 29, item 4).

A tool argument nested 600 lists deep left a Task nobody could answer or
cancel: every move starts from a deep copy of the Task, and
``copy.deepcopy`` overflowed the stack (approve, decline, reply and the bulk
actions HTTP 500, CancelTask -32603). New answers are refused at read
(tests/fulfilment/test_model_answer_bounds.py); a Task stored before that, or
by another path, must still move. The Tasks here are written straight through
the lifecycle's own verbs into the store; the admin is driven with Django's
test client over its real views, the wire with JSON-RPC posts to the endpoint;
an approved one resumes (the fake model over HTTP) to its end.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from tests.admin.test_review_admin import staff
from tests.fakes import Text
from tests.utils import private_of, task_in
from toolnexus_django import lifecycle
from toolnexus_django.agent.transcript import find_halt, pretty_json
from toolnexus_django.jsontree import CUT, copy_json, depth, dumps_shown, shallow_view
from toolnexus_django.stores import DjangoTaskStore, InMemoryTaskStore, get_task_store
from toolnexus_django.stores.base import state_of
from toolnexus_django.testing import answer

QUEUE = "admin:toolnexus_django_awaitinghumantask_changelist"
REVIEW = "admin:toolnexus_django_awaitinghumantask_review"
RECORD = "admin:toolnexus_django_taskrecord_change"

#: Deep enough that copy.deepcopy overflowed (300 did not).
DEEP = 600


def nested(levels: int) -> Any:
    value: Any = "bottom"
    for _ in range(levels):
        value = [value]
    return value


def deep_transcript(style: str, levels: int = DEEP) -> list[dict[str, Any]]:
    """A run stopped on file_expense whose ``amount`` is ``levels`` lists deep."""
    arguments = {"amount": nested(levels), "description": "taxi"}
    if style == "anthropic":
        return [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "t1", "name": "file_expense", "input": arguments}
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "?"}],
            },
        ]
    return [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "c1",
                    "function": {"name": "file_expense", "arguments": json.dumps(arguments)},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "?"},
    ]


def deep_waiting(style: str = "openai", store: Any = None, levels: int = DEEP) -> str:
    """A waiting Task whose transcript and Request data nest ``levels`` deep."""
    request = {
        "id": f"approve-deep-{style}",
        "kind": "approval",
        "prompt": "Approve a deep claim?",
        "data": {"amount": nested(levels)},
    }
    task = task_in(
        "input-required",
        request=request,
        transcript=deep_transcript(style, levels),
        style=style,
        store=store if store is not None else DjangoTaskStore(),
    )
    return str(task["id"])


def request_id(task_id: str, store: Any = None) -> str:
    return str(private_of(task_id, store).pending["id"])  # type: ignore[index]


def phase(task_id: str, store: Any = None) -> str:
    return lifecycle.phase_of((store if store is not None else get_task_store()).get(task_id))


# -- the admin: one Task, and in bulk ---------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("style", ["openai", "anthropic"])
@pytest.mark.parametrize(
    "action, fields",
    [
        ("decline", {"decline-reason": "declined"}),
        ("approve", {}),
        ("reply", {"reply-data": '{"note": "fine"}'}),
    ],
)
def test_a_deep_task_is_answered_on_its_review_page(
    admin_client: Client, style: str, action: str, fields: dict[str, str]
) -> None:
    task_id = deep_waiting(style)
    page = admin_client.get(reverse(REVIEW, args=[task_id]))
    assert page.status_code == 200
    assert page.context["forms"].keys() >= {"approve", "decline", "reply"}
    posted = admin_client.post(
        reverse(REVIEW, args=[task_id]),
        {"_answer": action, "request_id": request_id(task_id), **fields},
    )
    assert posted.status_code == 302, posted.status_code
    assert phase(task_id) == lifecycle.states.ANSWERED
    # Its page afterwards: what the reviewer saw, read-only.
    assert admin_client.get(reverse(REVIEW, args=[task_id])).status_code == 200
    assert admin_client.get(reverse(RECORD, args=[task_id])).status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize("action", ["approve_selected", "decline_selected"])
def test_deep_tasks_are_answered_in_bulk(admin_client: Client, action: str) -> None:
    waiting = [deep_waiting("openai"), deep_waiting("anthropic")]
    queue = admin_client.get(reverse(QUEUE))
    assert queue.status_code == 200 and all(t in queue.content.decode() for t in waiting)
    confirm = admin_client.post(reverse(QUEUE), {"action": action, "_selected_action": waiting})
    assert confirm.status_code == 200  # the confirmation page lists them
    posted = admin_client.post(
        reverse(QUEUE), {"action": action, "_selected_action": waiting, "_confirm": "1"}
    )
    assert posted.status_code == 302, posted.status_code
    assert [phase(t) for t in waiting] == [lifecycle.states.ANSWERED] * 2


@pytest.mark.django_db
def test_arguments_text_deeper_than_python_parses_is_shown_and_answered(
    admin_client: Client,
) -> None:
    """An openai transcript keeps a call's arguments as text, which any
    store holds at any depth: 5000 levels, past what ``json.loads`` parses
    on this stack. The page shows it (as the text it is), and it is answered."""
    transcript = deep_transcript("openai")
    text = "[" * 5000 + "]" * 5000
    transcript[1]["tool_calls"][0]["function"]["arguments"] = text
    task = task_in("input-required", transcript=transcript, store=DjangoTaskStore())
    task_id = str(task["id"])
    assert find_halt(transcript, "openai").halted.args == text  # text, not a RecursionError
    page = admin_client.get(reverse(REVIEW, args=[task_id]))
    assert page.status_code == 200
    assert text in page.content.decode()
    posted = admin_client.post(
        reverse(REVIEW, args=[task_id]),
        {"_answer": "decline", "request_id": request_id(task_id), "decline-reason": "declined"},
    )
    assert posted.status_code == 302
    assert phase(task_id) == lifecycle.states.ANSWERED


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("style", ["openai", "anthropic"])
def test_an_approved_deep_task_resumes_to_its_end(
    configure: Any, request: pytest.FixtureRequest, django_user_model: Any, style: str
) -> None:
    fake = request.getfixturevalue("fake_anthropic" if style == "anthropic" else "fake_llm")
    configure(fake)
    fake.push(Text("Filed."))
    task_id = deep_waiting(style)
    done = answer(task_id, as_user=staff(django_user_model, "rita", "answer_task"))
    assert (done.state, done.text) == ("completed", "Filed.")


# -- the wire: CancelTask ---------------------------------------------------------------------


def rpc(client: Client, method: str, params: dict[str, Any], **headers: str) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    reply = client.post("/agent/", json.dumps(body), content_type="application/json", **headers)
    assert reply.status_code == 200, reply.status_code
    return dict(reply.json())


@pytest.mark.django_db
@pytest.mark.parametrize("style", ["openai", "anthropic"])
def test_a_deep_task_is_canceled_over_the_wire(client: Client, style: str) -> None:
    v1 = deep_waiting(style)
    canceled = rpc(client, "CancelTask", {"id": v1}, HTTP_A2A_VERSION="1.0")
    assert canceled.get("result", {}).get("status", {}).get("state") == "TASK_STATE_CANCELED", (
        canceled
    )
    v03 = deep_waiting(style)
    canceled = rpc(client, "tasks/cancel", {"id": v03})
    assert canceled.get("result", {}).get("status", {}).get("state") == "canceled", canceled
    assert {state_of(get_task_store().get(t)) for t in (v1, v03)} == {"canceled"}


class NeverEmpty(InMemoryTaskStore):
    """tests.utils reads ``store or get_task_store()``: an empty one is falsy."""

    def __bool__(self) -> bool:
        return True


@pytest.mark.django_db  # push configs and the resume's enqueue are in the database
def test_a_deep_task_in_the_memory_store_is_answered_and_canceled() -> None:
    """The memory store copies a Task in and out: without recursion too."""
    from toolnexus import Answer

    from toolnexus_django.review import answer_task

    store = NeverEmpty()
    answered, canceled = deep_waiting(store=store), deep_waiting("anthropic", store=store)
    answer_task(
        answered, Answer(id=request_id(answered, store), ok=False, reason="declined"),
        decision="decline", actor="rita", store=store,
    )  # fmt: skip
    assert phase(answered, store) == lifecycle.states.ANSWERED
    moved = lifecycle.cancel(store, store.get(canceled), actor=None, via="a2a")
    assert moved is not None and state_of(store.get(canceled)) == "canceled"


# -- the walker itself ------------------------------------------------------------------------


def test_json_values_of_any_depth_are_copied_measured_and_shown() -> None:
    deep = {"a": nested(100_000), "b": [1, {"c": "d"}]}
    copied = copy_json(deep)
    assert copied is not deep and copied["b"] is not deep["b"]
    assert copied["b"] == [1, {"c": "d"}]
    assert depth(deep, 64) == 65  # counted no further than one past the limit
    assert depth({"a": [[1]]}, 64) == 3 and depth("x", 64) == 0
    shown = dumps_shown(deep)
    assert shown.startswith('{"a": [[[') and len(shown) < 200
    assert shallow_view([[[1]], 2], 2) == [[CUT], 2]
    assert pretty_json(nested(5_000)).count("[") == 32
    # Shared and cyclic parts stay so, as copy.deepcopy keeps them.
    shared: list[Any] = [1]
    loop: list[Any] = [shared, shared]
    loop.append(loop)
    twin = copy_json(loop)
    assert twin[0] is twin[1] and twin[2] is twin and twin[0] is not shared
