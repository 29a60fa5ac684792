"""Signed Agent Cards (A2A v1.0 §8.4): with a card key (``CARD_SIGNING_KEY``,
else ``PUSH["SIGNING_KEY"]``) the public and the extended card carry
``signatures``, two ES256 JWS entries by the same key, each with the
protected header ``{"alg": "ES256", "jku": <prefix>/.well-known/jwks.json,
"kid": <the key's thumbprint>, "typ": "JOSE"}`` and a detached payload:

1. the RFC 8785 (JCS) canonical form of the card as served, less
   ``signatures``: every field, the v0.3 ones too;
2. the canonical form of its v1.0 reading (:func:`v1_form`): the fields of
   the v1.0 ``AgentCard`` message (the v0.3 ones mapped as the official
   a2a-sdk maps them), as protobuf's JSON mapping writes them, empty values
   left out — the payload the a2a-sdk's ``create_signature_verifier`` checks.

The canonical form is the ``rfc8785`` package's: keys in UTF-16 order, no
spaces, strings as UTF-8, numbers as ECMAScript writes them (the cards built
here hold none, but an ``EXTENDED_AGENT_CARD`` hook's extension ``params``
may; an integer beyond 2**53 cannot be signed and fails the card).

One signature cannot serve both readings: a v1.0 reader rebuilds the card
from its message and drops what the message has no field for. A verifier
needs one of the two to hold.

ECDSA signatures are randomised, so each card's are made once and kept (per
process, the last :data:`KEPT` cards, found by the card's JSON): the served
bytes, and so the ETag, stay the same from one request to the next, and a
card served again costs one ``json.dumps`` more, not a canonicalisation.
"""

from __future__ import annotations

import copy
import hashlib
import threading
from collections import OrderedDict
from typing import Any

import rfc8785

from ..keys import card_key, detached_jws, public_jwk
from ..runtime.registry import PerProcess
from ..strictjson import dumps

#: Signed cards kept per process (the public card per host it is asked by,
#: the extended card per caller).
KEPT = 256
#: Where the key set is, relative to the endpoint's URL (serving/urls.py).
JWKS_PATH = ".well-known/jwks.json"

#: The v1.0 messages of a card (a2a.proto) -> their fields -> what a field
#: holds: a message's name, "map:<message>" (an object of them), or None (a
#: scalar, a list of scalars, a Struct, a map of strings).
FIELDS: dict[str, dict[str, str | None]] = {
    "AgentCard": {
        **dict.fromkeys(("name", "description", "version", "documentationUrl", "iconUrl")),
        **dict.fromkeys(("defaultInputModes", "defaultOutputModes")),
        "supportedInterfaces": "AgentInterface",
        "provider": "AgentProvider",
        "capabilities": "AgentCapabilities",
        "securitySchemes": "map:SecurityScheme",
        "securityRequirements": "SecurityRequirement",
        "skills": "AgentSkill",
    },
    "AgentInterface": dict.fromkeys(("url", "protocolBinding", "tenant", "protocolVersion")),
    "AgentProvider": dict.fromkeys(("url", "organization")),
    "AgentCapabilities": {
        **dict.fromkeys(("streaming", "pushNotifications", "extendedAgentCard")),
        "extensions": "AgentExtension",
    },
    "AgentExtension": dict.fromkeys(("uri", "description", "required", "params")),
    "AgentSkill": {
        **dict.fromkeys(("id", "name", "description", "tags", "examples")),
        **dict.fromkeys(("inputModes", "outputModes")),
        "securityRequirements": "SecurityRequirement",
    },
    "SecurityRequirement": {"schemes": "map:StringList"},
    "StringList": {"list": None},
    "SecurityScheme": {
        "apiKeySecurityScheme": "APIKeySecurityScheme",
        "httpAuthSecurityScheme": "HTTPAuthSecurityScheme",
        "oauth2SecurityScheme": "OAuth2SecurityScheme",
        "openIdConnectSecurityScheme": "OpenIdConnectSecurityScheme",
        "mtlsSecurityScheme": "MutualTlsSecurityScheme",
    },
    "APIKeySecurityScheme": dict.fromkeys(("description", "location", "name")),
    "HTTPAuthSecurityScheme": dict.fromkeys(("description", "scheme", "bearerFormat")),
    "OAuth2SecurityScheme": {
        **dict.fromkeys(("description", "oauth2MetadataUrl")),
        "flows": "OAuthFlows",
    },
    "OpenIdConnectSecurityScheme": dict.fromkeys(("description", "openIdConnectUrl")),
    "MutualTlsSecurityScheme": {"description": None},
    "OAuthFlows": dict.fromkeys(
        ("authorizationCode", "clientCredentials", "implicit", "password", "deviceCode"),
        "OAuthFlow",
    ),
    # The five flows' fields together: a flow never has another's.
    "OAuthFlow": dict.fromkeys(
        ("authorizationUrl", "deviceAuthorizationUrl", "tokenUrl", "refreshUrl", "scopes")
    )
    | {"pkceRequired": None},
}
#: Bools without proto3 ``optional``: false is their default, so never written.
PLAIN_BOOLS = {("AgentExtension", "required"), ("OAuthFlow", "pkceRequired")}
#: A v0.3 security scheme's ``type`` -> its v1.0 wrapper: the proto's oneof
#: field names (AgentCard.security_schemes), which the card writes beside the
#: v0.3 fields and a2a-sdk 1.3.0's reader maps to.
V1_SCHEME_KEYS = {
    "apiKey": "apiKeySecurityScheme",
    "http": "httpAuthSecurityScheme",
    "oauth2": "oauth2SecurityScheme",
    "openIdConnect": "openIdConnectSecurityScheme",
    "mutualTLS": "mtlsSecurityScheme",
}


