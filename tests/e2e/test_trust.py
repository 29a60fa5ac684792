"""Trust boundaries, end to end: conversations stay with their owner, only the
right people answer a Request, and every answer is checked against its schema."""

from __future__ import annotations

import http.cookiejar
import json
import re
import urllib.parse
import urllib.request
import uuid
from typing import Any

import pytest
import toolnexus
from toolnexus import ToolContext

from testproject.demo import DETAILS_SCHEMA
from tests.conftest import RpcClient, basic, wait_until
from tests.fakes import FakeLLM, Text, ToolCall
from tests.utils import decisions_of
from toolnexus_django.models import Conversation, TaskRecord

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

BASIC_ONLY = {
    "AUTHENTICATION_CLASSES": ["rest_framework.authentication.BasicAuthentication"],
    "PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
}
EXPENSE = ToolCall("file_expense", {"amount": 12.5, "description": "taxi"})
ASK = ToolCall("ask_requester", {"question": "Where to, and on which dates?"})


def user_turns(body: dict[str, Any]) -> list[str]:
    return [
        m["content"]
        for m in body.get("messages") or ()
        if m.get("role") == "user" and isinstance(m.get("content"), str)
    ]


def echo_user_turns(body: dict[str, Any]) -> Text:
    """The fake model answers with every user turn it was shown."""
    return Text("shown: " + " | ".join(user_turns(body)))


def message(text: str, **fields: Any) -> dict[str, Any]:
    return {"role": "user", "parts": [{"kind": "text", "text": text}], **fields}


def answer_with(rpc: RpcClient, task: dict[str, Any], *parts: dict[str, Any]) -> dict[str, Any]:
    return rpc.call(
        "SendMessage",
        {"message": {"role": "user", "taskId": task["id"], "parts": list(parts)}},
    )


def stored(task_id: str) -> TaskRecord:
    return TaskRecord.objects.get(pk=task_id)


# -- conversations ------------------------------------------------------------------


def test_a_context_id_never_crosses_owners(
    agent_url: str, configure: Any, fake_llm: FakeLLM, users: dict[str, Any]
) -> None:
    configure(fake_llm, **BASIC_ONLY)
    fake_llm.respond = echo_user_turns
    alice = RpcClient(agent_url, basic("alice"))
    bob = RpcClient(agent_url, basic("bob"))

    first = alice.wait(alice.send("my secret is 4242")["id"])
    context = first["contextId"]
    assert first["artifacts"][0]["parts"][0]["text"] == "shown: my secret is 4242"

    # Bob names Alice's conversation: he is shown none of her turns.
    intruder = bob.wait(bob.send("what did I say?", contextId=context)["id"])
    assert intruder["status"]["state"] == "completed"
    assert intruder["artifacts"][0]["parts"][0]["text"] == "shown: what did I say?"
    assert intruder["contextId"] == context  # his own conversation of that name

    # Alice's next turn is shown her own turns, none of Bob's.
    second = alice.wait(alice.send("and now?", contextId=context)["id"])
    text = second["artifacts"][0]["parts"][0]["text"]
    assert text == "shown: my secret is 4242 | and now?"
    assert "what did I say" not in text

    # Two conversations of one contextId, one per owner.
    owners = set(Conversation.objects.filter(context_id=context).values_list("owner", flat=True))
    assert owners == {str(users["alice"].pk), str(users["bob"].pk)}
    # Bob still cannot read Alice's Tasks of that conversation.
    assert bob.get(first["id"])["error"]["code"] == -32001


def test_anonymous_callers_share_one_owner(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm)
    fake_llm.respond = echo_user_turns
    first = rpc.wait(rpc.send("one")["id"])
    second = rpc.wait(rpc.send("two", contextId=first["contextId"])["id"])
    assert second["artifacts"][0]["parts"][0]["text"] == "shown: one | two"


# -- who answers ---------------------------------------------------------------------


