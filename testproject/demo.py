"""The demo agent's parts: native tools that stop for a person —
``file_expense`` asks a *reviewer* to approve (kind ``approval``: the
requester can never approve its own claim), ``pay_supplier`` asks two
different reviewers (four eyes, set in the settings' ``REVIEW``),
``ask_requester`` asks the *requester* for missing details (kind ``input``,
answered by a message with the taskId, or by a reviewer) — and a
deterministic offline model for when no LLM_BASE_URL is set.

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
from toolnexus_django.agent.inprocess import in_process_client

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


def _last_user_text(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


#: What an expense is for: "file an expense of 42 for a taxi" -> "a taxi".
_FOR = re.compile(r"\bfor\s+(.+?)\s*[.!?]*$", re.I | re.S)
_MINE = re.compile(r"\bmy\s+(?:expenses|expense\s+claims|claims)\b", re.I)


def _offered(request: dict[str, Any]) -> set[str]:
    """The tools the run offers the model (a run's owner without a tool's
    permission is not offered it)."""
    names = set()
    for declared in request.get("tools") or []:
        function = declared.get("function") if isinstance(declared, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            names.add(function["name"])
    return names


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def demo_generate(request: dict[str, Any]) -> dict[str, Any]:
    """A deterministic stand-in model: "my expenses" calls ``my_expenses``,
    expense requests call ``file_expense``, trips call ``ask_requester`` —
    each only if the run offers it, as a real model would — tool results are
    reported back, anything else gets a short summary."""
    messages = request.get("messages") or []
    last = messages[-1] if messages else {}
    if last.get("role") == "tool":
        return {"content": f"Done. {last.get('content', '')}"}
    text = _last_user_text(messages)
    offered = _offered(request)
    if "trip" in text.lower():
        return _call("ask_requester", question="Where to, and on which dates?")
    if _MINE.search(text):
        if "my_expenses" not in offered:
            return {"content": _not_offered("show your expense claims", "view")}
        return _call("my_expenses")
    match = _AMOUNT.search(text)
    if "expense" in text.lower() and match:
        if "file_expense" not in offered:
            return {"content": _not_offered("file expense claims for you", "add")}
        purpose = _FOR.search(text[match.end() :])
        description = (purpose.group(1) if purpose else text)[:80]
        return _call("file_expense", amount=float(match.group(1)), description=description)
    words = text.split()
    summary = " ".join(words[:12]) + (" ..." if len(words) > 12 else "")
    return {"content": f"Summary ({len(words)} words): {summary}"}


def _not_offered(what: str, action: str) -> str:
    return (
        f"I cannot {what}: sign in as someone who may {action} expenses "
        "(HTTP Basic, e.g. curl -u alice:alice-pw; manage.py demo_users makes alice)."
    )


def offline_client() -> toolnexus.Client:
    """Deterministic offline demo model (in-process; set LLM_BASE_URL for a real one).
    A streamed answer comes word by word, DEMO_WORDS_PER_SECOND of them (25;
    0: at once), so that a stream shows the answer as it is written."""
    return in_process_client(
        model="offline-demo", generate=demo_generate, words_per_second=_words_per_second()
    )


def _words_per_second() -> float:
    given = os.environ.get("DEMO_WORDS_PER_SECOND", "").strip() or "25"
    try:
        return float(given)
    except ValueError:
        raise ValueError(f"DEMO_WORDS_PER_SECOND must be a number, not {given!r}") from None
