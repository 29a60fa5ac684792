"""``current_run()`` outside a Task: over the MCP endpoint a tool runs as the
signed-in caller (``task_id=None``, ``via="mcp"``) and ``permission=`` is
the caller's; outside any run — a tool's body called directly, the thread
serving a request — it is None. In-process: the official ``mcp`` client on
the ASGI application, Django's test client on the WSGI views."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from django.contrib.auth.models import Group, Permission
from django.core.signals import request_finished, request_started
from django.test import Client

import toolnexus_django
from tests import django_tools
from tests.conftest import basic
from tests.fakes import FakeLLM, Text, ToolCall
from tests.mcp_client import MCP_HEADERS, asgi_client, run, session, text_of

pytestmark = pytest.mark.django_db(transaction=True)

URL = "http://testserver/agent/mcp"


@pytest.fixture(autouse=True)
def _fresh(settings: Any) -> None:
    django_tools.SEEN.clear()
    # Every MCP request signs in again with HTTP Basic: hash passwords cheaply.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def served(configure: Any, fake_llm: FakeLLM) -> FakeLLM:
    """The test tools on the A2A endpoint and at /agent/mcp, both behind HTTP Basic."""
    from django.conf import settings

    configure(
        fake_llm,
        TOOLKIT={**settings.TOOLNEXUS["TOOLKIT"], "tools": django_tools.ALL},
        AUTHENTICATION_CLASSES=["rest_framework.authentication.BasicAuthentication"],
        PERMISSION_CLASSES=["rest_framework.permissions.IsAuthenticated"],
        MCP={
            "tools": "__all__",
            "AUTHENTICATION_CLASSES": ["rest_framework.authentication.BasicAuthentication"],
            "PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
        },
    )
    return fake_llm


def calls(user: str, *named: tuple[str, dict[str, Any]]) -> list[Any]:
    """``tools/call`` each of ``named`` as ``user`` with the official client."""

    async def scenario() -> list[Any]:
        async with (
            asgi_client(auth=(user, f"{user}-pw")) as http,
            session(URL, http) as client,
        ):
            return [await client.call_tool(name, args) for name, args in named]

    return run(scenario)


def test_an_mcp_call_runs_as_the_caller_with_no_task(served: FakeLLM, users: Any) -> None:
    sync, coro = calls("alice", ("whoami", {}), ("awhoami", {}))
    assert not sync.isError and text_of(sync) == "you are alice"
    assert not coro.isError and text_of(coro) == "you are alice"
    assert [name for name, _ in django_tools.SEEN] == ["whoami", "awhoami"]
    for _, said in django_tools.SEEN:
        assert (said["task_id"], said["context_id"], said["owner"], said["via"]) == (
            None,
            None,
            "alice",
            "mcp",
        )
        assert said["answer"] is None and said["approved_by"] == ()


def test_over_mcp_a_permission_tool_is_refused_to_a_caller_without_it_and_runs_for_one_with_it(
    served: FakeLLM, users: Any
) -> None:
    [refused] = calls("alice", ("make_group", {"name": "by-alice"}))
    assert refused.isError
    assert "needs the permission auth.add_group" in text_of(refused)
    assert "Nothing was done" in text_of(refused)
    assert not Group.objects.filter(name="by-alice").exists() and django_tools.SEEN == []

    users["bob"].user_permissions.add(Permission.objects.get(codename="add_group"))
    [made] = calls("bob", ("make_group", {"name": "by-bob"}))
    assert not made.isError and text_of(made) == "made by-bob"
    assert Group.objects.filter(name="by-bob").count() == 1
    [(_, said)] = django_tools.SEEN
    assert (said["owner"], said["via"]) == ("bob", "mcp")


def test_over_mcp_an_approval_tool_asks_and_writes_nothing(served: FakeLLM, users: Any) -> None:
    [pending] = calls("alice", ("approved_group", {"name": "ops"}))
    assert pending.isError and "approved_group-" in text_of(pending)
    assert not Group.objects.filter(name="ops").exists() and django_tools.SEEN == []


def test_current_run_is_none_in_a_tool_body_called_directly() -> None:
    assert django_tools.whoami.func is not None and django_tools.awhoami.func is not None
    assert django_tools.whoami.func() == "you are ?"
    assert asyncio.run(django_tools.awhoami.func()) == "you are ?"
    assert [said["run"] for _, said in django_tools.SEEN] == [None, None]
    # Called as a tool outside any run, a permission tool has no one to act for.
    refused = asyncio.run(django_tools.make_group.execute({"name": "nobody's"}))
    assert refused.is_error and "outside any run" in refused.output
    assert not Group.objects.filter(name="nobody's").exists()


def test_current_run_is_none_on_the_threads_serving_requests(served: FakeLLM, users: Any) -> None:
    """While the runs and the MCP call the requests started go on — their
    tools see their run — the request threads themselves see none."""
    on_request: list[Any] = []

    def note(**kwargs: Any) -> None:
        on_request.append(toolnexus_django.current_run())

    request_started.connect(note, dispatch_uid="test-current-run-started")
    request_finished.connect(note, dispatch_uid="test-current-run-finished")
    try:
        served.push(ToolCall("whoami", {}), ToolCall("awhoami", {}), Text("done"))
        client = Client(headers=basic("alice"))
        send = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "message/send",  # v0.3: waits for the run's end
            "params": {
                "message": {
                    "messageId": "m-1",
                    "role": "user",
                    "parts": [{"kind": "text", "text": "hi"}],
                }
            },
        }
        sent = client.post("/agent/", json.dumps(send), content_type="application/json")
        assert sent.json()["result"]["status"]["state"] == "completed"
        call = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "whoami", "arguments": {}},
        }
        mcp = client.post(
            "/agent/mcp", call, content_type="application/json", HTTP_ACCEPT=MCP_HEADERS["accept"]
        )
        assert mcp.json()["result"]["content"][0]["text"] == "you are alice"
    finally:
        request_started.disconnect(dispatch_uid="test-current-run-started")
        request_finished.disconnect(dispatch_uid="test-current-run-finished")

    assert [(name, said["via"]) for name, said in django_tools.SEEN] == [
        ("whoami", "a2a"),
        ("awhoami", "a2a"),
        ("whoami", "mcp"),
    ]
    assert len(on_request) == 4 and on_request == [None] * 4
    assert toolnexus_django.current_run() is None


def test_an_anonymous_mcp_caller_is_the_anonymous_owner(configure: Any, users: Any) -> None:
    from django.conf import settings

    configure(
        TOOLKIT={**settings.TOOLNEXUS["TOOLKIT"], "tools": django_tools.ALL},
        MCP={"tools": "__all__"},
    )

    async def scenario() -> list[Any]:
        async with asgi_client() as http, session(URL, http) as client:
            return [
                await client.call_tool("whoami", {}),
                await client.call_tool("make_group", {"name": "anon"}),
            ]

    who, refused = run(scenario)
    assert text_of(who) == "you are "
    [(_, said)] = django_tools.SEEN
    assert (said["task_id"], said["owner"], said["via"]) == (None, "", "mcp")
    assert refused.isError and "needs the permission" in text_of(refused)
    assert not Group.objects.filter(name="anon").exists()
