"""Human review in the admin, end to end: a run suspends for real (the fake
LLM over HTTP, the live server, the background worker), a reviewer answers it
through the admin views with a real Django test client, and the run resumes."""

from __future__ import annotations

import html
import threading
import uuid
from typing import Any

import pytest
import toolnexus
from django.contrib.auth.models import Permission
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from toolnexus import Request, ToolContext, ToolResult

from tests.conftest import RpcClient
from tests.fakes import FakeLLM, Text, ToolCall
from tests.utils import decisions_of, pending_id, suspend, task_in
from toolnexus_django.models import TaskRecord
from toolnexus_django.stores import DjangoTaskStore

pytestmark = pytest.mark.django_db(transaction=True)

QUEUE = "admin:toolnexus_django_awaitinghumantask_changelist"
REVIEW = "admin:toolnexus_django_awaitinghumantask_review"
RECORD = "admin:toolnexus_django_taskrecord_change"
PROMPT = "Approve an expense claim of 12.50 for 'taxi'?"
LOGIN_URL = "https://login.example.com/x?next=/a&b=1"


def _login(ctx: ToolContext | None = None) -> ToolResult | str:
    """Sign in to the example service (the person signs in out of band)."""
    answer = ctx.answer if ctx is not None else None
    if answer is None:
        return toolnexus.pending(
            kind="authorization",
            id=f"login-{uuid.uuid4()}",
            prompt="Sign in to the example service, then tell me.",
            url=LOGIN_URL,
        )
    return "signed in" if answer.ok else "the sign-in failed"


login_tool = toolnexus.tool(name="login_tool")(_login)


# -- helpers -------------------------------------------------------------------


def staff(django_user_model: Any, username: str, *perms: str) -> Any:
    user = django_user_model.objects.create_user(username, password="pw", is_staff=True)
    for perm in perms:
        user.user_permissions.add(Permission.objects.get(codename=perm))
    return user


@pytest.fixture
def reviewer(django_user_model: Any) -> Any:
    # The dedicated permission alone is enough to see and answer the queue.
    return staff(django_user_model, "rita", "answer_task")


@pytest.fixture
def reviewer_client(reviewer: Any) -> Client:
    client = Client()
    client.force_login(reviewer)
    return client


@pytest.fixture
def viewer_client(django_user_model: Any) -> Client:
    client = Client()
    client.force_login(staff(django_user_model, "vic", "view_awaitinghumantask"))
    return client


def answer(client: Client, task_id: str, action: str, request_id: str | None = None, **fields: Any):
    data = {"_answer": action, "request_id": request_id or pending_id(task_id)}
    data.update({f"{action}-{name}": value for name, value in fields.items()})
    return client.post(reverse(REVIEW, args=[task_id]), data)


def page(client: Client, url: str, *args: Any, **params: Any) -> str:
    response = client.get(reverse(url, args=args), params)
    assert response.status_code == 200, response.status_code
    return html.unescape(response.content.decode())


def flashed(response: Any) -> list[tuple[str, str]]:
    return [(m.level_tag, str(m)) for m in response.context["messages"]]


def tool_results(fake: FakeLLM, index: int) -> list[Any]:
    """The tool results (openai shape) the model received in request ``index``."""
    return [m["content"] for m in fake.requests[index].body["messages"] if m["role"] == "tool"]


def state(task_id: str) -> str:
    return TaskRecord.objects.get(pk=task_id).state


# -- the queue and the review page ------------------------------------------------


def test_the_queue_lists_a_suspended_task_with_what_it_asks(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM, reviewer_client: Client
) -> None:
    configure(fake_llm)
    task_id = suspend(rpc, fake_llm, then="Filed it.")["id"]
    done = task_in("completed", result="all done", store=DjangoTaskStore())

    index = page(reviewer_client, "admin:index")
    assert "Awaiting a human" in index  # the queue, first (test_admin_outcome.py)

    queue = page(reviewer_client, QUEUE)
    assert task_id[:10] in queue and done["id"][:10] not in queue
    assert "approval" in queue and PROMPT in queue
    assert "file_expense" in queue and '{"amount": 12.5, "description": "taxi"}' in queue
    assert "anonymous" in queue  # the endpoint is open in the test project
    assert "never" in queue  # no expiresAt

    assert task_id[:10] in page(reviewer_client, QUEUE, kind="approval")
    assert task_id[:10] not in page(reviewer_client, QUEUE, kind="authorization")
    assert task_id[:10] in page(reviewer_client, QUEUE, state="input-required")
    assert task_id[:10] not in page(reviewer_client, QUEUE, state="auth-required")
    assert task_id[:10] in page(reviewer_client, QUEUE, q="taxi")  # the prompt
    assert task_id[:10] in page(reviewer_client, QUEUE, q=task_id)
    assert task_id[:10] not in page(reviewer_client, QUEUE, q="no such words")
    assert task_id[:10] in page(reviewer_client, QUEUE, expiry="never")
    assert task_id[:10] not in page(reviewer_client, QUEUE, expiry="hour")


