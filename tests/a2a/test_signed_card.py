"""Signed Agent Cards (A2A v1.0 §8.4; toolnexus_django/a2a/cardsigning.py):
with a card key the public and the extended card carry ``signatures`` that
verify with ``cryptography`` alone (over a canonical form computed here by
another RFC 8785 implementation, the a2a-sdk's) and with the official
a2a-sdk's verifier, against the key the JWKS serves under the header's
``kid``; a changed byte breaks them; without a key there are none."""

from __future__ import annotations

import asyncio
import base64
import copy
import json
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
import rfc8785
from a2a.client import A2ACardResolver
from a2a.client.card_resolver import parse_agent_card
from a2a.compat.v0_3 import types as v03
from a2a.utils._jcs import canonicalize
from a2a.utils.signing import (
    InvalidSignaturesError,
    _canonicalize_agent_card,
    create_signature_verifier,
)
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from jwt import PyJWK
from rest_framework.authentication import BasicAuthentication, TokenAuthentication

from tests.checks.test_checks import GOOD, our_messages
from tests.conftest import RpcClient, basic, http
from toolnexus_django.a2a.card import authenticated_card, build_card
from toolnexus_django.a2a.cardsigning import signed, v1_form
from toolnexus_django.keys import jwks, load_key, public_jwk

BASIC = {
    "AUTHENTICATION_CLASSES": ["rest_framework.authentication.BasicAuthentication"],
    "PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
}


def pem_of(key: ec.EllipticCurvePrivateKey | Any) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


def new_pem() -> str:
    return pem_of(ec.generate_private_key(ec.SECP256R1()))


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def header_of(signature: dict[str, str]) -> dict[str, Any]:
    return dict(json.loads(unb64(signature["protected"])))


def verify(signature: dict[str, str], payload: bytes, keys: list[dict[str, Any]]) -> None:
    """Checks an ES256 JWS over ``payload`` with the key its ``kid`` names,
    with cryptography alone; raises InvalidSignature when it does not hold."""
    header = header_of(signature)
    assert header["alg"] == "ES256"
    (jwk,) = [k for k in keys if k["kid"] == header["kid"]]
    point = ec.EllipticCurvePublicNumbers(
        int.from_bytes(unb64(jwk["x"]), "big"),
        int.from_bytes(unb64(jwk["y"]), "big"),
        ec.SECP256R1(),
    )
    raw = unb64(signature["signature"])
    der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
    signing_input = (
        f"{signature['protected']}.{base64.urlsafe_b64encode(payload).rstrip(b'=').decode()}"
    )
    point.public_key().verify(der, signing_input.encode(), ec.ECDSA(hashes.SHA256()))


def verify_served(card: dict[str, Any], keys: list[dict[str, Any]]) -> None:
    """The first signature covers the card as served, less ``signatures``."""
    unsigned = {k: v for k, v in card.items() if k != "signatures"}
    verify(card["signatures"][0], canonicalize(unsigned).encode(), keys)


def sdk_verify(card: dict[str, Any], keys: list[dict[str, Any]]) -> None:
    """The official a2a-sdk's verifier, given the key the header's kid names."""

    def key_provider(kid: str | None, jku: str | None) -> PyJWK:
        (jwk,) = [k for k in keys if k["kid"] == kid]
        return PyJWK(jwk)

    create_signature_verifier(key_provider, ["ES256"])(parse_agent_card(copy.deepcopy(card)))


# -- over real HTTP ------------------------------------------------------------------------


