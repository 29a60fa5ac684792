"""Who is calling, at the cost of what they sent: a request that carries no
credential the endpoint's authentication classes read is anonymous without
DRF and without a database-thread hop; one that carries a credential is
looked up as before (toolnexus_django/serving/anonymous.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import AnonymousUser
from django.test import Client
from rest_framework.authentication import (
    BasicAuthentication,
    RemoteUserAuthentication,
    SessionAuthentication,
    TokenAuthentication,
)
from rest_framework.permissions import (
    AllowAny,
    IsAdminUser,
    IsAuthenticated,
    IsAuthenticatedOrReadOnly,
)

from tests.conftest import basic
from tests.counting import record_hops, record_statements
from tests.serving.test_asgi_app import Django, call, scope
from tests.utils import task_in
from toolnexus_django.asgi import AgentApplication
from toolnexus_django.serving import endpoint
from toolnexus_django.serving.anonymous import anonymous_pass
from toolnexus_django.serving.pipeline import EndpointAccess
from toolnexus_django.stores import get_task_store

pytestmark = pytest.mark.django_db(transaction=True)

SHIPPED = [BasicAuthentication, SessionAuthentication]  # the demo's classes, as shipped
V1 = {"A2A_Version": "1.0"}


class LooksFurther(BasicAuthentication):
    """A project's subclass: it may read anything of the request."""


# -- which requests skip DRF (pure) ------------------------------------------------------


def test_the_shipped_classes_let_a_request_with_no_credential_pass_as_anonymous() -> None:
    passing = anonymous_pass(SHIPPED, [AllowAny], EndpointAccess)
    assert passing is not None
    assert passing.admits("POST", [])
    assert passing.admits("POST", [("cookie", "csrftoken=abc; theme=dark")])
    assert not passing.admits("POST", [("authorization", "Basic eDp5")])
    assert not passing.admits("POST", [("authorization", "")])  # DRF decides what it means
    assert not passing.admits("POST", [("cookie", "theme=dark; sessionid=abc")])


def test_a_session_cookie_is_nobodys_credential_without_session_authentication() -> None:
    passing = anonymous_pass([TokenAuthentication], [AllowAny], EndpointAccess)
    assert passing is not None and passing.session_cookie is None
    assert passing.admits("POST", [("cookie", "sessionid=abc")])


def test_permissions_decide_by_the_method_alone_or_drf_answers() -> None:
    read_only = anonymous_pass(SHIPPED, [IsAuthenticatedOrReadOnly], EndpointAccess)
    assert read_only is not None
    assert read_only.admits("GET", []) and not read_only.admits("POST", [])
    # An anonymous caller refused: DRF words the 401 and its challenge.
    assert anonymous_pass(SHIPPED, [IsAuthenticated], EndpointAccess) is None
    assert anonymous_pass(SHIPPED, [IsAdminUser], EndpointAccess) is None
    assert anonymous_pass(SHIPPED, [AllowAny, IsAuthenticated], EndpointAccess) is None


def test_classes_of_unknown_reach_always_go_through_drf() -> None:
    assert anonymous_pass([LooksFurther], [AllowAny], EndpointAccess) is None
    assert (
        anonymous_pass([RemoteUserAuthentication], [AllowAny], EndpointAccess) is None
    )  # a header of its own
    assert anonymous_pass(SHIPPED, [type("Mine", (AllowAny,), {})], EndpointAccess) is None


def test_throttles_and_versioning_always_go_through_drf() -> None:
    from rest_framework.throttling import AnonRateThrottle
    from rest_framework.versioning import AcceptHeaderVersioning

    throttled = type("Throttled", (EndpointAccess,), {"throttle_classes": [AnonRateThrottle]})
    assert anonymous_pass(SHIPPED, [AllowAny], throttled) is None
    versioned = type("Versioned", (EndpointAccess,), {"versioning_class": AcceptHeaderVersioning})
    assert anonymous_pass(SHIPPED, [AllowAny], versioned) is None


# -- through the ASGI endpoint -------------------------------------------------------------


@pytest.fixture
def shipped(settings: Any) -> None:
    """The endpoint as the demo ships it: Basic and session authentication, AllowAny."""
    settings.TOOLNEXUS = {
        **settings.TOOLNEXUS,
        "STORE": "django",
        "AUTHENTICATION_CLASSES": [f"{c.__module__}.{c.__name__}" for c in SHIPPED],
        "PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
    }