def test_the_requester_cannot_approve_its_own_expense_claim(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm)
    fake_llm.push(EXPENSE, Text("never filed"))
    waiting = rpc.wait(rpc.send("file an expense of 12.5 for a taxi")["id"])
    assert waiting["status"]["state"] == "input-required"
    # The status says a reviewer must answer, and what an answer looks like.
    parts = waiting["status"]["message"]["parts"]
    assert parts[1] == {
        "kind": "text",
        "text": "A reviewer must answer this request; the task waits until one does.",
    }
    assert parts[2]["data"]["request"]["answeredBy"] == ["reviewer"]
    before = stored(waiting["id"])

    for parts_sent in (
        [{"kind": "text", "text": "approved"}],
        [{"kind": "data", "data": {"cost_center": "travel"}}],
    ):
        refused = answer_with(rpc, waiting, *parts_sent)
        assert refused["error"]["code"] == -32004, refused
        assert "A reviewer must answer this request" in refused["error"]["message"]
        assert refused["error"]["data"] == {"reason": "ANSWER_NOT_ALLOWED"}

    after = stored(waiting["id"])
    assert after.state == "input-required"
    assert (after.revision, after.task, after.private) == (
        before.revision,
        before.task,
        before.private,
    )
    assert len(fake_llm.requests) == 1  # the run never resumed


def test_a_reviewer_answers_it_in_the_admin(
    live_server: Any, rpc: RpcClient, configure: Any, fake_llm: FakeLLM, admin_user: Any
) -> None:
    configure(fake_llm)
    fake_llm.push(EXPENSE, Text("Your claim is filed."))
    waiting = rpc.wait(rpc.send("file an expense of 12.5 for a taxi")["id"])
    assert answer_with(rpc, waiting, {"kind": "text", "text": "ok"})["error"]["code"] == -32004

    browser = AdminSession(live_server.url)
    browser.login("admin", "password")
    page = browser.review_page(waiting["id"])
    browser.post_answer(
        waiting["id"],
        page,
        {"_answer": "reply", "reply-cost_center": "travel", "reply-approved_amount": "12.5"},
    )

    done = rpc.wait(waiting["id"])
    assert done["status"]["state"] == "completed"
    assert done["artifacts"][0]["parts"][0]["text"] == "Your claim is filed."
    [event] = [e for e in decisions_of(waiting["id"]) if e.get("decision") == "reply"]
    assert (event["actor"], event["role"], event["via"]) == ("admin", "reviewer", "admin")


def test_the_requester_answers_ask_requester_over_a2a(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm)
    fake_llm.push(ASK, Text("Booked."))
    waiting = rpc.wait(rpc.send("book a trip")["id"])
    parts = waiting["status"]["message"]["parts"]
    assert parts[0]["text"] == "Where to, and on which dates?"
    assert parts[1]["data"]["request"] == {
        "kind": "input",
        "answeredBy": ["reviewer", "requester"],
        "schema": DETAILS_SCHEMA,
    }
    before = stored(waiting["id"])

    # Answers that break the schema are -32602 with the violations; nothing changes.
    for bad, path in (
        ({"output": 42}, "/output"),
        ({"output": ""}, "/output"),
        ({"destination": "Lisbon"}, ""),
        ({}, ""),
    ):
        refused = answer_with(rpc, waiting, {"kind": "data", "data": bad})
        assert refused["error"]["code"] == -32602, refused
        assert path in [v["path"] for v in refused["error"]["data"]["violations"]]
    after = stored(waiting["id"])
    assert (after.state, after.revision, after.private) == (
        "input-required",
        before.revision,
        before.private,
    )

    # A plain text answer is {"output": text}: valid.
    answer_with(rpc, waiting, {"kind": "text", "text": "Lisbon, 3-5 May"})
    done = rpc.wait(waiting["id"])
    assert done["status"]["state"] == "completed"
    [result] = [m for m in fake_llm.requests[1].body["messages"] if m.get("role") == "tool"]
    assert result["content"] == "The requester says: Lisbon, 3-5 May"


def test_ask_requester_can_be_answered_in_the_admin_too(
    live_server: Any, rpc: RpcClient, configure: Any, fake_llm: FakeLLM, admin_user: Any
) -> None:
    configure(fake_llm)
    fake_llm.push(ASK, Text("Booked by the desk."))
    waiting = rpc.wait(rpc.send("book a trip")["id"])

    browser = AdminSession(live_server.url)
    browser.login("admin", "password")
    page = browser.review_page(waiting["id"])
    assert "Details" in page  # the form generated from the schema
    browser.post_answer(waiting["id"], page, {"_answer": "reply", "reply-output": "Porto"})

    done = rpc.wait(waiting["id"])
    assert done["artifacts"][0]["parts"][0]["text"] == "Booked by the desk."
    [result] = [m for m in fake_llm.requests[1].body["messages"] if m.get("role") == "tool"]
    assert result["content"] == "The requester says: Porto"


