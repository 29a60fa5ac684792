"""The MCP endpoint in-process (the ASGI app through httpx's ASGI transport,
the DRF view through Django's test client): the signal, auth defaults, the
limits, the WSGI view. The real server is tests/mcp/test_mcp_serve.py."""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from mcp.shared.exceptions import McpError

from tests import mcp_tools
from tests.mcp_client import INITIALIZE, MCP_HEADERS, asgi_client, digest, run, session, text_of
from toolnexus_django.mcp.limits import calls_in_flight
from toolnexus_django.models import McpCall
from toolnexus_django.signals import mcp_called

URL = "http://testserver/agent/mcp"
BASIC = ["rest_framework.authentication.BasicAuthentication"]
AUTHENTICATED = ["rest_framework.permissions.IsAuthenticated"]

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def mcp_on(settings: Any) -> Any:
    """``mcp_on(**MCP keys)``: the demo toolkit plus the MCP test tools,
    served at /agent/mcp; other TOOLNEXUS keys through ``top``."""

    def apply(top: dict[str, Any] | None = None, **mcp: Any) -> None:
        base = dict(settings.TOOLNEXUS)
        toolkit = {**base["TOOLKIT"], "tools": [*base["TOOLKIT"]["tools"], *mcp_tools.PATHS]}
        settings.TOOLNEXUS = {
            **base,
            "STORE": "memory",
            "TOOLKIT": toolkit,
            "MCP": {"tools": "__all__", **mcp},
            **(top or {}),
        }

    return apply


@pytest.fixture
def signalled() -> Any:
    seen: list[dict[str, Any]] = []

    def receiver(**kwargs: Any) -> None:
        seen.append(kwargs)

    mcp_called.connect(receiver, dispatch_uid="test-mcp-called")
    yield seen
    mcp_called.disconnect(dispatch_uid="test-mcp-called")


def test_every_call_sends_the_signal_with_its_audit_row(mcp_on: Any, signalled: list[Any]) -> None:
    mcp_on()

    async def scenario() -> None:
        async with asgi_client() as http, session(URL, http) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"skill", "file_expense", "ask_requester", "snooze", "broken"} <= names
            ok = await client.call_tool("snooze", {"seconds": 0})
            assert not ok.isError and text_of(ok) == "slept 0s"
            bad = await client.call_tool("broken", {"reason": "on purpose"})
            assert bad.isError and text_of(bad) == "broken: on purpose"

    run(scenario)
    calls = [s["call"] for s in signalled]
    assert [(c["tool"], c["outcome"], c["reason"]) for c in calls] == [
        ("snooze", "ok", ""),
        ("broken", "error", "tool-error"),
    ]
    assert calls[0]["arguments_digest"] == digest({"seconds": 0})
    assert calls[0]["caller"] == "" and calls[0]["duration_ms"] >= 0
    rows = [s["record"] for s in signalled]
    assert all(isinstance(r, McpCall) and r.pk for r in rows)
    assert McpCall.objects.count() == 2
    assert {r.tool for r in McpCall.objects.all()} == {"snooze", "broken"}


def test_without_audit_rows_the_signal_still_comes(mcp_on: Any, signalled: list[Any]) -> None:
    mcp_on(AUDIT=False)

    async def scenario() -> None:
        async with asgi_client() as http, session(URL, http) as client:
            await client.call_tool("snooze", {"seconds": 0})

    run(scenario)
    assert [(s["call"]["tool"], s["record"]) for s in signalled] == [("snooze", None)]
    assert McpCall.objects.count() == 0


def test_the_a2a_endpoints_classes_guard_it_by_default(mcp_on: Any, users: Any) -> None:
    mcp_on(top={"AUTHENTICATION_CLASSES": BASIC, "PERMISSION_CLASSES": AUTHENTICATED})

    async def scenario() -> None:
        async with asgi_client() as http:
            refused = await http.post("/agent/mcp", json=INITIALIZE, headers=MCP_HEADERS)
            assert refused.status_code == 401
            assert refused.headers["www-authenticate"] == 'Basic realm="api"'
            wrong = await http.post(
                "/agent/mcp", json=INITIALIZE, headers=MCP_HEADERS, auth=("alice", "nope")
            )
            assert wrong.status_code == 401
        async with asgi_client(auth=("alice", "alice-pw")) as http, session(URL, http) as client:
            result = await client.call_tool("snooze", {"seconds": 0})
            assert not result.isError

    run(scenario)
    row = McpCall.objects.get()
    assert (row.caller, row.caller_name) == (str(users["alice"].pk), "alice")