def test_the_review_page_shows_input_request_and_transcript(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM, reviewer_client: Client
) -> None:
    configure(fake_llm)
    task_id = suspend(rpc, fake_llm, then="Filed it.")["id"]
    body = page(reviewer_client, REVIEW, task_id)
    assert "file an expense of 12.5 for a taxi" in body  # the original request
    assert PROMPT in body and pending_id(task_id) in body
    assert '"tool": "file_expense"' in body  # Request.data without the schema
    assert '"cost_center"' in body  # the schema, collapsed
    # The transcript: system prompt collapsed, the call, the halted result.
    assert '<summary class="tnx-role">System prompt</summary>' in body
    assert "Available Skills" in body
    assert "calls <code>file_expense</code>" in body
    assert '"description": "taxi"' in body
    assert "halted here" in body
    # The three answers; the reply form is generated from data.schema.
    for action in ("approve", "decline", "reply"):
        assert f'name="_answer" value="{action}"' in body
    assert 'name="reply-cost_center"' in body and '<option value="training">' in body
    assert 'name="reply-approved_amount"' in body
    assert 'name="csrfmiddlewaretoken"' in body


def test_the_review_page_renders_an_anthropic_transcript(
    rpc: RpcClient, configure: Any, fake_anthropic: FakeLLM, reviewer_client: Client
) -> None:
    configure(fake_anthropic)
    task_id = suspend(rpc, fake_anthropic, then="Filed it.")["id"]
    body = page(reviewer_client, REVIEW, task_id)
    assert "calls <code>file_expense</code>" in body and "toolu_fake_1_0" in body
    assert "halted here" in body and "System prompt" not in body
    assert '{"amount": 12.5, "description": "taxi"}' in page(reviewer_client, QUEUE)


def test_the_queue_costs_the_same_queries_for_one_task_or_many(
    reviewer_client: Client,
) -> None:
    store = DjangoTaskStore()

    def add_waiting(n: int) -> None:
        for i in range(n):
            request = Request(id=f"r-{uuid.uuid4()}", kind="approval", prompt=f"ok {i}?")
            transcript = [
                {"role": "user", "content": f"job {i}"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "c1", "function": {"name": "t", "arguments": '{"i": 1}'}}
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": f"ok {i}?"},
            ]
            task_in(
                "input-required",
                text=f"job {i}",
                store=store,
                request=request,
                transcript=transcript,
                style="o",
            )

    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            page(reviewer_client, QUEUE)
        return len(queries)

    add_waiting(1)
    one = count()
    add_waiting(20)
    assert count() == one


# -- answering -----------------------------------------------------------------


def test_approve_resumes_the_run_and_the_tool_runs_once_with_the_answer(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM, reviewer_client: Client
) -> None:
    configure(fake_llm)
    task_id = suspend(rpc, fake_llm, then="Filed it.")["id"]
    response = answer(reviewer_client, task_id, "approve", comment="fine by me")
    assert response.status_code == 302 and response.url == reverse(QUEUE)

    done = rpc.wait(task_id, ("completed", "failed"))
    assert done["status"]["state"] == "completed"
    assert done["artifacts"][0]["parts"][0]["text"] == "Filed it."
    assert len(fake_llm.requests) == 2
    results = tool_results(fake_llm, 1)
    assert len(results) == 1 and results[0].startswith("Filed expense claim EXP-")
    assert results[0].endswith(": 12.5 under other.")  # approve carries no data

    followed = reviewer_client.get(response.url)
    assert flashed(followed)[0][0] == "success"
    body = followed.content.decode()
    assert task_id[:10] not in body[body.index('id="content"') :]  # gone from the queue...
    assert reverse(RECORD, args=[task_id]) in flashed(followed)[0][1]  # ... the message links it

    record = page(reviewer_client, RECORD, task_id)
    assert "Timeline" in record or "timeline" in record
    assert "approve" in record and "rita" in record and "fine by me" in record
    assert "input-required → working" in record


