"""DRF's SessionAuthentication on the endpoint, served both ways: a logged-in
browser session (with its CSRF token) is the Task's owner; no session, or a
session without the token, is refused as DRF refuses it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.test import Client

from tests.conftest import RpcClient, http

pytestmark = pytest.mark.django_db(transaction=True)

SESSION = "rest_framework.authentication.SessionAuthentication"
CSRF = "a" * 32  # an unmasked CSRF secret: cookie and header carry the same


def session_of(username: str) -> str:
    user = get_user_model().objects.create_user(username, password="pw")
    client = Client()
    client.force_login(user)
    return client.cookies[django_settings.SESSION_COOKIE_NAME].value


def post(url: str, payload: dict[str, Any], **headers: str) -> Any:
    return http(
        url,
        data=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json", **headers},
    )


def test_a_logged_in_session_owns_its_tasks_and_others_are_refused(
    agent_url: str, configure: Any, fake_llm: Any
) -> None:
    configure(
        fake_llm,
        AUTHENTICATION_CLASSES=[SESSION],
        PERMISSION_CLASSES=["rest_framework.permissions.IsAuthenticated"],
    )
    send = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {"message": {"role": "user", "parts": [{"kind": "text", "text": "hi"}]}},
    }
    refused = post(agent_url, send)
    assert refused.status == 403  # SessionAuthentication has no challenge to send
    assert refused.json["error"] == {
        "code": -31403,
        "message": "Authentication credentials were not provided.",
    }

    alice = session_of("alice")
    cookie = f"{django_settings.SESSION_COOKIE_NAME}={alice}; csrftoken={CSRF}"
    no_token = post(agent_url, send, Cookie=cookie)
    assert no_token.status == 403 and "CSRF" in no_token.json["error"]["message"]

    ok = post(agent_url, send, Cookie=cookie, **{"X-CSRFToken": CSRF})
    assert ok.status == 200, ok.body[:300]
    task_id = ok.json["result"]["id"]
    alice_rpc = RpcClient(agent_url, {"Cookie": cookie, "X-CSRFToken": CSRF})
    assert alice_rpc.get(task_id)["result"]["id"] == task_id

    bob = session_of("bob")
    bob_cookie = f"{django_settings.SESSION_COOKIE_NAME}={bob}; csrftoken={CSRF}"
    bob_rpc = RpcClient(agent_url, {"Cookie": bob_cookie, "X-CSRFToken": CSRF})
    assert bob_rpc.get(task_id)["error"]["code"] == -32001  # not bob's: as if unknown
