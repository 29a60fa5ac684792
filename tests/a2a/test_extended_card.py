"""The extended Agent Card (EXTENDED_AGENT_CARD, toolnexus_django/a2a/card.py)
for authenticated callers — over JSON-RPC, over HTTP+JSON and through the
official SDK — and the caching headers of both cards (ETag, Cache-Control,
If-None-Match -> 304), checked with curl."""

from __future__ import annotations

import asyncio
import subprocess
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.client.client import ClientCallContext
from a2a.types.a2a_pb2 import GetExtendedAgentCardRequest
from django.contrib.auth.models import Permission

from tests.conftest import RpcClient, basic, http
from toolnexus_django.a2a.card import EXTENDED_CARD_EXTENSION

V1 = {"A2A-Version": "1.0"}
BASIC = {
    "AUTHENTICATION_CLASSES": ["rest_framework.authentication.BasicAuthentication"],
    "PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
}
INVOICES = {"id": "invoices", "name": "invoices", "description": "Finds invoices.", "tags": ["x"]}


def skills_by_permission(request: Any, card: dict[str, Any]) -> dict[str, Any]:
    """A project's hook: a skill only users with a Django permission see."""
    if request.user.has_perm("auth.view_user"):
        card["skills"].append(INVOICES)
    return card


def card_url(agent_url: str) -> str:
    return agent_url + ".well-known/agent-card.json"


def test_authenticated_callers_get_the_extended_card(
    agent_url: str, configure: Any, users: Any
) -> None:
    configure(None, **BASIC)
    public = http(card_url(agent_url)).json
    # Announced on the public card, in both versions' fields.
    assert public["capabilities"]["extendedAgentCard"] is True
    assert public["supportsAuthenticatedExtendedCard"] is True

    rpc = RpcClient(agent_url, {**V1, **basic("alice")})
    extended = rpc.call("GetExtendedAgentCard")["result"]
    # The default adds nothing but says whom it was served to.
    (extension,) = extended["capabilities"]["extensions"]
    assert extension["uri"] == EXTENDED_CARD_EXTENSION
    assert "alice" in extension["description"]
    assert {k: v for k, v in extended.items() if k != "capabilities"} == {
        k: v for k, v in public.items() if k != "capabilities"
    }
    # The same card on the REST route, private to its caller.
    over_rest = http(agent_url + "extendedAgentCard", headers={**V1, **basic("alice")})
    assert over_rest.status == 200 and over_rest.json == extended
    assert over_rest.headers["cache-control"].startswith("private")
    assert "Authorization" in over_rest.headers["vary"]
    # v0.3's name for it too.
    v03 = RpcClient(agent_url, basic("alice")).call("agent/getAuthenticatedExtendedCard")
    assert v03["result"]["name"] == public["name"]

    # Anonymous callers (the endpoint allows them here) must authenticate (v1.0 §13.3):
    # DRF's 401 with the endpoint's challenge, on both bindings.
    for anonymous in (
        http(
            agent_url,
            data=b'{"jsonrpc": "2.0", "id": 1, "method": "GetExtendedAgentCard"}',
            headers={**V1, "Content-Type": "application/json"},
        ),
        http(agent_url + "extendedAgentCard", headers=V1),
    ):
        assert anonymous.status == 401, anonymous.body
        assert anonymous.headers["www-authenticate"].startswith("Basic")
    # The endpoint keeps serving anonymous callers what they may have.
    assert RpcClient(agent_url, V1).call("ListTasks", {})["result"]["tasks"] == []


def test_a_hook_adds_skills_by_django_permission(
    agent_url: str, configure: Any, users: Any
) -> None:
    configure(None, EXTENDED_AGENT_CARD=f"{__name__}.skills_by_permission", **BASIC)
    users["alice"].user_permissions.add(Permission.objects.get(codename="view_user"))

    def skills(who: str) -> list[str]:
        reply = RpcClient(agent_url, {**V1, **basic(who)}).call("GetExtendedAgentCard")
        return [s["id"] for s in reply["result"]["skills"]]

    assert "invoices" in skills("alice")
    assert "invoices" not in skills("bob")
    assert "invoices" not in [s["id"] for s in http(card_url(agent_url)).json["skills"]]


