"""The demo agent's parts: two native tools that stop for a person —
``file_expense`` asks a *reviewer* to approve (kind ``approval``: the
requester can never approve its own claim), ``ask_requester`` asks the
*requester* for missing details (kind ``input``, answered by a message with
the taskId, or by a reviewer) — and a deterministic offline model for when
no LLM_BASE_URL is set."""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

import toolnexus
from toolnexus import ToolContext, ToolResult

COST_CENTERS = ["travel", "equipment", "training", "other"]

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
