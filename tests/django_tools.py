"""Tools made with ``toolnexus_django.tool`` that the tests plug into the
toolkit: each records what ``current_run()`` told it."""

from __future__ import annotations

import threading
from typing import Any

from django.contrib.auth.models import Group

import toolnexus_django

#: (tool, what current_run() said) for every body that ran, in order.
SEEN: list[tuple[str, dict[str, Any]]] = []
_lock = threading.Lock()


def _seen(name: str) -> None:
    run = toolnexus_django.current_run()
    said: dict[str, Any] = {"run": run}
    if run is not None:
        said.update(
            task_id=run.task_id,
            context_id=run.context_id,
            owner=run.owner.get_username() if run.owner.is_authenticated else "",
            answer=run.answer,
            approved_by=run.approved_by,
            thread=threading.current_thread().name,
        )
    with _lock:
        SEEN.append((name, said))


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


ALL = [
    "tests.django_tools.whoami",
    "tests.django_tools.awhoami",
    "tests.django_tools.make_group",
    "tests.django_tools.approved_group",
]