def test_no_extended_card_when_switched_off_or_nobody_can_authenticate(
    agent_url: str, configure: Any, users: Any
) -> None:
    configure(None, EXTENDED_AGENT_CARD=None, **BASIC)
    assert "extendedAgentCard" not in http(card_url(agent_url)).json["capabilities"]
    # A card that declares no extended card: the operation is unsupported (v1.0 §3.3.4).
    reply = RpcClient(agent_url, {**V1, **basic("alice")}).call("GetExtendedAgentCard")
    assert reply["error"]["code"] == -32004
    configure(None)  # the demo's open endpoint: no authentication classes
    assert "extendedAgentCard" not in http(card_url(agent_url)).json["capabilities"]


def test_the_official_client_fetches_the_extended_card(
    agent_url: str, configure: Any, users: Any
) -> None:
    configure(None, **BASIC)

    async def fetch(binding: str) -> Any:
        async with httpx.AsyncClient(timeout=20) as client:
            card = await A2ACardResolver(client, agent_url.rstrip("/")).get_agent_card()
            config = ClientConfig(httpx_client=client, supported_protocol_bindings=[binding])
            sdk = ClientFactory(config).create(card)
            context = ClientCallContext(service_parameters={**basic("alice")})
            try:
                return await sdk.get_extended_agent_card(
                    GetExtendedAgentCardRequest(), context=context
                )
            finally:
                await sdk.close()

    for binding in ("JSONRPC", "HTTP+JSON"):
        extended = asyncio.run(fetch(binding))
        assert [e.uri for e in extended.capabilities.extensions] == [EXTENDED_CARD_EXTENSION]


# -- caching ----------------------------------------------------------------------------


def curl(url: str, *headers: str) -> tuple[int, dict[str, str]]:
    """(status, headers) of a GET by curl."""
    args = ["curl", "-s", "-o", "/dev/null", "-D", "-", "--max-time", "10", url]
    for header in headers:
        args += ["-H", header]
    out = subprocess.run(args, capture_output=True, text=True, timeout=20, check=True).stdout
    lines = out.strip().splitlines()
    status = int(lines[0].split()[1])
    found = {}
    for line in lines[1:]:
        key, _, value = line.partition(":")
        found[key.strip().lower()] = value.strip()
    return status, found


@pytest.mark.parametrize("where", ["mount", "root"])
def test_cards_carry_an_etag_and_answer_304(
    agent_url: str, configure: Any, users: Any, where: str
) -> None:
    configure(None, **BASIC)
    origin = agent_url.split("/agent/")[0]
    url = card_url(agent_url) if where == "mount" else f"{origin}/.well-known/agent-card.json"
    status, headers = curl(url)
    assert status == 200
    etag = headers["etag"]
    assert etag.startswith('"') and headers["cache-control"] == "public, max-age=300"
    assert curl(url, f"If-None-Match: {etag}")[0] == 304
    assert curl(url, f'If-None-Match: "other", W/{etag}')[0] == 304
    assert curl(url, 'If-None-Match: "other"')[0] == 200
    # The ETag follows the card: another card, another tag.
    configure(None, AGENT={"name": "renamed"}, **BASIC)
    assert curl(url)[1]["etag"] != etag
    assert curl(url, f"If-None-Match: {etag}")[0] == 200

    extended = agent_url + "extendedAgentCard"
    auth = "Authorization: " + basic("alice")["Authorization"]
    status, headers = curl(extended, auth)
    assert status == 200 and headers["cache-control"].startswith("private")
    assert curl(extended, auth, f"If-None-Match: {headers['etag']}")[0] == 304