# -- the v1.0 reading ----------------------------------------------------------------


def v1_form(card: dict[str, Any]) -> dict[str, Any]:
    """The card as a v1.0 reader rebuilds it: the v0.3 fields mapped to v1.0
    (a2a-sdk 1.3.0's ``parse_agent_card``), the ``AgentCard`` message's fields
    kept, plain bools left out when false, then empty strings, lists and
    objects left out (the a2a-sdk's canonical form, which drops them even
    where a field is required)."""
    card = copy.deepcopy({k: v for k, v in card.items() if k != "signatures"})
    if card.pop("supportsAuthenticatedExtendedCard", None):
        card.setdefault("capabilities", {}).setdefault("extendedAgentCard", True)
    url = card.pop("url", None)
    binding = card.pop("preferredTransport", "JSONRPC")
    version = card.pop("protocolVersion", "0.3.0")
    more = card.pop("additionalInterfaces", None) or []
    if "supportedInterfaces" not in card and url:
        interfaces = [(url, binding)] + [(i.get("url"), i.get("transport")) for i in more]
        card["supportedInterfaces"] = [
            {"url": u, "protocolBinding": b, "protocolVersion": version} for u, b in interfaces
        ]
    for holder in (card, *(s for s in card.get("skills") or () if isinstance(s, dict))):
        legacy = holder.pop("security", None)
        if "securityRequirements" not in holder and legacy is not None:
            holder["securityRequirements"] = [
                {"schemes": {name: {"list": scopes} for name, scopes in each.items()}}
                for each in legacy
            ]
    schemes = card.get("securitySchemes")
    for name, scheme in (schemes if isinstance(schemes, dict) else {}).items():
        wrapper = V1_SCHEME_KEYS.get(scheme.pop("type", None)) if isinstance(scheme, dict) else None
        if wrapper is not None:
            if wrapper == "apiKeySecurityScheme" and "in" in scheme:
                scheme["location"] = scheme.pop("in")
            card["securitySchemes"][name] = {wrapper: scheme}
    return _without_empty(_message(card, "AgentCard")) or {}


def _message(value: Any, name: str) -> Any:
    if not isinstance(value, dict):
        return value
    fields = FIELDS[name]
    return {
        key: _holding(item, fields[key])
        for key, item in value.items()
        if key in fields and not (item is False and (name, key) in PLAIN_BOOLS)
    }


def _holding(value: Any, kind: str | None) -> Any:
    if kind is None:
        return value
    if kind.startswith("map:"):
        inner = kind.removeprefix("map:")
        return (
            {k: _message(v, inner) for k, v in value.items()} if isinstance(value, dict) else value
        )
    if isinstance(value, list):
        return [_message(v, kind) for v in value]
    return _message(value, kind)


def _without_empty(value: Any) -> Any:
    """``value`` less its empty strings, lists, objects and nulls, all the
    way down (None: nothing is left)."""
    if isinstance(value, dict):
        kept = {
            k: v for k, v in ((k, _without_empty(v)) for k, v in value.items()) if v is not None
        }
        return kept or None
    if isinstance(value, list):
        items = [v for v in (_without_empty(v) for v in value) if v is not None]
        return items or None
    return None if value == "" else value


# -- signing -----------------------------------------------------------------------


class SignedCards:
    """The signatures of the last :data:`KEPT` cards signed, by (key, key
    set URL, the card's JSON): a card asked for again is neither signed nor
    canonicalised again."""

    def __init__(self) -> None:
        self._kept: OrderedDict[tuple[str, str, bytes], list[dict[str, str]]] = OrderedDict()
        self._lock = threading.Lock()

    def signatures(self, card: dict[str, Any], key: Any, jku: str) -> list[dict[str, str]]:
        index = (public_jwk(key)["kid"], jku, hashlib.sha256(dumps(card)).digest())
        with self._lock:
            found = self._kept.get(index)
            if found is not None:
                self._kept.move_to_end(index)
                return copy.deepcopy(found)
        made = []
        for form in (card, v1_form(card)):
            protected, signature = detached_jws(
                rfc8785.dumps(form), key, {"typ": "JOSE", "jku": jku}
            )
            made.append({"protected": protected, "signature": signature})
        with self._lock:
            self._kept[index] = made
            while len(self._kept) > KEPT:
                self._kept.popitem(last=False)
        return copy.deepcopy(made)


_signed = PerProcess("signed Agent Cards", SignedCards)


def jwks_url(endpoint_url: str) -> str:
    """The key set's absolute URL, beside the endpoint (serving/urls.py)."""
    return endpoint_url.rstrip("/") + "/" + JWKS_PATH


def signed(card: dict[str, Any], endpoint_url: str) -> dict[str, Any]:
    """``card`` with its ``signatures`` (see the module's docstring) when a
    card key is set; as it is otherwise. Signatures already on it (a hook's)
    are kept: they sign the same payload."""
    key = card_key()
    if key is None:
        return card
    earlier = list(card.get("signatures") or ())
    unsigned = {k: v for k, v in card.items() if k != "signatures"}
    made = _signed.get().signatures(unsigned, key, jwks_url(endpoint_url))
    return {**unsigned, "signatures": [*earlier, *made]}
