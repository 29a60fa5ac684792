"""Tasks as rows of :class:`toolnexus_django.models.TaskRecord`."""

from __future__ import annotations

import functools
import json
from datetime import UTC, datetime
from typing import Any

from asgiref.sync import sync_to_async
from django.db import IntegrityError, connections, transaction
from django.db.backends.base.operations import BaseDatabaseOperations
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from ..strictjson import StorageJSONEncoder
from . import selections
from .base import (
    MAX_ID_LENGTH,
    PRIVATE_KEY,
    TERMINAL_STATES,
    DuplicateMessage,
    Event,
    Task,
    TaskQuery,
    TaskStore,
    TerminalTaskError,
    bump_revision,
    message_key_of,
    parse_instant,
    repeats_since,
    request_expiry,
    revision_of,
    state_of,
    task_id_of,
)
from .liverows import DatabaseLiveUpdates

#: Databases on which migration 0005's trigger copies each move's event.
TRIGGER_VENDORS = frozenset({"postgresql", "sqlite"})

#: The columns of a TaskEvent row, as the event dicts name them.
_EVENT_FIELDS = (
    "task_id", "seq", "kind", "from_state", "to_state", "at", "actor", "actor_kind", "via",
    "public", "private",
)  # fmt: skip


@functools.cache
def _fields(model: Any) -> dict[str, Any]:
    return {f.attname: f for f in model._meta.concrete_fields}


#: One encoder for every stored JSON value (json.dumps(cls=...) made one per value).
_ENCODER = StorageJSONEncoder()


def _params(connection: Any, model: Any, names: list[str], values: list[Any]) -> list[Any]:
    """Column values as the database takes them (JSON as text: by the one encoder)."""
    fields = _fields(model)
    text_json = type(connection.ops).adapt_json_value is BaseDatabaseOperations.adapt_json_value
    return [
        _ENCODER.encode(v)
        if text_json and v is not None and getattr(fields[n], "encoder", None) is StorageJSONEncoder
        else fields[n].get_db_prep_save(v, connection)
        for n, v in zip(names, values, strict=True)
    ]


_STATEMENTS: dict[tuple[str, ...], str] = {}  # built once, not at every move


def _update_sql(connection: Any, table: str, names: tuple[str, ...]) -> str:
    key = (connection.vendor, table, *names)
    sql = _STATEMENTS.get(key)
    if sql is None:
        qn = connection.ops.quote_name
        terminal = ", ".join(["%s"] * len(TERMINAL_STATES))
        sql = _STATEMENTS[key] = (
            f"UPDATE {qn(table)} SET {', '.join(f'{qn(n)} = %s' for n in names)} "
            f"WHERE {qn('id')} = %s AND {qn('state')} = %s AND {qn('revision')} = %s "
            f"AND {qn('state')} NOT IN ({terminal})"
        )
    return sql


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _valid_id(id: Any) -> bool:
    # PostgreSQL rejects NUL in text, and ids longer than the column cannot
    # exist: both are simply unknown rather than a database error.
    return isinstance(id, str) and 0 < len(id) <= MAX_ID_LENGTH and "\x00" not in id


