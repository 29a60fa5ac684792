"""Shared fixtures: a configured agent against the fake LLM, real HTTP helpers."""

from __future__ import annotations

import json
import os
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.fakes import FakeLLM

pytest_plugins = ["tests.fakes.pytest_plugin", "tests.budget", "tests.wheelhouse"]

#: The suite scripts the model to call the app's *example* file_expense, from
#: anonymous callers and all, on an endpoint without authentication: it runs
#: on testproject's "example" agent. The demo's own ("expenses", its default)
#: offers its tools only to a signed-in requester allowed to use them;
#: tests/e2e/test_demo_*.py select it. Every process the tests start copies this
#: environment.
os.environ["DEMO_AGENT"] = "example"


def pytest_configure(config: pytest.Config) -> None:
    """This process read testproject.settings before this file (pytest-django
    loads the settings first): give it the agent its children get, and cheap
    password hashes."""
    from django.conf import settings
    from django.test.utils import override_settings

    example = settings.DEMO_AGENTS["example"]
    toolkit = {**settings.TOOLNEXUS["TOOLKIT"], "tools": example["tools"]}
    override_settings(
        TOOLNEXUS={
            **settings.TOOLNEXUS,
            "TOOLKIT": toolkit,
            "AUTHENTICATION_CLASSES": example["authentication"],
        },
        # Cheap password hashes for the users tests make (tests/hashers.py).
        PASSWORD_HASHERS=["tests.hashers.FastPBKDF2PasswordHasher"],
    ).enable()


#: Tests whose outcome cannot depend on the suite's database: they read the
#: documentation and the code, build and install the package, or run the
#: benchmark scripts and the README's own project, each on a database of its
#: own making (they drop DATABASE_URL). Marked ``once``: CI runs them in its
#: SQLite run only (.ci/run says so); on PostgreSQL they would repeat exactly.
ONCE = (
    "tests/docs/",
    "tests/packaging/",
    "tests/benchmarks/",
    "tests/e2e/test_install_pastes.py",
    "tests/test_budget.py",
    "tests/test_code_shape.py",
    "tests/test_fake_llm.py",
    "tests/test_layout.py",
    "tests/test_names.py",
)


#: The most workers ``-n auto`` starts (pyproject.toml's addopts): each
#: worker's tests start servers and open database sessions of their own
#: (PostgreSQL allows 100 by default). ``-n auto`` starts one more worker than
#: there are CPUs: most tests wait on servers, subprocesses and the model fake,
#: not on a CPU. Measured on 2 cores: 2 workers halve the suite's time
#: (benchmarks/RESULTS.md, "CI's time"), and a third took the whole SQLite run
#: from 532 s to 377 s.
MAX_WORKERS = 4


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    return max(1, min(MAX_WORKERS, len(os.sched_getaffinity(0)) + 1))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that starts a live server is slow (``-m "not slow"`` starts
    none); tests that start subprocesses say so themselves (see below).
    Tests in :data:`ONCE` are marked ``once``."""
    root = Path(__file__).resolve().parent.parent
    for item in items:
        if item.path.resolve().relative_to(root).as_posix().startswith(ONCE):
            item.add_marker(pytest.mark.once)
        names = set(getattr(item, "fixturenames", ()))
        if names & {"live_server", "asgi_server", "agent_url"}:
            item.add_marker(pytest.mark.slow)
        if names & {"asgi_server", "agent_url"} and item.get_closest_marker("django_db") is None:
            # A server on another thread sees only committed rows.
            item.add_marker(pytest.mark.django_db(transaction=True))


@pytest.fixture(autouse=True)
def _subprocesses_only_in_slow_tests(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A test that starts a process must be marked slow: elsewhere starting
    one fails the test, so ``-m "not slow"`` stays fast."""
    if request.node.get_closest_marker("slow") is not None:
        return
    import subprocess

    def refuse(self: Any, *args: Any, **kwargs: Any) -> None:
        raise AssertionError("this test starts a subprocess: mark it @pytest.mark.slow")

    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)


@pytest.fixture(autouse=True)
def _stop_background_work(settings: Any) -> Iterator[None]:
    """After each test, let this process's background runs finish (bounded) and
    stop the runtime, so no run from one test touches the next one's database.
    Requests ``settings`` so this teardown runs before settings are restored."""
    yield
    from toolnexus_django.agent.runtime import shutdown_runtime
    from toolnexus_django.fulfilment.runs import close_runs

    close_runs(timeout=15)
    shutdown_runtime(timeout=5)


@pytest.fixture(autouse=True)
def _forget_verified_credentials() -> None:
    """Each test's users are its own: a header verified in one test (the same
    Basic password, a user of the same name) is not the next test's user,
    though the database was emptied without a signal (serving/credentials.py)."""
    from toolnexus_django.serving.credentials import verified_credentials

    verified_credentials.forget()


@pytest.fixture(scope="session", autouse=True)
def _close_database_threads() -> Iterator[None]:
    """At the end, close the database threads' connections (PostgreSQL will
    not drop the test database while they are open)."""
    yield
    from toolnexus_django.runtime import dbthreads

    dbthreads.close(timeout=10)


def agent_settings(
    fake: FakeLLM | None = None,
    *,
    store: Any = "django",
    client: Any = None,
    **overrides: Any,
) -> dict[str, Any]:
    """A TOOLNEXUS dict for tests: the demo toolkit, and the fake as the model
    (no retries, a short timeout) unless ``client`` is given."""
    from django.conf import settings as django_settings

    base = dict(django_settings.TOOLNEXUS)
    if client is None and fake is not None:
        client = {
            "base_url": fake.url,
            "style": fake.style,
            "model": "test-model",
            "api_key": "test-key",
            "retries": 0,
            "timeout_ms": 5000,
        }
    if client is not None:
        base["CLIENT"] = client
    base["STORE"] = store
    base.update(overrides)
    return base


