"""Whatever bytes arrive, the endpoint answers with a JSON-RPC envelope in
strict JSON — never an HTML page, never NaN or a lone surrogate, never a
traceback in the log for a client's mistake — and loses nothing.

A generated corpus (hypothesis, fixed seed, bounded count) plus every case
found by hand, against the live endpoint over real HTTP; then the same rules
for every event of a stream; then good Tasks are unchanged and the server
serves as before."""

from __future__ import annotations

import json
import logging
import math
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import HttpReply, RpcClient, http
from tests.fakes import FakeLLM, Text, ToolCall
from toolnexus_django.stores import get_task_store

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

V1 = {"A2A-Version": "1.0"}
METHODS = [
    "SendMessage",
    "GetTask",
    "ListTasks",
    "CancelTask",
    "message/send",
    "tasks/get",
    "tasks/cancel",
    "tasks/pushNotificationConfig/set",
    "GetExtendedAgentCard",
]
STREAM_METHODS = ["message/stream", "SendStreamingMessage", "tasks/resubscribe", "SubscribeToTask"]


# -- the invariants --------------------------------------------------------------------


def _strict(text: str) -> Any:
    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


def _no_lone_surrogates(value: Any) -> None:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            item.encode("utf-8")  # raises on a lone surrogate
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def check_envelope(payload: Any) -> dict[str, Any]:
    """One JSON-RPC response object as RFC 8259 and JSON-RPC 2.0 want it."""
    assert isinstance(payload, dict), payload
    _no_lone_surrogates(payload)
    assert payload.get("jsonrpc") == "2.0", payload
    assert ("result" in payload) != ("error" in payload), payload
    rid = payload.get("id")
    assert rid is None or isinstance(rid, (str, int)) or math.isfinite(rid), payload
    if "error" in payload:
        error = payload["error"]
        assert isinstance(error["code"], int) and not isinstance(error["code"], bool)
        assert isinstance(error["message"], str) and error["message"]
    return payload


def check_reply(reply: HttpReply) -> list[dict[str, Any]]:
    """The envelopes of one HTTP reply (one, or one per SSE event)."""
    assert reply.status == 200, (reply.status, reply.body[:300])
    text = reply.body.decode("utf-8")  # strict: raises on anything that is not UTF-8
    kind = reply.headers.get("content-type", "")
    if kind.startswith("application/json"):
        return [check_envelope(_strict(text))]
    assert kind.startswith("text/event-stream"), (kind, text[:300])
    events = [line[len("data: ") :] for line in text.split("\n") if line.startswith("data: ")]
    assert events, text[:300]
    return [check_envelope(_strict(event)) for event in events]


