"""The demo agent's tools on the project's own data: each acts as the person
who sent the Task (``current_run().owner``), never as whoever the model says.

``file_expense`` files a claim only after a reviewer approved it in the admin
(``approval=``), in one transaction (``atomic=``), and is offered only to
people who may add expenses (``permission=``); ``my_expenses`` lists the
claims of the person who asked, and no one else's.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import toolnexus_django

from .models import COST_CENTERS, Expense

#: What a reviewer may answer with: the admin builds its form from this.
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
    permission="expenses.add_expense",
    atomic=True,
    approval={
        "prompt": "Approve an expense claim of {amount:.2f} for {description!r}?",
        "schema": APPROVAL_SCHEMA,
    },
)
def file_expense(amount: float, description: str) -> str:
    """File an expense claim for the person asking. A reviewer approves every claim first."""
    run = toolnexus_django.current_run()
    assert run is not None and run.answer is not None  # the body runs only once approved
    data = run.answer.data or {}
    expense = Expense.objects.create(
        owner=run.owner,
        amount=Decimal(str(data.get("approved_amount", amount))).quantize(Decimal("0.01")),
        description=description[:200],
        cost_center=data.get("cost_center", "other"),
        approved_by=",".join(run.approved_by),
        task_id=run.task_id or "",
    )
    return (
        f"Filed expense claim EXP-{expense.pk}: {expense.amount} under {expense.cost_center}, "
        f"approved by {expense.approved_by or 'a reviewer'}."
    )


@toolnexus_django.tool(permission="expenses.view_expense")
def my_expenses(limit: int = 10) -> str:
    """List the latest expense claims of the person asking."""
    run = toolnexus_django.current_run()
    assert run is not None
    rows = Expense.objects.filter(owner=run.owner)[: max(1, min(int(limit), 50))]
    if not rows:
        return "You have no expense claims."
    return "\n".join(f"EXP-{e.pk}: {e.amount} for {e.description} ({e.cost_center})" for e in rows)
