"""The gRPC binding's parts that need no server: A2A's errors as gRPC statuses
the official client maps back, the card's GRPC interface, a call's metadata
as the request DRF authenticates, and grpc kept out of every other module.
(Served end to end: tests/a2a/test_grpc_served.py, test_a2a_sdk.py.)"""

from __future__ import annotations

import ast
from typing import Any

import grpc
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.client.card_resolver import parse_agent_card
from a2a.client.transports.grpc import GrpcTransport
from a2a.types import a2a_pb2
from a2a.utils.errors import A2A_REASON_TO_ERROR
from a2a.utils.signing import InvalidSignaturesError, create_signature_verifier
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from google.protobuf import json_format
from google.rpc import error_details_pb2, status_pb2
from jwt import PyJWK
from rest_framework.authentication import BasicAuthentication

from tests import taskdicts
from tests.layers import PACKAGE, parse
from toolnexus_django.a2a.card import build_card
from toolnexus_django.a2a.cardsigning import signed
from toolnexus_django.a2a.dialects import Dialect, artifact_event, render_task, status_update
from toolnexus_django.a2a.jsonrpc import RpcError
from toolnexus_django.keys import jwks
from toolnexus_django.serving import grpcmessages
from toolnexus_django.serving.grpcbinding import (
    RESPONSES,
    A2AService,
    method_handlers,
    status_of,
)
from toolnexus_django.serving.grpccall import (
    CallInfo,
    MessageTooLarge,
    check_size,
    http_scope,
    receive_limit,
    request_params,
)
from toolnexus_django.serving.grpcmessages import as_message

ENDPOINT = "http://testserver/agent/"

#: (JSON-RPC code, gRPC status, the SDK's error class) — A2A v1.0 §5.4.
TABLE = [
    (-32001, grpc.StatusCode.NOT_FOUND, "TaskNotFoundError"),
    (-32002, grpc.StatusCode.FAILED_PRECONDITION, "TaskNotCancelableError"),
    (-32003, grpc.StatusCode.FAILED_PRECONDITION, "PushNotificationNotSupportedError"),
    (-32004, grpc.StatusCode.FAILED_PRECONDITION, "UnsupportedOperationError"),
    (-32005, grpc.StatusCode.INVALID_ARGUMENT, "ContentTypeNotSupportedError"),
    (-32006, grpc.StatusCode.INTERNAL, "InvalidAgentResponseError"),
    (-32007, grpc.StatusCode.FAILED_PRECONDITION, "ExtendedAgentCardNotConfiguredError"),
    (-32009, grpc.StatusCode.FAILED_PRECONDITION, "VersionNotSupportedError"),
    (-32600, grpc.StatusCode.INVALID_ARGUMENT, "InvalidRequestError"),
    (-32700, grpc.StatusCode.INVALID_ARGUMENT, "InvalidRequestError"),
    (-32601, grpc.StatusCode.NOT_FOUND, "MethodNotFoundError"),
    (-32602, grpc.StatusCode.INVALID_ARGUMENT, "InvalidParamsError"),
    (-32603, grpc.StatusCode.INTERNAL, "InternalError"),
]


@pytest.mark.parametrize(("code", "status", "sdk_error"), TABLE)
def test_each_a2a_error_is_its_grpc_status_with_the_reason_the_sdk_maps_back(
    code: int, status: grpc.StatusCode, sdk_error: str
) -> None:
    got, details = status_of(RpcError(code, "what went wrong", data={"taskId": "t-1"}))
    assert got == status
    rich = status_pb2.Status.FromString(details)
    assert (rich.code, rich.message) == (status.value[0], "what went wrong")
    info = error_details_pb2.ErrorInfo()
    assert rich.details[0].Unpack(info)
    assert info.domain == "a2a-protocol.org" and dict(info.metadata) == {"taskId": "t-1"}
    assert A2A_REASON_TO_ERROR[info.reason].__name__ == sdk_error