def test_decline_gives_the_model_a_declined_result(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM, reviewer_client: Client
) -> None:
    configure(fake_llm)
    task_id = suspend(rpc, fake_llm, then="Understood, not filed.")["id"]
    response = answer(
        reviewer_client, task_id, "decline", reason="declined", comment="no receipt <b>"
    )
    assert response.status_code == 302

    done = rpc.wait(task_id, ("completed", "failed"))
    assert done["artifacts"][0]["parts"][0]["text"] == "Understood, not filed."
    assert tool_results(fake_llm, 1) == [f"declined: {PROMPT}"]

    event = decisions_of(task_id)[-1]
    assert event["decision"] == "decline" and event["ok"] is False
    assert event["reason"] == "declined" and event["comment"] == "no receipt <b>"
    raw = reviewer_client.get(reverse(RECORD, args=[task_id])).content.decode()
    assert "no receipt &lt;b&gt;" in raw and "no receipt <b>" not in raw


def test_reply_with_schema_data_reaches_the_tool_exactly(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM, reviewer_client: Client
) -> None:
    configure(fake_llm)
    task_id = suspend(rpc, fake_llm, then="Filed it.")["id"]
    response = answer(
        reviewer_client, task_id, "reply", cost_center="training", approved_amount="10.5"
    )
    assert response.status_code == 302

    assert rpc.wait(task_id, ("completed", "failed"))["status"]["state"] == "completed"
    [result] = tool_results(fake_llm, 1)
    assert result.startswith("Filed expense claim EXP-") and result.endswith(
        ": 10.5 under training."
    )
    event = decisions_of(task_id)[-1]
    assert event["decision"] == "reply" and event["actor"] == "rita"
    assert event["data"] == {"cost_center": "training", "approved_amount": 10.5}
    assert event["from"] == "input-required" and event["to"] == "working"


def test_invalid_reply_data_re_renders_with_errors_and_changes_nothing(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM, reviewer_client: Client
) -> None:
    configure(fake_llm)
    task_id = suspend(rpc, fake_llm, then="Filed it.")["id"]
    response = answer(
        reviewer_client, task_id, "reply", cost_center="yachts", approved_amount="lots"
    )
    assert response.status_code == 200
    body = html.unescape(response.content.decode())
    assert "Select a valid choice" in body and "Enter a number" in body
    assert 'value="lots"' in body  # what the reviewer typed is kept

    missing = answer(reviewer_client, task_id, "reply", approved_amount="3")
    assert missing.status_code == 200 and "This field is required" in missing.content.decode()

    assert state(task_id) == "input-required"
    assert decisions_of(task_id) == []
    assert len(fake_llm.requests) == 1


def test_only_reviewers_with_the_permission_answer(
    rpc: RpcClient,
    configure: Any,
    fake_llm: FakeLLM,
    viewer_client: Client,
    django_user_model: Any,
) -> None:
    configure(fake_llm)
    task_id = suspend(rpc, fake_llm, then="Filed it.")["id"]

    # View permission: the queue and the page, but no forms.
    assert task_id[:10] in page(viewer_client, QUEUE)
    body = page(viewer_client, REVIEW, task_id)
    assert PROMPT in body and 'name="_answer"' not in body and 'class="tnx-answer"' not in body
    assert "not answer it" in body
    assert answer(viewer_client, task_id, "approve").status_code == 403

    # Staff without any permission on Tasks sees nothing.
    nobody = Client()
    nobody.force_login(staff(django_user_model, "nora"))
    assert nobody.get(reverse(QUEUE)).status_code == 403
    assert nobody.get(reverse(REVIEW, args=[task_id])).status_code == 403
    assert answer(nobody, task_id, "approve").status_code == 403

    # Not logged in: the admin login, nothing answered.
    anonymous = Client()
    assert answer(anonymous, task_id, "approve").status_code == 302
    assert state(task_id) == "input-required" and len(fake_llm.requests) == 1


def test_answers_need_a_csrf_token(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM, reviewer: Any
) -> None:
    configure(fake_llm)
    task_id = suspend(rpc, fake_llm, then="Filed it.")["id"]
    client = Client(enforce_csrf_checks=True)
    client.force_login(reviewer)
    assert answer(client, task_id, "approve").status_code == 403
    assert state(task_id) == "input-required"


