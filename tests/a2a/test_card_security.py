"""The Agent Card declares how to authenticate (toolnexus_django/a2a/card.py),
and requires it only where the endpoint does (an open endpoint's card offers
its schemes and requires none), read back by the official a2a-sdk; and check
W002 (toolnexus_django/checks/security.py) warns about an endpoint open to
anonymous callers while DEBUG is off."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.client.auth import AuthInterceptor, InMemoryContextCredentialStore
from a2a.client.card_resolver import parse_agent_card
from a2a.client.client import ClientCallContext
from a2a.client.errors import A2AClientError
from a2a.compat.v0_3 import types as v03
from a2a.types import a2a_pb2
from django.contrib.auth import get_user_model
from django.core import checks
from google.protobuf.json_format import ParseDict
from rest_framework.authentication import (
    BaseAuthentication,
    BasicAuthentication,
    TokenAuthentication,
)
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.permissions import (
    AllowAny,
    BasePermission,
    DjangoModelPermissions,
    IsAuthenticated,
)
from rest_framework.request import Request

from tests.conftest import http
from toolnexus_django.a2a.card import build_card
from toolnexus_django.checks import check_endpoint_not_open

pytestmark = pytest.mark.django_db(transaction=True)

CARD = "/agent/.well-known/agent-card.json"
SECURITY_FIELDS = ("securitySchemes", "security", "securityRequirements")
BASIC = "rest_framework.authentication.BasicAuthentication"
TOKEN = "rest_framework.authentication.TokenAuthentication"
SESSION = "rest_framework.authentication.SessionAuthentication"
IS_AUTHENTICATED = "rest_framework.permissions.IsAuthenticated"


# -- authentication classes the tests name by dotted path ------------------------------


def _alice() -> Any:
    return get_user_model().objects.get(username="alice")


class FixedTokenAuthentication(TokenAuthentication):
    """DRF's TokenAuthentication (keyword "Token") with one key, no authtoken table."""

    def authenticate_credentials(self, key: str) -> Any:
        if key != "k1":
            raise AuthenticationFailed("Invalid token.")
        return (_alice(), None)


class BearerTokenAuthentication(TokenAuthentication):
    keyword = "Bearer"


class JwtStyleAuthentication(BaseAuthentication):
    """Like simplejwt's JWTAuthentication: its challenge is ``Bearer realm=...``."""

    def authenticate(self, request: Request) -> Any:
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header.startswith("Bearer "):
            return None
        if header != "Bearer s3cret":
            raise AuthenticationFailed("Invalid token.")
        return (_alice(), None)

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="api"'


class ApiKeyAuthentication(BaseAuthentication):
    """A class the card cannot derive a scheme for: it says so with the hook."""

    def authenticate(self, request: Request) -> Any:
        return None

    def a2a_security_scheme(self) -> tuple[str, dict[str, Any]]:
        return "apikey", {"type": "apiKey", "in": "header", "name": "X-API-Key"}


class UndeclaredAuthentication(ApiKeyAuthentication):
    def a2a_security_scheme(self) -> None:
        return None


class BrokenHookAuthentication(ApiKeyAuthentication):
    def a2a_security_scheme(self) -> Any:
        return "no scheme dict"


HERE = "tests.a2a.test_card_security."


def card_over_http(live_server: Any) -> dict[str, Any]:
    reply = http(f"{live_server.url}{CARD}")
    assert reply.status == 200, reply.body[:300]
    card: dict[str, Any] = reply.json
    return card


def parsed(card: dict[str, Any]) -> a2a_pb2.AgentCard:
    """The card as the official SDK's resolver reads it (it mutates its input)."""
    return parse_agent_card(json.loads(json.dumps(card)))


def resolved(live_server: Any) -> a2a_pb2.AgentCard:
    """The card fetched and parsed by the SDK's own A2ACardResolver, over HTTP."""

    async def fetch() -> a2a_pb2.AgentCard:
        async with httpx.AsyncClient(timeout=10) as client:
            return await A2ACardResolver(client, f"{live_server.url}/agent").get_agent_card()

    return asyncio.run(fetch())