def rendered_results() -> list[tuple[dict[str, Any], type[Any]]]:
    """What this server answers over gRPC, in every shape a result takes."""
    message = {"role": "user", "parts": [{"kind": "text", "text": "summarise"}]}
    task = taskdicts.new_task(message, text="summarise", owner=None)
    done = taskdicts.completed(task, "a summary")
    done["metadata"] = {"source": "test", "nested": {"n": 1.5, "ok": True, "list": [1, "a"]}}
    done["artifacts"].append(
        {
            "artifactId": "a-2",
            "parts": [
                {"kind": "data", "data": {"rows": [{"x": 1}], "empty": {}}},
                {"kind": "file", "file": {"bytes": "aGVsbG8=", "mimeType": "text/plain"}},
                {"kind": "file", "file": {"uri": "https://example.com/f", "name": "f.txt"}},
            ],
        }
    )
    waiting = taskdicts.with_status(task, "input-required", "Approve it?")
    v1 = [render_task(t, Dialect.V10) for t in (task, done, waiting)]
    return [
        *((t, a2a_pb2.Task) for t in v1),
        ({"task": v1[1]}, a2a_pb2.SendMessageResponse),
        ({"task": v1[0]}, a2a_pb2.StreamResponse),
        (status_update(done, done["status"], Dialect.V10, final=True), a2a_pb2.StreamResponse),
        (artifact_event(done, done["artifacts"][1], Dialect.V10), a2a_pb2.StreamResponse),
        (
            {"tasks": v1, "nextPageToken": "", "pageSize": 3, "totalSize": 3},
            a2a_pb2.ListTasksResponse,
        ),
        (build_card(ENDPOINT), a2a_pb2.AgentCard),  # v0.3 fields to leave out
        (build_card(ENDPOINT, [BasicAuthentication]), a2a_pb2.AgentCard),  # a map: securitySchemes
    ]


def test_results_become_exactly_the_messages_parse_dict_makes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    results = rendered_results()
    expected = [json_format.ParseDict(r, k(), ignore_unknown_fields=True) for r, k in results]
    parsed: list[str] = []
    original = json_format.ParseDict

    def parse_dict(value: Any, message: Any, **kw: Any) -> Any:
        parsed.append(message.DESCRIPTOR.name)
        return original(value, message, **kw)

    monkeypatch.setattr(grpcmessages.json_format, "ParseDict", parse_dict)
    for (result, kind), want in zip(results, expected, strict=True):
        assert as_message(result, kind) == want, kind.__name__
    # ParseDict did only the small well-known types, and the card with a map.
    assert set(parsed) == {"Struct", "Value", "AgentCard"}
    # Every part shape made it through (a file's bytes, a data part's Struct).
    parts = as_message(results[1][0], a2a_pb2.Task).artifacts[1].parts  # type: ignore[attr-defined]
    assert [p.WhichOneof("content") for p in parts] == ["data", "raw", "url"]
    assert parts[1].raw == b"hello"


@pytest.mark.parametrize(
    "timestamp",
    [
        "2026-12-06T19:44:34.022Z",
        "2026-12-06T19:44:34Z",
        "2026-12-06T19:44:34.123456+00:00",
        "2026-12-06T21:44:34.5+02:00",  # an offset: the same instant in UTC
        "1969-07-20T20:17:40.25Z",  # before the epoch: negative seconds, positive nanos
        "0001-01-01T00:00:00Z",
        "9999-12-31T23:59:59.999999Z",
    ],
)
def test_a_timestamp_is_the_instant_parse_dict_makes(timestamp: str) -> None:
    """Timestamps are set as seconds and nanos (not through protobuf's
    pure-Python ``FromDatetime``): the same instant in every form."""
    result = {"id": "t-1", "status": {"state": "TASK_STATE_COMPLETED", "timestamp": timestamp}}
    want = json_format.ParseDict(result, a2a_pb2.Task())
    assert as_message(result, a2a_pb2.Task) == want
    # One without an offset (ParseDict refuses it) is UTC, as FromDatetime has it.
    naive = {"status": {"timestamp": "2026-12-06T19:44:34.25"}}
    got = as_message(naive, a2a_pb2.Task).status.timestamp
    assert (got.seconds, got.nanos) == (1796586274, 250_000_000)


