"""A verified credential is remembered for CREDENTIAL_CACHE_SECONDS per process
(toolnexus_django/serving/credentials.py): a polling peer costs no token query
and no password hash per request, and a revoked credential is refused
everywhere within that bound — at once by the process that revoked it.

The clock is the module's own (``time.monotonic``), moved by the tests: the
bound is shown without waiting for it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import connection
from rest_framework.authentication import BasicAuthentication, TokenAuthentication
from rest_framework.authtoken.models import Token

from tests.conftest import basic
from tests.counting import record_statements
from tests.serving.test_asgi_app import Django, call, scope
from tests.utils import task_in
from toolnexus_django.asgi import AgentApplication
from toolnexus_django.serving import credentials
from toolnexus_django.serving.credentials import (
    MAX_REMEMBERED,
    Verified,
    VerifiedCredentials,
    verified_credentials,
)
from toolnexus_django.stores import get_task_store

pytestmark = pytest.mark.django_db(transaction=True)

CLASSES = [
    "rest_framework.authentication.BasicAuthentication",
    "rest_framework.authentication.TokenAuthentication",
    "rest_framework.authentication.SessionAuthentication",
]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(credentials.time, "monotonic", clock)
    return clock


@pytest.fixture
def endpoint(settings: Any) -> None:
    """The demo's classes (Basic, Token, sessions), AllowAny, the default bound (5 s)."""
    settings.TOOLNEXUS = {
        **settings.TOOLNEXUS,
        "STORE": "django",
        "AUTHENTICATION_CLASSES": CLASSES,
        "PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
    }


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    return record_statements(monkeypatch)


def get_task(task_id: str, **headers: str) -> tuple[int, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": task_id}}
    status, _, raw = call(
        AgentApplication(Django()),
        scope("/agent/", A2A_Version="1.0", **headers),
        json.dumps(body).encode(),
    )
    return status, json.loads(raw)


def theirs(status: int, answer: Any, task: dict[str, Any]) -> bool:
    """The caller was served ``task``: they are its owner."""
    return status == 200 and answer.get("result", {}).get("id") == task["id"]


def credential_queries(statements: list[str]) -> list[str]:
    return [sql for sql in statements if "authtoken_token" in sql or "auth_user" in sql]


def test_a_polling_peers_token_is_looked_up_once_then_remembered(
    endpoint: None, clock: Clock, statements: list[str], users: dict[str, Any]
) -> None:
    key = Token.objects.create(user=users["alice"]).key
    task = task_in("completed", owner=str(users["alice"].pk), store=get_task_store())
    statements.clear()
    for _ in range(5):
        assert theirs(*get_task(task["id"], Authorization=f"Token {key}"), task)
    assert len(credential_queries(statements)) == 1  # the first request's
    # Past the bound it is verified again, once.
    clock.now += 5.01
    assert theirs(*get_task(task["id"], Authorization=f"Token {key}"), task)
    assert len(credential_queries(statements)) == 2


def test_a_token_revoked_elsewhere_is_refused_within_the_bound(
    endpoint: None, clock: Clock, users: dict[str, Any]
) -> None:
    key = Token.objects.create(user=users["alice"]).key
    task = task_in("completed", owner=str(users["alice"].pk), store=get_task_store())
    assert theirs(*get_task(task["id"], Authorization=f"Token {key}"), task)
    # Another process deletes the key: no signal reaches this one.
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM authtoken_token")
    clock.now += 4.9
    assert theirs(*get_task(task["id"], Authorization=f"Token {key}"), task)  # within 5 s
    clock.now += 0.11
    status, answer = get_task(task["id"], Authorization=f"Token {key}")
    assert status == 401 and answer["error"]["code"] == -31401


def test_a_password_changed_elsewhere_is_refused_within_the_bound(
    endpoint: None, clock: Clock, statements: list[str], users: dict[str, Any]
) -> None:
    alice = users["alice"]
    task = task_in("completed", owner=str(alice.pk), store=get_task_store())
    assert theirs(*get_task(task["id"], **basic("alice")), task)
    statements.clear()
    assert theirs(*get_task(task["id"], **basic("alice")), task)
    assert credential_queries(statements) == []  # no user query, no password hash
    alice.set_password("new-pw")
    with connection.cursor() as cursor:  # as another process would: no signal here
        cursor.execute(
            "UPDATE auth_user SET password = %s WHERE id = %s", [alice.password, alice.pk]
        )
    clock.now += 5.01
    assert get_task(task["id"], **basic("alice"))[0] == 401
    assert theirs(*get_task(task["id"], **basic("alice", "new-pw")), task)


def test_the_process_that_revokes_refuses_at_once(
    endpoint: None, clock: Clock, users: dict[str, Any]
) -> None:
    alice = users["alice"]
    token = Token.objects.create(user=alice)
    task = task_in("completed", owner=str(alice.pk), store=get_task_store())
    assert theirs(*get_task(task["id"], Authorization=f"Token {token.key}"), task)
    assert theirs(*get_task(task["id"], **basic("alice")), task)
    token.delete()  # the admin's "delete", in this process
    assert get_task(task["id"], Authorization=f"Token {token.key}")[0] == 401
    alice.is_active = False
    alice.save()
    assert get_task(task["id"], **basic("alice"))[0] == 401


def test_wrong_credentials_are_never_remembered(
    endpoint: None, clock: Clock, statements: list[str], users: dict[str, Any]
) -> None:
    task = task_in("completed", owner=str(users["alice"].pk), store=get_task_store())
    statements.clear()
    for _ in range(3):
        assert get_task(task["id"], **basic("alice", "wrong"))[0] == 401
        assert get_task(task["id"], Authorization="Token not-a-key")[0] == 401
    assert len(credential_queries(statements)) == 6  # each one checked in full
    assert len(verified_credentials) == 0


def test_zero_seconds_remembers_nothing(
    endpoint: None, settings: Any, clock: Clock, statements: list[str], users: dict[str, Any]
) -> None:
    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "CREDENTIAL_CACHE_SECONDS": 0}
    key = Token.objects.create(user=users["alice"]).key
    task = task_in("completed", owner=str(users["alice"].pk), store=get_task_store())
    statements.clear()
    for _ in range(3):
        assert theirs(*get_task(task["id"], Authorization=f"Token {key}"), task)
    assert len(credential_queries(statements)) == 3
    assert len(verified_credentials) == 0