@pytest.fixture
def hops(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The name of every function the endpoint hands to a database thread."""
    return record_hops(monkeypatch, endpoint)


def get_task(task_id: str, **headers: str) -> tuple[int, dict[str, str], Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": task_id}}
    status, out_headers, raw = call(
        AgentApplication(Django()), scope("/agent/", **V1, **headers), json.dumps(body).encode()
    )
    return status, out_headers, json.loads(raw)


def test_an_anonymous_get_task_takes_one_hop_its_own_and_none_to_authenticate(
    shipped: None, hops: list[str]
) -> None:
    task = task_in("completed", store=get_task_store())
    status, _, answer = get_task(task["id"], Cookie="csrftoken=abc")
    assert status == 200 and answer["result"]["id"] == task["id"]
    assert hops == ["dispatch"]


def test_credentials_are_looked_up_as_before(
    shipped: None, hops: list[str], users: dict[str, Any], client: Client
) -> None:
    mine = task_in("completed", owner=str(users["alice"].pk), store=get_task_store())
    anonymous = task_in("completed", store=get_task_store())
    status, _, answer = get_task(mine["id"], **basic("alice"))
    assert status == 200 and answer["result"]["id"] == mine["id"]
    assert hops == ["admitted"]  # looked up and served in one hop, not two
    # Alice is alice, not anonymous: an anonymous caller's Task is not hers.
    assert get_task(anonymous["id"], **basic("alice"))[2]["error"]["code"] == -32001
    # ...and an anonymous caller does not see hers.
    assert get_task(mine["id"])[2]["error"]["code"] == -32001
    # A signed-in session is hers too (its cookie takes the hop).
    client.force_login(users["alice"])
    csrf = "a" * 32  # an unmasked CSRF secret: cookie and header carry the same
    cookie = f"sessionid={client.cookies['sessionid'].value}; csrftoken={csrf}"
    assert get_task(mine["id"], Cookie=cookie, X_CSRFToken=csrf)[2]["result"]["id"] == mine["id"]
    # Wrong credentials are refused by DRF, as before.
    status, headers, answer = get_task(mine["id"], **basic("alice", "wrong"))
    assert status == 401 and headers["www-authenticate"].startswith("Basic")


def test_the_extended_card_still_asks_an_anonymous_caller_to_authenticate(
    shipped: None, hops: list[str]
) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "GetExtendedAgentCard", "params": {}}
    status, headers, _ = call(
        AgentApplication(Django()), scope("/agent/", **V1), json.dumps(body).encode()
    )
    assert status == 401 and headers["www-authenticate"].startswith("Basic")
    assert hops == ["dispatch", "not_authenticated"]  # the refusal's words: DRF's


def test_drf_would_have_found_the_same_anonymous_caller(shipped: None) -> None:
    """What the skipped DRF run would have said of such a request: nobody."""
    from toolnexus_django.serving.pipeline import authenticate

    request, refused = authenticate(scope("/agent/", **V1, Cookie="csrftoken=abc"), b"{}")
    assert refused is None and isinstance(request.user, AnonymousUser)


def test_a_grpc_call_is_anonymous_by_its_metadata_alike(shipped: None) -> None:
    """The gRPC binding asks the same of a call's metadata (lower-case keys)."""
    binding = endpoint.bound()
    assert not endpoint.takes_drf(binding, "POST", (("user-agent", "grpc-python"),))
    assert endpoint.takes_drf(binding, "POST", (("authorization", "Basic eDp5"),))
    assert endpoint.takes_drf(binding, "POST", (("cookie", "sessionid=abc"),))


def test_throttles_count_anonymous_callers_on_an_open_endpoint_too(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No authentication class and AllowAny, but DRF's throttles set: each
    request goes through DRF, so the throttle counts it (it was skipped over
    ASGI, though the WSGI views ran it)."""
    from django.core.cache import cache
    from rest_framework.throttling import AnonRateThrottle

    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "AUTHENTICATION_CLASSES": []}
    # DRF's views read DEFAULT_THROTTLE_CLASSES once, as their class is made.
    monkeypatch.setattr(EndpointAccess, "throttle_classes", [AnonRateThrottle])
    monkeypatch.setattr(AnonRateThrottle, "THROTTLE_RATES", {"anon": "1/min"})
    endpoint.forget_bound()
    cache.clear()
    task = task_in("completed", store=get_task_store())
    assert get_task(task["id"])[0] == 200
    status, headers, answer = get_task(task["id"])
    assert status == 429 and "retry-after" in headers
    assert answer["error"]["code"] == -31429


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    return record_statements(monkeypatch)


@pytest.fixture
def with_tokens(settings: Any) -> None:
    """The demo's classes with DRF's TokenAuthentication: a peer agent's key."""
    settings.TOOLNEXUS = {
        **settings.TOOLNEXUS,
        "STORE": "django",
        "AUTHENTICATION_CLASSES": [
            "rest_framework.authentication.BasicAuthentication",
            "rest_framework.authentication.TokenAuthentication",
            "rest_framework.authentication.SessionAuthentication",
        ],
        "PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
    }


def test_a_token_is_looked_up_with_one_query_in_the_one_hop_that_serves_the_call(
    with_tokens: None, hops: list[str], statements: list[str], users: dict[str, Any]
) -> None:
    from rest_framework.authtoken.models import Token

    key = Token.objects.create(user=users["alice"]).key
    mine = task_in("completed", owner=str(users["alice"].pk), store=get_task_store())
    statements.clear()
    status, _, answer = get_task(mine["id"], Authorization=f"Token {key}")
    assert status == 200 and answer["result"]["id"] == mine["id"]  # alice's, so she is alice
    assert hops == ["admitted"]
    credential = [sql for sql in statements if "authtoken_token" in sql or "auth_user" in sql]
    assert len(credential) == 1, statements  # the token with its user: select_related
    # A key revoked by this process is refused at once (remembered keys:
    # tests/serving/test_remembered_credentials.py).
    Token.objects.filter(key=key).delete()
    status, headers, answer = get_task(mine["id"], Authorization=f"Token {key}")
    assert status == 401 and answer["error"]["code"] == -31401
    assert headers["www-authenticate"].startswith("Basic")  # the first class's challenge
