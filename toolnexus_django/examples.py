"""An example tool to start from: ``file_expense``, which stops every run for
a person's approval.

Name it in ``TOOLNEXUS["TOOLKIT"]["tools"]`` (``"toolnexus_django.examples.file_expense"``,
as the README's Install does) and the agent can file expense claims: the
model calls it, ``approval=`` makes the call a Request of kind ``approval``,
and the Task waits ``input-required`` in the admin's review queue until a
*reviewer* approves or declines it (the requester can never approve its own
claim). The run then resumes where it stopped, and the body runs — only
then, and once — with the reviewer's answer in ``current_run().answer``.

It is written as a project writes a tool, with the public API only; it has
no model to write to (it cannot know yours). The demo's
``testproject/expenses/tools.py`` is the same tool filing a real row as the
person who asked: copy that one into your project and make it yours.
"""

from __future__ import annotations

import uuid
from typing import Any

import toolnexus_django

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


@toolnexus_django.tool(
    approval={
        # Formatted with the call's arguments; shown in the review queue.
        "prompt": "Approve an expense claim of {amount:.2f} for {description!r}?",
        "schema": APPROVAL_SCHEMA,
    },
)
def file_expense(amount: float, description: str) -> str:
    """File an expense claim. A person must approve every claim before it is filed."""
    run = toolnexus_django.current_run()
    # The body runs only once approved: the answer is the reviewer's "yes",
    # maybe with data (a cost center, a lower amount).
    data = (run.answer.data if run is not None and run.answer is not None else None) or {}
    filed = data.get("approved_amount", amount)
    where = data.get("cost_center", "other")
    return f"Filed expense claim EXP-{uuid.uuid4().hex[:6].upper()}: {filed} under {where}."


__all__ = ["APPROVAL_SCHEMA", "COST_CENTERS", "file_expense"]
