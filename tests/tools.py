"""Native tools the tests plug into the toolkit (TOOLKIT["tools"])."""

from __future__ import annotations

import threading
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import toolnexus
from toolnexus import ToolContext, ToolResult

#: Every execution of the tools below, in order: (tool, args, answer or None).
CALLS: list[tuple[str, dict[str, Any], Any]] = []
_lock = threading.Lock()


def _record(name: str, args: dict[str, Any], ctx: ToolContext | None) -> Any:
    answer = ctx.answer if ctx is not None else None
    with _lock:
        CALLS.append((name, args, answer))
    return answer


def _two_step(topic: str, ctx: ToolContext | None = None) -> ToolResult | str:
    """Asks for approval, then (once approved) for a detail, then acts."""
    answer = _record("two_step", {"topic": topic}, ctx)
    if answer is None:
        return toolnexus.pending(kind="approval", id=f"step1-{uuid.uuid4()}", prompt="May I start?")
    if answer.id.startswith("step1-"):
        if not answer.ok:
            return "not started"
        return toolnexus.pending(kind="input", id=f"step2-{uuid.uuid4()}", prompt="Which detail?")
    return f"done with {topic}: {answer.data}"


def _lookup(code: str) -> str:
    """Looks a code up."""
    _record("lookup", {"code": code}, None)
    return f"looked up {code}"


def _expiring(seconds: float, ctx: ToolContext | None = None) -> ToolResult | str:
    """Asks for approval with a deadline ``seconds`` from now."""
    answer = _record("expiring", {"seconds": seconds}, ctx)
    if answer is None:
        deadline = datetime.now(UTC) + timedelta(seconds=seconds)
        return toolnexus.pending(
            kind="approval",
            id=f"exp-{uuid.uuid4()}",
            prompt="Approve before the deadline?",
            expiresAt=deadline.isoformat().replace("+00:00", "Z"),
        )
    return f"answered: ok={answer.ok} reason={answer.reason}"


def _login(ctx: ToolContext | None = None) -> ToolResult | str:
    """Needs the user to log in somewhere first."""
    answer = _record("login", {}, ctx)
    if answer is None:
        return toolnexus.pending(
            kind="authorization",
            id=f"login-{uuid.uuid4()}",
            prompt="Log in to the ledger",
            url="https://login.example.com/authorize?x=1",
        )
    return "logged in" if answer.ok else "login failed"


two_step = toolnexus.tool(name="two_step")(_two_step)
lookup = toolnexus.tool(name="lookup")(_lookup)
expiring = toolnexus.tool(name="expiring")(_expiring)
login = toolnexus.tool(name="login")(_login)

ALL = [
    "testproject.demo.file_expense",
    "testproject.demo.ask_requester",
    "tests.tools.two_step",
    "tests.tools.lookup",
    "tests.tools.expiring",
    "tests.tools.login",
]


def toolkit_setting() -> dict[str, Any]:
    from django.conf import settings

    return {**settings.TOOLNEXUS["TOOLKIT"], "tools": ALL}
