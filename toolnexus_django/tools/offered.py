"""Which tools a run's model is offered: those its owner may use.

A tool made with ``permission=`` is left out of the run of an owner who
lacks it — the model is never told it exists — and a call of it anyway (a
model inventing the name) is refused without running it. Worked out once
per run, before the model is called, on the database thread the runner
uses (``has_perms`` reads the database).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import toolnexus
from toolnexus import Answer, Tool, ToolContext, ToolResult

from .context import RunContext, new_run


def permissions_of(tool: Tool) -> tuple[str, ...]:
    return tuple(getattr(tool, "permissions", ()) or ())


def needs_permission(toolkit: Any) -> bool:
    """Whether any tool of ``toolkit`` needs a permission (else the run's
    toolkit is the process's own, untouched)."""
    return toolkit is not None and any(permissions_of(t) for t in toolkit.tools())


def offered_names(toolkit: Any, user: Any) -> frozenset[str]:
    """The tools of ``toolkit`` that ``user`` may be offered."""
    return frozenset(
        t.name
        for t in toolkit.tools()
        if not permissions_of(t) or user.has_perms(permissions_of(t))
    )


def prepare_run(
    toolkit: Any,
    *,
    task_id: str,
    context_id: str | None,
    owner_id: str | None,
    resumed: tuple[Answer, Sequence[str]] | None = None,
) -> tuple[RunContext, Any]:
    """A Task's run context, and the toolkit its model sees. Call it where
    the ORM may be used (a database thread): with tools that need
    permissions, it loads the owner and asks which they hold."""
    answered = None if resumed is None else (resumed[0], tuple(resumed[1]))
    run = new_run(task_id=task_id, context_id=context_id, owner_id=owner_id, resumed=answered)
    if not needs_permission(toolkit):
        return run, toolkit
    offered = offered_names(toolkit, run.owner)  # loads the owner, once for the run
    return dataclasses.replace(run, _offered=offered), OfferedToolkit(toolkit, offered)


def refusal_text(name: str, permissions: Sequence[str]) -> str:
    """What the model reads when it calls a tool its run's owner may not use."""
    return (
        f"Refused: the tool {name!r} needs the permission {', '.join(permissions)}, which "
        "the person this run acts for does not have. Nothing was done."
    )


class OfferedToolkit:
    """The process's toolkit as one run sees it: only the tools it is offered.

    Duck-types toolnexus's ``Toolkit`` for ``Client.run`` (which reads
    ``to_openai``/``to_anthropic``, ``skills_prompt``, ``get`` and
    ``execute``); anything else is the toolkit's own."""

    def __init__(self, toolkit: Any, offered: frozenset[str]) -> None:
        self._toolkit = toolkit
        self.offered = offered

    def tools(self) -> list[Tool]:
        return [t for t in self._toolkit.tools() if t.name in self.offered]

    def get(self, name: str) -> Tool | None:
        return self._toolkit.get(name) if name in self.offered else None

    async def execute(
        self, name: str, args: dict[str, Any] | None = None, ctx: ToolContext | None = None
    ) -> ToolResult:
        found = self._toolkit.get(name)
        if found is not None and name not in self.offered:
            return ToolResult(output=refusal_text(name, permissions_of(found)), is_error=True)
        result: ToolResult = await self._toolkit.execute(name, args, ctx)
        return result

    def to_openai(self) -> list[dict[str, Any]]:
        return toolnexus.to_openai(self.tools())

    def to_anthropic(self) -> list[dict[str, Any]]:
        return toolnexus.to_anthropic(self.tools())

    def to_gemini(self) -> list[dict[str, Any]]:
        return toolnexus.to_gemini(self.tools())

    def __getattr__(self, name: str) -> Any:
        return getattr(self._toolkit, name)