def requirements(card: a2a_pb2.AgentCard) -> list[list[str]]:
    return [sorted(r.schemes) for r in card.security_requirements]


# -- the card ---------------------------------------------------------------------------


def test_basic_authentication_is_declared_http_basic(live_server: Any, configure: Any) -> None:
    configure(None, AUTHENTICATION_CLASSES=[BASIC], PERMISSION_CLASSES=[IS_AUTHENTICATED])
    card = card_over_http(live_server)

    # v0.3 (OpenAPI) form, also validated by the SDK's v0.3 pydantic model.
    assert card["securitySchemes"]["basic"]["type"] == "http"
    assert card["securitySchemes"]["basic"]["scheme"] == "basic"
    assert card["security"] == [{"basic": []}]
    legacy = v03.AgentCard.model_validate(card)
    assert legacy.security == [{"basic": []}]
    assert legacy.security_schemes is not None
    scheme = legacy.security_schemes["basic"].root
    assert isinstance(scheme, v03.HTTPAuthSecurityScheme) and scheme.scheme == "basic"

    # v1.0 form: the SDK's resolver, and a plain v1.0 proto reader.
    assert card["securityRequirements"] == [{"schemes": {"basic": {"list": []}}}]
    for v1 in (
        parsed(card),
        resolved(live_server),
        ParseDict(card, a2a_pb2.AgentCard(), ignore_unknown_fields=True),
    ):
        assert list(v1.security_schemes) == ["basic"]
        assert v1.security_schemes["basic"].WhichOneof("scheme") == "http_auth_security_scheme"
        assert v1.security_schemes["basic"].http_auth_security_scheme.scheme == "basic"
        assert requirements(v1) == [["basic"]]


def test_token_authentication_is_declared_an_authorization_header(
    live_server: Any, configure: Any
) -> None:
    configure(None, AUTHENTICATION_CLASSES=[TOKEN], PERMISSION_CLASSES=[IS_AUTHENTICATED])
    card = card_over_http(live_server)
    token = card["securitySchemes"]["token"]
    assert (token["type"], token["in"], token["name"]) == ("apiKey", "header", "Authorization")
    assert "Authorization: Token <key>" in token["description"]
    assert card["security"] == [{"token": []}]
    legacy = v03.AgentCard.model_validate(card)
    assert legacy.security_schemes is not None
    legacy_token = legacy.security_schemes["token"].root
    assert isinstance(legacy_token, v03.APIKeySecurityScheme)
    assert (legacy_token.in_, legacy_token.name) == (v03.In.header, "Authorization")

    v1 = resolved(live_server)
    api_key = v1.security_schemes["token"].api_key_security_scheme
    assert (api_key.location, api_key.name) == ("header", "Authorization")
    assert "Authorization: Token <key>" in api_key.description
    assert requirements(v1) == [["token"]]


@pytest.mark.parametrize("cls", ["BearerTokenAuthentication", "JwtStyleAuthentication"])
def test_bearer_style_classes_are_declared_http_bearer(
    live_server: Any, configure: Any, cls: str
) -> None:
    configure(None, AUTHENTICATION_CLASSES=[HERE + cls], PERMISSION_CLASSES=[IS_AUTHENTICATED])
    card = card_over_http(live_server)
    assert card["securitySchemes"]["bearer"]["scheme"] == "bearer"
    v1 = parsed(card)
    assert v1.security_schemes["bearer"].http_auth_security_scheme.scheme == "bearer"
    assert requirements(v1) == [["bearer"]]


def test_several_classes_are_alternatives(live_server: Any, configure: Any) -> None:
    # Session is not declared (it needs a CSRF token on the POST too).
    configure(
        None,
        AUTHENTICATION_CLASSES=[SESSION, BASIC, TOKEN, HERE + "JwtStyleAuthentication"],
        PERMISSION_CLASSES=[IS_AUTHENTICATED],
    )
    card = card_over_http(live_server)
    assert list(card["securitySchemes"]) == ["basic", "token", "bearer"]
    assert card["security"] == [{"basic": []}, {"token": []}, {"bearer": []}]
    assert requirements(parsed(card)) == [["basic"], ["token"], ["bearer"]]