def test_a_second_answer_is_refused_as_already_answered(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM, reviewer_client: Client
) -> None:
    configure(fake_llm)
    task_id = suspend(rpc, fake_llm, then="Filed it.")["id"]
    request_id = pending_id(task_id)
    first = answer(reviewer_client, task_id, "approve")
    assert first.status_code == 302
    assert flashed(reviewer_client.get(first.url))[0][0] == "success"
    rpc.wait(task_id, ("completed", "failed"))

    again = answer(reviewer_client, task_id, "decline", request_id, reason="declined")
    assert again.status_code == 302 and again.url == reverse(RECORD, args=[task_id])
    [(level, text)] = flashed(reviewer_client.get(again.url))
    assert level == "error"
    assert "already answered (approve) by rita" in text and "completed" in text
    audit = decisions_of(task_id)
    assert [e["decision"] for e in audit] == ["approve"]

    # The page of a Task that no longer waits stays, read-only, with the
    # decision (issue 13: it used to send the reviewer to the raw record).
    gone = reviewer_client.get(reverse(REVIEW, args=[task_id]))
    assert gone.status_code == 200
    assert gone.context["title"] == "Reviewed task" and gone.context["forms"] == {}
    assert [(e.decision, e.actor) for e in gone.context["decisions"]] == [("approve", "rita")]
    assert b'id="tnx-answer-form"' not in gone.content and b"tnx-approve-form" not in gone.content