def test_each_request_gets_a_user_of_its_own(
    endpoint: None, clock: Clock, users: dict[str, Any]
) -> None:
    """What one request caches on its user (permissions) is not the next one's."""
    from rest_framework.request import Request

    from tests.serving.test_asgi_app import scope as make_scope
    from toolnexus_django.serving.pipeline import authenticate

    key = Token.objects.create(user=users["alice"]).key
    first, refused = authenticate(make_scope("/agent/", Authorization=f"Token {key}"), b"{}")
    assert refused is None and isinstance(first, Request)
    first.user._perm_cache = {"expenses.add_expense"}  # as has_perm leaves it
    second, _ = authenticate(make_scope("/agent/", Authorization=f"Token {key}"), b"{}")
    third, _ = authenticate(make_scope("/agent/", Authorization=f"Token {key}"), b"{}")
    assert second.user.pk == third.user.pk == users["alice"].pk
    assert second.user is not third.user and second.auth is not third.auth
    assert not hasattr(second.user, "_perm_cache")
    assert second.auth.user is second.user  # the token's user is the request's
    assert type(second.successful_authenticator) is TokenAuthentication


def test_sessions_are_never_remembered(
    endpoint: None, clock: Clock, users: dict[str, Any], client: Any
) -> None:
    task = task_in("completed", owner=str(users["alice"].pk), store=get_task_store())
    client.force_login(users["alice"])
    csrf = "a" * 32
    cookie = f"sessionid={client.cookies['sessionid'].value}; csrftoken={csrf}"
    assert theirs(*get_task(task["id"], Cookie=cookie, X_CSRFToken=csrf), task)
    assert len(verified_credentials) == 0
    client.logout()  # ends the session at once
    assert not theirs(*get_task(task["id"], Cookie=cookie, X_CSRFToken=csrf), task)


# -- the store of verified credentials (pure) -------------------------------------------


def verified(user: str, until: float) -> Verified:
    return Verified(user=user, auth=None, authenticator=BasicAuthentication, until=until)


def test_a_credential_is_the_same_caller_only_under_the_same_classes(clock: Clock) -> None:
    """A header the endpoint's classes verified says nothing to a view with
    other classes (MCP may take Basic only)."""
    store = VerifiedCredentials()
    store.remember((BasicAuthentication, TokenAuthentication), b"Token k", verified("a", 2000))
    assert store.recall((BasicAuthentication, TokenAuthentication), b"Token k") is not None
    assert store.recall((BasicAuthentication,), b"Token k") is None
    assert store.recall((BasicAuthentication, TokenAuthentication), b"Token j") is None


def test_the_store_is_bounded_and_forgets_the_oldest_first(clock: Clock) -> None:
    store = VerifiedCredentials()
    classes = (BasicAuthentication,)
    for i in range(MAX_REMEMBERED + 10):
        store.remember(classes, f"Basic {i}".encode(), verified(str(i), 2000))
    assert len(store) == MAX_REMEMBERED
    assert store.recall(classes, b"Basic 0") is None
    assert store.recall(classes, f"Basic {MAX_REMEMBERED + 9}".encode()) is not None


def test_the_store_keeps_no_header_it_was_given(clock: Clock) -> None:
    store = VerifiedCredentials()
    store.remember((BasicAuthentication,), b"Basic YWxpY2U6c2VjcmV0", verified("a", 2000))
    assert b"YWxpY2U6c2VjcmV0" not in repr(store._entries).encode()
