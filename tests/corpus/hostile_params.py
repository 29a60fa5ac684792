"""Query parameters a database refuses or cannot hold: NUL in text, ids
longer than their column, numbers past the wire's int32 (or too long to
parse), timestamps that leave datetime's range once in UTC, page tokens
that decode to any of these. Each must be answered -32602 (HTTP+JSON: 400
INVALID_ARGUMENT) before any query runs, on every method, dialect and
binding, on SQLite and PostgreSQL.

``TASK`` in a case stands for the id of a real Task, so a refusal is never
just "not found"."""

from __future__ import annotations

import base64
import json
from typing import Any
from urllib.parse import quote

TASK = "<task>"

NUL = "a\x00b"
#: Ids a column of 255 characters cannot hold.
LONG_ID = "t" * 256
HUGE_ID = "t" * 10_000

#: Text a database refuses, or that is longer than any id it stores.
BAD_IDS: dict[str, str] = {"NUL": NUL, "256 chars": LONG_ID, "10,000 chars": HUGE_ID}

#: Whole numbers the wire (protobuf int32) cannot carry, or Python cannot parse.
BAD_COUNTS: dict[str, Any] = {
    "negative": -1,
    "2**31": 2**31,
    "2**63": 2**63,
    "10**30": 10**30,
    "40 digits as text": "9" * 40,
    "5,000 digits as text": "9" * 5000,  # past Python's int() digit limit
    "NUL in text": "1\x002",
    "a float": 2.5,
}

#: Timestamps outside what every database stores once converted to UTC.
BAD_TIMESTAMPS: dict[str, str] = {
    "before year 1 in UTC": "0001-01-01T00:00:00+01:00",
    "after 9999 in UTC": "9999-12-31T23:59:59-01:00",
    "year 10000": "10000-01-01T00:00:00Z",
    "NUL": "2026-01-01T00:00:00\x00",
    "not a time": "yesterday",
    "very long": "2026-01-01T00:00:00" + "0" * 5000 + "Z",
}


def page_token(moment: str, task_id: str) -> str:
    """A ListTasks page token as the server encodes one (an opaque cursor)."""
    raw = json.dumps({"u": moment, "id": task_id}).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


BAD_TOKENS: dict[str, str] = {
    "NUL": NUL,
    "over-long": "x" * 5000,
    "cursor id with NUL": page_token("2026-01-01T00:00:00+00:00", NUL),
    "cursor id of 256 chars": page_token("2026-01-01T00:00:00+00:00", LONG_ID),
    "cursor before year 1 in UTC": page_token("0001-01-01T00:00:00+01:00", "x"),
    "cursor after 9999 in UTC": page_token("9999-12-31T23:59:59-01:00", "x"),
    # 3,000 nested arrays (4,000 characters): deeper than Python 3.11's json parser goes.
    "nested past the JSON parser": base64.urlsafe_b64encode(b"[" * 3000).decode(),
}

BAD_STATUS: dict[str, Any] = {"NUL": "TASK_STATE_\x00", "2**31": 2**31, "NUL alone": "\x00"}


def _cases() -> list[tuple[str, str, dict[str, Any]]]:
    """(case name, operation, params) for every refused value of every parameter."""
    cases: list[tuple[str, str, dict[str, Any]]] = []
    for name, bad in BAD_IDS.items():
        cases += [
            (f"task id {name}", "get", {"id": bad}),
            (f"task id {name}", "cancel", {"id": bad}),
            (f"task id {name}", "subscribe", {"id": bad}),
            (f"contextId {name}", "list", {"contextId": bad}),
            (f"push task id {name}", "push-list", {"taskId": bad}),
            (f"push task id {name}", "push-get", {"taskId": bad, "id": "c"}),
            (f"push config id {name}", "push-get", {"taskId": TASK, "id": bad}),
            (f"push config id {name}", "push-delete", {"taskId": TASK, "id": bad}),
        ]
    for name, bad in BAD_COUNTS.items():
        cases += [
            (f"historyLength {name}", "get", {"id": TASK, "historyLength": bad}),
            (f"historyLength {name}", "list", {"historyLength": bad}),
            (f"pageSize {name}", "list", {"pageSize": bad}),
            # Refused before a Task is made.
            (f"configuration.historyLength {name}", "send", {"historyLength": bad}),
        ]
    for name, bad in BAD_TIMESTAMPS.items():
        cases.append((f"statusTimestampAfter {name}", "list", {"statusTimestampAfter": bad}))
    for name, bad in BAD_TOKENS.items():
        cases.append((f"pageToken {name}", "list", {"pageToken": bad}))
    for name, bad in BAD_STATUS.items():
        cases.append((f"status {name}", "list", {"status": bad}))
    return cases


