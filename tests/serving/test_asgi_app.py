"""The ASGI application, called as a server calls it (scope, receive, send):
what it routes where, and what it refuses before any Task is touched."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from toolnexus_django.asgi import AgentApplication
from toolnexus_django.stores import get_task_store

RPC_PATH = "/agent/"
CARD_PATH = "/agent/.well-known/agent-card.json"


class Django:
    """Stands in for Django's own ASGI handler: records what reaches it."""

    def __init__(self) -> None:
        self.paths: list[str] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.paths.append(scope["path"])
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})


def scope(path: str, method: str = "POST", **headers: str) -> dict[str, Any]:
    raw = [(b"host", b"testserver")]
    raw += [(k.replace("_", "-").lower().encode(), v.encode()) for k, v in headers.items()]
    if "host" in headers:
        raw = raw[1:]
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": raw,
        "server": ("testserver", 80),
        "client": ("127.0.0.1", 5000),
    }


def call(
    app: Any, scope: dict[str, Any], *chunks: bytes, stall: bool = False
) -> tuple[int, dict[str, str], bytes]:
    """Run one request through ``app``; ``stall``: the body never finishes."""
    sent: list[dict[str, Any]] = []

    async def run() -> None:
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        for i, chunk in enumerate(chunks):
            more = stall or i < len(chunks) - 1
            queue.put_nowait({"type": "http.request", "body": chunk, "more_body": more})

        async def receive() -> dict[str, Any]:
            return await queue.get()

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        await asyncio.wait_for(app(scope, receive, send), timeout=10)

    asyncio.run(run())
    start = sent[0]
    headers = {k.decode(): v.decode() for k, v in start.get("headers", [])}
    body = b"".join(m.get("body", b"") for m in sent[1:])
    return start["status"], headers, body


@pytest.fixture
def app() -> tuple[AgentApplication, Django]:
    django = Django()
    return AgentApplication(django), django


def test_everything_outside_the_mount_and_its_card_jwks_and_mcp_go_to_django(app: Any) -> None:
    agent, django = app
    assert call(agent, scope("/admin/", "GET"))[0] == 204
    assert call(agent, scope("/agent/.well-known/jwks.json", "GET"))[0] == 204
    assert call(agent, scope("/agent/mcp"), b"{}")[0] == 204  # MCP is off: Django's 404
    assert django.paths == ["/admin/", "/agent/.well-known/jwks.json", "/agent/mcp"]


def test_every_other_path_under_the_mount_is_the_bindings_json_404(app: Any) -> None:
    agent, django = app
    status, headers, body = call(agent, scope("/agent/elsewhere", "GET"), b"")
    assert status == 404 and headers["content-type"] == "application/a2a+json"
    assert json.loads(body)["error"]["status"] == "NOT_FOUND"
    assert django.paths == []


def test_under_a_root_mount_the_projects_own_views_listed_first_stay_djangos(
    settings: Any,
) -> None:
    settings.ROOT_URLCONF = "tests.urls_root_mount"
    django = Django()
    agent = AgentApplication(django)
    assert call(agent, scope("/mine/", "GET"))[0] == 204
    status, _, body = call(agent, scope("/elsewhere", "GET"), b"")
    assert status == 404 and json.loads(body)["error"]["status"] == "NOT_FOUND"
    assert django.paths == ["/mine/"]


def test_a_host_not_in_allowed_hosts_is_refused(app: Any, settings: Any) -> None:
    agent, django = app
    settings.ALLOWED_HOSTS = ["agent.example"]
    status, _, body = call(agent, scope(RPC_PATH, host="evil.example"), b"{}")
    assert status == 400 and b"Host" in body
    assert django.paths == []


def test_other_methods_get_405(app: Any) -> None:
    agent, _ = app
    assert call(agent, scope(RPC_PATH, "GET"))[0] == 405
    assert call(agent, scope(CARD_PATH, "POST"), b"")[0] == 405


def test_a_body_over_the_limit_is_an_invalid_request_read_no_further(
    app: Any, settings: Any
) -> None:
    agent, _ = app
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100
    status, headers, body = call(agent, scope(RPC_PATH), b"x" * 60, b"x" * 60, stall=True)
    envelope = json.loads(body)
    assert status == 200 and headers["content-type"] == "application/json"
    assert envelope["error"]["code"] == -32600
    assert envelope["error"]["data"] == {"limit": 100}


def test_a_body_that_never_finishes_is_dropped_at_the_read_timeout(app: Any, settings: Any) -> None:
    agent, _ = app
    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "READ_TIMEOUT": 0.2}
    status, headers, _ = call(agent, scope(RPC_PATH), b'{"jsonrpc": "2.0", ', stall=True)
    assert status == 408 and headers["connection"] == "close"


