"""The demo agent's tools on the project's own data: each acts as the person
who sent the Task (``current_run().owner``), never as whoever the model says.

``file_expense`` files a claim only after a reviewer approved it in the admin
(``approval=``), in one transaction (``atomic=``), and is offered only to
people who may add expenses (``permission=``); ``my_expenses`` lists the
claims of the person who asked, and no one else's.

What a reviewer enters is checked twice: the approval's schema bounds the
approved amount (the admin's reply form refuses others), and the tool checks
the row before saving it (``full_clean()``), so an amount that reaches it
anyway — an edited argument, the model's own — is a tool error the model
reads ("the amount must be ..."), never a row the model cannot hold.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from django.core.exceptions import ValidationError

import toolnexus_django

from .models import COST_CENTERS, MAX_AMOUNT, MIN_AMOUNT, Expense

#: What a reviewer may answer with: the admin builds its form from this.
APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "cost_center": {"type": "string", "enum": COST_CENTERS, "title": "Cost center"},
        "approved_amount": {
            "type": "number",
            "title": "Approved amount",
            "exclusiveMinimum": 0,
            "maximum": float(MAX_AMOUNT),
        },
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
    expense = Expense(
        owner=run.owner,
        amount=claim_amount(data.get("approved_amount", amount)),
        description=description[:200],
        cost_center=data.get("cost_center", "other"),
        approved_by=",".join(run.approved_by),
        task_id=run.task_id or "",
    )
    try:
        expense.full_clean()
    except ValidationError as invalid:  # the model reads why, and nothing is written
        raise ValueError(invalid_claim(invalid)) from None
    expense.save()
    return (
        f"Filed expense claim EXP-{expense.pk}: {expense.amount} under {expense.cost_center}, "
        f"approved by {expense.approved_by or 'a reviewer'}."
    )


def claim_amount(value: Any) -> Decimal:
    """``value`` (the call's amount, or the reviewer's) in cents, or a
    ValueError saying which amounts a claim may have."""
    try:
        amount = Decimal(str(value))
    except InvalidOperation:
        amount = Decimal("NaN")
    # Bounded before rounding: quantize() refuses numbers past 28 digits.
    if isinstance(value, bool) or not amount.is_finite() or not 0 < amount <= MAX_AMOUNT:
        raise ValueError(
            f"the amount must be a number from {MIN_AMOUNT} to {MAX_AMOUNT}, not {str(value)[:40]}"
        )
    rounded = amount.quantize(Decimal("0.01"))
    if rounded < MIN_AMOUNT:
        raise ValueError(f"the amount must be at least {MIN_AMOUNT}, not {value}")
    return rounded


def invalid_claim(invalid: ValidationError) -> str:
    """A refused row in words: ``"amount: Ensure this value is ..."``."""
    return "the claim cannot be filed: " + "; ".join(
        f"{field}: {' '.join(messages)}" for field, messages in invalid.message_dict.items()
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