@pytest.fixture
def no_tracebacks(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """A client's mistake never reaches the log as an error or a traceback."""
    caplog.set_level(logging.WARNING)
    yield
    bad = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert not bad, [r.getMessage() for r in bad[:5]]


# -- the cases found by hand -------------------------------------------------------------


def body(rid: str = "1", method: str = '"SendMessage"', params: str = "{}") -> bytes:
    return f'{{"jsonrpc":"2.0","id":{rid},"method":{method},"params":{params}}}'.encode()


def msg(parts: str = '[{"kind":"text","text":"hi"}]', **fields: str) -> str:
    extra = "".join(f',"{k}":{v}' for k, v in fields.items())
    return f'{{"message":{{"role":"user","parts":{parts}{extra}}}}}'


#: (body, expected code, expected id) — every kind of bad input the issue lists.
KNOWN_CASES: list[tuple[bytes, int, Any]] = [
    (body(method=r'"\ud800"'), -32600, 1),
    (body(rid=r'"\udfff"'), -32600, None),
    (body(rid="NaN"), -32600, None),
    (body(rid="Infinity"), -32600, None),
    (body(rid="-Infinity"), -32600, None),
    (body(rid="1e400"), -32600, None),
    (body(params=msg('[{"kind":"data","data":{"x":NaN}}]')), -32602, 1),
    (body(params=msg('[{"kind":"data","data":{"x":Infinity}}]')), -32602, 1),
    (body(params=msg('[{"kind":"text","text":"a\\ud800"}]')), -32600, 1),
    # Too deep for some Pythons' parser, a batch for others: -32600 either way.
    (b"[" * 5000 + b"]" * 5000, -32600, None),
    (body(params='{"a":' + "[" * 200 + "]" * 200 + "}"), -32600, 1),
    (body(params=msg(contextId='"ctx\\u0000x"')), -32602, 1),
    (body(params=msg(messageId='"m\\u0000"')), -32602, 1),
    (body(params=msg('[{"kind":"file","file":"just-a-string"}]')), -32602, 1),
    (body(params=msg('["not a part"]')), -32602, 1),
    (body(params=msg('[{"kind":"data","data":[1,2]}]')), -32602, 1),
    (body(params=msg('[{"kind":"text","text":{"not":"a string"}}]')), -32602, 1),
    (body(params=msg('[{"kind":"video","url":"x"}]')), -32602, 1),
    (body(params=msg(contextId='"' + "c" * 300 + '"')), -32602, 1),
    (b"\xed\xa0\x80", -32700, None),
    (b"\x00\x01\x02", -32700, None),
    (b'{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}', -32700, None),
    (b"", -32700, None),
]


@pytest.mark.parametrize("store", ["django", "file", "memory"])
def test_every_known_hostile_body_gets_a_clean_error(
    rpc: RpcClient,
    configure: Any,
    fake_llm: FakeLLM,
    no_tracebacks: None,
    store: str,
    tmp_path: Any,
) -> None:
    configure(fake_llm, store=f"file:{tmp_path}" if store == "file" else store)
    for raw, code, rid in KNOWN_CASES:
        for headers in ({}, V1):
            [envelope] = check_reply(rpc.raw(raw, headers=headers))
            assert envelope["error"]["code"] == code, (raw[:80], envelope)
            assert envelope["id"] == rid, (raw[:80], envelope)


def test_a_body_over_the_upload_limit_is_an_invalid_request_naming_the_limit(
    rpc: RpcClient, configure: Any, settings: Any
) -> None:
    configure(None)
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10_000
    big = body(params=msg(f'[{{"kind":"text","text":"{"x" * 20_000}"}}]'))
    [envelope] = check_reply(rpc.raw(big))
    assert envelope["error"]["code"] == -32600
    assert envelope["error"]["data"] == {"limit": 10_000}
    [v1] = check_reply(rpc.raw(big, headers=V1))
    assert v1["error"]["data"][0]["metadata"] == {"limit": "10000"}


def test_a_stored_task_with_a_bad_part_still_renders_everywhere(
    rpc: RpcClient, configure: Any, no_tracebacks: None
) -> None:
    """Tasks stored before parts were checked: GetTask, ListTasks and
    SubscribeToTask keep answering (the bad part is left out)."""
    configure(None, store="django")
    task_id = str(uuid.uuid4())
    get_task_store().save(
        {
            "id": task_id,
            "contextId": "c",
            "kind": "task",
            "status": {"state": "working", "timestamp": "2026-01-01T00:00:00Z"},
            "history": [
                {
                    "kind": "message",
                    "role": "user",
                    "messageId": "m",
                    "parts": [
                        {"kind": "file", "file": "just-a-string"},
                        {"kind": "text", "text": "ok"},
                    ],
                }
            ],
            "_private": {"owner": None},
        }
    )
    for method, headers in (("GetTask", V1), ("tasks/get", {}), ("GetTask", {})):
        [envelope] = check_reply(
            rpc.raw(
                json.dumps(
                    {"jsonrpc": "2.0", "id": 1, "method": method, "params": {"id": task_id}}
                ),
                headers=headers,
            )
        )
        assert envelope["result"]["id"] == task_id
        [message] = envelope["result"]["history"]
        assert len(message["parts"]) == 1
    [listed] = check_reply(
        rpc.raw(
            json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ListTasks", "params": {}}), headers=V1
        )
    )
    assert task_id in [t["id"] for t in listed["result"]["tasks"]]


# -- the generated corpus ------------------------------------------------------------------

#: Strings with what breaks naive servers: NUL, lone surrogates, control characters.
nasty_text = st.text(
    alphabet=st.characters(codec=None, categories=None, exclude_categories=()), max_size=12
) | st.sampled_from(["\x00", "\ud800", "\udfff", "a\ud83d", "../../etc/passwd", "", " " * 3])
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | nasty_text
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(nasty_text, inner, max_size=4),
    max_leaves=16,
)
part_like = st.one_of(
    st.fixed_dictionaries({"kind": st.just("text"), "text": values}),
    st.fixed_dictionaries({"kind": st.just("data"), "data": values}),
    st.fixed_dictionaries({"kind": st.just("file"), "file": values}),
    st.fixed_dictionaries({"text": values}),
    st.fixed_dictionaries({"data": values}),
    values,
)
message_like = st.fixed_dictionaries(
    {
        "role": st.sampled_from(["user", "ROLE_USER", "agent", 7]),
        "parts": st.lists(part_like, max_size=3) | values,
    },
    optional={"contextId": values, "taskId": values, "messageId": values, "metadata": values},
)
params_like = st.one_of(
    st.fixed_dictionaries({"message": message_like}, optional={"configuration": values}),
    st.fixed_dictionaries({"id": values}, optional={"historyLength": values}),
    st.dictionaries(nasty_text, values, max_size=4),
    values,
)
envelopes = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.sampled_from(["2.0", "1.0", 2]) | values,
        "id": values,
        "method": st.sampled_from(METHODS) | values,
        "params": params_like,
    },
)