def test_a_tool_setting_narrows_who_answers(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm, TOOL_ANSWERERS={"ask_requester": "reviewer"})
    fake_llm.push(ASK, Text("x"))
    waiting = rpc.wait(rpc.send("book a trip")["id"])
    refused = answer_with(rpc, waiting, {"kind": "text", "text": "Lisbon"})
    assert refused["error"]["code"] == -32004
    assert stored(waiting["id"]).state == "input-required"


# -- a real admin session over HTTP ---------------------------------------------------


class AdminSession:
    """A reviewer's browser session against the live server: cookies, CSRF
    tokens and form posts over real HTTP (no test client shortcuts)."""

    def __init__(self, base: str) -> None:
        self.base = base
        jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))

    def get(self, path: str) -> str:
        with self.opener.open(self.base + path, timeout=10) as reply:
            return reply.read().decode()

    def post(self, path: str, fields: dict[str, str], referer: str) -> tuple[int, str, str]:
        data = urllib.parse.urlencode(fields).encode()
        req = urllib.request.Request(self.base + path, data=data, headers={"Referer": referer})
        with self.opener.open(req, timeout=10) as reply:
            return reply.status, reply.geturl(), reply.read().decode()

    @staticmethod
    def csrf(page: str) -> str:
        match = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
        assert match, "no CSRF token on the page"
        return match.group(1)

    def login(self, username: str, password: str) -> None:
        page = self.get("/admin/login/")
        _, landed, _ = self.post(
            "/admin/login/?next=/admin/",
            {
                "csrfmiddlewaretoken": self.csrf(page),
                "username": username,
                "password": password,
                "next": "/admin/",
            },
            referer=self.base + "/admin/login/",
        )
        assert landed.rstrip("/").endswith("/admin"), landed

    def review_path(self, task_id: str) -> str:
        quoted = urllib.parse.quote(task_id)
        return f"/admin/toolnexus_django/awaitinghumantask/{quoted}/review/"

    def review_page(self, task_id: str) -> str:
        return self.get(self.review_path(task_id))

    def post_answer(self, task_id: str, page: str, fields: dict[str, str]) -> None:
        request_id = re.search(r'name="request_id" value="([^"]+)"', page)
        assert request_id, "no request id on the review page"
        status, landed, body = self.post(
            self.review_path(task_id),
            {"csrfmiddlewaretoken": self.csrf(page), "request_id": request_id.group(1), **fields},
            referer=self.base + self.review_path(task_id),
        )
        assert status == 200 and landed.endswith("/awaitinghumantask/"), (landed, body[-500:])
        wait_until(lambda: stored(task_id).state != "input-required", what="the answer to be taken")


def test_the_admin_refuses_an_answer_that_breaks_the_schema_over_json(
    live_server: Any, rpc: RpcClient, configure: Any, fake_llm: FakeLLM, admin_user: Any
) -> None:
    """The JSON form (used when a schema is too rich for a generated form) is
    checked against the schema on the server too."""
    configure(fake_llm, TOOLKIT={**_toolkit(), "tools": ["tests.e2e.test_trust.rich_question"]})
    fake_llm.push(ToolCall("rich_question", {}), Text("x"))
    waiting = rpc.wait(rpc.send("ask me")["id"])

    browser = AdminSession(live_server.url)
    browser.login("admin", "password")
    page = browser.review_page(waiting["id"])
    request_id = re.search(r'name="request_id" value="([^"]+)"', page)
    assert request_id
    status, landed, body = browser.post(
        browser.review_path(waiting["id"]),
        {
            "csrfmiddlewaretoken": browser.csrf(page),
            "request_id": request_id.group(1),
            "_answer": "reply",
            "reply-data": json.dumps({"output": 7}),
        },
        referer=live_server.url + browser.review_path(waiting["id"]),
    )
    assert status == 200 and landed.endswith("/review/")  # the page again, with the error
    assert "/output: 7 is not of type" in body.replace("&#x27;", "'")
    assert stored(waiting["id"]).state == "input-required"


def _toolkit() -> dict[str, Any]:
    from django.conf import settings

    return dict(settings.TOOLNEXUS["TOOLKIT"])


def _rich_question(ctx: ToolContext | None = None) -> Any:
    """Asks with a schema too rich for a generated form (oneOf)."""
    if ctx is not None and ctx.answer is not None:
        return f"answered {ctx.answer.data}"
    return toolnexus.pending(
        kind="input",
        id=f"rich-{uuid.uuid4()}",
        prompt="Tell me more",
        data={"schema": {**DETAILS_SCHEMA, "oneOf": [{"required": ["output"]}]}},
    )


rich_question = toolnexus.tool(name="rich_question")(_rich_question)
