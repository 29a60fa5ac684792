"""A person's approvals survive a crash: a Task that went through two human
rounds, killed (kill -9 of a real ``toolnexus_serve``) while its second
resume waits on the model, completes once a new server runs.

The attempt budget (MAX_ATTEMPTS, 3 in the testproject) counts attempts of
the run segment under way — the resume of the second answer — not every run
the Task ever started (three by then), so its one interruption is not fatal.
The rounds are answered by a reviewer in the served admin, over real HTTP;
the model is the fake over real HTTP. (The lifecycle's spec:
tests/fulfilment/test_attempt_budget.py; the crash harness: tests/e2e/test_crash.py.)
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RpcClient, wait_until
from tests.e2e.test_crash import (
    TERMINAL,
    assert_nothing_left_working,
    crash_env,
    group_members,
    kill_whole_server,
    stored,
    worker_pid,
)
from tests.e2e.test_trust import AdminSession
from tests.fakes import FakeLLM, Hang, Text, ToolCall
from tests.servers import serve
from tests.utils import assert_event_log, private_of
from toolnexus_django.lifecycle import states
from toolnexus_django.stores import DjangoTaskStore

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc; POSIX signals"),
]


def kinds_of(task_id: str) -> list[str]:
    return [e["kind"] for e in assert_event_log(task_id, DjangoTaskStore())]


def approve(reviewer: AdminSession, task_id: str) -> None:
    """Approve the waiting Request on its review page, as a reviewer's browser does."""
    path = reviewer.review_path(task_id)
    page = reviewer.get(path)
    request_id = re.search(r'name="request_id" value="([^"]+)"', page)
    assert request_id, "no request id on the review page"
    fields = {
        "csrfmiddlewaretoken": reviewer.csrf(page),
        "request_id": request_id.group(1),
        "_answer": "approve",
    }
    status, landed, body = reviewer.post(path, fields, referer=reviewer.base + path)
    assert status == 200 and landed.endswith("/awaitinghumantask/"), (landed, body[-500:])


@pytest.mark.django_db(transaction=True)
def test_a_two_round_task_killed_during_its_second_resume_completes_after_the_restart(
    fake_llm: FakeLLM, tmp_path: Path, admin_user: Any
) -> None:
    marker = "two-rounds"
    final = f"{marker}: both claims filed after the crash"
    fake_llm.on(
        marker,
        ToolCall("file_expense", {"amount": 12.5, "description": "taxi"}),  # round 1
        ToolCall("file_expense", {"amount": 80, "description": "hotel"}),  # round 2
        Hang(max_seconds=30),  # the second resume's model call: killed during it
        Text(final),  # the resume after the restart
    )
    with serve(tmp_path, "--threads", "4", env=crash_env(fake_llm)) as first:
        rpc = RpcClient(first.wait_ready()["url"])
        task_id = rpc.send(f"{marker}: file my taxi, then my hotel")["id"]
        reviewer = AdminSession(first.base)
        reviewer.login("admin", "password")
        for answers in (1, 2):
            assert rpc.wait(task_id)["status"]["state"] == "input-required"
            approve(reviewer, task_id)
            # Taken (a fast resume may already be waiting on the next round).
            wait_until(
                lambda n=answers: kinds_of(task_id).count("answer") == n,
                what=f"answer {answers} to be taken",
            )
        fake_llm.wait_held(1, timeout=20)

        resuming = stored(task_id)
        private = private_of(resuming)
        assert (resuming["status"]["state"], private.phase) == ("working", states.RESUMING)
        # Three runs started in all (the first, two resumes); one in this segment.
        assert (private.attempts, private.segment_attempts) == (3, 1)
        dead = kill_whole_server(first)
        assert worker_pid(resuming) in dead

    with serve(tmp_path, "--threads", "4", env=crash_env(fake_llm)) as second:
        rpc = RpcClient(second.wait_ready()["url"])
        done = rpc.wait(task_id, states=TERMINAL, timeout=45)
        assert done["status"]["state"] == "completed", done
        assert done["artifacts"][0]["parts"][0]["text"] == final

        task = stored(task_id)
        assert worker_pid(task) in group_members(second.proc.pid)
        assert (private_of(task).attempts, private_of(task).lease) == (4, None)
        # Two rounds' model calls, the killed one, and the one that finished.
        assert len(fake_llm.requests_for(marker)) == 4
        wait_until(
            lambda: f"Task {task_id}: its resume was interrupted (attempt 1)" in second.output(),
            timeout=10,
            what="the server to log it",
        )
        assert kinds_of(task_id) == [
            "submit", "claim",
            "suspend", "answer", "resume",
            "suspend", "answer", "resume",
            "requeue", "resume", "complete",
        ]  # fmt: skip
        assert_nothing_left_working()
