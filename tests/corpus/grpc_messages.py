"""Request messages a gRPC client may send that are no message of the
method's request type: random bytes (a fixed seed), valid messages cut short
or with bytes flipped, and hand-made wire-format faults (a varint that never
ends, a length past the end, a group never closed, bad UTF-8 in a string,
nesting past protobuf's depth limit), plus messages that decode but have no
JSON form (a Timestamp past year 9999, a NaN in a Struct).

The security campaign's finding: 286 of 300 random bodies were ``UNKNOWN``
("Unexpected DecodeError"). Each case here that does not decode, or has no
JSON form, must be ``INVALID_ARGUMENT`` with the A2A ``ErrorInfo`` in the
``grpc-status-details-bin`` trailer; one that happens to decode gets the
answer its content deserves (never ``UNKNOWN`` nor ``INTERNAL``); and the
server keeps serving, with no traceback in its log."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from a2a.types import a2a_pb2
from google.protobuf import json_format, message_factory
from google.protobuf.message import DecodeError, Message

SEED = 29
#: Random bodies, and mutations of valid messages (bounded: one unary call each).
RANDOM_BODIES = 300
MUTATIONS = 120

_SERVICE = a2a_pb2.DESCRIPTOR.services_by_name["A2AService"]
#: Every method of the service -> the message its request must be.
REQUESTS: dict[str, type[Message]] = {
    m.name: message_factory.GetMessageClass(m.input_type) for m in _SERVICE.methods
}
#: The methods that answer with a stream.
STREAMING = frozenset(m.name for m in _SERVICE.methods if m.server_streaming)


@dataclass(frozen=True)
class Case:
    name: str
    method: str
    body: bytes

    @property
    def refused(self) -> bool:
        """Whether the body is no valid request, or has no JSON form: then
        ``INVALID_ARGUMENT`` is the only right answer."""
        try:
            json_format.MessageToDict(REQUESTS[self.method].FromString(self.body))
        except (DecodeError, json_format.Error, ValueError):
            return True
        return False


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(number: int, payload: bytes) -> bytes:
    """A length-delimited field (a string, bytes or a message)."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def _number(kind: type[Message], name: str) -> int:
    return int(kind.DESCRIPTOR.fields_by_name[name].number)


def _nested_struct(depth: int) -> bytes:
    """A Struct holding a Struct ``depth`` deep: ``{"k": {"k": ... "x"}}``."""
    value = field(3, b"x")  # Value.string_value
    for _ in range(depth):
        entry = field(1, b"k") + field(2, value)  # map entry: key, Value
        value = field(5, field(1, entry))  # Value.struct_value = Struct{fields}
    return field(1, field(1, b"deep") + field(2, value))


def _valid() -> dict[str, bytes]:
    """One valid request per kind the mutations start from (sends return at once)."""
    message = a2a_pb2.Message(
        message_id="m-corpus", role=a2a_pb2.Role.ROLE_USER, parts=[a2a_pb2.Part(text="hello")]
    )
    send = a2a_pb2.SendMessageRequest(
        message=message,
        configuration=a2a_pb2.SendMessageConfiguration(return_immediately=True),
    )
    return {
        "SendMessage": send.SerializeToString(),
        "GetTask": a2a_pb2.GetTaskRequest(id="t-corpus", history_length=3).SerializeToString(),
        "ListTasks": a2a_pb2.ListTasksRequest(page_size=5, page_token="abc").SerializeToString(),
        "CancelTask": a2a_pb2.CancelTaskRequest(id="t-corpus").SerializeToString(),
        "SubscribeToTask": a2a_pb2.SubscribeToTaskRequest(id="t-corpus").SerializeToString(),
    }


def handmade() -> list[Case]:
    get_id = _number(a2a_pb2.GetTaskRequest, "id")
    metadata = _number(a2a_pb2.SendMessageRequest, "metadata")
    late = a2a_pb2.ListTasksRequest()
    late.status_timestamp_after.seconds = 253_402_300_800  # 10000-01-01
    nan = a2a_pb2.SendMessageRequest()
    nan.metadata.fields["x"].number_value = math.nan
    return [
        Case("a varint that never ends", "GetTask", b"\x18\xff"),
        Case("a length past the end", "GetTask", field(get_id, b"abcdef")[:4]),
        Case("field number 0", "GetTask", b"\x02\x01a"),
        Case("an end-group with no start", "GetTask", b"\x0c"),
        Case("a group never closed", "ListTasks", b"\x0b"),
        Case("wire type 6", "CancelTask", b"\x0e"),
        Case("wire type 7", "SubscribeToTask", b"\x0f"),
        Case("an 11-byte varint", "ListTasks", b"\x20" + b"\xff" * 10 + b"\x01"),
        Case("bad UTF-8 in a string", "GetTask", field(get_id, b"\xff\xfe")),
        Case("a lone surrogate in UTF-8", "CancelTask", field(get_id, b"\xed\xa0\x80")),
        Case(
            "a Struct nested past protobuf's limit",
            "SendMessage",
            field(metadata, _nested_struct(3000)),
        ),
        Case("a timestamp past year 9999", "ListTasks", late.SerializeToString()),
        Case("NaN in a Struct", "SendMessage", nan.SerializeToString()),
        Case("NaN in a streamed send", "SendStreamingMessage", nan.SerializeToString()),
        Case("a length of 2**63", "SendMessage", varint(metadata << 3 | 2) + varint(2**63)),
    ]


def _mutated(rng: random.Random, body: bytes) -> bytes:
    """``body`` cut short, with bytes flipped, or with junk appended."""
    how = rng.randrange(3)
    if how == 0:
        return body[: rng.randrange(1, len(body))]
    if how == 1:
        out = bytearray(body)
        for _ in range(rng.randint(1, 3)):
            out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
        return bytes(out)
    return body + rng.randbytes(rng.randint(1, 8))


def random_cases(seed: int = SEED) -> list[Case]:
    rng = random.Random(seed)
    methods = sorted(REQUESTS)
    cases = [
        Case(f"random #{i}", methods[i % len(methods)], rng.randbytes(rng.randint(1, 64)))
        for i in range(RANDOM_BODIES)
    ]
    valid = sorted(_valid().items())
    for i in range(MUTATIONS):
        method, body = valid[i % len(valid)]
        cases.append(Case(f"mutated {method} #{i}", method, _mutated(rng, body)))
    return cases


CASES: list[Case] = handmade() + random_cases()