CASES = _cases()

#: Each operation's JSON-RPC method in each dialect, with its headers and how
#: its params are spelled there (v0.3's push methods name the Task ``id``).
V1 = {"A2A-Version": "1.0"}


def _send(role: str, part: dict[str, Any]) -> Any:
    def spell(configuration: dict[str, Any]) -> dict[str, Any]:
        message = {"role": role, "parts": [part], "messageId": "hostile-params"}
        return {"message": message, "configuration": configuration}

    return spell


def _v03_push(params: dict[str, Any]) -> dict[str, Any]:
    out = {"id": params["taskId"]}
    if "id" in params:
        out["pushNotificationConfigId"] = params["id"]
    return out


DIALECTS: dict[str, list[tuple[str, dict[str, str], Any]]] = {
    "send": [
        ("SendMessage", V1, _send("ROLE_USER", {"text": "hi"})),
        ("message/send", {}, _send("user", {"kind": "text", "text": "hi"})),
    ],
    "get": [("GetTask", V1, None), ("tasks/get", {}, None), ("GetTask", {}, None)],
    "cancel": [("CancelTask", V1, None), ("tasks/cancel", {}, None)],
    "subscribe": [("SubscribeToTask", V1, None), ("tasks/resubscribe", {}, None)],
    "list": [("ListTasks", V1, None)],
    "push-list": [
        ("ListTaskPushNotificationConfigs", V1, None),
        ("tasks/pushNotificationConfig/list", {}, _v03_push),
    ],
    "push-get": [
        ("GetTaskPushNotificationConfig", V1, None),
        ("tasks/pushNotificationConfig/get", {}, _v03_push),
    ],
    "push-delete": [
        ("DeleteTaskPushNotificationConfig", V1, None),
        ("tasks/pushNotificationConfig/delete", {}, _v03_push),
    ],
}


def rpc_requests(task_id: str) -> list[tuple[str, str, dict[str, str], dict[str, Any]]]:
    """(case name, method, headers, params) of every case in every dialect."""
    out = []
    for name, operation, params in CASES:
        real = {k: task_id if v == TASK else v for k, v in params.items()}
        for method, headers, spell in DIALECTS[operation]:
            out.append((name, method, headers, spell(real) if spell else real))
    return out


def _q(value: Any) -> str:
    return quote(str(value), safe="")


def rest_requests(task_id: str) -> list[tuple[str, str, str]]:
    """(case name, HTTP method, route under the endpoint's mount) of every
    case the HTTP+JSON binding can carry (its paths and query strings)."""
    t = _q(task_id)
    out: list[tuple[str, str, str]] = []
    for name, bad in BAD_IDS.items():
        b = _q(bad)
        out += [
            (f"task id {name}", "GET", f"tasks/{b}"),
            (f"task id {name}", "POST", f"tasks/{b}:cancel"),
            (f"task id {name}", "GET", f"tasks/{b}:subscribe"),
            (f"contextId {name}", "GET", f"tasks?contextId={b}"),
            (f"push task id {name}", "GET", f"tasks/{b}/pushNotificationConfigs"),
            (f"push config id {name}", "GET", f"tasks/{t}/pushNotificationConfigs/{b}"),
            (f"push config id {name}", "DELETE", f"tasks/{t}/pushNotificationConfigs/{b}"),
        ]
    for name, bad in BAD_COUNTS.items():
        out += [
            (f"historyLength {name}", "GET", f"tasks/{t}?historyLength={_q(bad)}"),
            (f"historyLength {name}", "GET", f"tasks?historyLength={_q(bad)}"),
            (f"pageSize {name}", "GET", f"tasks?pageSize={_q(bad)}"),
        ]
    for name, bad in BAD_TIMESTAMPS.items():
        out.append((f"statusTimestampAfter {name}", "GET", f"tasks?statusTimestampAfter={_q(bad)}"))
    for name, bad in BAD_TOKENS.items():
        out.append((f"pageToken {name}", "GET", f"tasks?pageToken={_q(bad)}"))
    for name, bad in BAD_STATUS.items():
        out.append((f"status {name}", "GET", f"tasks?status={_q(bad)}"))
    return out
