"""README's Quick start and "Your first approval in 60 seconds", run as
printed in a copy of this checkout: the one-line Quick start makes
``.venv``, installs the demo, migrates and serves; then, beside it, the
superuser and the demo's people are made, alice's curl sends an expense
claim, the superuser approves it in the admin over real HTTP (as steps 1-3
say), and the Task is completed with the answer step 4 quotes and the claim
is an Expense row of alice's (step 5); then alice's stream shows the run's
tool call and its answer in chunks before the final event.

One substitution: the served port is a free one instead of README's 8000."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.admin_http import AdminSession
from tests.conftest import RpcClient, basic
from tests.docs.test_readme_blocks import FIRST_APPROVAL, QUICK_START, blocks, sections
from tests.e2e.test_install_pastes import (
    child_env,
    copy_checkout,
    sh,
    with_port,
)
from tests.servers import free_port, server_group
from tests.wheelhouse import offline

pytestmark = pytest.mark.slow

ANSWER = "Done. Filed expense claim EXP-1: 42.00 under travel, approved by admin."
PROMPT = "Approve an expense claim of 42.00 for 'a taxi'?"


def test_a_newcomer_reaches_an_approved_completed_task_by_following_the_readme(
    tmp_path: Path, wheelhouse: Path
) -> None:
    (serve_block,) = blocks(QUICK_START)
    people_block, send_block, stream_block = blocks(FIRST_APPROVAL)
    steps = sections()[FIRST_APPROVAL]
    # What the steps tell the reader to do and expect, checked below.
    for said in (PROMPT, ANSWER, "admin` / `admin-pw", "**Reply with data**", "**Send reply**"):
        assert said in steps, said

    checkout = copy_checkout(tmp_path / "toolnexus-django")
    env = child_env(**offline(wheelhouse))  # pip's packages from the run's wheelhouse
    port = free_port()
    argv = ["bash", "-e", "-c", with_port(serve_block.text, port)]
    with server_group(argv, checkout, tmp_path / "serve.log", env, port) as server:
        server.wait_ready(timeout=300)  # pip install and migrate come first

        people = sh(people_block.text, checkout, env)
        assert "alice: requester" in people

        sent = json.loads(sh(with_port(send_block.text, port), checkout, env))
        assert sent["result"]["status"]["state"] == "submitted", sent
        task_id = sent["result"]["id"]
        alice = RpcClient(f"{server.base}/agent/", headers=basic("alice"))
        assert alice.wait(task_id)["status"]["state"] == "input-required"

        # 1-3: sign in as the superuser, the queue lists the Task, reply with a cost center.
        admin = AdminSession(server.base).login("admin", "admin-pw")
        queue = admin.get("/admin/toolnexus_django/awaitinghumantask/")
        assert PROMPT in queue.text
        review = f"/admin/toolnexus_django/awaitinghumantask/{task_id}/review/"
        page = admin.get(review)
        assert "Reply with data" in page.text and "Send reply" in page.text
        assert '<option value="travel">travel</option>' in page.text
        request_id = re.search(r'name="request_id" value="([^"]+)"', page.text)
        assert request_id, "the review page offers no answer form"
        answered = admin.post(
            review,
            {"_answer": "reply", "request_id": request_id.group(1), "reply-cost_center": "travel"},
        )
        assert answered.status == 200, answered.text

        # 4: the Task is completed with the answer README quotes, on its admin page too.
        done = alice.wait(task_id, states=("completed", "failed", "canceled"))
        assert done["status"]["state"] == "completed", done
        assert done["artifacts"][0]["parts"][0]["text"] == ANSWER
        task_page = admin.get(f"/admin/toolnexus_django/taskrecord/{task_id}/change/")
        assert task_page.status == 200 and ANSWER in task_page.text

        # 5: the claim is a row of the demo's own model, alice's.
        expenses = admin.get("/admin/expenses/expense/")
        assert "EXP-1: 42.00 for a taxi" in expenses.text and ">alice<" in expenses.text

        # Watching the agent work: the tool call, then the answer in chunks, then the end.
        events = sse_results(sh(with_port(stream_block.text, port), checkout, env))
        kinds = [e.get("kind") for e in events]
        assert kinds[0] == "task" and kinds[-1] == "status-update", kinds
        assert events[-1]["status"]["state"] == "completed" and events[-1]["final"] is True
        tools = [e for e in events if e.get("kind") == "status-update" and not e["final"]]
        said = [
            e["status"]["message"]["parts"][0]["text"] for e in tools if "message" in e["status"]
        ]
        assert any(s.startswith("Calling my_expenses") for s in said), said
        chunks = [e for e in events if e.get("kind") == "artifact-update" and not e["lastChunk"]]
        (final,) = [e for e in events if e.get("kind") == "artifact-update" and e["lastChunk"]]
        assert len(chunks) > 1, "the answer came in pieces"
        text = ""
        for chunk in chunks:
            piece = chunk["artifact"]["parts"][0]["text"]
            text = text + piece if chunk["append"] else piece
        assert text == final["artifact"]["parts"][0]["text"] and "EXP-1" in text


def sse_results(output: str) -> list[dict[str, object]]:
    """The JSON-RPC results of an SSE body, in order."""
    found = []
    for line in output.splitlines():
        if line.startswith("data:"):
            found.append(json.loads(line[5:])["result"])
    return found
