"""Exactly once for ``atomic=`` tools: a call's outcome is recorded with its writes.

A resume after a crash replays the call a person answered (and the later
calls of its turn) with the same tool-call ids. A side effect followed by a
crash before the Task recorded the result would run again on that replay; so
an ``atomic=`` call writes its result (a :class:`~..models.ToolCallOutcome`,
keyed by the Task, the turn and the call id) in the same transaction as the tool's own
writes, and a call whose outcome is already recorded returns it instead of
running the body. Both commit, or neither does: the body's effects happen once.

A call outside a Task's run (an MCP ``tools/call``, a unit test calling the
tool) or without a call id has nothing to key on and simply runs.

Tools that are not ``atomic=`` act outside this transaction (another service,
a file, a payment provider): they are at least once after a crash, and dedupe
with :attr:`~.context.RunContext.idempotency_key`.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

from django.db import IntegrityError, transaction
from toolnexus import ToolResult, pending_of

from .context import current_run


def as_result(out: Any) -> ToolResult:
    """What toolnexus makes of a tool body's return value (its native tools:
    a ToolResult as is, a str as output, anything else as JSON)."""
    if isinstance(out, ToolResult):
        return out
    if isinstance(out, str):
        return ToolResult(output=out, is_error=False)
    return ToolResult(output=json.dumps(out), is_error=False)


def atomically(alias: str, call: Callable[[], Any]) -> Any:
    """``call()`` in one transaction on ``alias``, its outcome recorded there,
    once per call (:attr:`~.context.RunContext.idempotency_key`): a call
    already recorded returns its outcome, and the body does not run."""
    from ..models import ToolCallOutcome  # here: importing the package loads no model

    run = current_run()
    if run is None or run.idempotency_key is None:
        with transaction.atomic(using=alias):
            return call()
    key = {"task_id": run.task_id, "turn": run.turn, "call_id": run.call_id}
    try:
        with transaction.atomic(using=alias):
            recorded = _recorded(alias, key)
            if recorded is not None:
                return recorded
            result = as_result(call())
            # A suspension is not an outcome: the call runs again with the answer.
            if pending_of(result) is None:
                ToolCallOutcome.objects.using(alias).create(
                    **key, tool=run.tool_name or "", result=dataclasses.asdict(result)
                )
            return result
    except IntegrityError:
        # The same call committed meanwhile elsewhere (only one process
        # resumes a Task, so a stale replay at most): its outcome stands.
        recorded = _recorded(alias, key)
        if recorded is None:
            raise
        return recorded


def _recorded(alias: str, key: dict[str, Any]) -> ToolResult | None:
    from ..models import ToolCallOutcome

    row = (
        ToolCallOutcome.objects.using(alias).filter(**key).values_list("result", flat=True).first()
    )
    if row is None:
        return None
    fields = {f.name for f in dataclasses.fields(ToolResult)}
    return ToolResult(**{k: v for k, v in row.items() if k in fields})
