"""``current_run()`` and ``approval=`` across real processes: a Task suspended
under one ``toolnexus_serve`` (or worker) is approved and resumed by a new
process, whose tools still name the Task, its context, its owner (a
signed-in user), the answer and the reviewer; and two workers both able to
resume the same answered Task run its approved body once. The worker tests
run on each Django Tasks engine (tests/workers.py): ``db_worker`` and
``rqworker``.

The tools run in the served processes: they record what they saw in a file
(``TOOLNEXUS_TEST_SEEN``, tests/django_tools.py); what they wrote is read
from the database."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Group, Permission
from django.db import transaction
from django.test import Client
from django.urls import reverse

from testproject.expenses.models import Expense
from tests.admin_http import AdminSession
from tests.conftest import RpcClient, basic, wait_until
from tests.django_tools import seen_in
from tests.fakes import FakeLLM, Hang, Text, ToolCall
from tests.servers import ROOT, database_url, fake_env, serve
from tests.utils import pending_id
from tests.workers import ENGINES, rq_jobs, task_workers

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

REVIEW = "admin:toolnexus_django_awaitinghumantask_review"
SETTINGS = {"DJANGO_SETTINGS_MODULE": "tests.served_settings"}


@pytest.fixture
def rita(django_user_model: Any) -> Any:
    """A reviewer who signs in to the admin with a password."""
    user = django_user_model.objects.create_user("rita", password="rita-pw", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="answer_task"))
    return user


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def web_process(configure: Any, fake: FakeLLM, backend: str | None = "database") -> None:
    """This process as the web process of a deployment with workers of the
    engine ``backend`` (an alias of settings.TASKS), set as the workers are
    (tests/served_settings.py): it accepts Tasks and hosts the admin; the
    workers run them (``backend=None``: it runs them itself)."""
    from tests import served_settings

    served = served_settings.TOOLNEXUS
    configure(
        fake,
        TASK_BACKEND=backend,
        TOOLKIT=served["TOOLKIT"],
        AUTHENTICATION_CLASSES=served["AUTHENTICATION_CLASSES"],
        PERMISSION_CLASSES=served["PERMISSION_CLASSES"],
    )


def signed_in(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def approve_in_admin(client: Client, task_id: str) -> None:
    reply = client.post(
        reverse(REVIEW, args=[task_id]), {"_answer": "approve", "request_id": pending_id(task_id)}
    )
    assert reply.status_code == 302, reply.status_code


def test_after_a_restart_a_new_toolnexus_serve_process_resumes_with_the_same_run_context(
    tmp_path: Path, fake_llm: FakeLLM, users: dict[str, Any], rita: Any
) -> None:
    seen_file = tmp_path / "seen.jsonl"
    env = {**fake_env(fake_llm), **SETTINGS, "TOOLNEXUS_TEST_SEEN": str(seen_file)}
    fake_llm.push(
        ToolCall("whoami", {}),
        ToolCall("awhoami", {}),
        ToolCall("approved_group", {"name": "ops"}),
        # Once resumed (in the second server):
        ToolCall("whoami", {}),
        ToolCall("awhoami", {}),
        Text("ops is there"),
    )
    with serve(tmp_path, "--workers", "1", env=env) as first:
        first.wait_ready()
        rpc = RpcClient(f"{first.base}/agent/", basic("alice"))
        task_id = rpc.send("make the ops group", contextId="ctx-restart")["id"]
        waiting = rpc.wait(task_id)
        assert waiting["status"]["state"] == "input-required"
        assert waiting["status"]["message"]["parts"][0]["text"] == "Create the group ops?"
        first.signal(signal.SIGTERM)
        assert first.wait(timeout=30) == 0
    assert not Group.objects.filter(name="ops").exists()
    before = seen_in(seen_file)

    with serve(tmp_path, "--workers", "1", env=env) as second:
        second.wait_ready()
        admin = AdminSession(second.base).login("rita", "rita-pw")
        review = reverse(REVIEW, args=[task_id])
        page = admin.get(review)
        assert page.status == 200 and "Create the group ops?" in page.text
        assert "approved_group" in page.text and '"name": "ops"' in page.text
        landed = admin.post(review, {"_answer": "approve", "request_id": pending_id(task_id)})
        assert landed.status == 200
        rpc = RpcClient(f"{second.base}/agent/", basic("alice"))
        done = rpc.wait(task_id, ("completed", "failed"), timeout=30)
        assert done["status"]["state"] == "completed", done["status"]
    after = seen_in(seen_file)[len(before) :]

    assert [s["tool"] for s in before] == ["whoami", "awhoami"]
    assert [s["tool"] for s in after] == ["approved_group", "whoami", "awhoami"]
    # The resume ran in another process than the first run.
    assert {s["pid"] for s in before}.isdisjoint({s["pid"] for s in after})
    for said in before + after:
        assert (said["task_id"], said["context_id"], said["owner"], said["via"]) == (
            task_id,
            "ctx-restart",
            "alice",
            "a2a",
        )
    answered, *later = after
    assert answered["answer"]["ok"] is True and answered["answer"]["id"].startswith(
        "approve-approved_group-"
    )
    assert answered["approved_by"] == ["rita"]
    assert all(s["answer"] is None and s["approved_by"] == [] for s in before + later)
    assert Group.objects.filter(name="ops").count() == 1


def test_after_a_restart_a_new_worker_resumes_an_async_tool_with_the_same_run_context(
    live_server: Any,
    tmp_path: Path,
    configure: Any,
    fake_llm: FakeLLM,
    users: dict[str, Any],
    rita: Any,
    engine: str,
    settings: Any,
) -> None:
    web_process(configure, fake_llm, engine)
    seen_file = tmp_path / "seen.jsonl"
    env = {"LLM_BASE_URL": fake_llm.url, "LLM_RETRIES": "0", **SETTINGS}
    env["TOOLNEXUS_TEST_SEEN"] = str(seen_file)
    fake_llm.push(
        ToolCall("awhoami", {}),
        ToolCall("anote", {"text": "lunch with the auditors"}),
        ToolCall("whoami", {}),
        Text("noted"),
    )
    rpc = RpcClient(f"{live_server.url}/agent/", basic("alice"))
    with task_workers(engine, tmp_path, env, settings) as workers:
        first = workers.start()
        first.wait_ready()
        task_id = rpc.send("note my lunch", contextId="ctx-worker")["id"]
        waiting = rpc.wait(task_id, timeout=30)
        assert waiting["status"]["message"]["parts"][0]["text"] == (
            "Note 'lunch with the auditors' for me?"
        )
        assert first.stop() == 0

        approve_in_admin(signed_in(rita), task_id)
        # Answered, with no worker running: it waits for one.
        assert rpc.get(task_id)["result"]["status"]["state"] == "working"
        assert not Expense.objects.exists()

        second = workers.start()
        done = rpc.wait(task_id, ("completed", "failed"), timeout=30)
        assert done["status"]["state"] == "completed", done["status"]

    seen = seen_in(seen_file)
    assert [s["tool"] for s in seen] == ["awhoami", "anote", "whoami"]
    # The first run in the first worker (db_worker) or its horse (rqworker),
    # the resume in the second's.
    assert seen[0]["pid"] in first.runners()
    assert {s["pid"] for s in seen[1:]} <= second.runners()
    assert first.runners().isdisjoint(second.runners())
    for said in seen:
        assert (said["task_id"], said["context_id"], said["owner"]) == (
            task_id,
            "ctx-worker",
            "alice",
        )
    assert seen[1]["answer"]["ok"] is True and seen[1]["approved_by"] == ["rita"]
    assert seen[2]["answer"] is None and seen[2]["approved_by"] == []
    [note] = Expense.objects.all()
    assert (note.owner, note.description, note.approved_by, note.task_id) == (
        users["alice"],
        "lunch with the auditors",
        "rita",
        task_id,
    )


def test_two_workers_both_able_to_resume_an_approved_call_run_its_body_once(
    live_server: Any,
    tmp_path: Path,
    configure: Any,
    fake_llm: FakeLLM,
    users: dict[str, Any],
    rita: Any,
    engine: str,
    settings: Any,
) -> None:
    from toolnexus_django.fulfilment.jobs import resume

    web_process(configure, fake_llm, engine)
    users["alice"].user_permissions.add(Permission.objects.get(codename="add_expense"))
    # Once resumed, the run's next model call holds: the resuming worker is
    # busy with the Task while the other takes the duplicate jobs.
    fake_llm.push(
        ToolCall("file_expense", {"amount": 12.5, "description": "taxi"}),
        Hang(max_seconds=30, then=Text("filed")),
    )
    rpc = RpcClient(f"{live_server.url}/agent/", basic("alice"))
    env = {"LLM_BASE_URL": fake_llm.url, "LLM_RETRIES": "0", **SETTINGS}
    with task_workers(engine, tmp_path, env, settings) as workers:
        racers = [workers.start(), workers.start()]
        for worker in racers:
            worker.wait_ready()
        task_id = rpc.send("file my taxi")["id"]
        assert rpc.wait(task_id, timeout=30)["status"]["state"] == "input-required"
        assert not Expense.objects.exists()

        client = signed_in(rita)
        # The answer's resume job and two more (as a redelivery or a recovery
        # sweep would enqueue) reach the two idle workers as the answer commits.
        with transaction.atomic():
            approve_in_admin(client, task_id)
            for _ in range(2):
                transaction.on_commit(lambda: resume.using(backend=engine).enqueue(task_id))
        fake_llm.wait_held(1, timeout=30)  # one worker resumed it, and holds it
        duplicates = wait_until(
            lambda: resume_jobs(engine, task_id, finished=2),
            timeout=30,
            what="the other worker's jobs to end",
        )
        fake_llm.release()
        done = rpc.wait(task_id, ("completed", "failed"), timeout=30)
        assert done["status"]["state"] == "completed", done["status"]
        jobs = wait_until(
            lambda: resume_jobs(engine, task_id, finished=3), timeout=30, what="the resume to end"
        )
        assert all(w.proc.poll() is None for w in racers), "a worker died"

    # While one worker resumed the Task, the other took both duplicates and
    # found it taken; the approved body ran once, and the model was called
    # once to start and once after it.
    [winner] = [j for j in jobs if j not in duplicates]
    assert winner.result == "completed"
    assert [j.result for j in duplicates] == ["working", "working"]
    assert {j.worker for j in duplicates}.isdisjoint({winner.worker})
    [claim] = Expense.objects.all()
    assert (claim.owner, claim.task_id, claim.approved_by) == (users["alice"], task_id, "rita")
    assert len(fake_llm.requests) == 2


def test_processes_resuming_one_answered_task_at_the_same_instant_run_its_body_once(
    live_server: Any,
    tmp_path: Path,
    configure: Any,
    fake_llm: FakeLLM,
    users: dict[str, Any],
    rita: Any,
) -> None:
    users["alice"].user_permissions.add(Permission.objects.get(codename="add_expense"))
    fake_llm.push(
        ToolCall("file_expense", {"amount": 12.5, "description": "taxi"}), Text("filed once")
    )
    web_process(configure, fake_llm, backend=None)  # the first run: in this process
    rpc = RpcClient(f"{live_server.url}/agent/", basic("alice"))
    task_id = rpc.wait(rpc.send("file my taxi")["id"])["id"]
    assert rpc.get(task_id)["result"]["status"]["state"] == "input-required"
    # Answered with its resume queued for db_workers, of which there are none:
    # the racers below are the only processes to resume it.
    web_process(configure, fake_llm)
    approve_in_admin(signed_in(rita), task_id)

    env = {k: v for k, v in os.environ.items() if not k.startswith("LLM_")}
    env.update({**SETTINGS, "DATABASE_URL": database_url(), "LLM_BASE_URL": fake_llm.url})
    env.update({"LLM_RETRIES": "0", "TOOLNEXUS_LOG_LEVEL": "INFO"})
    racers = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.resume_race", task_id],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    try:
        for proc in racers:  # every one up, its runtime started...
            if line_of(proc, timeout=60) != "ready":
                raise AssertionError(proc.communicate(timeout=30)[1][-2000:])
        for proc in racers:  # ...then all let go at once
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        outcomes = [line_of(proc, timeout=60) for proc in racers]
        logs = [proc.communicate(timeout=30)[1] for proc in racers]
    finally:
        for proc in racers:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)

    assert rpc.get(task_id)["result"]["status"]["state"] == "completed"
    assert all(proc.returncode == 0 for proc in racers), logs
    # One process took the answer; the others found it taken.
    assert sum("working -> working (resume)" in log for log in logs) == 1, logs
    assert "completed" in outcomes, outcomes
    [claim] = Expense.objects.all()
    assert (claim.owner, claim.task_id, claim.approved_by) == (users["alice"], task_id, "rita")
    assert len(fake_llm.requests) == 2, "the run resumed more than once"


def line_of(proc: subprocess.Popen[str], timeout: float) -> str:
    """The next line ``proc`` prints (stripped), waiting at most ``timeout`` s."""
    got: list[str] = []
    out = proc.stdout
    assert out is not None
    reader = threading.Thread(target=lambda: got.append(out.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    assert got, f"no line from process {proc.pid} within {timeout}s"
    return got[0].strip()


@dataclass(frozen=True)
class Ended:
    """A resume job that ran to its end: what it returned, and which worker
    (or, for RQ, which work horse) ran it."""

    result: str
    worker: str


def resume_jobs(engine: str, task_id: str, *, finished: int) -> list[Ended] | None:
    """``task_id``'s resume jobs that ran to their end, in the order they
    ended, once there are ``finished`` of them."""
    if engine == "database":
        from django_tasks_db.models import DBTaskResult

        rows = DBTaskResult.objects.filter(
            task_path__endswith=".resume", finished_at__isnull=False
        ).order_by("finished_at")
        ended = [Ended(row.return_value, ",".join(row.worker_ids)) for row in rows]
    else:
        jobs = [j for j in rq_jobs(task_id) if j.func_name.endswith(".resume")]
        # RQ saves a job's status and its end time apart: "finished" can be
        # read before ended_at is (CI's PostgreSQL run sorted a None).
        finished_jobs = [j for j in jobs if j.get_status(refresh=True) == "finished"]
        ended_jobs = [j for j in finished_jobs if j.ended_at is not None]
        done = sorted(ended_jobs, key=lambda j: j.ended_at)
        ended = [Ended(j.return_value(), j.worker_name) for j in done]
    return ended if len(ended) >= finished else None