def test_a_custom_class_declares_its_scheme_with_the_hook(live_server: Any, configure: Any) -> None:
    configure(
        None,
        AUTHENTICATION_CLASSES=[HERE + "ApiKeyAuthentication"],
        PERMISSION_CLASSES=[IS_AUTHENTICATED],
    )
    card = card_over_http(live_server)
    assert card["securitySchemes"]["apikey"]["in"] == "header"
    assert card["security"] == [{"apikey": []}]
    api_key = resolved(live_server).security_schemes["apikey"].api_key_security_scheme
    assert (api_key.location, api_key.name) == ("header", "X-API-Key")


@pytest.mark.parametrize(
    "classes",
    [[], [SESSION], [HERE + "UndeclaredAuthentication"], [HERE + "BrokenHookAuthentication"]],
)
def test_no_declarable_class_no_security_fields(
    live_server: Any, configure: Any, classes: list[str]
) -> None:
    configure(None, AUTHENTICATION_CLASSES=classes)
    card = card_over_http(live_server)
    assert not set(SECURITY_FIELDS) & set(card)
    v1 = resolved(live_server)
    assert not v1.security_schemes and not v1.security_requirements


def test_none_follows_drf_default_authentication_classes(
    live_server: Any, configure: Any, settings: Any
) -> None:
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_AUTHENTICATION_CLASSES": [TOKEN]}
    configure(None, AUTHENTICATION_CLASSES=None)
    assert list(card_over_http(live_server)["securitySchemes"]) == ["token"]


def test_security_schemes_setting_replaces_the_derived_ones(
    live_server: Any, configure: Any
) -> None:
    # Declared required although the test project's endpoint is AllowAny: a
    # project that names its schemes may know of a gate in front of it.
    schemes = {
        "jwt": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"},
        "oidc": {"type": "openIdConnect", "openIdConnectUrl": "https://id.example/.well-known"},
    }
    configure(None, AUTHENTICATION_CLASSES=[BASIC], SECURITY_SCHEMES=schemes)
    card = card_over_http(live_server)
    assert list(card["securitySchemes"]) == ["jwt", "oidc"]
    assert card["security"] == [{"jwt": []}, {"oidc": []}]
    assert v03.AgentCard.model_validate(card).security_schemes is not None
    v1 = resolved(live_server)
    assert v1.security_schemes["jwt"].http_auth_security_scheme.bearer_format == "JWT"
    oidc = v1.security_schemes["oidc"].open_id_connect_security_scheme
    assert oidc.open_id_connect_url == "https://id.example/.well-known"
    assert requirements(v1) == [["jwt"], ["oidc"]]


def test_an_empty_security_schemes_setting_declares_none(live_server: Any, configure: Any) -> None:
    configure(None, AUTHENTICATION_CLASSES=[BASIC], SECURITY_SCHEMES={})
    assert not set(SECURITY_FIELDS) & set(card_over_http(live_server))


# -- the requirement is what the endpoint requires ------------------------------------------