@st.composite
def hostile_bodies(draw: st.DrawFn) -> tuple[bytes, dict[str, str]]:
    headers = draw(st.sampled_from([{}, V1, {"A2A-Version": "0.3"}, {"A2A-Version": "9.9"}]))
    shape = draw(st.integers(0, 9))
    if shape == 0:  # raw bytes
        return draw(st.binary(max_size=64)), headers
    if shape == 1:  # deep nesting
        depth = draw(st.integers(60, 3000))
        return (b"[" * depth + b"]" * depth), headers
    payload = draw(envelopes)
    # Python writes NaN / Infinity tokens and \\udXXX escapes for lone surrogates.
    text = json.dumps(payload, allow_nan=True)
    if shape == 2:  # a valid body cut or spliced
        cut = draw(st.integers(0, len(text)))
        text = text[:cut] + draw(st.sampled_from(["", "}", "\\u", '"', "\\ud800", "NaN"]))
    return text.encode("utf-8", "surrogatepass"), headers


def test_a_generated_hostile_corpus_is_answered_cleanly_and_loses_nothing(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM, no_tracebacks: None
) -> None:
    configure(fake_llm)
    fake_llm.default = Text("fine")
    fake_llm.on("file an expense", ToolCall("file_expense", {"amount": 1, "description": "x"}))
    good = [rpc.wait(rpc.send(f"good task {i}")["id"]) for i in range(3)]
    waiting = rpc.wait(rpc.send("file an expense of 1 for x")["id"])
    assert waiting["status"]["state"] == "input-required"
    kept = [*good, waiting]
    sent: list[bytes] = []

    @settings(
        max_examples=320,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(hostile_bodies(), st.sampled_from([None, *(t["id"] for t in kept)]))
    def hit(case: tuple[bytes, dict[str, str]], known_id: str | None) -> None:
        raw, headers = case
        if (
            known_id is not None
            and b'"id"' in raw
            and b"Cancel" not in raw
            and b"cancel" not in raw
        ):
            raw = raw.replace(b'"id"', b'"taskId": "%s", "id"' % known_id.encode(), 1)
        sent.append(raw)
        check_reply(rpc.raw(raw, headers=headers))

    hit()
    assert len(sent) >= 300

    # Nothing the corpus sent changed a good Task, and the server serves as before.
    for task in kept:
        again = rpc.get(task["id"])["result"]
        assert again == task
    fresh = rpc.wait(rpc.send("after the storm")["id"])
    assert fresh["status"]["state"] == "completed"


# -- streams ---------------------------------------------------------------------------------

STREAM_CASES = [
    msg('[{"kind":"data","data":{"x":NaN}}]'),
    msg('[{"kind":"text","text":"\\ud800"}]'),
    msg(contextId='"a\\u0000b"'),
    msg('[{"kind":"file","file":"just-a-string"}]'),
    '{"id":' + "[" * 100 + "]" * 100 + "}",
    '{"id":"no-such-task"}',
    '{"id":NaN}',
    msg('[{"kind":"text","text":"fine \\ud83d\\ude00 \\u0000 nul"}]'),
]


@pytest.mark.parametrize("method", STREAM_METHODS)
@pytest.mark.parametrize("params", STREAM_CASES, ids=range(len(STREAM_CASES)))
def test_streams_obey_the_same_rules_for_every_event(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM, method: str, params: str, no_tracebacks: None
) -> None:
    configure(fake_llm)
    fake_llm.default = Text("streamed \ud83d\ude00 ok")
    headers = V1 if method[0].isupper() else {}
    reply = http(
        rpc.endpoint,
        data=body(method=json.dumps(method), params=params),
        headers={"Content-Type": "application/json", "Accept": "text/event-stream", **headers},
    )
    for envelope in check_reply(reply):
        assert envelope["id"] in (1, None)
