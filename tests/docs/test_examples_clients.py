"""The examples of the docs' "Call the agent" page (docs/examples/, included
into docs/howto/clients.md), each run against the demo served for real —
``manage.py toolnexus_serve`` on its own SQLite database, with the demo's
expenses agent, its offline model and its people (``demo_users``) — and each
showing what the page says it shows: the curl files with the real ``curl``
(a stream's tool call and chunks too), the a2a-sdk clients with this venv's
a2a-sdk — the claim's with its streaming flag off and on, while a reviewer
approves the claim in the admin over real HTTP, and the streaming one that
prints the answer as it comes."""

from __future__ import annotations

import json
import os
import re
import selectors
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.admin_http import AdminSession
from tests.docs.test_readme_blocks import ROOT
from tests.e2e.test_install_pastes import child_env, run, served
from tests.servers import Served

pytestmark = pytest.mark.slow

EXAMPLES = ROOT / "docs" / "examples"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The demo as a newcomer serves it (one server for the module's examples)."""
    where = tmp_path_factory.mktemp("demo")
    env = child_env(DATABASE_URL=f"sqlite:///{where / 'db.sqlite3'}")
    run(ROOT, "migrate", "-v0", env=env)
    run(ROOT, "demo_users", env=env)
    with served(ROOT, where / "serve.log", env) as server:
        server.wait_ready(timeout=60)
        yield server


def example(name: str, demo: Served) -> list[dict[str, Any]]:
    """Run a curl example against the demo; each non-empty line it prints, as JSON
    (a trailing ``HTTP <status>`` line becomes ``{"http": status}``)."""
    done = subprocess.run(
        ["sh", str(EXAMPLES / name)],
        env={**os.environ, "BASE": demo.base},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    return [
        {"http": int(line.split()[1])} if line.startswith("HTTP ") else json.loads(line)
        for line in lines
    ]


def text_of(task: dict[str, Any]) -> str:
    return str(task["artifacts"][0]["parts"][0]["text"])


def test_the_toolnexus_dialect_answers_submitted_then_getTask_reads_it_completed(
    demo: Served,
) -> None:
    sent, read = example("toolnexus_dialect.sh", demo)
    assert sent["result"]["status"]["state"] == "submitted"
    assert read["result"]["id"] == sent["result"]["id"]
    assert read["result"]["status"]["state"] == "completed"
    assert text_of(read["result"]).startswith("Summary (12 words): Summarise: Django is")


def test_v03_blocks_and_a_requester_cannot_answer_the_approval_by_message(
    demo: Served,
) -> None:
    summary, waiting, refused, still = example("a2a_v03.sh", demo)
    assert summary["result"]["status"]["state"] == "completed"
    assert text_of(summary["result"]).startswith("Summary (11 words)")

    status = waiting["result"]["status"]
    assert status["state"] == "input-required"
    assert status["message"]["parts"][0]["text"] == (
        "Approve an expense claim of 42.50 for 'a train ticket to Lyon'?"
    )
    # The taskId answer is refused, not shown completing: only a reviewer may answer.
    assert refused["error"]["code"] == -32004
    assert refused["error"]["data"]["reason"] == "ANSWER_NOT_ALLOWED"
    assert "A reviewer must answer this request" in refused["error"]["message"]
    assert still["result"]["id"] == waiting["result"]["id"]
    assert still["result"]["status"]["state"] == "input-required"


def test_v10_send_blocks_to_completed_and_list_tasks_pages_newest_first(
    demo: Served,
) -> None:
    sent, listed = example("a2a_v10.sh", demo)
    task = sent["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["artifacts"][0]["parts"][0]["text"].startswith("Summary (8 words)")
    page = listed["result"]
    assert 1 <= len(page["tasks"]) <= 2 and page["pageSize"] == 2
    assert page["tasks"][0]["id"] == task["id"]
    assert "history" not in page["tasks"][0]  # historyLength 0


def sse_messages(text: str) -> list[tuple[str, dict[str, Any]]]:
    """(id, JSON-RPC result) of each SSE message ``curl -N`` printed."""
    messages = []
    for block in text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        messages.append((fields["id"], json.loads(fields["data"])["result"]))
    return messages


def test_a_stream_shows_the_tool_call_and_the_answer_as_it_is_written(demo: Served) -> None:
    done = subprocess.run(
        ["sh", str(EXAMPLES / "stream.sh")],
        env={**os.environ, "BASE": demo.base},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    messages = sse_messages(done.stdout)
    ids = [i for i, _ in messages]
    assert ids[:2] == ["1", "2"] and ids[-2:] == ["2.1", "3"], ids
    assert messages[0][1]["task"]["status"]["state"] == "TASK_STATE_SUBMITTED"
    assert messages[-1][1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"

    live = messages[2:-2]
    assert all(re.fullmatch(r"2\.0\.\d+", i) for i, _ in live), ids
    statuses = [r["statusUpdate"]["status"] for _, r in live if "statusUpdate" in r]
    assert {status["state"] for status in statuses} == {"TASK_STATE_WORKING"}
    calls = [status["message"]["parts"] for status in statuses]
    assert [parts[0]["text"] for parts in calls] == ["Calling my_expenses {}", "my_expenses: done"]
    assert [parts[1]["data"]["status"] for parts in calls] == ["running", "ok"]
    assert calls[0][1]["data"]["arguments"] == {} and "arguments" not in calls[1][1]["data"]

    chunks = [r["artifactUpdate"] for _, r in live if "artifactUpdate" in r]
    assert len(chunks) >= 2, "the answer came in one piece"
    assert [c.get("append", False) for c in chunks] == [False] + [True] * (len(chunks) - 1)
    assert not any(c.get("lastChunk") for c in chunks)
    final = messages[-2][1]["artifactUpdate"]
    assert final.get("append", False) is False and final["lastChunk"] is True
    whole = final["artifact"]["parts"][0]["text"]
    assert whole == "Done. You have no expense claims."
    assert "".join(c["artifact"]["parts"][0]["text"] for c in chunks) == whole
    assert {c["artifact"]["artifactId"] for c in chunks} == {final["artifact"]["artifactId"]}


def test_http_json_sends_reads_and_answers_404_for_an_unknown_task(demo: Served) -> None:
    sent, read, missing, status = example("http_json.sh", demo)
    assert sent["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert read["id"] == sent["task"]["id"] and read["status"] == sent["task"]["status"]
    assert missing["error"]["status"] == "NOT_FOUND"
    assert missing["error"]["details"][0]["reason"] == "TASK_NOT_FOUND"
    assert status == {"http": 404}


def read_line(proc: subprocess.Popen[str], deadline: float) -> str:
    """The next line the process prints, within the deadline."""
    assert proc.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if sel.select(timeout=deadline - time.monotonic()):
                return proc.stdout.readline()
    raise AssertionError("the SDK example printed nothing in time")


@pytest.mark.parametrize("streaming", ["0", "1"], ids=["blocking", "streaming"])
def test_the_sdk_client_sees_input_required_then_the_reviewers_completed_task(
    demo: Served, streaming: str
) -> None:
    proc = subprocess.Popen(
        [sys.executable, str(EXAMPLES / "a2a_sdk_client.py")],
        env={**os.environ, "BASE": demo.base, "STREAMING": streaming},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = read_line(proc, time.monotonic() + 60)
        task_id, state, _, prompt = first.rstrip("\n").split(" ", 3)
        assert (state, prompt) == (
            "TASK_STATE_INPUT_REQUIRED",
            "Approve an expense claim of 12.50 for 'a taxi'?",
        ), first

        # A reviewer decides in the admin while the client reads the Task.
        rita = AdminSession(demo.base).login("rita", "rita-pw")
        review = f"/admin/toolnexus_django/awaitinghumantask/{task_id}/review/"
        request_id = re.search(r'name="request_id" value="([^"]+)"', rita.get(review).text)
        assert request_id, "the review page offers no answer form"
        rita.post(
            review,
            {"_answer": "reply", "request_id": request_id.group(1), "reply-cost_center": "travel"},
        )

        rest, errors = proc.communicate(timeout=60)
        assert proc.returncode == 0, errors
        assert re.fullmatch(
            rf"{task_id} TASK_STATE_COMPLETED - Done\. Filed expense claim EXP-\d+: 12\.50 "
            r"under travel, approved by rita\.\n",
            rest,
        ), rest + errors
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def test_the_streaming_sdk_client_prints_the_tool_call_and_the_answer_as_it_comes(
    demo: Served,
) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "a2a_sdk_stream.py")],
        env={**os.environ, "BASE": demo.base},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    match = re.fullmatch(
        r"\[Calling my_expenses \{\}\]\n\[my_expenses: done\]\n"
        r"Done\. You have no expense claims\.\nTASK_STATE_COMPLETED \((\d+) chunks\)\n",
        done.stdout,
    )
    assert match, done.stdout + done.stderr
    assert int(match.group(1)) >= 2, "the answer came in one piece"
