"""Every binding reaches the same request handler: one GetTask of one Task
through JSON-RPC and HTTP+JSON, over ASGI (uvicorn, what toolnexus_serve
runs) and under WSGI (the DRF views on Django's live server), and one MCP
request over ASGI and WSGI — each a real HTTP request — arrive at the same
``RequestHandler`` method with the same arguments and give the same result."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import http
from tests.utils import task_in
from toolnexus_django.a2a.dialects import Dialect
from toolnexus_django.a2a.methods import OPERATIONS
from toolnexus_django.serving import handler as handler_module
from toolnexus_django.serving.handler import METHODS, RequestHandler

V1 = {"Content-Type": "application/json", "A2A-Version": "1.0"}


class Spy:
    """Records each call of one ``RequestHandler`` method: (args, result)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
        self.calls: list[tuple[tuple[Any, ...], Any]] = []
        original = getattr(RequestHandler, name)

        def recording(handler: RequestHandler, *args: Any) -> Any:
            result = original(handler, *args)
            self.calls.append((args, result))
            return result

        monkeypatch.setattr(RequestHandler, name, recording)

    def take(self) -> tuple[tuple[Any, ...], Any]:
        """The one call since the last take."""
        assert len(self.calls) == 1, self.calls
        return self.calls.pop()


def test_the_handler_has_a_method_for_every_operation_of_the_wire() -> None:
    assert set(METHODS) == set(OPERATIONS)
    for name in METHODS.values():
        assert callable(getattr(RequestHandler, name)), name
    assert isinstance(handler_module.handler, RequestHandler)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_get_task_reaches_on_get_task_through_every_binding(
    monkeypatch: pytest.MonkeyPatch, live_server: Any, asgi_server: Any
) -> None:
    task = task_in("completed", result="the same answer")
    spy = Spy(monkeypatch, "on_get_task")
    rpc_body = json.dumps(
        {"jsonrpc": "2.0", "id": 7, "method": "GetTask", "params": {"id": task["id"]}}
    ).encode()

    results = {}
    for edge, base in (("asgi", asgi_server.url), ("wsgi", live_server.url)):
        reply = http(f"{base}/agent/", data=rpc_body, headers=V1)
        assert reply.status == 200, reply.body
        (params, ctx, dialect), returned = spy.take()
        assert params["id"] == task["id"] and dialect is Dialect.V10 and ctx.owner is None
        assert reply.json == {"jsonrpc": "2.0", "id": 7, "result": returned}
        results[f"json-rpc over {edge}"] = returned

        reply = http(f"{base}/agent/tasks/{task['id']}", headers={"A2A-Version": "1.0"})
        assert reply.status == 200, reply.body
        (params, ctx, dialect), returned = spy.take()
        assert params["id"] == task["id"] and dialect is Dialect.V10 and ctx.owner is None
        assert reply.json == returned
        results[f"http+json over {edge}"] = returned

    assert len(results) == 4
    first = results["json-rpc over asgi"]
    assert first["id"] == task["id"] and first["status"]["state"] == "TASK_STATE_COMPLETED"
    assert all(found == first for found in results.values()), results


MCP_LIST = {"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {}}
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_an_mcp_request_reaches_on_mcp_request_over_both_edges(
    monkeypatch: pytest.MonkeyPatch, settings: Any, live_server: Any, asgi_server: Any
) -> None:
    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "STORE": "memory", "MCP": {"tools": "__all__"}}
    spy = Spy(monkeypatch, "on_mcp_request")

    listed = {}
    for edge, base in (("asgi", asgi_server.url), ("wsgi", live_server.url)):
        reply = http(f"{base}/agent/mcp", data=json.dumps(MCP_LIST).encode(), headers=MCP_HEADERS)
        assert reply.status == 200, reply.body
        (exchange,), future = spy.take()
        assert exchange.method == "POST" and json.loads(exchange.body) == MCP_LIST
        assert reply.body == future.result().body
        listed[edge] = sorted(tool["name"] for tool in reply.json["result"]["tools"])

    assert listed["asgi"] == listed["wsgi"] and "file_expense" in listed["asgi"]
