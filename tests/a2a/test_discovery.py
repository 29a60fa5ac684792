"""Discovery by origin: the card at ``/.well-known/agent-card.json`` of the
bare origin (RFC 8615), describing the mount it names, with URLs right behind
a reverse proxy (X-Forwarded-Host / -Proto where the settings trust them)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from django.test import Client
from django.urls import include, path

from tests.conftest import http
from tests.fakes import FakeLLM, Text
from toolnexus_django.urls import root_card

#: A project with two mounts; the root card describes "billing".
urlpatterns = [
    root_card("billing"),
    path("support/", include("toolnexus_django.urls", namespace="support")),
    path("billing/", include("toolnexus_django.urls", namespace="billing")),
]


def origin_of(agent_url: str) -> str:
    return agent_url.removesuffix("/agent/")


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
def test_the_official_client_finds_the_agent_from_the_bare_origin(
    agent_url: str, configure: Any, fake_llm: FakeLLM, binding: str
) -> None:
    from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
    from a2a.types.a2a_pb2 import (
        Message,
        Part,
        Role,
        SendMessageConfiguration,
        SendMessageRequest,
        TaskState,
    )

    configure(fake_llm)
    fake_llm.on("found you", Text("found by origin"))
    origin = origin_of(agent_url)

    async def scenario() -> Any:
        async with httpx.AsyncClient(timeout=httpx.Timeout(20)) as client_http:
            card = await A2ACardResolver(client_http, origin).get_agent_card()
            assert card.supported_interfaces[0].url == agent_url
            config = ClientConfig(
                httpx_client=client_http, streaming=False, supported_protocol_bindings=[binding]
            )
            client = ClientFactory(config).create(card)
            assert type(client._transport).__name__ == (  # type: ignore[attr-defined]
                "JsonRpcTransport" if binding == "JSONRPC" else "RestTransport"
            )
            try:
                request = SendMessageRequest(
                    message=Message(
                        message_id=f"m-found-{binding}",
                        role=Role.ROLE_USER,
                        parts=[Part(text="found you")],
                    ),
                    configuration=SendMessageConfiguration(return_immediately=False),
                )
                [event] = [e async for e in client.send_message(request)]
                return event.task
            finally:
                await client.close()

    task = asyncio.run(scenario())
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert "".join(p.text for a in task.artifacts for p in a.parts) == "found by origin"


@pytest.mark.parametrize(
    "card_path", ["/.well-known/agent-card.json", "/agent/.well-known/agent-card.json"]
)
def test_behind_a_proxy_the_card_names_the_public_url(
    agent_url: str, configure: Any, settings: Any, card_path: str
) -> None:
    configure(None)
    settings.USE_X_FORWARDED_HOST = True
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.ALLOWED_HOSTS = ["agent.example.com", "127.0.0.1", "localhost", "testserver"]
    forwarded = {"X-Forwarded-Host": "agent.example.com", "X-Forwarded-Proto": "https"}
    card = http(origin_of(agent_url) + card_path, headers=forwarded).json
    assert card["url"] == "https://agent.example.com/agent/"
    assert {i["url"] for i in card["supportedInterfaces"]} == {"https://agent.example.com/agent/"}
    # Untrusted headers are ignored where the settings do not trust them.
    settings.USE_X_FORWARDED_HOST = False
    settings.SECURE_PROXY_SSL_HEADER = None
    plain = http(origin_of(agent_url) + card_path, headers=forwarded).json
    assert plain["url"] == agent_url


@pytest.mark.urls("tests.a2a.test_discovery")
def test_with_two_mounts_the_root_card_describes_the_one_it_names(settings: Any) -> None:
    settings.TOOLNEXUS = {"STORE": "memory"}
    root = Client().get("/.well-known/agent-card.json").json()
    assert root["url"] == "http://testserver/billing/"
    support = Client().get("/support/.well-known/agent-card.json").json()
    assert support["url"] == "http://testserver/support/"
