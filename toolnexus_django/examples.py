"""An example tool to start from: ``file_expense``, which stops every run for
a person's approval.

Name it in ``TOOLNEXUS["TOOLKIT"]["tools"]`` (``"toolnexus_django.examples.file_expense"``,
as the README's Install does) and the agent can file expense claims: the
model calls it, the tool returns a toolnexus ``pending(kind="approval")``
Request, and the Task waits ``input-required`` in the admin's review queue
until a *reviewer* approves or declines it (the requester can never approve
its own claim). The run then resumes where it stopped, and the tool is
called again with the answer in ``ctx.answer``.

It imports nothing from the rest of the app: copy it into your project and
make it do real work.
"""

from __future__ import annotations

import uuid
from typing import Any

import toolnexus
from toolnexus import ToolContext, ToolResult

COST_CENTERS = ["travel", "equipment", "training", "other"]

#: What an approval may carry: the admin builds its reply form from this, and
#: every answer (admin, A2A, code) is checked against it.
APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "cost_center": {"type": "string", "enum": COST_CENTERS, "title": "Cost center"},
        "approved_amount": {"type": "number", "title": "Approved amount"},
        "note": {"type": "string", "title": "Note for the claimant"},
    },
    "required": ["cost_center"],
}


def _file_expense(
    amount: float, description: str, ctx: ToolContext | None = None
) -> ToolResult | str:
    """File an expense claim. A person must approve every claim before it is filed."""
    answer = ctx.answer if ctx is not None else None
    if answer is None:
        # Always ask first, whatever the arguments. A unique id: toolnexus's
        # default pending ids can collide across processes.
        return toolnexus.pending(
            kind="approval",
            id=f"approve-{uuid.uuid4()}",
            prompt=f"Approve an expense claim of {amount:.2f} for {description!r}?",
            data={"tool": "file_expense", "amount": amount, "schema": APPROVAL_SCHEMA},
        )
    if not answer.ok:
        reason = answer.reason or "declined"
        return f"The expense claim was not approved ({reason}); nothing was filed."
    data = answer.data or {}
    filed = data.get("approved_amount", amount)
    where = data.get("cost_center", "other")
    return f"Filed expense claim EXP-{uuid.uuid4().hex[:6].upper()}: {filed} under {where}."


file_expense = toolnexus.tool(name="file_expense")(_file_expense)

__all__ = ["APPROVAL_SCHEMA", "COST_CENTERS", "file_expense"]
