"""Broken and hostile model answers (issue 18, item 12 and the bound on
answers): what a model — or whatever answers at its address — sent, and the
words the failed Task must show on the wire instead of Python's.

The campaign saw ``UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff…``
and ``TypeError: string indices must be integers`` in status messages; every
entry here must fail its Task with :attr:`BadAnswer.words` and nothing of
the exception, which goes to the server log (:attr:`BadAnswer.logged`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from tests.fakes import Fail, Hang, Raw, Reply, Trickle

UNREADABLE = "The model's answer could not be read"


@dataclass(frozen=True)
class BadAnswer:
    id: str
    reply: Reply
    #: The failed Task's whole status message.
    words: str
    #: An exception class name the server log's traceback shows.
    logged: str
    style: str = "openai"
    #: CLIENT overrides (a short timeout_ms for a hang).
    client: dict[str, Any] = field(default_factory=dict)


def _json(value: Any) -> Raw:
    return Raw(json.dumps(value).encode())


def _choice(message: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}


_HELLO = {"role": "assistant", "content": "hello"}

BAD_ANSWERS: list[BadAnswer] = [
    # -- not UTF-8, not JSON ----------------------------------------------------------------
    BadAnswer("bytes-0xff", Raw(b"\xff\xfe\xfd garbage \x80\x81"),
              f"{UNREADABLE} (it is not UTF-8 text)", "UnicodeDecodeError"),
    BadAnswer("latin-1-json", Raw('{"choices": "caf\xe9"}'.encode("latin-1")),
              f"{UNREADABLE} (it is not UTF-8 text)", "UnicodeDecodeError"),
    BadAnswer("html-error-page", Raw(b"<html><body>502 Bad Gateway</body></html>",
                                     content_type="text/html"),
              f"{UNREADABLE} (it is not JSON)", "JSONDecodeError"),
    BadAnswer("empty-body", Raw(b""), f"{UNREADABLE} (it is not JSON)", "JSONDecodeError"),
    BadAnswer("truncated-json", Raw(b'{"choices": [{"message": {"content": "hel'),
              f"{UNREADABLE} (it is not JSON)", "JSONDecodeError"),
    BadAnswer("json-null", Raw(b"null"), f"{UNREADABLE} (it is not a JSON object)",
              "ModelAnswerUnreadable"),
    BadAnswer("json-list", Raw(b"[1, 2]"), f"{UNREADABLE} (it is not a JSON object)",
              "ModelAnswerUnreadable"),
    # -- JSON of the wrong shape (openai) ---------------------------------------------------
    BadAnswer("choices-a-string", _json({"choices": "x"}), f"{UNREADABLE} (it has no choices)",
              "ModelAnswerUnreadable"),
    BadAnswer("choices-empty", _json({"choices": []}), f"{UNREADABLE} (it has no choices)",
              "ModelAnswerUnreadable"),
    BadAnswer("choice-a-string", _json({"choices": ["x"]}), f"{UNREADABLE} (it has no choices)",
              "ModelAnswerUnreadable"),
    BadAnswer("no-choices-an-error", _json({"error": {"message": "quota", "type": "x"}}),
              f"{UNREADABLE} (it has no choices)", "ModelAnswerUnreadable"),
    BadAnswer("message-missing", _json({"choices": [{}]}),
              f"{UNREADABLE} (its first choice has no message)", "ModelAnswerUnreadable"),
    BadAnswer("message-a-string", _json(_choice("hello")),
              f"{UNREADABLE} (its first choice has no message)", "ModelAnswerUnreadable"),
    BadAnswer("content-an-object", _json(_choice({"role": "assistant", "content": {"a": 1}})),
              f"{UNREADABLE} (its message's content is not text)", "ModelAnswerUnreadable"),
    BadAnswer("tool-calls-a-string", _json(_choice({**_HELLO, "tool_calls": "x"})),
              f"{UNREADABLE} (its tool calls are malformed)", "ModelAnswerUnreadable"),
    BadAnswer("tool-call-without-id",
              _json(_choice({**_HELLO, "tool_calls": [{"function": {"name": "f"}}]})),
              f"{UNREADABLE} (its tool calls are malformed)", "ModelAnswerUnreadable"),
    BadAnswer("tool-call-function-a-string",
              _json(_choice({**_HELLO, "tool_calls": [{"id": "c1", "function": "f"}]})),
              f"{UNREADABLE} (its tool calls are malformed)", "ModelAnswerUnreadable"),
    BadAnswer("usage-a-string", _json({**_choice(_HELLO), "usage": "lots"}),
              f"{UNREADABLE} (its usage is not token counts)", "ModelAnswerUnreadable"),
    BadAnswer("usage-counts-strings", _json({**_choice(_HELLO), "usage": {"prompt_tokens": "9"}}),
              f"{UNREADABLE} (its usage is not token counts)", "ModelAnswerUnreadable"),
    # -- the same for the anthropic wire ----------------------------------------------------
    BadAnswer("anthropic-bytes-0xff", Raw(b"\xff\xfe"), f"{UNREADABLE} (it is not UTF-8 text)",
              "UnicodeDecodeError", style="anthropic"),
    BadAnswer("anthropic-content-a-string", _json({"content": "x"}),
              f"{UNREADABLE} (its content is not a list of blocks)", "ModelAnswerUnreadable",
              style="anthropic"),
    BadAnswer("anthropic-block-a-string", _json({"content": ["x"]}),
              f"{UNREADABLE} (its content is not a list of blocks)", "ModelAnswerUnreadable",
              style="anthropic"),
    BadAnswer("anthropic-text-a-number", _json({"content": [{"type": "text", "text": 7}]}),
              f"{UNREADABLE} (a text block holds no text)", "ModelAnswerUnreadable",
              style="anthropic"),
    BadAnswer("anthropic-tool-use-without-name",
              _json({"content": [{"type": "tool_use", "id": "t1", "input": {}}]}),
              f"{UNREADABLE} (its tool calls are malformed)", "ModelAnswerUnreadable",
              style="anthropic"),
    BadAnswer("anthropic-usage-a-list", _json({"content": [], "usage": [1, 2]}),
              f"{UNREADABLE} (its usage is not token counts)", "ModelAnswerUnreadable",
              style="anthropic"),
    # -- HTTP errors: the status in words, never the provider's body -------------------------
    BadAnswer("http-500-with-a-traceback",
              Fail(500, 'Traceback (most recent call last):\n  File "x.py"\nKeyError: 1'),
              "The model service answered HTTP 500 (Internal Server Error)", "ProviderError"),
    BadAnswer("http-503-json", Fail(503, {"error": {"message": "overloaded"}}),
              "The model service answered HTTP 503 (Service Unavailable)", "ProviderError"),
    BadAnswer("http-401", Fail(401, "invalid key sk-live-123"),
              "The model service answered HTTP 401 (Unauthorized)", "ProviderError"),
    BadAnswer("http-599-unknown", Fail(599, "?"), "The model service answered HTTP 599",
              "ProviderError"),
    BadAnswer("anthropic-http-529", Fail(529, {"type": "error"}),
              "The model service answered HTTP 529", "ProviderError", style="anthropic"),
    # -- no answer in time -------------------------------------------------------------------
    BadAnswer("hang-past-the-timeout", Hang(max_seconds=20), "The model did not answer in time",
              "RunTimeout", client={"timeout_ms": 700}),
]  # fmt: skip

#: What the failed Task's public text must never hold: Python's exception
#: names and texts, tracebacks, toolnexus's own error form, bytes' reprs.
PYTHON_TEXT = (
    r"\b[A-Z]\w*(Error|Exception|Timeout|Cancelled|Warning)\b"
    r"|Traceback|codec|can't decode|string indices|object has no attribute"
    r"|\bErrno\b|urlopen|\\x[0-9a-f]{2}|\b0x[0-9a-f]{2}\b|\bLLM \d{3}\b|File \""
)


# -- what a model sends, bounded where it is read (issue 29, items 4, 6 and 7) ----------------
# Its own block, after the list: other cases are appended to the list above.


def _nested(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


def _openai_calls(*calls: tuple[str, str, str]) -> Raw:
    """An openai turn calling each ``(id, name, arguments as JSON text)``."""
    made = [
        {"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in calls
    ]
    return _json(_choice({"role": "assistant", "content": None, "tool_calls": made}))


def _anthropic_calls(*calls: tuple[str, str, Any]) -> Raw:
    return _json(
        {"content": [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in calls]}
    )


_DEEP = {"amount": _nested(600), "description": "taxi"}
_TOO_DEEP = f"{UNREADABLE} (a tool call's arguments are nested deeper than 32 levels)"
_TOO_LONG = f"{UNREADABLE} (a number in it has more than 20 digits)"
_SHARED = f"{UNREADABLE} (two tool calls share the id 'X')"

BAD_ANSWERS.extend([
    BadAnswer("tool-arguments-600-deep",
              _openai_calls(("c1", "file_expense", json.dumps(_DEEP))),
              _TOO_DEEP, "ModelAnswerUnreadable"),
    BadAnswer("tool-arguments-deeper-than-python-parses",
              _openai_calls(("c1", "file_expense", "[" * 5000 + "]" * 5000)),
              _TOO_DEEP, "ModelAnswerUnreadable"),
    BadAnswer("tool-argument-401-digits",
              _openai_calls(("c1", "file_expense", '{"amount": ' + "9" * 401 + "}")),
              _TOO_LONG, "ModelAnswerUnreadable"),
    BadAnswer("tool-argument-1e400",
              _openai_calls(("c1", "file_expense", '{"amount": 1e400}')),
              f"{UNREADABLE} (a number in it is NaN, Infinity or too large for a double)",
              "ModelAnswerUnreadable"),
    BadAnswer("tool-calls-share-an-id",
              _openai_calls(("X", "file_expense", "{}"), ("X", "pay_supplier", "{}")),
              _SHARED, "ModelAnswerUnreadable"),
    BadAnswer("answer-nested-3000-deep",
              Raw(b'{"choices": [{"message": {"content": "hi", "x": '
                  + b"[" * 3000 + b"]" * 3000 + b"}}]}"),
              f"{UNREADABLE} (it is nested deeper than 64 levels)", "ModelAnswerUnreadable"),
    BadAnswer("anthropic-tool-input-600-deep",
              _anthropic_calls(("t1", "file_expense", _DEEP)),
              _TOO_DEEP, "ModelAnswerUnreadable", style="anthropic"),
    BadAnswer("anthropic-tool-input-401-digits",
              _anthropic_calls(("t1", "file_expense", {"amount": 10**400})),
              _TOO_LONG, "ModelAnswerUnreadable", style="anthropic"),
    BadAnswer("anthropic-tool-uses-share-an-id",
              _anthropic_calls(("X", "file_expense", {}), ("X", "pay_supplier", {})),
              _SHARED, "ModelAnswerUnreadable", style="anthropic"),
])  # fmt: skip

# -- a model that trickles past the timeout (issue 29, item 5): each socket read
# gets a byte in time, the call must still end at timeout_ms --------------------------------
BAD_ANSWERS += [
    BadAnswer("trickle-past-the-timeout", Trickle(max_seconds=20),
              "The model did not answer in time", "RunTimeout", client={"timeout_ms": 700}),
    BadAnswer("trickled-headers-past-the-timeout", Trickle(headers=True, max_seconds=20),
              "The model did not answer in time", "RunTimeout", client={"timeout_ms": 700},
              style="anthropic"),
]  # fmt: skip
