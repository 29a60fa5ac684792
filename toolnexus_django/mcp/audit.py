"""Every ``tools/call`` recorded: an ``McpCall`` row (``MCP["AUDIT"]``) and
the ``mcp_called`` signal. The arguments are never stored, only their digest."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import weakref
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from ..conf import toolnexus_settings
from ..runtime.dbthreads import run_sync
from ..runtime.outages import log_exception
from ..signals import mcp_called

logger = logging.getLogger("toolnexus_django.mcp")


@dataclass(frozen=True)
class Caller:
    """Who called: the user's primary key as text ("" anonymous) and name."""

    id: str = ""
    name: str = ""

    @classmethod
    def of(cls, request: Any) -> Caller:
        """The caller of an authenticated DRF request (or anonymous)."""
        user = getattr(request, "user", None) if request is not None else None
        if user is None or not user.is_authenticated:
            return cls()
        return cls(id=str(user.pk), name=str(user.get_username()))


@dataclass
class CallRecord:
    """One call, as the audit row and the signal carry it."""

    at: datetime
    caller: str
    caller_name: str
    tool: str
    arguments_digest: str
    duration_ms: float
    outcome: str  # "ok" | "error"
    reason: str = ""
    request_id: str = ""


def digest(arguments: Any) -> str:
    """SHA-256 of the arguments as canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(
        arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
    )
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def store(calls: list[CallRecord]) -> None:
    """Write the calls' rows (unless ``MCP["AUDIT"]`` is off) and send the
    signal for each. Runs on a database thread (or the WSGI request's)."""
    if not calls:
        return
    from ..models import McpCall

    rows: list[McpCall | None] = [None] * len(calls)
    if toolnexus_settings.MCP.get("AUDIT", True):
        try:
            made = McpCall.objects.bulk_create(McpCall(**asdict(c)) for c in calls)
            rows = list(made)
        except Exception:
            log_exception(logger, "recording %d MCP call(s) failed", len(calls))
    for call, row in zip(calls, rows, strict=True):
        responses = mcp_called.send_robust(sender=McpCall, call=asdict(call), record=row)
        for receiver, response in responses:
            if isinstance(response, Exception):
                logger.error("signal receiver %r raised %r", receiver, response)


class GroupCommit:
    """The rows of calls answered at the same time, written together: one
    insert (one commit, one fsync on SQLite) for every call that finished
    while the previous write was under way. Each call still waits for its own
    row before its answer is sent; a lone call is written at once."""

    def __init__(self) -> None:
        self._waiting: list[tuple[list[CallRecord], asyncio.Future[None]]] = []
        self._writing = False

    async def store(self, calls: list[CallRecord]) -> None:
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append((calls, done))
        if not self._writing:
            self._writing = True
            asyncio.get_running_loop().create_task(self._write())
        await done

    async def _write(self) -> None:
        try:
            while self._waiting:
                batch, self._waiting = self._waiting, []
                try:
                    await run_sync(store, [c for calls, _ in batch for c in calls])
                finally:
                    for _, done in batch:
                        if not done.done():
                            done.set_result(None)
        finally:
            self._writing = False


_groups: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, GroupCommit] = (
    weakref.WeakKeyDictionary()
)


async def store_together(calls: list[CallRecord]) -> None:
    """:func:`store` from a coroutine, grouped with the calls of the same
    moment (:class:`GroupCommit`, one per event loop)."""
    if not calls:
        return
    loop = asyncio.get_running_loop()
    group = _groups.get(loop)
    if group is None:
        group = _groups[loop] = GroupCommit()
    await group.store(calls)
