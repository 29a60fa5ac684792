"""Refusals by the endpoint's DRF classes in each binding's own words
(a2a/refusals.py): JSON-RPC answers a JSON-RPC error object, HTTP+JSON a
``google.rpc.Status`` with an ``ErrorInfo``, both with DRF's status and its
challenge (``WWW-Authenticate``) or ``Retry-After`` — served both ways, the
ASGI endpoint called as a server calls it and the WSGI views through
Django's test client (no live server)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from rest_framework.permissions import BasePermission
from rest_framework.throttling import BaseThrottle

from tests.serving.test_asgi_app import RPC_PATH, call, scope
from toolnexus_django.asgi import AgentApplication
from toolnexus_django.serving.pipeline import EndpointAccess

BASIC = "rest_framework.authentication.BasicAuthentication"
IS_AUTHENTICATED = "rest_framework.permissions.IsAuthenticated"
ALLOW_ANY = "rest_framework.permissions.AllowAny"
ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
GET_TASK = b'{"jsonrpc": "2.0", "id": 7, "method": "GetTask", "params": {"id": "x"}}'
V1 = {"a2a-version": "1.0"}


class NobodyHere(BasePermission):
    message = "Not on this endpoint."

    def has_permission(self, request: Any, view: Any) -> bool:
        return False


class EveryoneWaits(BaseThrottle):
    def allow_request(self, request: Any, view: Any) -> bool:
        return False

    def wait(self) -> float:
        return 7


def ask(
    edge: str, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], Any]:
    """(status, headers by lower-case name, JSON body) of one request, over ``edge``."""
    headers = {"content-type": "application/json", **(headers or {})}
    if edge == "asgi":
        status, got, raw = call(AgentApplication(None), scope(path, method, **headers), body)
    else:
        client = Client()
        reply = client.generic(
            method, path, body, content_type=headers.pop("content-type"), headers=headers
        )
        status, raw = reply.status_code, reply.content
        got = {k.lower(): v for k, v in reply.headers.items()}
    return status, got, json.loads(raw)


@pytest.fixture(params=["asgi", "wsgi"])
def edge(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def endpoint(settings: Any, authentication: list[Any], permissions: list[Any]) -> None:
    settings.TOOLNEXUS = {
        **settings.TOOLNEXUS,
        "AUTHENTICATION_CLASSES": authentication,
        "PERMISSION_CLASSES": permissions,
    }


def no_drf_headers(headers: dict[str, str]) -> None:
    """Nothing of DRF's own: the view's Allow, its Vary: Accept."""
    assert "allow" not in headers
    assert "accept" not in headers.get("vary", "").lower()


def test_an_unauthenticated_json_rpc_call_is_a_json_rpc_error_with_the_challenge(
    edge: str, settings: Any
) -> None:
    endpoint(settings, [BASIC], [IS_AUTHENTICATED])
    status, headers, reply = ask(edge, "POST", RPC_PATH, GET_TASK, V1)
    assert status == 401
    assert headers["www-authenticate"].startswith("Basic")
    assert headers["content-type"] == "application/json"
    no_drf_headers(headers)
    assert reply == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {
            "code": -31401,
            "message": "Authentication credentials were not provided.",
            "data": [
                {
                    "@type": ERROR_INFO,
                    "reason": "UNAUTHENTICATED",
                    "domain": "a2a-protocol.org",
                    "metadata": {},
                }
            ],
        },
    }
    # A v0.3 caller (no A2A-Version) gets v0.3's error object: no typed details.
    status, _, reply = ask(edge, "POST", RPC_PATH, GET_TASK)
    assert status == 401 and reply["error"] == {
        "code": -31401,
        "message": "Authentication credentials were not provided.",
    }
    # A body without a request in it: refused all the same, with a null id.
    status, _, reply = ask(edge, "POST", RPC_PATH, b"{not json", V1)
    assert status == 401 and reply["id"] is None and reply["error"]["code"] == -31401


def test_an_unauthenticated_http_json_call_is_a_google_rpc_status(edge: str, settings: Any) -> None:
    endpoint(settings, [BASIC], [IS_AUTHENTICATED])
    status, headers, reply = ask(edge, "GET", "/agent/tasks", headers=V1)
    assert status == 401
    assert headers["www-authenticate"].startswith("Basic")
    assert headers["content-type"] == "application/a2a+json"
    no_drf_headers(headers)
    assert reply == {
        "error": {
            "code": 401,
            "status": "UNAUTHENTICATED",
            "message": "Authentication credentials were not provided.",
            "details": [
                {
                    "@type": ERROR_INFO,
                    "reason": "UNAUTHENTICATED",
                    "domain": "a2a-protocol.org",
                    "metadata": {},
                }
            ],
        }
    }


def test_a_permission_refusal_is_403_in_each_bindings_words(edge: str, settings: Any) -> None:
    # No authentication class at all: DRF answers 403, not 401 (nothing to challenge).
    endpoint(settings, [], [f"{__name__}.NobodyHere"])
    status, headers, reply = ask(edge, "POST", RPC_PATH, GET_TASK, V1)
    assert status == 403 and "www-authenticate" not in headers
    no_drf_headers(headers)
    assert reply["id"] == 7
    assert reply["error"]["code"] == -31403
    assert reply["error"]["message"] == "Not on this endpoint."
    assert reply["error"]["data"][0]["reason"] == "UNAUTHORIZED"
    status, headers, reply = ask(edge, "GET", "/agent/tasks", headers=V1)
    assert status == 403
    no_drf_headers(headers)
    assert reply["error"]["code"] == 403
    assert reply["error"]["status"] == "PERMISSION_DENIED"
    assert reply["error"]["message"] == "Not on this endpoint."
    assert reply["error"]["details"][0]["reason"] == "UNAUTHORIZED"


def test_a_throttled_call_is_429_with_retry_after(
    edge: str, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    endpoint(settings, [BASIC], [ALLOW_ANY])
    monkeypatch.setattr(EndpointAccess, "throttle_classes", [EveryoneWaits])
    status, headers, reply = ask(edge, "POST", RPC_PATH, GET_TASK, V1)
    assert status == 429 and headers["retry-after"] == "7"
    assert reply["id"] == 7 and reply["error"]["code"] == -31429
    assert reply["error"]["data"][0]["reason"] == "RATE_LIMIT_EXCEEDED"
    assert "7 seconds" in reply["error"]["message"]
    status, headers, reply = ask(edge, "GET", "/agent/tasks", headers=V1)
    assert status == 429 and headers["retry-after"] == "7"
    assert reply["error"]["status"] == "RESOURCE_EXHAUSTED"
    assert reply["error"]["details"][0]["reason"] == "RATE_LIMIT_EXCEEDED"


def test_the_extended_card_refuses_an_anonymous_caller_the_same_way(
    edge: str, settings: Any
) -> None:
    """Anyone may call the endpoint, but the extended card is for
    authenticated callers (v1.0 §13.3): the refusal after dispatch has the
    same shape, and JSON-RPC's carries the request's id."""
    endpoint(settings, [BASIC], [ALLOW_ANY])
    body = b'{"jsonrpc": "2.0", "id": "c1", "method": "GetExtendedAgentCard"}'
    status, headers, reply = ask(edge, "POST", RPC_PATH, body, V1)
    assert status == 401 and headers["www-authenticate"].startswith("Basic")
    no_drf_headers(headers)
    assert reply["id"] == "c1" and reply["error"]["code"] == -31401
    assert reply["error"]["data"][0]["reason"] == "UNAUTHENTICATED"
    status, headers, reply = ask(edge, "GET", "/agent/extendedAgentCard", headers=V1)
    assert status == 401 and headers["www-authenticate"].startswith("Basic")
    assert reply["error"]["status"] == "UNAUTHENTICATED"