@pytest.mark.parametrize(
    "result",
    [
        {"status": {"state": "TASK_STATE_NONSENSE"}},  # no such enum value
        {"status": {"timestamp": "yesterday"}},
        {"status": {"timestamp": 1796586274}},
        {"id": 5},  # a number for a string
        {"history": {"messageId": "m"}},  # an object for a list
        {"status": ["TASK_STATE_COMPLETED"]},  # a list for a message
        {"history": [{"parts": [{"raw": "not base64!"}]}]},
        {"history": [None]},
    ],
)
def test_a_value_the_constructor_refuses_is_parse_dicts_to_answer(result: dict[str, Any]) -> None:
    """Whatever the message's constructor refuses goes to ``ParseDict`` whole:
    its message, or its error."""
    try:
        want = json_format.ParseDict(result, a2a_pb2.Task(), ignore_unknown_fields=True)
    except (json_format.ParseError, ValueError, TypeError) as exc:
        with pytest.raises(type(exc)):
            as_message(result, a2a_pb2.Task)
    else:
        assert as_message(result, a2a_pb2.Task) == want


def test_the_card_declares_grpc_only_when_it_is_on(settings: Any) -> None:
    def grpc_entries() -> list[dict[str, Any]]:
        card = build_card(ENDPOINT)
        return [i for i in card["supportedInterfaces"] if i["protocolBinding"] == "GRPC"]

    assert grpc_entries() == []
    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "GRPC": {"ADDRESS": "127.0.0.1:50051"}}
    assert grpc_entries() == [
        {"url": "127.0.0.1:50051", "protocolBinding": "GRPC", "protocolVersion": "1.0"}
    ]
    # Behind a proxy, or listening on every interface: the URL clients dial.
    public = {"ADDRESS": "0.0.0.0:50051", "URL": "agent.example.com:443"}
    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "GRPC": public}
    [entry] = grpc_entries()
    assert entry["url"] == "agent.example.com:443"

    # The official client, asked for gRPC, dials that entry.
    dialed: list[str] = []

    def channel(url: str) -> Any:
        dialed.append(url)
        return grpc.insecure_channel(url)  # connects lazily: never, here

    config = ClientConfig(supported_protocol_bindings=["GRPC"], grpc_channel_factory=channel)
    client = ClientFactory(config).create(parse_agent_card(build_card(ENDPOINT)))
    transport = client._transport  # type: ignore[attr-defined]
    assert isinstance(transport, GrpcTransport)
    transport.channel.close()
    assert dialed == ["agent.example.com:443"]


def test_a_signed_card_sent_over_grpc_verifies_with_the_official_sdk(settings: Any) -> None:
    """GetExtendedAgentCard answers an AgentCard message: the signature the
    SDK checks (over its own canonical form of that message) still holds."""
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "CARD_SIGNING_KEY": pem}
    card = as_message(
        signed(build_card(ENDPOINT, [BasicAuthentication]), ENDPOINT), a2a_pb2.AgentCard
    )
    assert len(card.signatures) == 2  # type: ignore[attr-defined]
    [jwk] = jwks()["keys"]
    verify = create_signature_verifier(lambda kid, jku: PyJWK(jwk), ["ES256"])
    verify(card)  # raises when no signature holds
    card.name = "another agent"  # type: ignore[attr-defined]
    with pytest.raises(InvalidSignaturesError):
        verify(card)


class Call:
    """What a grpc.aio servicer context tells of a call: its metadata and peer."""

    def __init__(self, metadata: tuple[tuple[str, Any], ...], peer: str) -> None:
        self.metadata, self.address = metadata, peer

    def invocation_metadata(self) -> tuple[tuple[str, Any], ...]:
        return self.metadata

    def peer(self) -> str:
        return self.address