def test_its_own_classes_win_and_a_session_only_endpoint_still_answers_401(
    mcp_on: Any, users: Any
) -> None:
    # SessionAuthentication has no challenge: DRF would say 403; MCP wants 401.
    mcp_on(
        top={"AUTHENTICATION_CLASSES": BASIC, "PERMISSION_CLASSES": AUTHENTICATED},
        AUTHENTICATION_CLASSES=["rest_framework.authentication.SessionAuthentication"],
        PERMISSION_CLASSES=AUTHENTICATED,
    )

    async def scenario() -> None:
        async with asgi_client() as http:
            refused = await http.post(
                "/agent/mcp", json=INITIALIZE, headers=MCP_HEADERS, auth=("alice", "alice-pw")
            )
            assert refused.status_code == 401
            assert refused.headers["www-authenticate"] == 'Bearer realm="mcp"'

    run(scenario)


def test_an_open_endpoint_takes_anonymous_callers(mcp_on: Any) -> None:
    mcp_on(AUTHENTICATION_CLASSES=[], PERMISSION_CLASSES=["rest_framework.permissions.AllowAny"])

    async def scenario() -> None:
        async with asgi_client() as http, session(URL, http) as client:
            assert not (await client.call_tool("snooze", {"seconds": 0})).isError

    run(scenario)
    assert McpCall.objects.get().caller == ""


def test_a_body_past_the_limit_is_413(mcp_on: Any) -> None:
    mcp_on(MAX_REQUEST_BYTES=64)

    async def scenario() -> httpx.Response:
        async with asgi_client() as http:
            return await http.post("/agent/mcp", json=INITIALIZE, headers=MCP_HEADERS)

    reply = run(scenario)
    assert reply.status_code == 413
    assert reply.json()["error"]["code"] == -32600
    assert "64 bytes" in reply.json()["error"]["message"]


def test_a_call_past_its_timeout_is_stopped(mcp_on: Any) -> None:
    mcp_on(CALL_TIMEOUT=0.2)

    async def scenario() -> Any:
        async with asgi_client() as http, session(URL, http) as client:
            started = time.monotonic()
            result = await client.call_tool("snooze", {"seconds": 30})
            return result, time.monotonic() - started

    result, took = run(scenario)
    assert result.isError and "CALL_TIMEOUT" in text_of(result)
    assert took < 10
    row = McpCall.objects.get()
    assert (row.outcome, row.reason) == ("error", "timeout")


def test_calls_past_the_concurrency_bound_are_busy(mcp_on: Any) -> None:
    mcp_on(MAX_CONCURRENT_CALLS=1)
    mcp_tools.GATE.clear()

    async def scenario() -> tuple[Any, Any]:
        async with asgi_client() as http, session(URL, http) as first, session(URL, http) as other:
            held = asyncio.ensure_future(first.call_tool("gated", {}))
            deadline = time.monotonic() + 10
            while calls_in_flight.count < 1:
                assert time.monotonic() < deadline, "the first call never started"
                await asyncio.sleep(0.01)
            busy = await other.call_tool("snooze", {"seconds": 0})
            mcp_tools.GATE.set()
            return await held, busy

    try:
        through, busy = run(scenario)
    finally:
        mcp_tools.GATE.set()
    assert not through.isError and text_of(through) == "through the gate"
    assert busy.isError and "busy" in text_of(busy)
    assert calls_in_flight.count == 0
    outcomes = {r.tool: (r.outcome, r.reason) for r in McpCall.objects.all()}
    assert outcomes == {"gated": ("ok", ""), "snooze": ("error", "busy")}


def test_only_post_is_served(mcp_on: Any) -> None:
    mcp_on()

    async def scenario() -> list[int]:
        async with asgi_client() as http:
            return [
                (await http.request(m, "/agent/mcp", headers=MCP_HEADERS)).status_code
                for m in ("GET", "DELETE")
            ]

    assert run(scenario) == [405, 405]


def test_an_unknown_tool_is_invalid_params_and_recorded(mcp_on: Any) -> None:
    mcp_on(tools=["snooze"])

    async def scenario() -> None:
        async with asgi_client() as http, session(URL, http) as client:
            assert [t.name for t in (await client.list_tools()).tools] == ["snooze"]
            for name in ("broken", "no_such_tool"):  # not exposed / not in the toolkit
                with pytest.raises(McpError) as refused:
                    await client.call_tool(name, {"x": 1})
                assert refused.value.error.code == -32602

    run(scenario)
    rows = McpCall.objects.order_by("at", "id")
    assert [(r.tool, r.outcome, r.reason) for r in rows] == [
        ("broken", "error", "unknown-tool"),
        ("no_such_tool", "error", "unknown-tool"),
    ]


