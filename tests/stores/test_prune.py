"""manage.py toolnexus_prune."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from tests.utils import task_in
from toolnexus_django.agent.conversations import DjangoConversationStore, conversation_key
from toolnexus_django.models import Conversation, TaskRecord, ToolCallOutcome
from toolnexus_django.stores import DjangoTaskStore

pytestmark = pytest.mark.django_db


def make(state: str, age_days: float, context: str = "") -> str:
    task = task_in(state, store=DjangoTaskStore(), context_id=context or None)
    TaskRecord.objects.filter(pk=task["id"]).update(
        updated_at=timezone.now() - timedelta(days=age_days)
    )
    return task["id"]


def run(*args: str) -> str:
    out = StringIO()
    call_command("toolnexus_prune", *args, stdout=out)
    return out.getvalue()


def test_prunes_only_old_finished_tasks() -> None:
    old_done = make("completed", 40)
    old_failed = make("failed", 40)
    recent_done = make("completed", 1)
    old_waiting = make("input-required", 400)
    old_working = make("working", 400)
    assert run("--dry-run") == "would delete 2 task(s) (canceled, completed, failed, rejected)\n"
    assert TaskRecord.objects.count() == 5
    assert run().startswith("deleted 2 task(s)")
    left = set(TaskRecord.objects.values_list("pk", flat=True))
    assert left == {recent_done, old_waiting, old_working}
    assert old_done not in left and old_failed not in left


def test_state_filter_age_units_and_conversations() -> None:
    failed = make("failed", 0.5, context="c-failed")
    done = make("completed", 0.5, context="c-done")
    conversations = DjangoConversationStore()
    conversations.save_sync(conversation_key(None, "c-done"), [])
    conversations.save_sync(conversation_key(None, "c-orphan"), [])
    Conversation.objects.filter(context_id="c-orphan").update(
        updated_at=timezone.now() - timedelta(days=2)
    )
    assert run("--older-than", "6h", "--state", "failed", "--conversations") == (
        "deleted 1 task(s) (failed)\ndeleted 1 conversation(s)\n"
    )
    assert set(TaskRecord.objects.values_list("pk", flat=True)) == {done}
    assert set(Conversation.objects.values_list("context_id", flat=True)) == {"c-done"}
    del failed


@pytest.mark.parametrize("bad", ["30", "x1d", "-1d", "3y"])
def test_bad_ages_are_clear_errors(bad: str) -> None:
    with pytest.raises(CommandError, match="older-than"):
        run("--older-than", bad)


def test_the_recorded_tool_outcomes_no_task_can_replay_go_too() -> None:
    def outcome(task_id: str, age_days: float) -> None:
        made = ToolCallOutcome.objects.create(
            task_id=task_id, turn=1, call_id="c", tool="t", result={"output": "x"}
        )
        ToolCallOutcome.objects.filter(pk=made.pk).update(
            created_at=timezone.now() - timedelta(days=age_days)
        )

    pruned, waiting, recent_done = (
        make("completed", 40),
        make("input-required", 40),
        make("completed", 1),
    )
    for task_id in (pruned, waiting, recent_done):
        outcome(task_id, 40)
    outcome("from-a-file-store", 40)  # no row of its own: only its age counts
    outcome("from-a-file-store-today", 0)
    assert run() == "deleted 1 task(s) (canceled, completed, failed, rejected)\n" + (
        "deleted 2 tool call outcome(s)\n"
    )
    # A finished Task never replays: its old outcome goes even while the Task stays.
    left = set(ToolCallOutcome.objects.values_list("task_id", flat=True))
    assert left == {waiting, "from-a-file-store-today"}