def test_a_calls_metadata_is_the_request_drf_authenticates() -> None:
    call = Call(
        (
            ("authorization", "Basic YWxpY2U6YWxpY2UtcHc="),
            ("a2a-version", "1.0"),
            ("trace-bin", b"\x00\x01"),  # binary metadata is no header
        ),
        "ipv6:[::1]:5555",
    )
    info = CallInfo.of(call)
    scope = http_scope(info, "GetTask", "agent.example.com:443")
    assert scope["path"] == "/lf.a2a.v1.A2AService/GetTask"
    assert scope["headers"] == [
        (b"authorization", b"Basic YWxpY2U6YWxpY2UtcHc="),
        (b"a2a-version", b"1.0"),
        (b"host", b"agent.example.com:443"),  # where clients dial (grpc passes no :authority)
    ]
    assert scope["client"] == ("::1", 5555)
    # A host the caller names wins.
    named = CallInfo.of(Call((("host", "other.example.com"),), "ipv4:10.0.0.1:1"))
    scope = http_scope(named, "GetTask", "agent.example.com:443")
    assert scope["headers"] == [(b"host", b"other.example.com")]
    assert scope["client"] == ("10.0.0.1", 1)


def test_every_method_takes_its_request_as_bytes_and_answers_its_response() -> None:
    """Registered without a request deserializer, so a message is bounded and
    decoded by the binding (a DecodeError in grpc's own was ``UNKNOWN``)."""
    service = a2a_pb2.DESCRIPTOR.services_by_name["A2AService"]
    handlers = method_handlers(A2AService())
    assert set(handlers) == {m.name for m in service.methods}
    for method in service.methods:
        handler = handlers[method.name]
        assert handler.request_deserializer is None
        assert handler.response_streaming == method.server_streaming
        assert RESPONSES[method.name].DESCRIPTOR.full_name == method.output_type.full_name


def test_a_message_that_does_not_decode_is_invalid_argument_with_the_a2a_reason() -> None:
    with pytest.raises(RpcError) as caught:
        request_params(b"\x18\xff", a2a_pb2.GetTaskRequest)  # a varint that never ends
    assert "lf.a2a.v1.GetTaskRequest" in caught.value.message
    code, details = status_of(caught.value)
    info = error_details_pb2.ErrorInfo()
    assert status_pb2.Status.FromString(details).details[0].Unpack(info)
    assert (code, info.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_REQUEST")
    assert request_params(b"\x12\x01t", a2a_pb2.GetTaskRequest) == {"id": "t"}


def test_a_message_over_the_body_limit_is_resource_exhausted_naming_it(settings: Any) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100
    check_size(b"x" * 100)
    with pytest.raises(MessageTooLarge) as caught:
        check_size(b"x" * 101)
    assert "DATA_UPLOAD_MAX_MEMORY_SIZE (100 bytes)" in caught.value.message
    code, details = status_of(caught.value)
    status = status_pb2.Status.FromString(details)
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and status.code == code.value[0]


@pytest.mark.parametrize(
    ("setting", "receive"),
    [(2_621_440, 5_242_880), (None, 64 * 1024 * 1024), (1000, 64 * 1024), (2**31, 2**31 - 1)],
)
def test_grpcs_own_receive_limit_is_twice_the_body_limit(
    settings: Any, setting: int | None, receive: int
) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = setting
    assert receive_limit() == receive
    if setting is None:
        check_size(b"x" * 10_000_000)  # no limit of its own


GRPC_MODULES = {
    "serving/grpcbinding.py",
    "serving/grpccall.py",
    "serving/grpcserver.py",
    "serving/grpcmessages.py",
}
GRPC_NAMES = {m.removeprefix("serving/").removesuffix(".py") for m in GRPC_MODULES}
GRPC_IMPORTS = ("grpc", "a2a", "google.protobuf", "google.rpc")


def test_only_the_grpc_modules_import_grpc_and_nothing_loads_them_up_front() -> None:
    """A process that does not serve gRPC never loads grpcio (nor the SDK):
    the master forks without it, and HTTP requests do not pay for it."""
    for path in sorted(PACKAGE.rglob("*.py")):
        name = str(path.relative_to(PACKAGE))
        tree = parse(path.read_text(), path)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                found = [("." * node.level) + (node.module or "")]
            else:
                continue
            for module in found:
                if name not in GRPC_MODULES:
                    assert not module.startswith(GRPC_IMPORTS), f"{name} imports {module}"
                loads = module.rsplit(".", 1)[-1] in GRPC_NAMES
                top_level = node in tree.body
                if loads and name not in GRPC_MODULES:
                    assert not top_level, f"{name} imports {module} up front"
