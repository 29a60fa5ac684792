"""An approved ``atomic=`` tool runs once, even across a crash: kill -9 of the
whole ``toolnexus_serve`` tree after the tool's row committed and before the
Task completed, then a new server — the Task completes with exactly one row.
The same during a bulk approval of 50 in the admin.

The demo's own ``file_expense`` (``permission=``, ``atomic=``, ``approval=``)
writes the ``Expense`` rows. The Tasks are sent and suspended in this process
(``toolnexus_django.testing``: the scripted model, on the test database the
server reads); a reviewer approves them in the served admin over real HTTP;
the resumed run's model call — the one after the tool — is the fake model's,
held open until the server is killed. Runs on SQLite and on PostgreSQL, as
the suite does (DATABASE_URL). The rule itself: tests/project_tools/test_exactly_once.py.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from testproject.expenses.models import Expense
from tests.admin_http import AdminSession
from tests.conftest import wait_until
from tests.e2e.test_crash import TERMINAL, crash_env, kill_whole_server, stored
from tests.fakes import FakeLLM, Hang, Text
from tests.servers import serve
from tests.utils import pending_id
from toolnexus_django.models import TaskRecord
from toolnexus_django.testing import ScriptedModel, call, run_task

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc; POSIX signals"),
]

QUEUE = "/admin/toolnexus_django/awaitinghumantask/"
FILED = "Filed."


@pytest.fixture
def people(settings: Any) -> dict[str, Any]:
    """The demo's users (alice asks, rita reviews) and its own tools in this process."""
    tools = settings.DEMO_AGENTS["expenses"]["tools"]
    settings.TOOLNEXUS = {
        **settings.TOOLNEXUS,
        "TOOLKIT": {**settings.TOOLNEXUS["TOOLKIT"], "tools": tools},
    }
    call_command("demo_users", stdout=io.StringIO())
    return {u.username: u for u in get_user_model().objects.all()}


def waiting_claims(alice: Any, count: int) -> list[str]:
    """``count`` Tasks of alice's, each waiting for a reviewer to approve its claim."""
    steps = [call("file_expense", amount=10 + n, description=f"claim {n}") for n in range(count)]
    ids = []
    with ScriptedModel(*steps):
        for n in range(count):
            run = run_task(f"file claim {n}", owner=alice)
            assert run.state == "input-required", run
            ids.append(run.task_id)
    return ids


@pytest.fixture
def model(fake_llm: FakeLLM) -> Iterator[dict[str, bool]]:
    """The model after the tool: held open until ``model["answers"]`` is set
    (the server is dead by then), then it says :data:`FILED`."""
    phase = {"answers": False}
    fake_llm.respond = lambda body: Text(FILED) if phase["answers"] else Hang(max_seconds=60)
    yield phase
    phase["answers"] = True
    fake_llm.release()


def kill_then_restart(
    tmp_path: Path, fake_llm: FakeLLM, model: dict[str, bool], first: Any, task_ids: list[str]
) -> None:
    """Kill the server's whole tree; a new server finishes every Task."""
    assert not TaskRecord.objects.filter(pk__in=task_ids, state="completed").exists()
    kill_whole_server(first)
    model["answers"] = True
    fake_llm.release()  # the dead server's calls, still held open
    with serve(tmp_path, env=crash_env(fake_llm, DEMO_AGENT="expenses")) as second:
        second.wait_ready()
        wait_until(
            lambda: all(stored(t)["status"]["state"] in TERMINAL for t in task_ids),
            timeout=60,
            what="every Task to finish on the new server",
        )
    for task_id in task_ids:
        task = stored(task_id)
        assert task["status"]["state"] == "completed", task["status"]
        assert task["artifacts"][0]["parts"][0]["text"] == FILED


def test_an_approved_atomic_tool_killed_before_the_task_completed_writes_one_row(
    fake_llm: FakeLLM, model: dict[str, bool], tmp_path: Path, people: dict[str, Any]
) -> None:
    [task_id] = waiting_claims(people["alice"], 1)
    with serve(tmp_path, env=crash_env(fake_llm, DEMO_AGENT="expenses")) as first:
        first.wait_ready()
        rita = AdminSession(first.base).login("rita", "rita-pw")
        review = f"{QUEUE}{task_id}/review/"
        assert rita.get(review).status == 200
        fields = {"request_id": pending_id(task_id), "_answer": "reply"}
        fields["reply-cost_center"] = "travel"
        assert rita.post(review, fields).status == 200
        # The row is committed, and the model call after the tool is under way.
        wait_until(lambda: Expense.objects.filter(task_id=task_id).exists(), what="the row")
        fake_llm.wait_held(1, timeout=20)
        kill_then_restart(tmp_path, fake_llm, model, first, [task_id])

    [expense] = Expense.objects.filter(task_id=task_id)
    assert (expense.owner, expense.cost_center, expense.approved_by) == (
        people["alice"],
        "travel",
        "rita",
    )


def test_a_bulk_approval_of_fifty_killed_midway_writes_one_row_per_task(
    fake_llm: FakeLLM, model: dict[str, bool], tmp_path: Path, people: dict[str, Any]
) -> None:
    task_ids = waiting_claims(people["alice"], 50)
    with serve(tmp_path, env=crash_env(fake_llm, DEMO_AGENT="expenses")) as first:
        first.wait_ready()
        rita = AdminSession(first.base).login("rita", "rita-pw")
        assert rita.get(QUEUE).status == 200
        approved = rita.post(
            QUEUE, {"action": "approve_selected", "_selected_action": task_ids, "_confirm": "1"}
        )
        assert approved.status == 200
        # Killed while the resumes are under way: some rows written, none finished.
        wait_until(lambda: Expense.objects.count() >= 10, timeout=30, what="10 rows")
        kill_then_restart(tmp_path, fake_llm, model, first, task_ids)

    rows = list(Expense.objects.values_list("task_id", flat=True))
    assert sorted(rows) == sorted(task_ids)  # one row per Task: none twice, none missing