# -- the DRF view (WSGI) ------------------------------------------------------------------


def test_the_wsgi_view_serves_the_same_endpoint(mcp_on: Any, client: Any) -> None:
    mcp_on()
    accept = {"HTTP_ACCEPT": MCP_HEADERS["accept"]}
    init = client.post("/agent/mcp", INITIALIZE, content_type="application/json", **accept)
    assert init.status_code == 200, init.content
    assert init.json()["result"]["serverInfo"]["name"] == "filing-desk"
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "broken", "arguments": {"reason": "wsgi"}},
    }
    reply = client.post("/agent/mcp", call, content_type="application/json", **accept)
    assert reply.status_code == 200
    assert reply.json()["result"]["isError"] is True
    assert McpCall.objects.get().reason == "tool-error"
    assert client.get("/agent/mcp").status_code == 405


def test_a_content_length_of_5000_digits_is_413_not_a_traceback(
    mcp_on: Any, client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """More digits than int() reads (4,300): a length past any limit, not
    HTTP 500. (A Content-Length that is no number at all, Django's own
    ``request.body`` fails on with a ValueError: that one is the WSGI
    server's to refuse.)"""
    mcp_on()
    accept = {"HTTP_ACCEPT": MCP_HEADERS["accept"]}
    reply = client.post(
        "/agent/mcp",
        INITIALIZE,
        content_type="application/json",
        CONTENT_LENGTH="9" * 5000,
        **accept,
    )
    assert reply.status_code == 413
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


def test_the_wsgi_view_is_404_when_off(client: Any) -> None:
    reply = client.post("/agent/mcp", INITIALIZE, content_type="application/json")
    assert reply.status_code == 404


# -- the admin -----------------------------------------------------------------------------


def test_the_admin_lists_the_calls_read_only(client: Any, django_user_model: Any) -> None:
    from django.utils import timezone

    admin = django_user_model.objects.create_superuser("root", password="root-pw")
    call = McpCall.objects.create(
        at=timezone.now(),
        caller=str(admin.pk),
        caller_name="root",
        tool="file_expense",
        arguments_digest=digest({"amount": 1}),
        duration_ms=1.25,
        outcome="error",
        reason="pending",
        request_id="approve-123",
    )
    client.force_login(admin)
    listing = client.get("/admin/toolnexus_django/mcpcall/?outcome__exact=error")
    assert listing.status_code == 200
    page = listing.content.decode()
    assert "file_expense" in page and "approve-123" in page and "1.2 ms" in page
    assert "/admin/toolnexus_django/mcpcall/add/" not in page
    assert client.get("/admin/toolnexus_django/mcpcall/add/").status_code == 403
    detail = client.get(f"/admin/toolnexus_django/mcpcall/{call.pk}/change/")
    assert detail.status_code == 200
    assert 'name="tool"' not in detail.content.decode()  # read-only: no inputs
    assert client.post(f"/admin/toolnexus_django/mcpcall/{call.pk}/delete/").status_code == 403


def test_calls_answered_at_once_are_written_together_each_before_its_answer(
    monkeypatch: Any,
) -> None:
    """Group commit: while one write is under way, the calls that finish join
    the next one (one insert for them all); none returns before its row is written."""
    from toolnexus_django.mcp import audit

    written: list[list[str]] = []
    first_write = asyncio.Event()

    async def slow_run_sync(fn: Any, calls: list[audit.CallRecord]) -> None:
        written.append([c.tool for c in calls])
        if len(written) == 1:
            await first_write.wait()  # the first write takes a while

    monkeypatch.setattr(audit, "run_sync", slow_run_sync)

    def record(tool: str) -> audit.CallRecord:
        return audit.CallRecord(
            at=datetime.now(UTC), caller="", caller_name="", tool=tool, arguments_digest="",
            duration_ms=0.0, outcome="ok",
        )  # fmt: skip

    async def scenario() -> list[str]:
        returned: list[str] = []

        async def call(tool: str) -> None:
            await audit.store_together([record(tool)])
            returned.append(tool)

        first = asyncio.create_task(call("a"))
        await asyncio.sleep(0)  # "a" starts the first write
        await asyncio.sleep(0)
        rest = [asyncio.create_task(call(t)) for t in ("b", "c", "d")]
        await asyncio.sleep(0)
        assert returned == []  # nobody is answered while their write is pending
        first_write.set()
        await asyncio.gather(first, *rest)
        return returned

    returned = asyncio.run(scenario())
    assert written == [["a"], ["b", "c", "d"]]  # two writes for four calls
    assert sorted(returned) == ["a", "b", "c", "d"]
