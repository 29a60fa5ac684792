"""The demo agent's parts: native tools that stop for a person —
``file_expense`` asks a *reviewer* to approve (kind ``approval``: the
requester can never approve its own claim), ``pay_supplier`` asks two
different reviewers (four eyes, set in the settings' ``REVIEW``),
``ask_requester`` asks the *requester* for missing details (kind ``input``,
answered by a message with the taskId, or by a reviewer) — and the
offline model for when no LLM_BASE_URL is set: the shipped
:mod:`toolnexus_django.offline` model, taught the demo's phrasing.

The ``file_expense`` here is the app's example tool
(:mod:`toolnexus_django.examples`, no database), re-exported for the
"example" toolkit; the demo's own toolkit files real rows with
``testproject.expenses.tools`` (settings, ``DEMO_AGENT``)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import uuid
from typing import Any

import toolnexus
from toolnexus import ToolContext, ToolResult

import toolnexus_django
from toolnexus_django import offline

# The approval tool is the app's shipped example (the README's Install names
# it); re-exported so "testproject.demo.file_expense" keeps working.
from toolnexus_django.examples import (  # noqa: F401
    APPROVAL_SCHEMA,
    COST_CENTERS,
    file_expense,
)

#: What ask_requester's answer must look like: ``output`` is toolnexus's key
#: for a plain-text answer, so a text message answers it as well as a data part.
DETAILS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "output": {
            "type": "string",
            "minLength": 1,
            "title": "Details",
            "description": "The missing details, in your own words.",
        },
    },
    "required": ["output"],
    "additionalProperties": False,
}


def _ask_requester(question: str, ctx: ToolContext | None = None) -> ToolResult | str:
    """Ask the requester (the peer that sent this task) for missing details,
    and wait for their answer. Use it when the request leaves out something
    only they can say."""
    answer = ctx.answer if ctx is not None else None
    if answer is None:
        return toolnexus.pending(
            kind="input",
            id=f"ask-{uuid.uuid4()}",
            prompt=question,
            data={"tool": "ask_requester", "schema": DETAILS_SCHEMA},
        )
    if not answer.ok:
        return f"The requester did not answer ({answer.reason or 'declined'})."
    details = (answer.data or {}).get("output")
    if not isinstance(details, str):
        details = json.dumps(answer.data, ensure_ascii=False)
    return f"The requester says: {details}"


ask_requester = toolnexus.tool(name="ask_requester")(_ask_requester)


def payment_reference(idempotency_key: str | None) -> str:
    """The demo's stand-in for a payment provider: one payment per key. A real
    provider takes the key as its ``Idempotency-Key`` and answers a repeated
    key with the first payment, so a call replayed after a crash pays once."""
    if idempotency_key is None:  # outside a Task's run (a unit test calling it)
        return f"PAY-{uuid.uuid4().hex[:6].upper()}"
    return f"PAY-{hashlib.sha256(idempotency_key.encode()).hexdigest()[:6].upper()}"


def _pay_supplier(supplier: str, amount: float, ctx: ToolContext | None = None) -> ToolResult | str:
    """Pay a supplier's invoice. Two different reviewers must approve every
    payment (four eyes: the settings' REVIEW["APPROVALS"] says 2)."""
    answer = ctx.answer if ctx is not None else None
    if answer is None:
        return toolnexus.pending(
            kind="approval",
            id=f"pay-{uuid.uuid4()}",
            prompt=f"Pay {amount:.2f} to {supplier}?",
            data={"tool": "pay_supplier", "supplier": supplier, "amount": amount},
        )
    if not answer.ok:
        return f"The payment was not approved ({answer.reason or 'declined'}); nothing was paid."
    # Not atomic= (the money moves elsewhere): at least once after a crash, so
    # the provider dedupes by the call's key, which a replay repeats.
    run = toolnexus_django.current_run()
    reference = payment_reference(run.idempotency_key if run is not None else None)
    return f"Paid {amount:.2f} to {supplier}: {reference}."


pay_supplier = toolnexus.tool(name="pay_supplier")(_pay_supplier)

_AMOUNT = re.compile(r"(\d+(?:\.\d+)?)")
#: What an expense is for: "file an expense of 42 for a taxi" -> "a taxi".
_FOR = re.compile(r"\bfor\s+(.+?)\s*[.!?]*$", re.I | re.S)
_MINE = re.compile(r"\bmy\s+(?:expenses|expense\s+claims|claims)\b", re.I)


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def _trip(prompt: offline.Prompt) -> dict[str, Any] | None:
    """A trip: ask the requester where and when."""
    if "trip" in prompt.text.lower():
        return _call("ask_requester", question="Where to, and on which dates?")
    return None


def _mine(prompt: offline.Prompt) -> dict[str, Any] | None:
    """A request for "my expenses": list them."""
    if not _MINE.search(prompt.text):
        return None
    if "my_expenses" not in prompt.offered:
        return {"content": _not_offered("show your expense claims", "view")}
    return _call("my_expenses")


def _expense(prompt: offline.Prompt) -> dict[str, Any] | None:
    """An expense and an amount ("file an expense of 42 for a taxi"): file it, for
    what follows the amount's "for"."""
    text = prompt.text
    match = _AMOUNT.search(text)
    if "expense" not in text.lower() or not match:
        return None
    if "file_expense" not in prompt.offered:
        return {"content": _not_offered("file expense claims for you", "add")}
    purpose = _FOR.search(text[match.end() :])
    description = (purpose.group(1) if purpose else text)[:80]
    return _call("file_expense", amount=float(match.group(1)), description=description)


#: The demo's phrasing, on top of the shipped offline model's.
DEMO_RULES: tuple[offline.Rule, ...] = (_trip, _mine, _expense)


def demo_generate(request: dict[str, Any]) -> dict[str, Any]:
    """The shipped offline model (:mod:`toolnexus_django.offline`) with the
    demo's phrasing first: "my expenses" calls ``my_expenses``, expense
    requests call ``file_expense``, trips call ``ask_requester`` — each only
    if the run offers it, as a real model would. Then the shipped behaviour:
    a message naming an offered tool calls it, tool results are reported
    back, anything else gets a short summary."""
    return offline.generate(request, rules=DEMO_RULES)


def _not_offered(what: str, action: str) -> str:
    return (
        f"I cannot {what}: sign in as someone who may {action} expenses "
        "(HTTP Basic, e.g. curl -u alice:alice-pw; manage.py demo_users makes alice)."
    )


def offline_client() -> toolnexus.Client:
    """Deterministic offline demo model (in-process; set LLM_BASE_URL for a real one).
    The shipped ``toolnexus_django.offline.client`` with the demo's phrasing
    (:data:`DEMO_RULES`). A streamed answer comes word by word,
    DEMO_WORDS_PER_SECOND of them (25; 0: at once), so that a stream shows
    the answer as it is written."""
    return offline.client(
        rules=DEMO_RULES, model="offline-demo", words_per_second=_words_per_second()
    )


def _words_per_second() -> float:
    given = os.environ.get("DEMO_WORDS_PER_SECOND", "").strip() or "25"
    try:
        return float(given)
    except ValueError:
        raise ValueError(f"DEMO_WORDS_PER_SECOND must be a number, not {given!r}") from None
