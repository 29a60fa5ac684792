"""A caller who must authenticate, through the official a2a-sdk client, on a
served endpoint (WSGI and ASGI): over JSON-RPC and over HTTP+JSON the client
raises its error for an HTTP 401 — a2a-sdk 1.3.0 has no error class of its
own for it: ``A2AClientError("HTTP Error 401: ...")`` — never a protocol
error mapped from the body (no ``ErrorInfo`` reason of its table matches),
and the response under it is the binding's own error with the challenge."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.client.errors import A2AClientError
from a2a.types.a2a_pb2 import GetTaskRequest, ListTasksRequest

BASIC = "rest_framework.authentication.BasicAuthentication"
IS_AUTHENTICATED = "rest_framework.permissions.IsAuthenticated"


async def refused(agent_url: str, binding: str) -> A2AClientError:
    """The error the SDK raises for an anonymous ListTasks and GetTask over ``binding``."""
    async with httpx.AsyncClient(timeout=20) as http:
        card = await A2ACardResolver(http, agent_url.rstrip("/")).get_agent_card()
        config = ClientConfig(httpx_client=http, supported_protocol_bindings=[binding])
        client = ClientFactory(config).create(card)
        with pytest.raises(A2AClientError) as get:
            await client.get_task(GetTaskRequest(id="x"))
        assert type(get.value) is A2AClientError and "HTTP Error 401" in str(get.value)
        with pytest.raises(A2AClientError) as listing:
            await client.list_tasks(ListTasksRequest())
        return listing.value


def test_the_official_client_raises_its_authentication_error_on_both_bindings(
    agent_url: str, configure: Any
) -> None:
    configure(None, AUTHENTICATION_CLASSES=[BASIC], PERMISSION_CLASSES=[IS_AUTHENTICATED])

    over_rpc = asyncio.run(refused(agent_url, "JSONRPC"))
    assert type(over_rpc) is A2AClientError and "HTTP Error 401" in str(over_rpc)
    response = over_rpc.__cause__.response  # type: ignore[union-attr]
    assert response.headers["www-authenticate"].startswith("Basic")
    reply = json.loads(response.content)
    assert reply["error"]["code"] == -31401
    assert reply["error"]["data"][0]["reason"] == "UNAUTHENTICATED"

    over_rest = asyncio.run(refused(agent_url, "HTTP+JSON"))
    assert type(over_rest) is A2AClientError and "HTTP Error 401" in str(over_rest)
    response = over_rest.__cause__.response  # type: ignore[union-attr]
    assert response.headers["www-authenticate"].startswith("Basic")
    assert response.headers["content-type"] == "application/a2a+json"
    status = json.loads(response.content)["error"]
    assert (status["code"], status["status"]) == (401, "UNAUTHENTICATED")
    assert status["details"][0]["reason"] == "UNAUTHENTICATED"
