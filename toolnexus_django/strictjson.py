"""Strict JSON (RFC 8259) on the way out: for the wire and for storage.

Python's ``json`` writes ``NaN``/``Infinity`` (not JSON) and keeps lone UTF-16
surrogates in strings (which cannot be encoded as UTF-8 and which
PostgreSQL's jsonb refuses), and PostgreSQL refuses NUL anywhere in a jsonb
document. Input that carries any of these is refused at the endpoint, but a
model, a tool or an older stored Task can still produce them, and one bad
character must never turn a reply into an HTML 500 or a Task into one that
cannot be saved. So everything written goes through here:

- :func:`dumps` — the bytes of a JSON-RPC response or an SSE event: non-finite
  numbers become ``null``, lone surrogates U+FFFD;
- :class:`StorageJSONEncoder` — the encoder of the app's JSON model fields and
  of the file store: also NUL becomes U+FFFD, the same on every database.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

#: A lone surrogate as a character (``ensure_ascii=False`` output).
_SURROGATE = re.compile("[\ud800-\udfff]")

#: One escape of ``ensure_ascii=True`` output, left to right, so an escaped
#: backslash (``\\``) is consumed as a unit and never read as the start of an
#: escape: a valid surrogate pair, a lone surrogate, NUL, or any other escape.
_ESCAPE = re.compile(
    r"(\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    r"|(\\u[dD][89a-fA-F][0-9a-fA-F]{2}|\\u0000)"
    r"|\\."
)


def _clean_escape(match: re.Match[str]) -> str:
    return "\\ufffd" if match.group(2) else match.group(0)


def _finite(value: Any, depth: int = 0) -> Any:
    """``value`` with every non-finite float replaced by None (the slow path)."""
    if depth > 200:
        return None
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v, depth + 1) for v in value]
    return value


def dumps(payload: Any) -> bytes:
    """Compact UTF-8 JSON of ``payload`` that any strict parser accepts."""
    try:
        text = json.dumps(payload, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except ValueError:
        text = json.dumps(_finite(payload), ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text).encode("utf-8")


class StorageJSONEncoder(json.JSONEncoder):
    """What the app stores: strict JSON with no NUL (PostgreSQL's jsonb
    refuses it; stored as U+FFFD on every database alike), no lone surrogate
    (U+FFFD) and no NaN/Infinity (null)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_nan"] = False
        kwargs["ensure_ascii"] = True  # every escape is then visible to _ESCAPE
        super().__init__(*args, **kwargs)

    def encode(self, o: Any) -> str:
        try:
            text = super().encode(o)
        except ValueError:
            text = super().encode(_finite(o))
        if "\\u" not in text:
            return text
        return _ESCAPE.sub(_clean_escape, text)
