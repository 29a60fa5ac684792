"""A Task keeps the tokens of all its runs (issue 34, item 3): the first run
to its suspension, then the resume after the answer, summed in the Task's
private part and in its row's ``input_tokens`` / ``output_tokens`` (what the
dashboard reads); a failed run whose usage is known counts too."""

from __future__ import annotations

from typing import Any

import pytest
from toolnexus import Answer

from tests.conftest import RpcClient
from tests.fakes import FakeLLM, Text, ToolCall
from tests.utils import pending_id, private_of, task_in
from toolnexus_django import lifecycle
from toolnexus_django.models import TaskRecord
from toolnexus_django.review import answer_task
from toolnexus_django.stores import DjangoTaskStore

pytestmark = pytest.mark.django_db(transaction=True)


def row_tokens(task_id: str) -> tuple[int, int]:
    """The Task's token columns, as the database has them."""
    return TaskRecord.objects.values_list("input_tokens", "output_tokens").get(pk=task_id)


def test_the_tokens_of_a_run_and_its_resume_add_up_in_the_tasks_row(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm, store="django")
    fake_llm.push(
        ToolCall("file_expense", {"amount": 12.5, "description": "taxi"}, usage=(30, 4)),
        Text("Your claim is filed.", usage=(50, 6)),
    )
    task = rpc.send("file an expense of 12.5 for a taxi")
    assert rpc.wait(task["id"])["status"]["state"] == "input-required"
    assert row_tokens(task["id"]) == (30, 4)  # the run to its suspension

    answer_task(task["id"], Answer(id=pending_id(task["id"]), ok=True), decision="approve")
    assert rpc.wait(task["id"], ("completed", "failed"))["status"]["state"] == "completed"
    assert row_tokens(task["id"]) == (80, 10)  # both runs, summed
    assert private_of(task["id"]).tokens == {"input": 80, "output": 10}
    # The last run's own record is still the last run's alone.
    assert private_of(task["id"]).usage["prompt_tokens"] == 50


def test_a_failed_run_whose_usage_is_known_adds_its_tokens() -> None:
    store = DjangoTaskStore()
    working = task_in("working", store=store)
    lifecycle.fail(
        store, working, "stopped at its turn limit",
        usage={"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
    )  # fmt: skip
    assert row_tokens(str(working["id"])) == (7, 3)


def test_a_task_stored_before_the_sum_existed_starts_from_zero() -> None:
    store = DjangoTaskStore()
    working = task_in("working", store=store)
    assert "tokens" not in working["_private"]
    assert row_tokens(str(working["id"])) == (0, 0)
    moved = lifecycle.complete(store, working, "done", usage={"prompt_tokens": 2})
    assert moved is not None and lifecycle.read(moved.task).tokens == {"input": 2, "output": 0}