class DjangoTaskStore(DatabaseLiveUpdates, TaskStore):
    """Rows in the ``TaskRecord`` table of database ``using``.

    ``save`` is one upsert (``INSERT ... ON CONFLICT DO UPDATE ... WHERE`` the
    stored row is not terminal); ``compare_and_set`` is one conditional
    ``UPDATE`` on the row's revision. Both are single statements, so they are
    atomic on SQLite and PostgreSQL without explicit locks — and so is a move's
    event: the statement writes it into the row's ``last_event`` and a trigger
    copies it into ``TaskEvent`` (elsewhere: an INSERT in the same transaction).
    """

    def __init__(self, using: str = "default") -> None:
        self.using = using

    @property
    def model(self) -> Any:
        from ..models import TaskRecord

        return TaskRecord

    @staticmethod
    def task_of(record: Any, *, public: bool = True) -> Task:
        """The stored Task a ``TaskRecord`` row holds; with ``public=False``
        only its id, state and private part (the row's ``task`` column, which
        may be deferred, is not read)."""
        task = dict(record.task or {}) if public else {"status": {"state": record.state}}
        task.setdefault("id", record.pk)
        if record.private:
            task[PRIVATE_KEY] = record.private
        return task

    def get(self, id: str) -> Task | None:
        if not _valid_id(id):
            return None
        # One statement built by hand: GetTask's hot path (the ORM's compile
        # of this SELECT was most of its cost).
        connection = connections[self.using]
        qn = connection.ops.quote_name
        sql = (
            f"SELECT {qn('task')}, {qn('private')}, {qn('lease_expires_at')} "
            f"FROM {qn(self.model._meta.db_table)} WHERE {qn('id')} = %s"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, [id])
            row = cursor.fetchone()
        if row is None:
            return None
        task, private = (json.loads(v) if isinstance(v, (str, bytes)) else v for v in row[:2])
        task = dict(task)
        if private:
            lease = private.get("lease")
            if isinstance(lease, dict) and row[2] is not None:
                # Renewals (renew_leases) move only the column: it is the lease's end.
                lease["until"] = _aware(row[2]).isoformat()
            task[PRIVATE_KEY] = private
        return task

    def renew_leases(self, holder: str, task_ids: list[str], until: datetime) -> set[str]:
        """Extend the leases ``holder`` has on ``task_ids`` to ``until``, in one
        UPDATE (no move, no event, no new revision: the runs' versions stay
        current); returns the ids renewed — a Task missing from it is no
        longer ``holder``'s (canceled, or taken over) and its run must stop."""
        ids = [t for t in task_ids if _valid_id(t)]
        if not ids:
            return set()
        connection = connections[self.using]
        qn = connection.ops.quote_name
        field = _fields(self.model)["lease_expires_at"]
        sql = (
            f"UPDATE {qn(self.model._meta.db_table)} SET {qn('lease_expires_at')} = %s "
            f"WHERE {qn('id')} IN ({', '.join(['%s'] * len(ids))}) "
            f"AND {qn('lease_owner')} = %s AND {qn('state')} = %s RETURNING {qn('id')}"
        )
        with connection.cursor() as cursor:
            until_value = field.get_db_prep_save(until, connection)
            cursor.execute(sql, [until_value, *ids, holder[:255], "working"])
            return {row[0] for row in cursor.fetchall()}

    @property
    def triggers(self) -> bool:
        """Whether a database trigger writes each move's event (migration 0005)."""
        return connections[self.using].vendor in TRIGGER_VENDORS

    def _columns(self, task: Task, event: Event | None = None) -> dict[str, Any]:
        private = task.get(PRIVATE_KEY) or {}
        lease = private.get("lease") or {}
        return {
            # The move's event, for the trigger to copy (None: no event, no copy).
            "event_seq": int(event["seq"]) if event else int(private.get("seq") or 0),
            "last_event": event if event and self.triggers else None,
            "context_id": str(task.get("contextId") or "")[:MAX_ID_LENGTH],
            "state": state_of(task) or "submitted",
            "owner_id": private.get("owner"),
            "task": {k: v for k, v in task.items() if k != PRIVATE_KEY},
            "private": private,
            "revision": revision_of(task),
            "expires_at": request_expiry(task),
            "lease_owner": str(lease.get("owner") or "")[:255],
            "lease_expires_at": parse_instant(lease.get("until")),
            "attempts": int(private.get("attempts") or 0),
            "message_key": message_key_of(task),
            **_tokens(private.get("tokens")),
        }

    def save(self, task: Task, event: Event | None = None) -> None:
        tid = task_id_of(task)
        if not _valid_id(tid):
            raise ValueError(f"invalid Task id for the database store: {tid[:40]!r}")
        model = self.model
        connection = connections[self.using]
        values = {"id": tid, **self._columns(task, event)}
        now = timezone.now()
        values["created_at"] = values["updated_at"] = now
        names = list(values)
        params = _params(connection, model, names, list(values.values()))
        qn = connection.ops.quote_name
        table = qn(model._meta.db_table)
        # The message key is set once, by the INSERT: a move never writes it
        # (a key released after IDEMPOTENCY_WINDOW may belong to a newer Task).
        updated = [n for n in names if n not in ("id", "created_at", "message_key")]
        terminal = ", ".join(["%s"] * len(TERMINAL_STATES))
        sql = (
            f"INSERT INTO {table} ({', '.join(qn(n) for n in names)}) "
            f"VALUES ({', '.join(['%s'] * len(names))}) "
            f"ON CONFLICT ({qn('id')}) DO UPDATE SET "
            + ", ".join(f"{qn(n)} = EXCLUDED.{qn(n)}" for n in updated)
            + f" WHERE {table}.{qn('state')} NOT IN ({terminal})"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, [*params, *sorted(TERMINAL_STATES)])
            if cursor.rowcount == 0:
                stored = self.get(tid)
                raise TerminalTaskError(tid, state_of(stored) or "finished")

    def create(self, task: Task, event: Event | None = None) -> None:
        """Insert a new Task with its first event; :class:`DuplicateMessage`
        when its message key (unique) belongs to a Task made within
        ``IDEMPOTENCY_WINDOW`` (an older holder gives the key up)."""
        key = message_key_of(task)
        try:
            self._insert(task, event, guarded=key is not None)
        except IntegrityError:
            held = self._holder_of(key) if key is not None else None
            if held is None:
                raise
            holder, created = held
            try:
                since = repeats_since()
            except LookupError:
                since = datetime.max.replace(tzinfo=UTC)  # not looked for: give it up
            if since is None or _aware(created) >= since:
                raise DuplicateMessage(holder) from None
            self._release_key(key)  # type: ignore[arg-type]
            self._insert(task, event, guarded=True)

    def _insert(self, task: Task, event: Event | None, *, guarded: bool) -> None:
        connection = connections[self.using]
        if self.triggers or event is None:
            if guarded and connection.in_atomic_block:
                # A unique violation must not break the caller's transaction.
                with transaction.atomic(using=self.using):
                    self.save(task, event)
            else:
                self.save(task, event)  # the trigger writes the event with the row
            return
        with transaction.atomic(using=self.using):
            self.save(task)
            self._add_event(event)

    def _holder_of(self, key: str) -> tuple[str, Any] | None:
        connection = connections[self.using]
        qn = connection.ops.quote_name
        sql = (
            f"SELECT {qn('id')}, {qn('created_at')} FROM {qn(self.model._meta.db_table)} "
            f"WHERE {qn('message_key')} = %s"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, [key])
            row = cursor.fetchone()
        return (str(row[0]), row[1]) if row else None

    def _release_key(self, key: str) -> None:
        connection = connections[self.using]
        qn = connection.ops.quote_name
        sql = (
            f"UPDATE {qn(self.model._meta.db_table)} SET {qn('message_key')} = NULL "
            f"WHERE {qn('message_key')} = %s"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, [key])

    def compare_and_set(self, expected: Task, new: Task, event: Event | None = None) -> bool:
        tid = task_id_of(new)
        if not _valid_id(tid):
            return False
        bump_revision(expected, new)
        if self.triggers or event is None:
            # One conditional UPDATE; the trigger writes the event in it: a
            # lost compare-and-set updates no row, so writes no event.
            won = self._update_if(tid, expected, self._columns(new, event))
        else:
            # The change and its event in one transaction: both or neither.
            with transaction.atomic(using=self.using):
                won = self._update_if(tid, expected, self._columns(new))
                if won:
                    self._add_event(event)
        if not won:
            new[PRIVATE_KEY]["revision"] = revision_of(expected)
        return won

    def _update_if(self, tid: str, expected: Task, columns: dict[str, Any]) -> bool:
        """``UPDATE ... WHERE`` the row is still ``expected`` and not terminal:
        one statement built by hand (the ORM's compile of this UPDATE was
        most of a move's cost)."""
        connection = connections[self.using]
        columns = {k: v for k, v in columns.items() if k != "message_key"}  # set once, at INSERT
        names = [*columns, "updated_at"]
        params = _params(connection, self.model, names, [*columns.values(), timezone.now()])
        sql = _update_sql(connection, self.model._meta.db_table, tuple(names))
        with connection.cursor() as cursor:
            cursor.execute(
                sql,
                [*params, tid, state_of(expected), revision_of(expected), *sorted(TERMINAL_STATES)],
            )
            return bool(cursor.rowcount)

    def list_tasks(self, query: TaskQuery) -> tuple[list[tuple[Task, datetime]], int]:
        return selections.page(self.model.objects.using(self.using), query)

    # -- events -------------------------------------------------------------------------

    @property
    def event_model(self) -> Any:
        from ..models import TaskEvent

        return TaskEvent

    def _add_event(self, event: Event) -> None:
        fields = {k: event.get(k) for k in _EVENT_FIELDS}
        fields["at"] = parse_instant(event.get("at")) or timezone.now()
        self.event_model.objects.using(self.using).create(**fields)

    def events(self, task_id: str, after: int = 0) -> list[Event]:
        if not _valid_id(task_id):
            return []
        rows = (
            self.event_model.objects.using(self.using)
            .filter(task_id=task_id, seq__gt=after)
            .order_by("seq")
            .values(*_EVENT_FIELDS)
        )
        return [{**row, "at": _iso(row["at"])} for row in rows]

    def changes_since(self, cursor: Any) -> tuple[Any, dict[str, int]] | None:
        rows = self.event_model.objects.using(self.using)
        if cursor is None:
            last = rows.order_by("-id").values_list("id", flat=True).first()
            return (last or 0), {}
        found = list(
            rows.filter(id__gt=cursor).order_by("id").values_list("id", "task_id", "seq")[:10_000]
        )
        if not found:
            return cursor, {}
        newest: dict[str, int] = {}
        for _, task_id, seq in found:
            newest[task_id] = max(seq, newest.get(task_id, 0))
        return found[-1][0], newest

    def waiting_ids(self, expired_by: datetime | None = None) -> list[str]:
        return selections.waiting(self.model.objects.using(self.using), expired_by)

    def stale_ids(
        self, now: datetime, *, submitted_before: datetime, unleased_before: datetime
    ) -> list[str]:
        rows = self.model.objects.using(self.using)
        return selections.stale(rows, now, submitted_before, unleased_before)

    # The ORM's own async methods use thread-sensitive sync_to_async: do the same.
    async def aget(self, id: str) -> Task | None:
        return await sync_to_async(self.get)(id)

    async def asave(self, task: Task) -> None:
        await sync_to_async(self.save)(task)

    async def acompare_and_set(self, expected: Task, new: Task, event: Event | None = None) -> bool:
        return await sync_to_async(self.compare_and_set)(expected, new, event)

    def __repr__(self) -> str:
        return f"<DjangoTaskStore using={self.using!r}>"


def _tokens(raw: Any) -> dict[str, int]:  # the columns of _private.tokens
    sums = raw if isinstance(raw, dict) else {}
    return {f"{k}_tokens": max(0, int(sums.get(k) or 0)) for k in ("input", "output")}


def _aware(value: datetime | str) -> datetime:
    """A datetime column as read by a raw cursor (SQLite: a naive UTC string,
    read as Django's SQLite backend reads it)."""
    moment = parse_datetime(value) if isinstance(value, str) else value
    if moment is None:
        raise ValueError(f"{value!r} is not a datetime")
    return moment.replace(tzinfo=UTC) if timezone.is_naive(moment) else moment
