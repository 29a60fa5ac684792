"""A2A v1.0 request field names: the proto3 JSON mapping's two spellings.

A2A v1.0's JSON is the proto3 JSON mapping of ``a2a.proto``, whose parsers
accept a field by its lowerCamelCase JSON name (``messageId``) and by its
proto field name (``message_id``). :func:`json_names` reads a v1.0 request's
params into the JSON names the rest of the wire reads, once, at the edge
(``methods.dispatch``, for JSON-RPC, HTTP+JSON and any binding that hands
the dispatch a v1.0 dict).

Only the fields of the proto's own messages are renamed, by the table below
(each request message of ``a2a.proto`` and the messages nested in it); the
free-form values (``metadata``, a data part's ``data``) are the client's
JSON and keep their keys. A message object that names one field both ways
is refused (-32602): the Python protobuf parser keeps whichever comes last
for a plain field and refuses it for an ``optional`` one; a client that
sends both has a bug either way.

A request in the JSON names costs one scan of each object's keys (for an
``_``); nothing is copied unless a proto name is found.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .jsonrpc import INVALID_PARAMS, RpcError

_UPPER = re.compile(r"[A-Z]")


def proto_name(json_name: str) -> str:
    """The proto field name of a lowerCamelCase JSON name (``messageId`` ->
    ``message_id``)."""
    return _UPPER.sub(lambda m: "_" + m[0].lower(), json_name)


@dataclass(frozen=True)
class Shape:
    """The fields of one proto message: its proto names that differ from
    their JSON names, and its fields that hold messages of the proto (one, or
    a list of them)."""

    renames: dict[str, str]
    nested: dict[str, Shape] = field(default_factory=dict)


def shape(*names: str, **nested: Shape) -> Shape:
    """A message's :class:`Shape` from its fields' JSON names (``nested``:
    the message-typed ones, by JSON name)."""
    every = [*names, *nested]
    renames = {proto_name(n): n for n in every if proto_name(n) != n}
    return Shape(renames, dict(nested))


# -- a2a.proto (v1.0), the messages a request reads -------------------------------------

AUTHENTICATION = shape("scheme", "credentials")
PUSH_CONFIG = shape("tenant", "id", "taskId", "url", "token", authentication=AUTHENTICATION)
PART = shape("text", "raw", "url", "data", "metadata", "filename", "mediaType")
MESSAGE = shape(
    "messageId", "contextId", "taskId", "role", "metadata", "extensions", "referenceTaskIds",
    parts=PART,
)  # fmt: skip
CONFIGURATION = shape(
    "acceptedOutputModes", "historyLength", "returnImmediately",
    taskPushNotificationConfig=PUSH_CONFIG,
)  # fmt: skip
SEND = shape("tenant", "metadata", message=MESSAGE, configuration=CONFIGURATION)
LIST = shape(
    "tenant", "contextId", "status", "pageSize", "pageToken", "historyLength",
    "statusTimestampAfter", "includeArtifacts",
)  # fmt: skip
PUSH_REF = shape("tenant", "taskId", "id")

#: Each operation's request message.
REQUESTS: dict[str, Shape] = {
    "send": SEND,
    "stream": SEND,
    "get": shape("tenant", "id", "historyLength"),
    "list": LIST,
    "cancel": shape("tenant", "id", "metadata"),
    "subscribe": shape("tenant", "id"),
    "push-set": PUSH_CONFIG,
    "push-get": PUSH_REF,
    "push-list": shape("tenant", "taskId", "pageSize", "pageToken"),
    "push-delete": PUSH_REF,
    "extended-card": shape("tenant"),
}


#: The operations whose request nests messages of the proto (a send's message,
#: a push config's authentication): the others are read by one scan of their keys.
NESTING = frozenset(operation for operation, request in REQUESTS.items() if request.nested)


def json_names(operation: str, params: dict[str, Any]) -> dict[str, Any]:
    """``params`` of a v1.0 ``operation`` with every proto field name of its
    request (nested messages included) read as its JSON name; -32602 when an
    object names a field both ways. ``params`` itself is never changed."""
    request = REQUESTS.get(operation)
    return params if request is None else _read(params, request, ("params",))


#: Where an object sits in the params, as path pieces (joined only for an error).
Path = tuple[str, ...]


def _read(value: dict[str, Any], message: Shape, where: Path) -> dict[str, Any]:
    out = value
    for key in value:
        if "_" in key:
            out = _renamed(value, message, where)
            break
    for name, inner in message.nested.items():
        item = out.get(name)
        read: Any
        if isinstance(item, dict):
            read = _read(item, inner, (*where, name))
        elif isinstance(item, list):
            read = _read_list(item, inner, (*where, name))
        else:
            continue
        if read is not item:
            out = dict(out) if out is value else out
            out[name] = read
    return out


def _read_list(items: list[Any], message: Shape, where: Path) -> list[Any]:
    out = items
    for index, item in enumerate(items):
        if isinstance(item, dict):
            read = _read(item, message, (*where, f"[{index}]"))
            if read is not item:
                out = list(items) if out is items else out
                out[index] = read
    return out


def _renamed(value: dict[str, Any], message: Shape, where: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, item in value.items():
        name = message.renames.get(key)
        if name is None:
            out[key] = item
            continue
        if name in value:
            at = ".".join(where).replace(".[", "[")
            raise RpcError(
                INVALID_PARAMS,
                f"Invalid params: {at} names {name} twice, as {name} and as {key}: "
                "send one of them",
                data={"field": f"{at}.{name}"},
            )
        out[name] = item
    return out


__all__ = ["NESTING", "REQUESTS", "Shape", "json_names", "proto_name"]
