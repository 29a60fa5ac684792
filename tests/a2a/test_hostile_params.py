"""Query parameters a database refuses (tests/corpus/hostile_params.py) are
the caller's mistake: -32602 on JSON-RPC and 400 INVALID_ARGUMENT on
HTTP+JSON, for every method, dialect and binding, over real HTTP to both
servers — never -32603 / 500, never a traceback in the log — and the server
serves as before. Run on SQLite and PostgreSQL (DATABASE_URL)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import http
from tests.corpus.hostile_params import rest_requests, rpc_requests
from tests.utils import task_in
from toolnexus_django.models import TaskRecord

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def no_tracebacks(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    caplog.set_level(logging.WARNING)
    yield
    bad = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert not bad, [r.getMessage() for r in bad[:5]]


def test_every_hostile_query_parameter_is_invalid_params_on_json_rpc(
    agent_url: str, configure: Any, no_tracebacks: None
) -> None:
    configure(None, store="django")
    task = task_in("completed")
    tasks_before = TaskRecord.objects.count()
    refused = []
    for name, method, headers, params in rpc_requests(task["id"]):
        body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}
        reply = http(
            agent_url,
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", **headers},
        )
        assert reply.status == 200, (name, method, reply.status, reply.body[:200])
        assert reply.headers["content-type"].startswith("application/json"), (name, method)
        error = reply.json.get("error") or {}
        if error.get("code") != -32602 or reply.json["id"] != 7:
            refused.append((name, method, reply.json))
    assert refused == [], refused[:5]
    assert TaskRecord.objects.count() == tasks_before  # no refused send made a Task
    served = http(
        agent_url,
        data=json.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": task["id"]}}
        ).encode(),
        headers={"Content-Type": "application/json"},
    )
    assert served.json["result"]["status"]["state"] == "completed"


def test_every_hostile_query_parameter_is_invalid_argument_on_http_json(
    agent_url: str, configure: Any, no_tracebacks: None
) -> None:
    configure(None, store="django")
    task = task_in("completed")
    wrong = []
    for name, method, route in rest_requests(task["id"]):
        reply = http(agent_url + route, method=method, headers={"A2A-Version": "1.0"})
        error = (reply.json or {}).get("error") if isinstance(reply.json, dict) else None
        if (
            reply.status != 400
            or not error
            or error.get("status") != "INVALID_ARGUMENT"
            or error["details"][0]["reason"] != "INVALID_PARAMS"
        ):
            wrong.append((name, method, route[:60], reply.status, reply.body[:160]))
    assert wrong == [], wrong[:5]
    served = http(f"{agent_url}tasks/{task['id']}", headers={"A2A-Version": "1.0"})
    assert served.status == 200 and served.json["status"]["state"] == "TASK_STATE_COMPLETED"