def test_drf_refuses_an_anonymous_caller_with_its_status_and_challenge(
    app: Any, settings: Any
) -> None:
    agent, _ = app
    settings.TOOLNEXUS = {
        **settings.TOOLNEXUS,
        "AUTHENTICATION_CLASSES": ["rest_framework.authentication.BasicAuthentication"],
        "PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    }
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}'
    status, headers, reply = call(agent, scope(RPC_PATH), body)
    assert status == 401
    assert headers["www-authenticate"].startswith("Basic")
    # In the binding's words (tests/serving/test_refusals.py has the rest).
    assert json.loads(reply) == {
        "jsonrpc": "2.0",
        "id": 1,
        "error": {"code": -31401, "message": "Authentication credentials were not provided."},
    }


def test_what_a_request_binds_once_follows_the_settings_as_they_change(
    app: Any, settings: Any
) -> None:
    """The endpoint looks its store and DRF classes up once per process
    (``serving.endpoint.bound``), not per request: a change of REST_FRAMEWORK
    (DRF's default classes) or of TOOLNEXUS is still seen at the next request."""
    agent, _ = app
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}'
    settings.TOOLNEXUS = {
        **settings.TOOLNEXUS,
        "STORE": "memory",
        "AUTHENTICATION_CLASSES": None,  # DRF's defaults
        "PERMISSION_CLASSES": None,
    }
    drf = {**getattr(settings, "REST_FRAMEWORK", {})}
    settings.REST_FRAMEWORK = {**drf, "DEFAULT_AUTHENTICATION_CLASSES": []}  # DRF not needed
    assert json.loads(call(agent, scope(RPC_PATH), body)[2])["error"]["code"] == -32001
    settings.REST_FRAMEWORK = {
        **drf,
        "DEFAULT_AUTHENTICATION_CLASSES": ["rest_framework.authentication.BasicAuthentication"],
        "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    }
    assert call(agent, scope(RPC_PATH), body)[0] == 401
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_PERMISSION_CLASSES": []}
    assert json.loads(call(agent, scope(RPC_PATH), body)[2])["error"]["code"] == -32001
    get_task_store().save({"id": "x", "status": {"state": "completed"}})
    found = json.loads(call(agent, scope(RPC_PATH), body)[2])
    assert found["result"]["id"] == "x"
    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "STORE": "memory"}  # a new in-memory store
    assert json.loads(call(agent, scope(RPC_PATH), body)[2])["error"]["code"] == -32001


def test_lifespan_starts_the_sweep_and_stops_it(app: Any, monkeypatch: Any) -> None:
    agent, _ = app
    calls: list[str] = []
    monkeypatch.setattr(agent, "startup", lambda: calls.append("startup"))
    monkeypatch.setattr(agent, "shutdown", lambda: calls.append("shutdown"))
    sent: list[str] = []

    async def run() -> None:
        messages = iter([{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}])

        async def receive() -> dict[str, Any]:
            return next(messages)

        async def send(message: dict[str, Any]) -> None:
            sent.append(message["type"])

        await agent({"type": "lifespan"}, receive, send)

    asyncio.run(run())
    assert calls == ["startup", "shutdown"]
    assert sent == ["lifespan.startup.complete", "lifespan.shutdown.complete"]


# -- static files (toolnexus_serve serves them when nothing else does) -------------------


@pytest.fixture
def static() -> tuple[Any, Django]:
    from toolnexus_django.serving.asgi import StaticFiles

    django = Django()
    return StaticFiles(django), django


def test_the_admin_css_is_served_with_validators_and_304(static: Any) -> None:
    app, django = static
    status, headers, body = call(app, scope("/static/admin/css/base.css", "GET"))
    assert status == 200 and headers["content-type"].startswith("text/css")
    assert int(headers["content-length"]) == len(body) > 1000
    assert headers["etag"].startswith('"') and "max-age" in headers["cache-control"]
    again = scope("/static/admin/css/base.css", "GET", if_none_match=headers["etag"])
    assert call(app, again)[0] == 304
    status, head_headers, head_body = call(app, scope("/static/admin/css/base.css", "HEAD"))
    assert status == 200 and head_body == b"" and head_headers["etag"] == headers["etag"]
    assert django.paths == []


@pytest.mark.parametrize(
    "path",
    ["/static/admin/css/nope.css", "/static/../testproject/settings.py", "/static/%2e%2e/x",
     "/static/", "/static/admin/css/base.css%00"],
)  # fmt: skip
def test_what_is_not_a_static_file_is_404(static: Any, path: str) -> None:
    app, django = static
    assert call(app, scope(path, "GET"))[0] == 404
    assert django.paths == []  # nothing reached Django either


def test_other_paths_and_methods_pass_through(static: Any) -> None:
    app, django = static
    assert call(app, scope("/admin/", "GET"))[0] == 204
    assert call(app, scope("/static/admin/css/base.css", "POST"), b"")[0] == 204
    assert django.paths == ["/admin/", "/static/admin/css/base.css"]