@pytest.fixture
def configure(settings: Any) -> Callable[..., dict[str, Any]]:
    """``configure(fake, store=..., **TOOLNEXUS overrides)`` installs settings."""

    def apply(fake: FakeLLM | None = None, **kwargs: Any) -> dict[str, Any]:
        settings.TOOLNEXUS = agent_settings(fake, **kwargs)
        return settings.TOOLNEXUS

    return apply


# -- real HTTP -------------------------------------------------------------------


@dataclass
class HttpReply:
    status: int
    headers: dict[str, str]
    body: bytes
    json: Any = field(default=None)


def http(
    url: str,
    *,
    data: bytes | None = None,
    headers: dict[str, str] | None = None,
    method: str | None = None,
    timeout: float = 10,
) -> HttpReply:
    """One real HTTP request; never raises for an HTTP error status."""
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            status, hdrs, body = resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as err:
        status, hdrs, body = err.code, dict(err.headers), err.read()
    reply = HttpReply(status, {k.lower(): v for k, v in hdrs.items()}, body)
    try:
        reply.json = json.loads(body)
    except ValueError:
        reply.json = None
    return reply


class RpcClient:
    """Posts JSON-RPC to an endpoint over real HTTP."""

    def __init__(self, endpoint: str, headers: dict[str, str] | None = None) -> None:
        self.endpoint = endpoint
        self.headers = {"Content-Type": "application/json", **(headers or {})}
        self._ids = iter(range(1, 1_000_000))

    def raw(self, body: bytes | str, headers: dict[str, str] | None = None) -> HttpReply:
        data = body.encode() if isinstance(body, str) else body
        return http(self.endpoint, data=data, headers={**self.headers, **(headers or {})})

    def call(self, method: str, params: Any = None, **kw: Any) -> dict[str, Any]:
        payload: dict[str, Any] = {"jsonrpc": "2.0", "id": next(self._ids), "method": method}
        if params is not None:
            payload["params"] = params
        reply = self.raw(json.dumps(payload), **kw)
        assert reply.status == 200, (reply.status, reply.body[:500])
        assert reply.headers.get("content-type", "").startswith("application/json")
        return reply.json

    def send(self, text: str, method: str = "SendMessage", **message: Any) -> dict[str, Any]:
        msg = {
            "messageId": str(uuid.uuid4()),  # v0.3 requires one
            "role": "user",
            "parts": [{"kind": "text", "text": text}],
            **message,
        }
        reply = self.call(method, {"message": msg})
        assert "result" in reply, reply
        return reply["result"]

    def get(self, task_id: str, method: str = "GetTask") -> dict[str, Any]:
        return self.call(method, {"id": task_id})

    def wait(
        self,
        task_id: str,
        states: tuple[str, ...] = (
            "completed",
            "failed",
            "canceled",
            "rejected",
            "input-required",
            "auth-required",
        ),
        timeout: float = 20,
    ) -> dict[str, Any]:
        """Poll GetTask until the Task is in one of ``states`` (deadline-bound)."""
        return wait_until(
            lambda: _in_states(self.get(task_id).get("result"), states),
            timeout=timeout,
            what=f"task {task_id} to reach {states}",
        )


def _in_states(task: dict[str, Any] | None, states: tuple[str, ...]) -> dict[str, Any] | None:
    if task and task["status"]["state"] in states:
        return task
    return None


def wait_until(
    probe: Callable[[], Any],
    *,
    timeout: float = 20,
    interval: float = 0.02,
    what: str = "condition",
) -> Any:
    """Call ``probe`` until it returns something truthy, or fail at the deadline."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        last = probe()
        if last:
            return last
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


# -- authenticated callers ----------------------------------------------------------


def basic(username: str, password: str | None = None) -> dict[str, str]:
    """An HTTP Basic Authorization header (password defaults to "<name>-pw")."""
    import base64

    secret = f"{username}:{password or f'{username}-pw'}"
    return {"Authorization": f"Basic {base64.b64encode(secret.encode()).decode()}"}


@pytest.fixture
def users(django_user_model: Any) -> dict[str, Any]:
    """alice and bob, each with the password "<name>-pw"."""
    return {
        name: django_user_model.objects.create_user(name, password=f"{name}-pw")
        for name in ("alice", "bob")
    }


@pytest.fixture(scope="session")
def asgi_server(django_db_setup: Any, django_db_blocker: Any) -> Iterator[Any]:
    """The project's ASGI application on a real server (see tests/asgiserver.py)."""
    from tests.asgiserver import AsgiServer

    with django_db_blocker.unblock(), AsgiServer() as server:
        yield server


@pytest.fixture(params=["wsgi", "asgi"])
def agent_url(request: pytest.FixtureRequest) -> str:
    """The agent's JSON-RPC endpoint over real HTTP, served both ways: by the
    DRF views on Django's live server (WSGI), and by the lean ASGI endpoint
    on uvicorn (what toolnexus_serve runs). Every test of the wire holds for both."""
    if request.param == "wsgi":
        return f"{request.getfixturevalue('live_server').url}/agent/"
    request.getfixturevalue("transactional_db")
    return f"{request.getfixturevalue('asgi_server').url}/agent/"


@pytest.fixture
def rpc(agent_url: str) -> RpcClient:
    return RpcClient(agent_url)
