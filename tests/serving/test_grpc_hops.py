"""How many database-thread hops a gRPC call takes: an anonymous caller DRF
would admit, one (its own); a caller DRF must see, one too — its classes and
the call share it, as over ASGI (``endpoint.admitted``) — where two (one to
authenticate, one to serve) cost a thread hand-off and the GIL back and forth
each (a token-authenticated gRPC GetTask: 0.92 ms of CPU with two hops, 0.75
with one, the best of 6 runs on a 2-core box). What each is answered stays as
before: the caller's own Task, another's NOT_FOUND, wrong credentials
UNAUTHENTICATED before the version or the message is read."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest
from a2a.types import a2a_pb2

from tests.conftest import basic
from tests.counting import record_hops
from tests.utils import task_in
from toolnexus_django.serving import grpcbinding, grpccall
from toolnexus_django.serving.grpcbinding import A2AService
from toolnexus_django.stores import get_task_store

pytestmark = pytest.mark.django_db(transaction=True)

TOKEN_CLASSES = [
    "rest_framework.authentication.BasicAuthentication",
    "rest_framework.authentication.TokenAuthentication",
    "rest_framework.authentication.SessionAuthentication",
]


@pytest.fixture
def shipped(settings: Any) -> None:
    """The demo's classes (Basic, Token, Session) and AllowAny."""
    settings.TOOLNEXUS = {
        **settings.TOOLNEXUS,
        "STORE": "django",
        "AUTHENTICATION_CLASSES": TOKEN_CLASSES,
        "PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
    }


@pytest.fixture
def hops(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The name of every function the binding hands to a database thread."""
    return record_hops(monkeypatch, grpcbinding, grpccall)


class Aborted(Exception):
    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(details)
        self.code = code


class Context:
    """What the binding reads of a grpc.aio servicer context, and its abort."""

    def __init__(self, *metadata: tuple[str, str]) -> None:
        self.metadata = (("a2a-version", "1.0"), *metadata)
        self.trailing: Any = None

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return self.metadata

    def peer(self) -> str:
        return "ipv4:127.0.0.1:5555"

    def set_trailing_metadata(self, metadata: Any) -> None:
        self.trailing = metadata

    async def abort(self, code: grpc.StatusCode, details: str) -> None:
        raise Aborted(code, details)


def get_task(task_id: str, *metadata: tuple[str, str]) -> Any:
    service = A2AService("http://testserver/agent/", "testserver:50051")
    raw = a2a_pb2.GetTaskRequest(id=task_id).SerializeToString()
    return asyncio.run(service.GetTask(raw, Context(*metadata)))


def authorization(header: dict[str, str]) -> tuple[str, str]:
    return ("authorization", header["Authorization"])


def test_an_anonymous_get_task_takes_one_hop_its_own(shipped: None, hops: list[str]) -> None:
    task = task_in("completed", store=get_task_store())
    assert get_task(task["id"]).id == task["id"]
    assert hops == ["dispatch"]


def test_a_caller_drf_must_see_is_authenticated_and_served_in_one_hop(
    shipped: None, hops: list[str], users: dict[str, Any]
) -> None:
    from rest_framework.authtoken.models import Token

    alice = str(users["alice"].pk)
    mine = task_in("completed", owner=alice, store=get_task_store())
    anonymous = task_in("completed", store=get_task_store())
    assert get_task(mine["id"], authorization(basic("alice"))).id == mine["id"]
    assert hops == ["_serve_admitted"]  # not ["grpc_caller", "dispatch"]
    key = Token.objects.create(user=users["alice"]).key
    assert get_task(mine["id"], ("authorization", f"Token {key}")).id == mine["id"]
    # Alice is alice: an anonymous caller's Task is not hers, nor hers theirs.
    with pytest.raises(Aborted) as caught:
        get_task(anonymous["id"], authorization(basic("alice")))
    assert caught.value.code == grpc.StatusCode.NOT_FOUND
    with pytest.raises(Aborted) as caught:
        get_task(mine["id"])
    assert caught.value.code == grpc.StatusCode.NOT_FOUND


def test_wrong_credentials_are_refused_before_the_version_or_the_message_is_read(
    shipped: None, hops: list[str], users: dict[str, Any]
) -> None:
    service = A2AService("http://testserver/agent/", "testserver:50051")
    wrong = authorization(basic("alice", "wrong"))
    context = Context(wrong, ("a2a-version", "0.3"))  # a version the binding refuses
    with pytest.raises(Aborted) as caught:
        asyncio.run(service.GetTask(b"\x18\xff", context))
    assert caught.value.code == grpc.StatusCode.UNAUTHENTICATED
    assert hops == ["_serve_admitted"]
    # Right credentials: the version is checked next, then the message.
    right = authorization(basic("alice"))
    with pytest.raises(Aborted) as caught:
        asyncio.run(service.GetTask(b"\x18\xff", Context(right, ("a2a-version", "0.3"))))
    assert caught.value.code == grpc.StatusCode.FAILED_PRECONDITION
    with pytest.raises(Aborted) as caught:
        asyncio.run(service.GetTask(b"\x18\xff", Context(right)))
    assert caught.value.code == grpc.StatusCode.INVALID_ARGUMENT
