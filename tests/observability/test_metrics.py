"""Prometheus metrics (TOOLNEXUS["METRICS"]) at <prefix>/metrics, served both
ways: the URL exists only for the callers the setting admits (a bearer token,
a logged-in user's permission); after a scripted workload each documented
metric holds what happened; a real toolnexus_serve sums its two workers."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client
from django.utils import timezone
from toolnexus import Answer

from tests import mcp_tools, tools
from tests.conftest import RpcClient, wait_until
from tests.fakes import Fail, FakeLLM, Hang, Text, ToolCall
from tests.mcp_client import MCP_HEADERS
from tests.observability.imports import imported_by_the_app
from tests.observability.metrics_scrape import (
    BEARER,
    TOKEN,
    by_label,
    names,
    read,
    read_once,
    samples,
    scrape,
)
from tests.observability.metrics_scrape import value as v
from tests.servers import fake_env, serve
from tests.sse import open_stream
from tests.utils import task_in
from tests.webhooks import Receiver
from toolnexus_django import lifecycle
from toolnexus_django.fulfilment.sweep import expire_due
from toolnexus_django.models import PushConfig, PushDelivery
from toolnexus_django.observability import metrics
from toolnexus_django.review import answer_task, remind_due
from toolnexus_django.stores import get_task_store

pytestmark = pytest.mark.django_db(transaction=True)

ALLOW = {"ALLOWED_HOSTS": ["127.0.0.1"], "RETRY_DELAY": 0.05, "MAX_ATTEMPTS": 2}
PERMISSION = "toolnexus_django.answer_task"


@pytest.fixture(autouse=True)
def _fresh_metrics() -> Iterator[None]:
    """Each test counts from zero (the values are this process's)."""
    metrics.reset()
    yield
    metrics.reset()


def session_cookie(username: str, *permissions: str) -> dict[str, str]:
    """A logged-in browser session's Cookie header for a new user."""
    user = get_user_model().objects.create_user(username, password="pw")
    for name in permissions:
        app_label, codename = name.split(".")
        user.user_permissions.add(
            Permission.objects.get(content_type__app_label=app_label, codename=codename)
        )
    client = Client()
    client.force_login(user)
    session = client.cookies[django_settings.SESSION_COOKIE_NAME].value
    return {"Cookie": f"{django_settings.SESSION_COOKIE_NAME}={session}"}


# -- who may read them ---------------------------------------------------------------------


def test_without_the_setting_the_url_does_not_exist(agent_url: str, configure: Any) -> None:
    configure()
    refused = scrape(agent_url, BEARER)
    assert refused.status == 404
    assert b"toolnexus_" not in refused.body


def test_a_token_admits_its_bearer_and_nobody_else(agent_url: str, configure: Any) -> None:
    configure(METRICS={"TOKEN": TOKEN})
    for headers in (
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": f"Bearer {TOKEN}x"},
        {"Authorization": f"Token {TOKEN}"},
        session_cookie("ops", PERMISSION),  # no PERMISSION is set: a session is nobody
    ):
        refused = scrape(agent_url, headers)
        assert refused.status == 404, headers
        assert b"toolnexus_" not in refused.body
    admitted = scrape(agent_url, BEARER)
    assert admitted.status == 200
    assert admitted.headers["content-type"].startswith("text/plain; version=0.0.4")
    assert b"# TYPE toolnexus_tasks_started_total counter" in admitted.body


def test_a_permission_admits_logged_in_users_who_have_it(agent_url: str, configure: Any) -> None:
    configure(METRICS={"PERMISSION": PERMISSION})
    assert scrape(agent_url, session_cookie("visitor")).status == 404
    assert scrape(agent_url, BEARER).status == 404  # no TOKEN is set
    admitted = scrape(agent_url, session_cookie("ops", PERMISSION))
    assert admitted.status == 200
    assert b"toolnexus_requests_waiting 0.0" in admitted.body


def test_token_and_permission_each_admit(agent_url: str, configure: Any) -> None:
    configure(METRICS={"TOKEN": TOKEN, "PERMISSION": PERMISSION})
    assert scrape(agent_url, BEARER).status == 200
    assert scrape(agent_url, session_cookie("ops", PERMISSION)).status == 200
    assert scrape(agent_url, session_cookie("visitor")).status == 404


# -- what they count -----------------------------------------------------------------------


def send(rpc: RpcClient, text: str, push: str | None = None) -> str:
    message = {"role": "user", "parts": [{"kind": "text", "text": text}], "messageId": f"m-{text}"}
    params: dict[str, Any] = {"message": message}
    params["configuration"] = {"blocking": False}
    if push is not None:
        params["configuration"]["pushNotificationConfig"] = {"url": push}
    reply = rpc.call("message/send", params)
    return str(reply["result"]["id"])


def state(rpc: RpcClient, task_id: str) -> str:
    return str(rpc.wait(task_id)["status"]["state"])


def approve(task_id: str) -> None:
    pending = lifecycle.read(get_task_store().get(task_id)).pending or {}
    answer = Answer(id=pending.get("id"), ok=True, data={"cost_center": "travel"})
    answer_task(task_id, answer, decision="approve", actor="reviewer")


def run_workload(rpc: RpcClient, fake: FakeLLM, good: Receiver, bad: Receiver) -> dict[str, str]:
    """Five Tasks, one after another: completed (its pushes delivered), failed
    (its pushes failing until the config is disabled), waiting, approved,
    expired (reminded and escalated first). Each model answer reports 10
    input and 5 output tokens."""
    fake.on("hello", Text("Hi."))
    fake.on("broken", Fail(500, "model down"))
    fake.on("detail", ToolCall("two_step", {"topic": "x"}))
    fake.on("expense", ToolCall("file_expense", {"amount": 12.5, "description": "taxi"}))
    fake.on("expense", Text("Filed."))
    fake.on("deadline", ToolCall("expiring", {"seconds": 3600}), Text("Too late."))
    ids = {
        "completed": send(rpc, "hello", push=good.url),
        "failed": send(rpc, "broken", push=bad.url),
    }
    for name in ("completed", "failed"):
        assert state(rpc, ids[name]) == name
    ids["waiting"] = send(rpc, "detail")
    ids["approved"] = send(rpc, "expense")
    ids["expired"] = send(rpc, "deadline")
    for name in ("waiting", "approved", "expired"):
        assert state(rpc, ids[name]) == "input-required"
    approve(ids["approved"])
    assert state(rpc, ids["approved"]) == "completed"
    later = timezone.now() + timedelta(hours=2)
    remind_due(now=timezone.now())  # the reminder ...
    remind_due(now=timezone.now() + timedelta(seconds=2))  # ... past ESCALATE_AFTER, escalation
    assert expire_due(now=later) == [ids["expired"]]
    assert state(rpc, ids["expired"]) == "completed"
    wait_until(
        lambda: PushConfig.objects.filter(disabled_at__isnull=False).exists(),
        what="the failing config to be disabled",
    )
    return ids


def test_a_scripted_workload_is_counted_metric_by_metric(
    agent_url: str, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(
        fake_llm,
        TOOLKIT=tools.toolkit_setting(),
        PUSH=ALLOW,
        METRICS={"TOKEN": TOKEN},
        EXPIRY_SWEEP_INTERVAL=0,  # this test sweeps, with its own clock
        REVIEW={"REMIND_BEFORE": 7200.0, "ESCALATE_AFTER": 1.0},
    )
    with Receiver() as good, Receiver() as bad:
        bad.always(500)
        run_workload(RpcClient(agent_url), fake_llm, good, bad)
        wait_until(
            lambda: PushDelivery.objects.filter(outcome="delivered").count() == len(good.received),
            what="every delivery to be recorded",
        )
        found = read_once(
            agent_url,
            "every run to have ended",
            toolnexus_run_duration_seconds_count=7,
            toolnexus_runs_in_flight=0,
        )

    assert v(found, "toolnexus_tasks_started_total") == 5
    assert by_label(found, "toolnexus_tasks_finished_total", "outcome") == {
        "completed": 3,  # hello, the approved expense, the expired deadline
        "failed": 1,
    }
    assert v(found, "toolnexus_requests_waiting") == 1  # the two-step detail
    assert v(found, "toolnexus_request_oldest_wait_seconds") > 0
    assert by_label(found, "toolnexus_decisions_total", "decision") == {"approve": 1, "expire": 1}
    assert v(found, "toolnexus_requests_expired_total") == 1
    assert v(found, "toolnexus_review_reminders_total") == 1
    assert v(found, "toolnexus_review_escalations_total") == 1

    # Runs: hello, broken, detail, expense and its resume, deadline and its resume.
    assert v(found, "toolnexus_run_duration_seconds_count") == 7
    assert v(found, "toolnexus_runs_in_flight") == 0
    # Model calls: one failed (broken), six answered, each 10 in and 5 out.
    assert by_label(found, "toolnexus_model_calls_total", "outcome") == {"ok": 6, "error": 1}
    assert v(found, "toolnexus_model_call_duration_seconds_count") == 7
    assert v(found, "toolnexus_model_tokens_total", direction="input") == 60
    assert v(found, "toolnexus_model_tokens_total", direction="output") == 30
    tool_calls = {
        (dict(labels)["tool"], dict(labels)["outcome"]): n
        for (name, labels), n in found.items()
        if name == "toolnexus_tool_calls_total"
    }
    assert tool_calls == {
        ("two_step", "waiting"): 1,
        ("file_expense", "waiting"): 1,
        ("file_expense", "ok"): 1,
        ("expiring", "waiting"): 1,
        ("expiring", "declined"): 1,  # it expired: the call never ran again
    }

    # Push: what the deliveries table recorded, outcome by outcome.
    recorded: dict[str, int] = {}
    for outcome in PushDelivery.objects.values_list("outcome", flat=True):
        recorded[outcome] = recorded.get(outcome, 0) + 1
    # (hello's moves, each delivered; broken's first failing, retried, then disabled)
    assert recorded["delivered"] >= 2 and recorded["retry"] == 1 and recorded["disabled"] == 1
    assert by_label(found, "toolnexus_push_deliveries_total", "outcome") == recorded
    assert v(found, "toolnexus_push_configs_disabled_total") == 1

    # Nothing happened to these: they are exposed, at zero.
    for name in ("toolnexus_lease_takeovers_total", "toolnexus_attempts_exhausted_total"):
        assert v(found, name) == 0 and name in names(found)
    assert v(found, "toolnexus_streams_open") == 0
    assert v(found, "toolnexus_database_queue_depth") >= 0
    for name, label, zero in (
        ("toolnexus_tasks_finished_total", "outcome", "canceled"),
        ("toolnexus_decisions_total", "decision", "decline"),
        ("toolnexus_push_deliveries_total", "outcome", "gave-up"),
    ):  # a closed label set is exposed whole, at 0 until it happens
        assert found[(name, frozenset({(label, zero)}))] == 0
    assert not [labels for (_, labels) in found if any(k == "task_id" for k, _ in labels)]


def test_a_lapsed_lease_and_a_task_given_up_are_counted(agent_url: str, configure: Any) -> None:
    configure(METRICS={"TOKEN": TOKEN})
    store = get_task_store()
    taken_over = task_in("working")
    lifecycle.requeue(store, taken_over)  # what recovery does when a worker died
    given_up = task_in("working")
    lifecycle.give_up(store, given_up)  # ... once MAX_ATTEMPTS runs were interrupted
    found = read(agent_url)
    assert v(found, "toolnexus_lease_takeovers_total") == 1
    assert v(found, "toolnexus_attempts_exhausted_total") == 1
    assert by_label(found, "toolnexus_tasks_finished_total", "outcome") == {"failed": 1}


def test_off_nothing_is_counted(agent_url: str, configure: Any, fake_llm: FakeLLM) -> None:
    configure(fake_llm)
    fake_llm.push(Text("Hi."))
    rpc = RpcClient(agent_url)
    assert state(rpc, send(rpc, "hello")) == "completed"
    assert metrics.metrics() is None
    configure(fake_llm, METRICS={"TOKEN": TOKEN})
    assert v(read(agent_url), "toolnexus_tasks_started_total") == 0


def test_an_open_stream_and_a_run_under_way_are_gauged(
    agent_url: str, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm, METRICS={"TOKEN": TOKEN})
    fake_llm.push(Hang(then=Text("Hi.")))
    message = {"role": "user", "parts": [{"kind": "text", "text": "hello"}], "messageId": "m-1"}
    with open_stream(agent_url, "message/stream", {"message": message}) as stream:
        fake_llm.wait_held(1)
        during = read(agent_url)
        fake_llm.release()
        rest = stream.rest()
    assert rest and rest[-1]["data"]["result"]["status"]["state"] == "completed"
    assert v(during, "toolnexus_streams_open") == 1
    assert v(during, "toolnexus_runs_in_flight") == 1
    after = read_once(
        agent_url,
        "the stream and the run to end",
        toolnexus_streams_open=0,
        toolnexus_runs_in_flight=0,
    )
    assert v(after, "toolnexus_run_duration_seconds_count") == 1


def test_mcp_tool_calls_are_counted_by_tool_and_outcome(configure: Any, client: Client) -> None:
    toolkit = tools.toolkit_setting()
    configure(
        TOOLKIT={**toolkit, "tools": [*toolkit["tools"], *mcp_tools.PATHS]},
        MCP={"tools": "__all__"},
        METRICS={"TOKEN": TOKEN},
    )
    accept = {"HTTP_ACCEPT": MCP_HEADERS["accept"]}
    for name in ("broken", "no_such_tool"):
        params = {"name": name, "arguments": {"reason": "counted"}}
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}
        reply = client.post("/agent/mcp", call, content_type="application/json", **accept)
        assert reply.status_code == 200, reply.content
    scraped = client.get("/agent/metrics", HTTP_AUTHORIZATION=BEARER["Authorization"])
    found = samples(scraped.content)
    assert v(found, "toolnexus_mcp_calls_total", tool="broken", outcome="error") == 1
    assert v(found, "toolnexus_mcp_calls_total", tool="no_such_tool", outcome="error") == 1


# -- one server, two workers ---------------------------------------------------------------


def started_by_process(directory: Path) -> dict[str, float]:
    """toolnexus_tasks_started per worker, as each wrote it (counter_<pid>.db)."""
    from prometheus_client.mmap_dict import MmapedDict

    found: dict[str, float] = {}
    for path in directory.glob("counter_*.db"):
        for key, count, *_ in MmapedDict.read_all_values_from_file(str(path)):
            if json.loads(key)[0] == "toolnexus_tasks_started" and count:
                found[path.stem.removeprefix("counter_")] = count
    return found


@pytest.mark.slow
def test_two_workers_are_summed_in_one_scrape(fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.default = Text("Hi.")
    shared = tmp_path / "metrics"
    shared.mkdir()
    (shared / "counter_1.db").write_bytes(b"left by an earlier run")  # cleared at start
    env = {
        **fake_env(fake_llm),
        "DJANGO_SETTINGS_MODULE": "tests.observability.metrics_settings",
        "PROMETHEUS_MULTIPROC_DIR": str(shared),
    }
    with serve(tmp_path, "--workers", "2", env=env) as server:
        agent = server.wait_ready()["url"]
        rpc = RpcClient(agent)
        sent: list[str] = []

        def both_workers_took_some() -> bool:
            sent.append(rpc.send(f"hello {len(sent)}")["id"])  # a new connection each
            return len(started_by_process(shared)) == 2

        wait_until(both_workers_took_some, timeout=60, what="Tasks taken by both workers")
        for task_id in sent:
            assert rpc.wait(task_id)["status"]["state"] == "completed"
        assert sum(started_by_process(shared).values()) == len(sent)
        assert "1" not in started_by_process(shared)

        found = samples(scrape(agent, BEARER).body)  # one worker answers, for both
        assert v(found, "toolnexus_tasks_started_total") == len(sent)
        assert v(found, "toolnexus_tasks_finished_total", outcome="completed") == len(sent)
        assert v(found, "toolnexus_run_duration_seconds_count") == len(sent)
        assert v(found, "toolnexus_model_tokens_total", direction="input") == 10 * len(sent)
        assert v(found, "toolnexus_runs_in_flight") == 0
        assert scrape(agent).status == 404


def test_serve_gives_its_workers_a_fresh_directory_only_when_metrics_are_on(
    configure: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(metrics.MULTIPROC_ENV, "restored after the test")
    monkeypatch.delenv(metrics.MULTIPROC_ENV)
    configure()
    assert metrics.prepare_multiprocess() is None
    assert metrics.MULTIPROC_ENV not in os.environ
    configure(METRICS={"TOKEN": TOKEN})
    made = metrics.prepare_multiprocess()
    assert made is not None and made.is_dir() and not any(made.iterdir())
    assert os.environ[metrics.MULTIPROC_ENV] == str(made)
    metrics.remove_directory(made)
    assert not made.exists()


#: With METRICS off: a SendMessage run to its end and a GET of the metrics
#: URL; then which prometheus_client modules the app's own code imported,
#: and the same once METRICS is set (:mod:`tests.observability.imports`).
NO_IMPORT = """
assert call("SendMessage", {"message": MESSAGE}).status_code == 200
assert client.get("/agent/metrics", HTTP_AUTHORIZATION="Bearer x").status_code == 404
from toolnexus_django.fulfilment.runs import close_runs
close_runs(timeout=30)
off = sorted(ours)
from django.conf import settings
from django.test import override_settings
with override_settings(TOOLNEXUS={**settings.TOOLNEXUS, "METRICS": {"TOKEN": "x"}}):
    assert client.get("/agent/metrics", HTTP_AUTHORIZATION="Bearer x").status_code == 200
print(json.dumps([off, sorted(ours)]))
"""


@pytest.mark.slow
def test_the_app_imports_prometheus_client_only_once_metrics_are_on() -> None:
    off, on = imported_by_the_app("prometheus_client", NO_IMPORT)
    assert off == []
    assert "prometheus_client" in on  # switched on, and only then