def test_both_cards_are_signed_and_verify_against_the_served_key_set(
    agent_url: str, configure: Any, users: Any
) -> None:
    push_pem, card_pem = new_pem(), new_pem()
    configure(None, PUSH={"SIGNING_KEY": push_pem}, CARD_SIGNING_KEY=card_pem, **BASIC)
    keys = http(agent_url + ".well-known/jwks.json").json["keys"]
    assert len(keys) == 2 and not any("d" in k for k in keys)  # both keys, public halves only

    first = http(agent_url + ".well-known/agent-card.json")
    public = first.json
    assert len(public["signatures"]) == 2
    for signature in public["signatures"]:
        header = header_of(signature)
        assert header["typ"] == "JOSE" and header["jku"] == agent_url + ".well-known/jwks.json"
        assert header["kid"] in {k["kid"] for k in keys}
    card_kid = public_jwk(load_key(card_pem))["kid"]  # the card's own key, not push's
    assert {header_of(s)["kid"] for s in public["signatures"]} == {card_kid}
    verify_served(public, keys)
    sdk_verify(public, keys)
    # Signed once per card: the same bytes again, so the ETag still answers 304.
    again = http(agent_url + ".well-known/agent-card.json")
    assert again.body == first.body
    etag = {"If-None-Match": first.headers["etag"]}
    assert http(agent_url + ".well-known/agent-card.json", headers=etag).status == 304
    # The origin's card describes the mount, and names the mount's key set.
    root = http(agent_url.split("/agent/")[0] + "/.well-known/agent-card.json").json
    assert header_of(root["signatures"][0])["jku"] == agent_url + ".well-known/jwks.json"
    verify_served(root, keys)

    # The extended card, over HTTP+JSON and JSON-RPC: signed after the hook ran.
    auth = {"A2A-Version": "1.0", **basic("alice")}
    extended = http(agent_url + "extendedAgentCard", headers=auth).json
    assert extended["capabilities"]["extensions"]  # what the hook added is signed too
    verify_served(extended, keys)
    sdk_verify(extended, keys)
    over_rpc = RpcClient(agent_url, auth).call("GetExtendedAgentCard")["result"]
    verify_served(over_rpc, keys)
    sdk_verify(over_rpc, keys)

    # The official client's resolver verifies while it fetches.
    async def resolve() -> Any:
        async with httpx.AsyncClient(timeout=20) as client:
            return await A2ACardResolver(client, agent_url.rstrip("/")).get_agent_card(
                signature_verifier=create_signature_verifier(
                    lambda kid, jku: PyJWK(
                        next(k for k in httpx.get(jku).json()["keys"] if k["kid"] == kid)
                    ),
                    ["ES256"],
                )
            )

    assert asyncio.run(resolve()).name == public["name"]

    # No key: no signatures, an empty key set.
    configure(None, PUSH={}, CARD_SIGNING_KEY=None, **BASIC)
    assert "signatures" not in http(agent_url + ".well-known/agent-card.json").json
    assert "signatures" not in http(agent_url + "extendedAgentCard", headers=auth).json
    assert http(agent_url + ".well-known/jwks.json").json == {"keys": []}


# -- in process ----------------------------------------------------------------------------

URL = "http://testserver/agent/"


@pytest.fixture
def signing(settings: Any) -> list[dict[str, Any]]:
    """Cards signed with PUSH's key (no key of their own): the key set."""
    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "PUSH": {"SIGNING_KEY": new_pem()}}
    return list(jwks()["keys"])


def test_the_push_key_signs_cards_unless_switched_off(settings: Any, signing: Any) -> None:
    card = signed(build_card(URL), URL)
    assert {header_of(s)["kid"] for s in card["signatures"]} == {signing[0]["kid"]}
    verify_served(card, signing)
    assert len(v03.AgentCard.model_validate(card).signatures) == 2  # v0.3's model takes them
    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "CARD_SIGNING_KEY": False}
    assert "signatures" not in signed(build_card(URL), URL)
    assert jwks()["keys"] == signing  # notifications are still signed
    # The same key named twice is in the key set once.
    pem = settings.TOOLNEXUS["PUSH"]["SIGNING_KEY"]
    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "CARD_SIGNING_KEY": pem}
    assert jwks()["keys"] == signing


def test_the_official_sdk_verifies_the_second_signature_the_first_covers_the_rest(
    signing: Any,
) -> None:
    card = signed(build_card(URL, [BasicAuthentication]), URL)
    served, v1 = card["signatures"]
    sdk_verify({**card, "signatures": [v1]}, signing)
    with pytest.raises(InvalidSignaturesError):  # it rebuilds the card without the v0.3 fields
        sdk_verify({**card, "signatures": [served]}, signing)
    verify_served({**card, "signatures": [served]}, signing)


def test_the_system_check_refuses_a_card_key_that_cannot_sign(settings: Any) -> None:
    def e132(key: Any) -> list[str]:
        settings.TOOLNEXUS = {**GOOD, "CARD_SIGNING_KEY": key}
        return [m.msg for m in our_messages() if m.id == "toolnexus_django.E132"]

    (message,) = e132(pem_of(ec.generate_private_key(ec.SECP384R1())))
    assert "CARD_SIGNING_KEY" in message and "P-256" in message
    assert e132("-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----")
    assert e132(new_pem()) == e132(None) == e132(False) == []


