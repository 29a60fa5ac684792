"""The toolkit as an MCP server under ``manage.py toolnexus_serve`` (a real
process on the test database), with the official ``mcp`` Python client's
streamable-HTTP transport."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.shared.exceptions import McpError

from tests.conftest import http
from tests.mcp_client import INITIALIZE, MCP_HEADERS, digest, run, session, text_of
from tests.servers import serve
from toolnexus_django.models import McpCall

#: The demo toolkit has skill, file_expense and ask_requester; two are served.
SERVED = "skill,file_expense"


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_toolnexus_serve_serves_the_chosen_tools_over_mcp(tmp_path: Path, users: Any) -> None:
    with serve(tmp_path, "--workers", "1", env={"TOOLNEXUS_MCP_TOOLS": SERVED}) as server:
        server.wait_ready()
        url = f"{server.base}/agent/mcp"

        async def scenario() -> dict[str, Any]:
            seen: dict[str, Any] = {}
            async with httpx.AsyncClient() as anonymous:
                # Refused before any MCP is spoken, as MCP's HTTP transport expects.
                refused = await anonymous.post(url, json=INITIALIZE, headers=MCP_HEADERS)
                seen["refused"] = (refused.status_code, refused.headers.get("www-authenticate"))
                with pytest.raises(Exception) as client_refused:
                    async with session(url, anonymous):
                        pass
                seen["client_refused"] = repr(client_refused.value)
            async with (
                httpx.AsyncClient(auth=("alice", "alice-pw")) as alice,
                session(url, alice) as client,
            ):
                seen["tools"] = sorted(t.name for t in (await client.list_tools()).tools)
                seen["ok"] = await client.call_tool("skill", {"name": "summarize"})
                seen["error"] = await client.call_tool("skill", {"name": "nope"})
                for name in ("ask_requester", "no_such_tool"):
                    with pytest.raises(McpError) as unknown:
                        await client.call_tool(name, {"question": "?"})
                    seen[name] = unknown.value.error.code
                seen["pending"] = await client.call_tool(
                    "file_expense", {"amount": 12.5, "description": "taxi"}
                )
            return seen

        seen = run(scenario)

    assert seen["refused"] == (401, 'Basic realm="api"')
    assert "401" in seen["client_refused"] or "Unauthorized" in seen["client_refused"]
    assert seen["tools"] == ["file_expense", "skill"]
    assert not seen["ok"].isError and "Summarising text" in text_of(seen["ok"])
    assert seen["error"].isError and 'Skill "nope" not found' in text_of(seen["error"])
    assert seen["ask_requester"] == seen["no_such_tool"] == -32602
    pending = seen["pending"]
    assert pending.isError
    assert "toolnexus Request 'approve-" in text_of(pending)
    assert "kind 'approval'" in text_of(pending) and "A2A" in text_of(pending)

    # Every call recorded by the served process, caller and all.
    rows = list(McpCall.objects.order_by("at", "id"))
    alice = str(users["alice"].pk)
    assert [(r.tool, r.outcome, r.reason) for r in rows] == [
        ("skill", "ok", ""),
        ("skill", "error", "tool-error"),
        ("ask_requester", "error", "unknown-tool"),
        ("no_such_tool", "error", "unknown-tool"),
        ("file_expense", "error", "pending"),
    ]
    assert {(r.caller, r.caller_name) for r in rows} == {(alice, "alice")}
    assert rows[0].arguments_digest == digest({"name": "summarize"})
    assert rows[4].arguments_digest == digest({"amount": 12.5, "description": "taxi"})
    assert rows[4].request_id.startswith("approve-") and rows[4].request_id in text_of(pending)
    assert all(r.duration_ms >= 0 for r in rows)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_mcp_endpoint_is_absent_when_the_setting_is_off(tmp_path: Path) -> None:
    with serve(tmp_path, "--workers", "1", env={"TOOLNEXUS_MCP_TOOLS": ""}) as server:
        server.wait_ready()
        reply = http(
            f"{server.base}/agent/mcp",
            method="POST",
            data=json.dumps(INITIALIZE).encode(),
            headers={**MCP_HEADERS, "content-type": "application/json"},
        )
        assert reply.status == 404
    assert McpCall.objects.count() == 0
