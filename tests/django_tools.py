"""Tools made with ``toolnexus_django.tool`` that the tests plug into the
toolkit: each records what ``current_run()`` told it — in :data:`SEEN` (this
process) and, when ``TOOLNEXUS_TEST_SEEN`` names a file, as a JSON line there
(for tests whose tools run in a server or worker process of their own)."""

from __future__ import annotations

import json
import os
import threading
from decimal import Decimal
from typing import Any

from django.contrib.auth.models import Group

import toolnexus_django

#: (tool, what current_run() said) for every body that ran, in order.
SEEN: list[tuple[str, dict[str, Any]]] = []
_lock = threading.Lock()


def _seen(name: str) -> None:
    run = toolnexus_django.current_run()
    said: dict[str, Any] = {"run": run, "pid": os.getpid()}
    if run is not None:
        said.update(
            task_id=run.task_id,
            context_id=run.context_id,
            owner=run.owner.get_username() if run.owner.is_authenticated else "",
            answer=run.answer,
            approved_by=run.approved_by,
            via=run.via,
            thread=threading.current_thread().name,
            call_id=run.call_id,
            turn=run.turn,
            idempotency_key=run.idempotency_key,
        )
    with _lock:
        SEEN.append((name, said))
        path = os.environ.get("TOOLNEXUS_TEST_SEEN")
        if path:
            with open(path, "a") as out:
                out.write(json.dumps({"tool": name, **_plain(said)}) + "\n")


def _plain(said: dict[str, Any]) -> dict[str, Any]:
    """What a tool saw, as JSON (the run and its answer as plain values)."""
    out = {k: v for k, v in said.items() if k not in ("run", "answer")}
    out["run"] = said["run"] is not None
    answer = said.get("answer")
    out["answer"] = (
        None
        if answer is None
        else {"id": answer.id, "ok": answer.ok, "data": answer.data, "reason": answer.reason}
    )
    if "approved_by" in out:
        out["approved_by"] = list(out["approved_by"])
    return out


def seen_in(path: Any) -> list[dict[str, Any]]:
    """What the tools of other processes recorded in ``path`` (TOOLNEXUS_TEST_SEEN)."""
    try:
        text = open(path).read()
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@toolnexus_django.tool
def whoami() -> str:
    """Say who asked."""
    _seen("whoami")
    run = toolnexus_django.current_run()
    return f"you are {run.owner.get_username() if run else '?'}"


@toolnexus_django.tool
async def awhoami() -> str:
    """Say who asked (async)."""
    run = toolnexus_django.current_run()
    owner = await run.aowner() if run else None
    _seen("awhoami")
    return f"you are {owner.get_username() if owner else '?'}"


@toolnexus_django.tool(permission="auth.add_group", atomic=True)
def make_group(name: str, fail: bool = False) -> str:
    """Create a group (needs auth.add_group); with fail, raise after writing."""
    _seen("make_group")
    Group.objects.create(name=name)
    if fail:
        raise RuntimeError("the tool failed after writing")
    return f"made {name}"


@toolnexus_django.tool(approval="Create the group {name}?", atomic=True)
def approved_group(name: str) -> str:
    """Create a group once a reviewer approved it."""
    _seen("approved_group")
    Group.objects.create(name=name)
    return f"made {name} after approval"


@toolnexus_django.tool(approval="Note {text!r} for me?")
async def anote(text: str) -> str:
    """Write a note (a zero expense owned by the person asking) once a
    reviewer approved it — with the async ORM."""
    from testproject.expenses.models import Expense

    run = toolnexus_django.current_run()
    assert run is not None and run.answer is not None
    owner = await run.aowner()
    _seen("anote")
    note = await Expense.objects.acreate(
        owner=owner,
        amount=Decimal("0"),
        description=text,
        approved_by=",".join(run.approved_by),
        task_id=run.task_id or "",
    )
    return f"noted EXP-{note.pk}"


@toolnexus_django.tool(approval={"prompt": "Which members for the group {name}?", "kind": "input"})
def group_with_members(name: str) -> str:
    """Create a group once someone said who is in it (a kind "input" Request)."""
    _seen("group_with_members")
    run = toolnexus_django.current_run()
    said = (run.answer.data or {}) if run and run.answer else {}
    Group.objects.create(name=name)
    return f"made {name} with {said.get('output', 'nobody')}"


@toolnexus_django.tool(
    approval={"prompt": "Create the group {name} (soon, or never)?", "expires_in": 1}
)
def hurried_group(name: str) -> str:
    """Create a group if a reviewer approves within a second."""
    _seen("hurried_group")
    Group.objects.create(name=name)
    return f"made {name}"


ALL = [
    "tests.django_tools.whoami",
    "tests.django_tools.awhoami",
    "tests.django_tools.make_group",
    "tests.django_tools.approved_group",
    "tests.django_tools.anote",
    "tests.django_tools.group_with_members",
    "tests.django_tools.hurried_group",
]
#: The demo's own tools on its Expense model (permission=, atomic=, approval=).
EXPENSES = ["testproject.expenses.tools.file_expense", "testproject.expenses.tools.my_expenses"]
