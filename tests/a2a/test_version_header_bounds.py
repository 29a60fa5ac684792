"""``A2A-Version`` values past ``int()``'s 4,300 digits
(tests/corpus/version_headers.py) are the client's mistake, answered in each
binding's words — JSON-RPC -32009, HTTP+JSON 400 ``VERSION_NOT_SUPPORTED`` —
by the ASGI endpoint and the WSGI views alike, never -32603 / HTTP 500 nor a
traceback in the log; a long spelling of a version the server speaks is
served. (gRPC's ``a2a-version`` metadata: tests/a2a/test_grpc_hardening.py.)"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest

from tests.conftest import http
from tests.corpus.version_headers import REFUSED, SERVED, sendable
from tests.utils import task_in

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def no_tracebacks(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    caplog.set_level(logging.WARNING)
    yield
    bad = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert not bad, [r.getMessage() for r in bad[:5]]


def get_task(url: str, task_id: str, headers: dict[str, str]) -> Any:
    body = {"jsonrpc": "2.0", "id": 7, "method": "GetTask", "params": {"id": task_id}}
    reply = http(
        url,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", **headers},
    )
    assert reply.status == 200, (reply.status, reply.body[:200])
    return reply.json


def test_json_rpc_refuses_every_long_version_with_32009(
    agent_url: str, configure: Any, no_tracebacks: None
) -> None:
    configure(None, store="django")
    task = task_in("completed")
    wrong = []
    for name, value in REFUSED:
        asked = [get_task(f"{agent_url}?A2A-Version={quote(value)}", task["id"], {})]
        if sendable(value, "latin-1"):
            asked.append(get_task(agent_url, task["id"], {"A2A-Version": value}))
        for answer in asked:
            error = answer.get("error") or {}
            if error.get("code") != -32009 or answer["id"] != 7:
                wrong.append((name, answer))
    assert wrong == [], wrong[:3]
    for name, value, version in SERVED:
        answer = get_task(agent_url, task["id"], {"A2A-Version": value})
        state = answer["result"]["status"]["state"]
        # 1.0 renders v1.0's states; 0.3 (and no version) the toolnexus dialect's.
        assert state == ("TASK_STATE_COMPLETED" if version == "1.0" else "completed"), name


def test_http_json_refuses_every_long_version_with_400(
    agent_url: str, configure: Any, no_tracebacks: None
) -> None:
    configure(None, store="django")
    task = task_in("completed")
    wrong = []
    for name, value in REFUSED + [(n, v) for n, v, version in SERVED if version == "0.3"]:
        asked = [http(f"{agent_url}tasks/{task['id']}?A2A-Version={quote(value)}")]
        if sendable(value, "latin-1"):
            asked.append(http(f"{agent_url}tasks/{task['id']}", headers={"A2A-Version": value}))
        for reply in asked:
            error = (reply.json or {}).get("error") if isinstance(reply.json, dict) else None
            if (
                reply.status != 400
                or not error
                or error["details"][0]["reason"] != "VERSION_NOT_SUPPORTED"
            ):
                wrong.append((name, reply.status, reply.body[:160]))
    assert wrong == [], wrong[:3]
    for name, value, version in SERVED:
        if version == "1.0":
            reply = http(f"{agent_url}tasks/{task['id']}", headers={"A2A-Version": value})
            assert reply.status == 200, (name, reply.status, reply.body[:160])
            assert reply.json["status"]["state"] == "TASK_STATE_COMPLETED"