def test_two_reviewers_at_once_one_wins(
    rpc: RpcClient,
    configure: Any,
    fake_llm: FakeLLM,
    reviewer: Any,
    django_user_model: Any,
) -> None:
    configure(fake_llm)
    task_id = suspend(rpc, fake_llm, then="Filed it.")["id"]
    request_id = pending_id(task_id)
    second = staff(django_user_model, "sam", "answer_task")
    clients = []
    for user in (reviewer, second):
        client = Client()
        client.force_login(user)
        clients.append(client)
    barrier = threading.Barrier(2)
    outcomes: list[Any] = [None, None]

    def go(i: int) -> None:
        try:
            barrier.wait(timeout=10)
            outcomes[i] = answer(clients[i], task_id, "approve", request_id).url
        finally:
            connection.close()

    threads = [threading.Thread(target=go, args=(i,)) for i in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    # The winner goes back to the queue, the loser to the Task as it is now.
    # (Messages are read afterwards: the test client's context capture is
    # process-wide, so reading them inside the threads could mix them up.)
    assert sorted(outcomes) == sorted([reverse(QUEUE), reverse(RECORD, args=[task_id])])
    loser = outcomes.index(reverse(RECORD, args=[task_id]))
    [(level, text)] = flashed(clients[loser].get(outcomes[loser]))
    assert level == "error" and "already answered (approve)" in text
    [(level, _)] = flashed(clients[1 - loser].get(outcomes[1 - loser]))
    assert level == "success"
    assert rpc.wait(task_id, ("completed", "failed"))["status"]["state"] == "completed"
    assert len(fake_llm.requests) == 2
    assert len(decisions_of(task_id)) == 1


def test_an_answer_to_an_outdated_request_is_refused(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM, reviewer_client: Client
) -> None:
    configure(fake_llm)
    task_id = suspend(rpc, fake_llm, then="Filed it.")["id"]
    response = answer(reviewer_client, task_id, "approve", "approve-not-this-one")
    assert response.status_code == 302 and response.url == reverse(RECORD, args=[task_id])
    [(level, text)] = flashed(reviewer_client.get(response.url))
    assert level == "error" and "different request" in text
    assert state(task_id) == "input-required"


def test_authorization_request_links_the_url_and_login_done_resumes(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM, reviewer_client: Client
) -> None:
    configure(
        fake_llm,
        TOOLKIT={"builtins": False, "tools": ["tests.admin.test_review_admin.login_tool"]},
    )
    fake_llm.push(ToolCall("login_tool", {}), Text("You are signed in."))
    task = rpc.send("sign me in")
    suspended = rpc.wait(task["id"], ("auth-required", "input-required", "failed"))
    assert suspended["status"]["state"] == "auth-required"
    task_id = task["id"]

    assert task_id[:10] in page(reviewer_client, QUEUE, kind="authorization")
    raw = reviewer_client.get(reverse(REVIEW, args=[task_id])).content.decode()
    assert (
        '<a href="https://login.example.com/x?next=/a&amp;b=1" target="_blank" '
        'rel="noopener noreferrer"' in raw
    )
    # Only the sign-in outcome: no approve / decline / reply forms.
    assert 'value="authorize"' in raw and 'value="approve"' not in raw
    assert 'value="reply"' not in raw

    # Approving is not a way to answer a sign-in.
    assert answer(reviewer_client, task_id, "approve").status_code == 400
    # The outcome must be chosen.
    assert answer(reviewer_client, task_id, "authorize").status_code == 200
    response = answer(reviewer_client, task_id, "authorize", outcome="done")
    assert response.status_code == 302

    done = rpc.wait(task_id, ("completed", "failed"))
    assert done["artifacts"][0]["parts"][0]["text"] == "You are signed in."
    assert tool_results(fake_llm, 1) == ["signed in"]
    event = decisions_of(task_id)[-1]
    assert event["decision"] == "authorize" and event["ok"] is True
    assert event["from"] == "auth-required"


def test_only_web_urls_are_linked_and_model_text_is_escaped(reviewer_client: Client) -> None:
    evil = "<script>alert(1)</script>"
    request = Request(
        id="r-1",
        kind="authorization",
        prompt=f"Sign in {evil}",
        url="javascript:alert(1)",
        data={"note": evil},
    )
    transcript = [
        {"role": "system", "content": f"sys {evil}"},
        {"role": "user", "content": f"hello {evil}"},
        {
            "role": "assistant",
            "content": evil,
            "tool_calls": [
                {"id": "c1", "function": {"name": evil, "arguments": f'{{"x": "{evil}"}}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": evil},
    ]
    task = task_in(
        "input-required",
        text=f"hello {evil}",
        store=DjangoTaskStore(),
        request=request,
        transcript=transcript,
    )
    for url in (REVIEW, QUEUE):
        args = [task["id"]] if url == REVIEW else []
        raw = reviewer_client.get(reverse(url, args=args)).content.decode()
        assert "<script>alert(1)" not in raw
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in raw
    raw = reviewer_client.get(reverse(REVIEW, args=[task["id"]])).content.decode()
    assert 'href="javascript:' not in raw and "javascript:alert(1)" in raw


def test_the_task_list_counts_tasks_per_state(admin_client: Client) -> None:
    store = DjangoTaskStore()
    for text in ("a", "b"):
        task_in("submitted", text=text, store=store)
    task_in("completed", text="c", result="ok", store=store)
    body = page(admin_client, "admin:toolnexus_django_taskrecord_changelist")
    assert 'id="tnx-state-counts"' in body
    assert "submitted</a>: <strong>2</strong>" in body
    assert "completed</a>: <strong>1</strong>" in body


def test_waiting_with_a_deadline_shows_the_time_left(reviewer_client: Client) -> None:
    from datetime import timedelta

    from django.utils import timezone

    store = DjangoTaskStore()
    ids = []
    for minutes in (90, -5):
        moment = (timezone.now() + timedelta(minutes=minutes)).isoformat()
        request = Request(id=f"r-{minutes}", kind="input", prompt="?", expiresAt=moment)
        task = task_in("input-required", text="t", store=store, request=request, transcript=[])
        ids.append(task["id"])
    body = page(reviewer_client, QUEUE)
    assert "in 1\xa0hour, 29\xa0minutes" in body or "in 1\xa0hour, 30\xa0minutes" in body
    assert "expired" in body
    assert ids[1][:10] in page(reviewer_client, QUEUE, expiry="expired")
    assert ids[0][:10] not in page(reviewer_client, QUEUE, expiry="expired")
    assert ids[0][:10] in page(reviewer_client, QUEUE, expiry="day")
    # kind "input" without a schema: the reply is a JSON object.
    body = page(reviewer_client, REVIEW, ids[0])
    assert 'name="reply-data"' in body


def test_an_unknown_task_sends_the_reviewer_back_to_the_queue(reviewer_client: Client) -> None:
    response = reviewer_client.get(reverse(REVIEW, args=["no-such-task"]))
    assert response.status_code == 302 and response.url == reverse(QUEUE)
    [(level, text)] = flashed(reviewer_client.get(response.url))
    assert level == "warning" and "no-such-task" in text
    posted = answer(reviewer_client, "no-such-task", "approve", "r-1")
    assert posted.status_code == 302 and posted.url == reverse(QUEUE)