def anonymous_list_status(live_server: Any) -> int:
    """The HTTP status of an anonymous ListTasks (v1.0): 200 where anyone
    may call the endpoint, 401/403 where it requires a caller to authenticate."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}})
    reply = http(
        f"{live_server.url}/agent/",
        data=body.encode(),
        headers={"Content-Type": "application/json", "A2A-Version": "1.0"},
    )
    return reply.status


def declares_no_requirement(card: dict[str, Any]) -> None:
    """Schemes (optional ways to authenticate), no requirement, in both versions."""
    assert "security" not in card and "securityRequirements" not in card
    assert v03.AgentCard.model_validate(card).security is None
    v1 = parsed(card)
    assert list(v1.security_schemes) == ["basic"]
    assert requirements(v1) == []


def declares_basic_required(card: dict[str, Any]) -> None:
    assert card["security"] == [{"basic": []}]  # v0.3
    assert card["securityRequirements"] == [{"schemes": {"basic": {"list": []}}}]  # v1.0
    assert v03.AgentCard.model_validate(card).security == [{"basic": []}]
    assert requirements(parsed(card)) == [["basic"]]


@pytest.mark.parametrize(
    "permissions",
    [["rest_framework.permissions.AllowAny"], [], None],
    ids=["AllowAny", "none", "DRF-default"],
)
def test_an_open_endpoint_offers_basic_but_requires_nothing(
    live_server: Any, configure: Any, permissions: Any
) -> None:
    configure(None, AUTHENTICATION_CLASSES=[BASIC], PERMISSION_CLASSES=permissions)
    assert anonymous_list_status(live_server) == 200  # anyone gets in...
    card = card_over_http(live_server)
    declares_no_requirement(card)  # ... and the card says so
    assert resolved(live_server).security_requirements == []


def test_the_readme_install_declares_no_requirement(
    live_server: Any, configure: Any, settings: Any
) -> None:
    # The Install sets no DRF classes: DRF's defaults, Session + Basic and
    # AllowAny. Anonymous sends succeed, so the card requires nothing.
    settings.REST_FRAMEWORK = {}
    configure(None, AUTHENTICATION_CLASSES=None, PERMISSION_CLASSES=None)
    assert anonymous_list_status(live_server) == 200
    declares_no_requirement(card_over_http(live_server))


@pytest.mark.parametrize(
    "permissions",
    [
        [IS_AUTHENTICATED],
        ["rest_framework.permissions.IsAuthenticatedOrReadOnly"],  # a send is a POST
        ["rest_framework.permissions.AllowAny", IS_AUTHENTICATED],  # every class must pass
        [HERE + "StaffOnly"],
    ],
    ids=["IsAuthenticated", "IsAuthenticatedOrReadOnly", "mixed", "custom"],
)
def test_basic_with_a_permission_that_refuses_anonymous_callers_is_required(
    live_server: Any, configure: Any, permissions: list[str]
) -> None:
    configure(None, AUTHENTICATION_CLASSES=[BASIC], PERMISSION_CLASSES=permissions)
    assert anonymous_list_status(live_server) in (401, 403)  # nobody gets in anonymously...
    card = card_over_http(live_server)
    declares_basic_required(card)  # ... and the card says how to authenticate
    assert requirements(resolved(live_server)) == [["basic"]]


class RaisingPermission(BasePermission):
    def has_permission(self, request: Any, view: Any) -> bool:
        raise RuntimeError("needs something an anonymous request does not have")


@pytest.mark.parametrize(
    ("permissions", "required"),
    [
        ([AllowAny], False),
        ([], False),
        ([IsAuthenticated], True),
        ([IsAuthenticated | AllowAny], False),  # composed: DRF's OR
        ([RaisingPermission], True),  # cannot tell: declared
        ([DjangoModelPermissions], True),  # needs a queryset: raises, declared
    ],
    ids=["AllowAny", "none", "IsAuthenticated", "or-AllowAny", "raises", "model-perms"],
)
def test_the_requirement_follows_the_permission_classes(
    configure: Any, permissions: list[Any], required: bool
) -> None:
    configure(None)
    card = build_card("http://testserver/agent/", [BasicAuthentication], permissions)
    assert "basic" in card["securitySchemes"]
    if required:
        declares_basic_required(card)
    else:
        declares_no_requirement(card)


def test_unreadable_permission_classes_declare_the_requirement(configure: Any) -> None:
    configure(None, PERMISSION_CLASSES=["no.such.Permission"])  # E113 reports it
    declares_basic_required(build_card("http://testserver/agent/", [BasicAuthentication]))


def test_each_card_is_a_fresh_copy(configure: Any) -> None:
    # The SDK's parser rewrites what it is given: the cached schemes must not change.
    configure(None)
    first = build_card("http://testserver/agent/", [TokenAuthentication])
    parse_agent_card(first)
    again = build_card("http://testserver/agent/", [TokenAuthentication])
    assert again["securitySchemes"]["token"]["type"] == "apiKey"


# -- the official SDK client authenticates with what the card says ---------------------------


@pytest.mark.parametrize(
    ("cls", "scheme", "credential"),
    [
        ("JwtStyleAuthentication", "bearer", "s3cret"),  # it sends "Bearer <credential>"
        ("FixedTokenAuthentication", "token", "Token k1"),  # the header value, as described
    ],
)
def test_the_sdk_client_authenticates_from_the_card(
    live_server: Any, configure: Any, users: Any, cls: str, scheme: str, credential: str
) -> None:
    configure(None, AUTHENTICATION_CLASSES=[HERE + cls], PERMISSION_CLASSES=[IS_AUTHENTICATED])

    async def scenario() -> None:
        credentials = InMemoryContextCredentialStore()
        await credentials.set_credentials("s1", scheme, credential)
        async with httpx.AsyncClient(timeout=10) as http_client:
            card = await A2ACardResolver(http_client, f"{live_server.url}/agent").get_agent_card()
            client = ClientFactory(ClientConfig(httpx_client=http_client)).create(
                card, interceptors=[AuthInterceptor(credentials)]
            )
            signed_in = ClientCallContext(state={"sessionId": "s1"})
            page = await client.list_tasks(a2a_pb2.ListTasksRequest(), context=signed_in)
            assert list(page.tasks) == []
            with pytest.raises(A2AClientError):  # no credential: 401
                await client.list_tasks(a2a_pb2.ListTasksRequest())

    asyncio.run(scenario())


# -- W002 -------------------------------------------------------------------------------------


def w002(settings: Any, debug: bool = False, **toolnexus: Any) -> list[checks.CheckMessage]:
    settings.DEBUG = debug
    settings.TOOLNEXUS = {**settings.TOOLNEXUS, **toolnexus}
    return [m for m in check_endpoint_not_open(None) if m.id == "toolnexus_django.W002"]


class OpenToAll(AllowAny):
    pass


class StaffOnly(BasePermission):
    def has_permission(self, request: Any, view: Any) -> bool:
        return bool(request.user and request.user.is_staff)


@pytest.mark.parametrize(
    "permissions",
    [
        ["rest_framework.permissions.AllowAny"],
        [],
        [AllowAny, HERE + "OpenToAll"],
    ],
    ids=["AllowAny", "none", "AllowAny-subclass"],
)
def test_w002_open_endpoint_with_debug_off(settings: Any, permissions: list[Any]) -> None:
    [warning] = w002(settings, PERMISSION_CLASSES=permissions)
    assert warning.level == checks.WARNING
    assert "anonymous" in warning.msg and "DEBUG" in warning.msg
    assert 'TOOLNEXUS["PERMISSION_CLASSES"]' in str(warning.hint)
    assert "IsAuthenticated" in str(warning.hint)
    assert 'TOOLNEXUS["AUTHENTICATION_CLASSES"]' in str(warning.hint)


def test_w002_follows_drf_default_permission_classes(settings: Any) -> None:
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_PERMISSION_CLASSES": []}
    [warning] = w002(settings, PERMISSION_CLASSES=None)
    assert "DEFAULT_PERMISSION_CLASSES" in warning.msg
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_PERMISSION_CLASSES": [IS_AUTHENTICATED],
    }
    assert w002(settings, PERMISSION_CLASSES=None) == []


@pytest.mark.parametrize(
    ("debug", "permissions"),
    [
        (True, ["rest_framework.permissions.AllowAny"]),
        (True, []),
        (False, [IS_AUTHENTICATED]),
        (False, ["rest_framework.permissions.AllowAny", IS_AUTHENTICATED]),
        (False, [HERE + "StaffOnly"]),  # custom: assumed to restrict
        (False, ["no.such.Permission"]),  # E113's to report
        (False, "rest_framework.permissions.AllowAny"),  # E112's to report
    ],
    ids=["debug-AllowAny", "debug-none", "IsAuthenticated", "mixed", "custom", "bad-path", "str"],
)
def test_w002_silent_otherwise(settings: Any, debug: bool, permissions: Any) -> None:
    assert w002(settings, debug=debug, PERMISSION_CLASSES=permissions) == []


def test_w002_is_registered_and_runs_with_manage_py_check(settings: Any) -> None:
    settings.DEBUG = False
    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "PERMISSION_CLASSES": []}
    assert "toolnexus_django.W002" in {m.id for m in checks.run_checks(tags=["security"])}
    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "PERMISSION_CLASSES": [IS_AUTHENTICATED]}
    assert "toolnexus_django.W002" not in {m.id for m in checks.run_checks()}
