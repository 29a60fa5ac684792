"""ListTasks (A2A v1.0): the caller's own Tasks, newest first, a page at a time.

Order: most recently updated first, ties by id (descending). The page token
is an opaque cursor naming the last Task of the page — its ``updated_at`` and
id — and the next page starts strictly after it. Tasks added meanwhile sort
before the cursor, so they never shift or repeat a later page. (A Task that
changes while a client pages moves to the front, as in the official SDK's
stores.)

Needs a store that can query: the database store does; a custom store may
offer ``list_tasks(query: stores.base.TaskQuery) -> (rows, total)`` (rows:
``(task, updated_at)`` newest first, at most ``query.limit``). Other stores
answer -32004.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ..stores import TaskStore
from ..stores.base import TaskQuery
from .dialects import Dialect, render_task
from .jsonrpc import INVALID_PARAMS, UNSUPPORTED_OPERATION, RpcError
from .params import read_text, read_timestamp

DEFAULT_PAGE_SIZE = 50


@dataclass(frozen=True)
class Cursor:
    updated_at: datetime
    id: str

    def encode(self) -> str:
        payload = json.dumps(
            {"u": self.updated_at.astimezone(UTC).isoformat(), "id": self.id},
            separators=(",", ":"),
        )
        return base64.urlsafe_b64encode(payload.encode()).decode().rstrip("=")

    @classmethod
    def decode(cls, token: str) -> Cursor:
        """The cursor a page token names; -32602 for anything else, including
        a cursor no database could compare with (NUL or an over-long id, a
        moment outside datetime's range in UTC)."""
        bad = RpcError(INVALID_PARAMS, "Invalid params: pageToken is not a page token of ListTasks")
        try:
            raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
            data = json.loads(raw)
            moment = read_timestamp(data["u"], "pageToken")
            tid = read_text(data["id"], "pageToken")
        # RecursionError: a token of nested arrays, deeper than json's parser goes.
        except (binascii.Error, ValueError, TypeError, KeyError, RecursionError, RpcError):
            raise bad from None
        if not tid:
            raise bad
        return cls(moment, tid)


def parse_query(params: dict[str, Any], owner: str | None) -> tuple[TaskQuery, int | None, bool]:
    """The query, historyLength and includeArtifacts of ListTasks params, as
    :func:`~.params.read_query` read them (counts, state and moment as values)."""
    size = params.get("pageSize")
    history_length = params.get("historyLength")
    context_id = params.get("contextId") or None
    token = params.get("pageToken") or None
    include = params.get("includeArtifacts", False)
    if not isinstance(include, bool):
        raise RpcError(INVALID_PARAMS, "Invalid params: includeArtifacts must be a boolean")
    cursor = Cursor.decode(token) if token else None
    query = TaskQuery(
        owner=owner,
        context_id=context_id,
        state=params.get("status") or None,
        updated_after=params.get("statusTimestampAfter") or None,
        after=(cursor.updated_at, cursor.id) if cursor else None,
        limit=DEFAULT_PAGE_SIZE if size is None else size,
    )
    return query, history_length, include


def list_tasks(
    store: TaskStore, params: dict[str, Any], owner: str | None, dialect: Dialect
) -> dict[str, Any]:
    query, history_length, include_artifacts = parse_query(params, owner)
    # One row more than the page says whether there is a next page.
    probe = dataclasses.replace(query, limit=query.limit + 1)
    if callable(getattr(store, "list_tasks", None)):
        rows, total = store.list_tasks(probe)  # type: ignore[attr-defined]
    else:
        raise RpcError(
            UNSUPPORTED_OPERATION,
            f"ListTasks is not supported by this task store ({type(store).__name__}); "
            'it needs TOOLNEXUS["STORE"] = "django"',
        )
    more = len(rows) > query.limit
    rows = rows[: query.limit]
    token = Cursor(rows[-1][1], rows[-1][0]["id"]).encode() if more and rows else ""
    return {
        "tasks": [
            render_task(
                task, dialect, history_length=history_length, include_artifacts=include_artifacts
            )
            for task, _ in rows
        ],
        "nextPageToken": token,
        "pageSize": query.limit,
        "totalSize": total,
    }
