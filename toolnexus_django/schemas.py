"""Checking an Answer's data against its Request's ``data.schema`` (JSON Schema).

Every answer is checked, whichever way it arrives (an A2A message, the
admin's forms, the Python API): the admin's generated form is only a
convenience, and a peer's data parts are not trusted at all. The schema's
own ``$schema`` picks the draft (2020-12 when it names none); ``format`` is
checked where the validator can (date, email, ...). References are never
fetched over the network.
"""

from __future__ import annotations

from typing import Any

from jsonschema import exceptions, validators
from jsonschema.protocols import Validator

#: At most this many violations are reported, each message at most this long.
MAX_VIOLATIONS = 20
MAX_MESSAGE_CHARS = 300


def _validator(schema: Any) -> Validator:
    cls = validators.validator_for(schema, default=validators.Draft202012Validator)
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def _pointer(path: Any) -> str:
    return "".join(f"/{str(p).replace('~', '~0').replace('/', '~1')}" for p in path)


def violations_of(data: Any, schema: Any) -> list[dict[str, str]]:
    """How ``data`` breaks ``schema``, as ``[{"path": JSON pointer, "message"}]``
    (empty when it satisfies it). A schema that is not valid JSON Schema
    accepts nothing: one violation says so."""
    try:
        validator = _validator(schema)
    except exceptions.SchemaError as exc:
        return [{"path": "", "message": f"the request's schema is invalid: {exc.message}"[:300]}]
    found = sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    return [
        {"path": _pointer(e.absolute_path), "message": e.message[:MAX_MESSAGE_CHARS]}
        for e in found[:MAX_VIOLATIONS]
    ]
