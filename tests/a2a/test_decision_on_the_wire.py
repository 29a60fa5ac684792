"""The decision on the wire: a Task's public ``metadata.requests`` says how
each of its Requests ended — approved, declined, expired or answered — in
every dialect, and never who decided (issue "Review at team scale", item 9)."""

from __future__ import annotations

from typing import Any

from toolnexus import Answer

from tests import tools
from tests.conftest import RpcClient
from tests.fakes import FakeLLM, Text, ToolCall
from tests.utils import pending_id, suspend
from toolnexus_django.review import answer_task, expire_due


def outcomes(rpc: RpcClient, task_id: str) -> list[dict[str, Any]]:
    v1 = RpcClient(rpc.endpoint, {"A2A-Version": "1.0"}).get(task_id)["result"]
    plain = rpc.get(task_id)["result"]
    assert v1["metadata"] == plain["metadata"]  # the same in every dialect
    return list(plain["metadata"]["requests"])


def test_approve_and_decline_show_as_outcomes_never_as_names(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM, admin_user: Any
) -> None:
    configure(fake_llm)
    approved = suspend(rpc, fake_llm, then="Filed.")
    requests = {approved["id"]: pending_id(approved["id"])}
    answer_task(
        approved["id"],
        Answer(id=requests[approved["id"]], ok=True, data={"cost_center": "travel"}),
        decision="approve",
        user=admin_user,
    )
    rpc.wait(approved["id"], states=("completed",))  # its resume takes the model's next reply
    declined = suspend(rpc, fake_llm, then="Not filed.")
    requests[declined["id"]] = pending_id(declined["id"])
    answer_task(
        declined["id"],
        Answer(id=requests[declined["id"]], ok=False, reason="not this month"),
        decision="decline",
        actor="reviewer-bob",
    )
    for task, outcome in ((approved, "approved"), (declined, "declined")):
        done = rpc.wait(task["id"])
        assert done["status"]["state"] == "completed"
        [entry] = outcomes(rpc, task["id"])
        assert entry["outcome"] == outcome and entry["kind"] == "approval"
        assert entry["id"] == requests[task["id"]] and entry["at"]
        seen = str(rpc.get(task["id"])["result"]["metadata"])
        assert "admin" not in seen and "reviewer-bob" not in seen and "not this month" not in seen


def test_an_expired_request_shows_expired(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm, TOOLKIT=tools.toolkit_setting())
    fake_llm.on("late", ToolCall("expiring", {"seconds": -1}), Text("too late"))
    stale = suspend(rpc, fake_llm, "late")
    assert expire_due() == [stale["id"]]
    rpc.wait(stale["id"])
    assert [e["outcome"] for e in outcomes(rpc, stale["id"])] == ["expired"]


def test_an_answer_by_message_shows_answered(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm)
    fake_llm.push(ToolCall("ask_requester", {"question": "Which city?"}), Text("Booked."))
    waiting = rpc.wait(rpc.send("book a trip")["id"])
    rpc.send("Lisbon", taskId=waiting["id"], contextId=waiting["contextId"])
    rpc.wait(waiting["id"], states=("completed",))
    assert [e["outcome"] for e in outcomes(rpc, waiting["id"])] == ["answered"]
