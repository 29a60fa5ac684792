"""v1.0 results (the proto3 JSON mapping's dicts) into the a2a-sdk's protobuf
messages, for the gRPC binding.

``json_format.ParseDict`` does this for any message, but it is pure Python
and checks every field generically: measured on a completed Task's GetTask,
70-170 µs against 7-15 µs for JSON-RPC's strict JSON of the same result. The
results this server renders use few shapes (``a2a.dialects``): scalars,
enums by name, nested and repeated messages, ``Timestamp``, ``Struct`` /
``Value`` (metadata, data parts) and base64 ``bytes`` (raw parts). Those are
filled here directly, each message type's fields looked up once; anything
else (a map field, an unexpected value) goes to ``ParseDict`` whole, so the
result is ``ParseDict``'s either way (a test holds the two together).
"""

from __future__ import annotations

import base64
from datetime import datetime
from typing import Any

from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

STRUCTS = ("google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue")
TIMESTAMP = "google.protobuf.Timestamp"
BYTES = FieldDescriptor.TYPE_BYTES


class Unusual(Exception):
    """A value this module leaves to ``ParseDict``."""


#: message type -> {JSON name and proto name: (field, repeated)}.
_FIELDS: dict[Descriptor, dict[str, tuple[FieldDescriptor, bool]]] = {}


def _repeated(field: FieldDescriptor) -> bool:
    found = getattr(field, "is_repeated", None)  # protobuf >= 6; ``label`` before
    return bool(found) if found is not None else field.label == FieldDescriptor.LABEL_REPEATED


def _fields(descriptor: Descriptor) -> dict[str, tuple[FieldDescriptor, bool]]:
    found = _FIELDS.get(descriptor)
    if found is None:
        found = {}
        for field in descriptor.fields:
            if field.message_type is not None and field.message_type.GetOptions().map_entry:
                continue  # maps: ParseDict's (unknown here, so Unusual below)
            found[field.json_name] = found[field.name] = (field, _repeated(field))
        _FIELDS[descriptor] = found
    return found


def as_message(result: Any, kind: type[Message]) -> Message:
    """``result`` (a v1.0 dict) as a ``kind`` message; fields the proto lacks
    (the card's v0.3 ones) are left out, as ``ignore_unknown_fields`` does."""
    message = kind()
    try:
        _fill(message, result)
    except (Unusual, KeyError, TypeError, ValueError):
        message = kind()
        json_format.ParseDict(result, message, ignore_unknown_fields=True)
    return message


def _fill(message: Message, value: Any) -> None:
    if not isinstance(value, dict):
        raise Unusual
    descriptor = message.DESCRIPTOR
    fields = _fields(descriptor)
    for key, item in value.items():
        known = fields.get(key)
        if known is None:
            if any(key in (f.json_name, f.name) for f in descriptor.fields):
                raise Unusual  # a map field
            continue
        field, repeated = known
        if item is None:
            continue
        if repeated:
            if not isinstance(item, list):
                raise Unusual
            container = getattr(message, field.name)
            if field.message_type is not None:
                for entry in item:
                    _set_message(container.add(), entry)
            else:
                container.extend(_scalar(field, entry) for entry in item)
        elif field.message_type is not None:
            _set_message(getattr(message, field.name), item)
        else:
            setattr(message, field.name, _scalar(field, item))


def _set_message(message: Message, value: Any) -> None:
    name = message.DESCRIPTOR.full_name
    if name == TIMESTAMP:
        message.FromDatetime(datetime.fromisoformat(value))
    elif name in STRUCTS:
        json_format.ParseDict(value, message)  # C-backed enough: few, small
    else:
        message.SetInParent()  # present even when empty
        _fill(message, value)


def _scalar(field: FieldDescriptor, value: Any) -> Any:
    if field.enum_type is not None:
        return field.enum_type.values_by_name[value].number if isinstance(value, str) else value
    if field.type == BYTES:
        return base64.b64decode(value)
    if isinstance(value, (dict, list)):
        raise Unusual
    return value