@pytest.mark.parametrize(
    "field, change",
    [
        ("name", lambda card: card["name"][:-1] + "X"),
        ("version", lambda card: card["version"] + "1"),
        ("url", lambda card: card["url"].replace("testserver", "testservex")),
        ("skills", lambda card: [{**card["skills"][0], "id": card["skills"][0]["id"] + "x"}]),
    ],
)
def test_one_changed_byte_breaks_the_signatures(signing: Any, field: str, change: Any) -> None:
    card = signed(build_card(URL, [BasicAuthentication]), URL)
    verify_served(card, signing)
    forged = {**card, field: change(card)}
    with pytest.raises(InvalidSignature):
        verify_served(forged, signing)
    if field != "url":  # v0.3's url is no field of the v1.0 card the SDK rebuilds
        with pytest.raises(InvalidSignaturesError):
            sdk_verify(forged, signing)


def test_the_canonical_form_is_rfc_8785(signing: Any) -> None:
    """Written out by hand: keys sorted, no spaces, UTF-8 as it is, numbers
    as ECMAScript writes them (the card itself holds no numbers today)."""
    card = signed({"name": "Zoë", "version": "1", "b": [1.50, 1e21, -0.0], "a": "\u2028"}, URL)
    expected = '{"a":"\u2028","b":[1.5,1e+21,0],"name":"Zoë","version":"1"}'
    verify(card["signatures"][0], expected.encode(), signing)


class ApiTokenAuthentication(TokenAuthentication):
    keyword = "Api-Key"


def extended_card_with_params(request: Any, card: dict[str, Any]) -> dict[str, Any]:
    card = authenticated_card(request, card)
    card["capabilities"]["extensions"].append(
        {"uri": "urn:x", "required": False, "params": {"n": 3, "f": 0.5, "e": "", "ok": False}}
    )
    return card


@pytest.mark.parametrize(
    "overrides, auth",
    [
        ({}, []),
        ({}, [BasicAuthentication, ApiTokenAuthentication]),
        ({"AGENT": {"name": "bare", "description": ""}}, []),
        ({"GRPC": {"ADDRESS": "127.0.0.1:50051"}}, []),
        (
            {
                "SECURITY_SCHEMES": {
                    "oauth": {
                        "type": "oauth2",
                        "flows": {
                            "clientCredentials": {
                                "tokenUrl": "https://id.example/token",
                                "scopes": {"tasks": "Send tasks", "empty": ""},
                            }
                        },
                    },
                    "key": {"type": "apiKey", "in": "header", "name": "X-Key"},
                    "mtls": {"type": "mutualTLS"},
                }
            },
            [BasicAuthentication],
        ),
    ],
)
def test_the_v1_form_is_what_the_official_sdk_canonicalises(
    settings: Any, overrides: dict[str, Any], auth: list[Any]
) -> None:
    settings.TOOLNEXUS = {**settings.TOOLNEXUS, **overrides}
    cards = [build_card(URL, auth)]
    request = type("Request", (), {"user": None})()
    cards.append(extended_card_with_params(request, build_card(URL, auth)))
    for card in cards:
        sdk = _canonicalize_agent_card(parse_agent_card(copy.deepcopy(card)))
        assert rfc8785.dumps(v1_form(card)).decode() == sdk


@pytest.mark.slow
def test_the_docs_card_key_recipe_signs_cards(settings: Any, tmp_path: Path) -> None:
    # The how-to's openssl line, run as printed, then its settings line (a Path to the file).
    page = Path(__file__).resolve().parents[2] / "docs" / "howto" / "authenticate.md"
    recipe = page.read_text()
    (command,) = [line for line in recipe.splitlines() if line.startswith("openssl ecparam")]
    subprocess.run(command, shell=True, cwd=tmp_path, check=True, timeout=30)
    assert '"CARD_SIGNING_KEY": BASE_DIR / "card-key.pem"' in recipe
    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "CARD_SIGNING_KEY": tmp_path / "card-key.pem"}
    assert "toolnexus_django.E132" not in [m.id for m in our_messages()]
    card = signed(build_card(URL), URL)
    keys = list(jwks()["keys"])
    verify_served(card, keys)
    sdk_verify(card, keys)
