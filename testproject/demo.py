"""The demo agent's parts: three native tools that stop for a person —
``file_expense`` asks a *reviewer* to approve (kind ``approval``: the
requester can never approve its own claim), ``pay_supplier`` asks two
different reviewers (four eyes, set in the settings' ``REVIEW``),
``ask_requester`` asks the *requester* for missing details (kind ``input``,
answered by a message with the taskId, or by a reviewer) — and a
deterministic offline model for when
no LLM_BASE_URL is set. ``file_expense`` is the app's example tool
(:mod:`toolnexus_django.examples`), re-exported here."""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

import toolnexus
from toolnexus import ToolContext, ToolResult

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
    return f"Paid {amount:.2f} to {supplier}: PAY-{uuid.uuid4().hex[:6].upper()}."


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


def demo_generate(request: dict[str, Any]) -> dict[str, Any]:
    """A deterministic stand-in model: expense requests call ``file_expense``,
    trips call ``ask_requester``, tool results are reported back, anything
    else gets a short summary."""
    messages = request.get("messages") or []
    last = messages[-1] if messages else {}
    if last.get("role") == "tool":
        return {"content": f"Done. {last.get('content', '')}"}
    text = _last_user_text(messages)
    if "trip" in text.lower():
        return {
            "tool_calls": [
                {
                    "name": "ask_requester",
                    "arguments": {"question": "Where to, and on which dates?"},
                }
            ]
        }
    match = _AMOUNT.search(text)
    if "expense" in text.lower() and match:
        return {
            "tool_calls": [
                {
                    "name": "file_expense",
                    "arguments": {"amount": float(match.group(1)), "description": text[:80]},
                }
            ]
        }
    words = text.split()
    summary = " ".join(words[:12]) + (" ..." if len(words) > 12 else "")
    return {"content": f"Summary ({len(words)} words): {summary}"}


def offline_client() -> toolnexus.Client:
    """Deterministic offline demo model (in-process; set LLM_BASE_URL for a real one)."""
    return toolnexus.create_in_process_client(model="offline-demo", generate=demo_generate)
