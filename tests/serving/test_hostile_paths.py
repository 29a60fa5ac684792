"""Every path under the endpoint's mount is the HTTP+JSON binding's: a path
that is no route, or names one badly (tests/corpus/hostile_paths.py), gets
the binding's ``google.rpc.Status`` JSON with its HTTP status — 404
NOT_FOUND, 405 with ``Allow``, 400 INVALID_ARGUMENT — never Django's HTML
404 and never an injected header, over real HTTP to both servers (the lean
ASGI endpoint and the DRF views under WSGI). The card, the JWKS and the MCP
path stay as they are."""

from __future__ import annotations

import http.client
import json
import logging
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.corpus.hostile_paths import CASES

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def no_tracebacks(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    caplog.set_level(logging.WARNING)
    yield
    bad = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert not bad, [r.getMessage() for r in bad[:5]]


def send(agent_url: str, method: str, route: str) -> tuple[int, dict[str, str], bytes]:
    """``method`` on the mount + ``route``, the path sent exactly as written."""
    url = urlsplit(agent_url)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    try:
        body = b"{}" if method in ("POST", "PUT", "PATCH") else None
        headers = {"Content-Type": "application/json"} if body is not None else {}
        conn.request(method, url.path + route, body=body, headers=headers)
        reply = conn.getresponse()
        return reply.status, {k.lower(): v for k, v in reply.getheaders()}, reply.read()
    finally:
        conn.close()


def test_every_hostile_path_under_the_mount_gets_the_bindings_json_error(
    agent_url: str, configure: Any, no_tracebacks: None
) -> None:
    configure(None, store="django")
    wrong = []
    for method, route, (status, word) in CASES:
        got, headers, body = send(agent_url, method, route)
        try:
            error = json.loads(body)["error"]
        except (ValueError, KeyError, TypeError):
            error = None
        ok = (
            got == status
            and headers.get("content-type") == "application/a2a+json"
            and error is not None
            and error["code"] == status
            and error["status"] == word
            and error["details"][0]["@type"] == "type.googleapis.com/google.rpc.ErrorInfo"
            and "set-cookie" not in headers
            and "location" not in headers
            and (status != 405 or bool(headers.get("allow")))
        )
        if not ok:
            wrong.append((method, route[:40], got, headers.get("content-type"), body[:120]))
    assert wrong == [], wrong


def test_the_card_jwks_and_mcp_paths_are_as_they_were(agent_url: str, configure: Any) -> None:
    configure(None, store="django")
    status, _, body = send(agent_url, "GET", ".well-known/agent-card.json")
    assert status == 200 and "supportedInterfaces" in json.loads(body)
    status, _, body = send(agent_url, "GET", ".well-known/jwks.json")
    assert status == 200 and "keys" in json.loads(body)
    # MCP is off in the test project: Django's (DRF's) 404, not the binding's.
    status, _, body = send(agent_url, "POST", "mcp")
    assert status == 404 and "detail" in json.loads(body)
    # And the binding's own routes still answer.
    status, _, body = send(agent_url, "GET", "tasks")
    assert status == 200 and "tasks" in json.loads(body)
