"""django-tasks-rq on Redis with real ``manage.py rqworker`` processes: what
RQ itself does with a run whose process died (it fails the job and never
runs it again: the Task's lease does), and an approval resumed through RQ.
Runs to completion, push deliveries and kill -9 of a whole worker (and what
RQ then does with its job) are in test_db_worker.py, on both engines.

RQ's default worker forks a work horse per job: the run, its lease and its
model call are the horse's; the rqworker only watches it."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.db import connection
from toolnexus import Answer

from testproject.expenses.models import Expense
from tests.conftest import RpcClient, basic, wait_until
from tests.fakes import FakeLLM, Hang, Text, ToolCall
from tests.servers import fake_env
from tests.utils import assert_event_log, pending_id, task_in
from tests.workers import descendants, rq_jobs, runner_of, sweeping, task_workers
from toolnexus_django.fulfilment import jobs
from toolnexus_django.stores import DjangoTaskStore

pytestmark = pytest.mark.django_db(transaction=True)

LEASE_SECONDS = 2.0
TERMINAL = ("completed", "failed", "canceled", "rejected")


@pytest.mark.slow
def test_a_killed_work_horse_fails_its_rq_job_and_the_lease_runs_the_task_again_once(
    live_server: Any, configure: Any, fake_llm: FakeLLM, tmp_path: Path, settings: Any
) -> None:
    """kill -9 of the process that runs the Task (the OOM killer's pick),
    the rqworker surviving: RQ fails that job and does not retry it; the
    sweep requeues the Task once its lease lapses, and the same rqworker runs
    that new job to completion."""
    configure(fake_llm, store="django", TASK_BACKEND="rq", LEASE_SECONDS=LEASE_SECONDS)
    marker = "horse killed"
    fake_llm.on(marker, Hang(max_seconds=30), Text(f"{marker}: finished by a new horse"))
    env = {**fake_env(fake_llm), "TOOLNEXUS_LEASE_SECONDS": f"{LEASE_SECONDS:g}"}
    rpc = RpcClient(f"{live_server.url}/agent/")
    with task_workers("rq", tmp_path, env, settings) as workers:
        worker = workers.start()
        task_id = rpc.send(f"{marker}: file my receipt")["id"]
        fake_llm.wait_held(1, timeout=30)
        horse = runner_of(task_id)
        assert horse in descendants(worker.pid)  # a child of the rqworker, not the rqworker
        [killed_job] = rq_jobs(task_id)

        os.kill(horse, signal.SIGKILL)
        wait_until(
            lambda: killed_job.get_status(refresh=True) == "failed",
            timeout=20,
            what="the rqworker to fail the dead horse's job",
        )
        assert "Work-horse terminated unexpectedly" in worker.output()

        with sweeping():
            done = rpc.wait(task_id, TERMINAL, timeout=45)
        assert done["status"]["state"] == "completed", done["status"]
        assert worker.proc.poll() is None, "the rqworker died"

        # RQ left the failed job failed; the second run was a new job,
        # enqueued by the sweep, done by a new horse of the same rqworker.
        first, second = rq_jobs(task_id)
        assert first.id == killed_job.id and first.get_status() == "failed"
        assert first.func_name == second.func_name == "toolnexus_django.fulfilment.jobs.fulfil"
        # The horse marks its job finished just after the run's last write.
        wait_until(
            lambda: second.get_status(refresh=True) == "finished",
            timeout=10,
            what="RQ to mark the second job finished",
        )
        assert second.return_value() == "completed"
    assert runner_of(task_id) in worker.runners() - {horse}
    assert len(fake_llm.requests_for(marker)) == 2
    kinds = [e["kind"] for e in assert_event_log(task_id, DjangoTaskStore())]
    assert kinds == ["submit", "claim", "requeue", "claim", "complete"]


@pytest.fixture
def rita(django_user_model: Any) -> Any:
    """A reviewer."""
    user = django_user_model.objects.create_user("rita", password="rita-pw", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="answer_task"))
    return user


@pytest.mark.slow
def test_an_approval_resumes_through_rq_and_the_approved_call_writes_once(
    live_server: Any,
    configure: Any,
    fake_llm: FakeLLM,
    tmp_path: Path,
    settings: Any,
    users: dict[str, Any],
    rita: Any,
) -> None:
    """A run stops for a reviewer on one rqworker, which then stops; the
    approval's resume waits in Redis until a new rqworker takes it, and the
    approved atomic tool writes its row once."""
    from tests import served_settings
    from toolnexus_django.review import answer_task

    served = served_settings.TOOLNEXUS
    configure(
        fake_llm,
        TASK_BACKEND="rq",
        TOOLKIT=served["TOOLKIT"],
        AUTHENTICATION_CLASSES=served["AUTHENTICATION_CLASSES"],
        PERMISSION_CLASSES=served["PERMISSION_CLASSES"],
    )
    users["alice"].user_permissions.add(Permission.objects.get(codename="add_expense"))
    fake_llm.push(ToolCall("file_expense", {"amount": 12.5, "description": "taxi"}), Text("filed"))
    env = {**fake_env(fake_llm), "DJANGO_SETTINGS_MODULE": "tests.served_settings"}
    rpc = RpcClient(f"{live_server.url}/agent/", basic("alice"))
    with task_workers("rq", tmp_path, env, settings) as workers:
        first = workers.start()
        task_id = rpc.send("file my taxi")["id"]
        waiting = rpc.wait(task_id, timeout=30)
        assert waiting["status"]["state"] == "input-required", waiting["status"]
        assert first.stop() == 0

        answer = Answer(id=pending_id(task_id), ok=True, data={"cost_center": "travel"})
        answer_task(task_id, answer, decision="approve", user=rita)
        # Answered, and its resume queued in Redis with no rqworker running.
        [_, resume_job] = rq_jobs(task_id)
        assert resume_job.func_name == "toolnexus_django.fulfilment.jobs.resume"
        assert resume_job.get_status() == "queued"
        assert rpc.get(task_id)["result"]["status"]["state"] == "working"
        assert not Expense.objects.exists()

        second = workers.start()
        done = rpc.wait(task_id, ("completed", "failed"), timeout=30)
        assert done["status"]["state"] == "completed", done["status"]
        # The horse marks its job finished just after the run's last write.
        wait_until(
            lambda: resume_job.get_status(refresh=True) == "finished",
            timeout=20,
            what="RQ to mark the resume job finished",
        )
        assert resume_job.return_value() == "completed"

    assert runner_of(task_id) in second.runners()
    [claim] = Expense.objects.all()
    assert (claim.owner, claim.task_id, claim.approved_by, claim.cost_center) == (
        users["alice"],
        task_id,
        "rita",
        "travel",
    )
    assert len(fake_llm.requests) == 2  # the first run's call, and the resumed one's
    kinds = [e["kind"] for e in assert_event_log(task_id, DjangoTaskStore())]
    assert kinds.count("complete") == 1


def test_jobs_on_one_long_lived_worker_thread_leave_no_connection_open(
    configure: Any, fake_llm: FakeLLM
) -> None:
    """RQ's SimpleWorker (``rqworker --worker-class rq.SimpleWorker``) runs
    every job on its one thread: each job closes its connections as Django
    does after a request (``CONN_MAX_AGE`` is 0 here), not just at exit."""
    from concurrent.futures import ThreadPoolExecutor

    configure(fake_llm, store="django")
    fake_llm.default = Text("done")
    ids = [str(task_in("submitted", store=DjangoTaskStore())["id"]) for _ in range(2)]

    def job(task_id: str) -> tuple[str, bool]:
        return jobs.fulfil.call(task_id), connection.connection is None

    with ThreadPoolExecutor(1) as thread:  # one thread, its jobs one after the other
        try:
            done = [thread.submit(job, task_id).result(timeout=30) for task_id in ids]
        finally:
            thread.submit(lambda: connection.close()).result(timeout=10)
    assert done == [("completed", True), ("completed", True)]
