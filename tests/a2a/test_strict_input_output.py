"""Pure rules of what gets in and what goes out: the JSON-RPC parser, parts,
strict JSON on the wire and in storage, the bounds on what is stored, and
conversation keys. No database, no server."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from toolnexus_django.a2a.dialects import Dialect, render_task
from toolnexus_django.a2a.jsonrpc import MAX_NESTING, RpcError, parse_request
from toolnexus_django.agent.conversations import conversation_key, split_key
from toolnexus_django.bounds import bound_history, bound_transcript, cut_text
from toolnexus_django.lifecycle import public as parts
from toolnexus_django.strictjson import StorageJSONEncoder, dumps


def rejected(body: bytes) -> RpcError:
    with pytest.raises(RpcError) as caught:
        parse_request(body)
    return caught.value


def envelope(rid: str = "1", params: str = "{}", method: str = '"GetTask"') -> bytes:
    return f'{{"jsonrpc":"2.0","id":{rid},"method":{method},"params":{params}}}'.encode()


# -- the parser ------------------------------------------------------------------------


@pytest.mark.parametrize("rid", ["NaN", "Infinity", "-Infinity", "1e400", "-1e999"])
def test_a_non_finite_id_is_an_invalid_request_answered_with_a_null_id(rid: str) -> None:
    error = rejected(envelope(rid=rid))
    assert (error.code, error.id) == (-32600, None)


@pytest.mark.parametrize("value", ["NaN", "Infinity", "1e400", "[1, -Infinity]"])
def test_a_non_finite_number_in_params_is_invalid_params(value: str) -> None:
    error = rejected(envelope(params=f'{{"id": "t", "x": {value}}}'))
    assert (error.code, error.id) == (-32602, 1)


@pytest.mark.parametrize(
    "body",
    [
        envelope(method=r'"\ud800"'),
        envelope(rid=r'"\udfff"'),
        envelope(params=r'{"id": "a\ud83d"}'),
        envelope(params=r'{"\udc00": 1}'),
    ],
)
def test_a_lone_surrogate_anywhere_is_an_invalid_request(body: bytes) -> None:
    assert rejected(body).code == -32600


def test_a_surrogate_pair_is_just_a_character() -> None:
    assert parse_request(envelope(rid=r'"\ud83d\ude00"')).id == "\U0001f600"


def test_deep_nesting_is_refused_cheaply() -> None:
    deep = "[" * 5000 + "]" * 5000
    # However deep, whichever Python parses it (3.11's parser gives up, 3.13's does not).
    assert rejected(envelope(params=deep)).code == -32600
    assert rejected(envelope(params=deep)).data == {"maxNesting": MAX_NESTING}
    just_over = "[" * MAX_NESTING + "]" * MAX_NESTING  # one more level inside params' dict
    error = rejected(envelope(params=f'{{"x": {just_over}}}'))
    assert error.code == -32600 and error.data == {"maxNesting": MAX_NESTING}
    fine = "[" * (MAX_NESTING - 3) + "]" * (MAX_NESTING - 3)
    assert parse_request(envelope(params=f'{{"x": {fine}}}')).method == "GetTask"


@pytest.mark.parametrize("body", [b"\xed\xa0\x80", b"\xff{}", b'{"a": "\xc3"}'])
def test_bytes_that_are_not_utf8_are_a_parse_error(body: bytes) -> None:
    assert rejected(body).code == -32700


# -- parts -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("part", "problem"),
    [
        ({"kind": "text", "text": "hi"}, None),
        ({"text": "kind-less text"}, None),
        ({"kind": "data", "data": {"a": 1}, "extra": "kept"}, None),
        ({"kind": "file", "file": {"uri": "https://x", "mimeType": "text/plain"}}, None),
        ({"kind": "file", "file": {"bytes": "aGk="}}, None),
        ("just a string", "must be an object"),
        ({"kind": "text", "text": 5}, "text must be a string"),
        ({"kind": "data", "data": [1]}, "data must be an object"),
        ({"kind": "file", "file": "just-a-string"}, "file must be an object"),
        ({"kind": "file", "file": {"name": "x"}}, "needs bytes or uri"),
        ({"kind": "file", "file": {"uri": "x", "name": 3}}, "file.name must be a string"),
        ({"kind": "video"}, "unknown part kind"),
        ({"data": {}}, "needs a kind"),
        ({"kind": "text", "text": "x", "metadata": []}, "metadata must be an object"),
    ],
)
def test_what_a_part_is(part: Any, problem: str | None) -> None:
    found = parts.part_problem(part)
    assert found is None if problem is None else problem in (found or "")


def test_a_stored_task_with_bad_parts_still_renders_in_every_dialect(
    caplog: pytest.LogCaptureFixture,
) -> None:
    task = {
        "id": "old-task",
        "status": {
            "state": "completed",
            "message": {"role": "agent", "parts": [{"kind": "file", "file": "just-a-string"}]},
        },
        "history": [
            {"role": "user", "parts": ["oops", {"kind": "text", "text": "hello"}]},
            "not a message",
        ],
        "artifacts": [{"artifactId": "a", "parts": [{"kind": "data", "data": 7}]}],
    }
    for dialect in Dialect:
        rendered = render_task(task, dialect)
        json.dumps(rendered, allow_nan=False)
        assert len(rendered["history"]) == 1
        assert rendered["artifacts"][0]["parts"] == []
    assert render_task(task, Dialect.V03)["history"][0]["parts"] == [
        {"kind": "text", "text": "hello"}
    ]
    warnings = [r for r in caplog.records if "old-task" in r.getMessage()]
    assert len(warnings) == 1  # once per Task, not once per render


# -- strict JSON out ------------------------------------------------------------------------


def test_the_wire_never_carries_nan_or_a_lone_surrogate() -> None:
    out = dumps({"id": math.nan, "x": [math.inf], "text": "a\ud800b", "ok": "\U0001f600"})
    parsed = json.loads(out.decode("utf-8"), parse_constant=lambda c: pytest.fail(c))
    assert parsed == {"id": None, "x": [None], "text": "a\ufffdb", "ok": "\U0001f600"}


@pytest.mark.parametrize(
    ("value", "stored"),
    [
        ("a\x00b", "a\ufffdb"),
        ("\ud800", "\ufffd"),
        ("x\udc00", "x\ufffd"),
        ("\U0001f600", "\U0001f600"),  # a pair survives
        ("back\\u0000slash", "back\\u0000slash"),  # an escaped backslash is text
        ("é\\", "é\\"),
    ],
)
def test_storage_replaces_what_databases_refuse(value: str, stored: str) -> None:
    text = json.dumps({"v": value}, cls=StorageJSONEncoder)
    assert json.loads(text) == {"v": stored}
    assert "\\u0000" not in text.replace("\\\\u0000", "")


def test_storage_writes_nan_as_null() -> None:
    assert json.loads(json.dumps({"n": math.nan}, cls=StorageJSONEncoder)) == {"n": None}


# -- bounds -------------------------------------------------------------------------------


def test_text_is_cut_with_a_marker_that_says_how_much() -> None:
    assert cut_text("short", 10) == "short"
    cut = cut_text("x" * 25, 10)
    assert cut.startswith("x" * 10 + "\n\n[output truncated: 25 characters, the first 10")


def test_history_keeps_the_newest() -> None:
    assert bound_history(list(range(5)), 3) == [2, 3, 4]


def test_a_remembered_transcript_keeps_the_system_prompt_and_starts_at_a_user_turn() -> None:
    transcript = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "one"},
        {"role": "assistant", "tool_calls": [{"id": "c"}]},
        {"role": "tool", "tool_call_id": "c", "content": "r" * 50},
        {"role": "assistant", "content": "done one"},
        {"role": "user", "content": "two"},
        {"role": "assistant", "content": "done two"},
    ]
    kept = bound_transcript(transcript, max_messages=4, max_chars=1000)
    # The last 4 would start at a tool result without its call: start at "two".
    assert [m.get("content") for m in kept] == ["be brief", "two", "done two"]
    cut = bound_transcript(transcript, max_messages=100, max_chars=10)
    assert cut[3]["content"].startswith("r" * 10 + "\n\n[output truncated")
    anthropic = [
        {"role": "user", "content": [{"type": "text", "text": "q" * 30}]},
        {"role": "user", "content": [{"type": "tool_result", "content": "z" * 30}]},
    ]
    kept = bound_transcript(anthropic, max_messages=1, max_chars=100)
    assert kept == []  # a lone tool_result never starts a remembered transcript


# -- conversation keys ------------------------------------------------------------------------


def test_conversation_keys_differ_per_owner_and_split_back() -> None:
    keys = {conversation_key(owner, "ctx") for owner in (None, "", "1", "2", "a/b", "-")}
    assert len(keys) == 5  # None and "" are both anonymous
    assert split_key(conversation_key("a/b", "c/d")) == ("a/b", "c/d")
    assert split_key(conversation_key(None, "c")) == ("", "c")
