"""One JSON file per Task under a directory, written atomically.

An id ``sanitize`` leaves unchanged lives at ``<id>.json`` (the seed's
``<sanitize(id)>.json``; every server-made id is a UUID); any other id at
``<sanitized id, truncated>.<16 hex of its sha256>.json`` (see :func:`file_name`).

A write goes to a fresh temp file in the same directory (unique per writer, so
two threads saving the same Task never share one), is flushed and fsynced, then
``os.replace``-d over the target. A reader therefore sees either the previous
complete file or the new complete one — never a torn or missing file — and the
files are plain JSON, readable by any other process.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

try:
    import fcntl
except ImportError:  # not POSIX: transitions are guarded within this process only
    fcntl = None  # type: ignore[assignment]

from toolnexus import sanitize

from .base import (
    MAX_ID_LENGTH,
    TERMINAL_STATES,
    DuplicateMessage,
    Event,
    Task,
    TaskStore,
    TerminalTaskError,
    add_inline_event,
    bump_revision,
    message_key_of,
    parse_instant,
    repeats_since,
    same_version,
    select_stale,
    select_waiting,
    state_of,
    task_id_of,
)

#: File names are limited to 255 bytes on common file systems (ext4, XFS,
#: APFS, NTFS): with the ".json" suffix, longer ids that ``sanitize`` leaves
#: unchanged cannot have a file of their own, so they are refused on save and
#: unknown on get. (Other ids get a truncated, hashed name: up to MAX_ID_LENGTH.)
MAX_FILE_ID_LENGTH = min(MAX_ID_LENGTH, 255 - len(".json"))

#: Hex digits of sha256 that set apart the names of ids ``sanitize`` changed.
HASH_LENGTH = 16

#: The directory-wide lock file writers take (readers never need it).
LOCK_NAME = ".lock"
#: Where the message keys of idempotent sends are kept.
MESSAGES_DIR = ".messages"


def _marker_task(marker: Path) -> str | None:
    """The Task a message-key file names, if it is within the window."""
    try:
        held = json.loads(marker.read_text())
        task_id, at = str(held["task"]), parse_instant(held["at"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    try:
        since = repeats_since()
    except LookupError:
        return None
    return None if at is None or (since is not None and at < since) else task_id


def file_name(id: str) -> str:
    """The file name of the Task ``id``: one name per id, no two ids alike.

    Injective: an unchanged id's stem is the id itself and has no ``.``
    (``sanitize`` never leaves one); a changed id's stem always has a ``.``
    before its hash, so the two kinds never meet, and changed ids differ in
    their sha256 (16 hex: 2**64 values; a collision is refused on save).
    """
    safe = sanitize(id)
    if safe == id:
        return f"{id}.json"
    digest = hashlib.sha256(id.encode("utf-8", "surrogatepass")).hexdigest()[:HASH_LENGTH]
    # sanitize() output is ASCII, so characters are bytes: 233 + 1 + 16 + 5 = 255.
    return f"{safe[: 255 - len('.json') - 1 - HASH_LENGTH]}.{digest}.json"


def storable(id: object) -> bool:
    """Whether ``id`` can have a file: see MAX_FILE_ID_LENGTH."""
    if not isinstance(id, str) or not id:
        return False
    return len(id) <= (MAX_FILE_ID_LENGTH if sanitize(id) == id else MAX_ID_LENGTH)


def _read(path: Path) -> Task | None:
    """The Task in ``path``; None when there is no such file (bad JSON raises)."""
    try:
        with open(path, encoding="utf-8") as f:
            task = json.load(f)
    except FileNotFoundError:
        return None
    return task if isinstance(task, dict) else None


def _peek(path: Path) -> Task | None:  # like _read, but None for anything unreadable
    try:
        return _read(path)
    except (OSError, ValueError):
        return None


def _holds(task: Task | None, id: str) -> bool:
    return task is not None and task.get("id") == id


class FileTaskStore(TaskStore):
    """Writes (``save`` and guarded transitions) hold an exclusive ``flock`` on
    ``<dir>/.lock``, so they are serialised across threads and processes on
    this machine; reads take no lock — the atomic rename keeps them whole."""

    def __init__(self, dir: str | os.PathLike[str]) -> None:
        self.dir = Path(dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self._thread_lock = threading.Lock()

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with self._thread_lock:
            if fcntl is None:
                yield
                return
            with open(self.dir / LOCK_NAME, "a+b") as lock:
                fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
                try:
                    yield
                finally:
                    fcntl.flock(lock.fileno(), fcntl.LOCK_UN)

    def path_for(self, id: str) -> Path:
        """Where the Task with ``id`` lives (see :func:`file_name`); the name
        only ever holds ``[A-Za-z0-9_.-]``, so no id can leave the directory."""
        return self.dir / file_name(id)

    def legacy_path_for(self, id: str) -> Path | None:
        """Where releases before injective names kept ``id`` (``<sanitize(id)>.json``),
        if that differs from :meth:`path_for` and could exist."""
        if sanitize(id) == id or len(id) > MAX_FILE_ID_LENGTH:
            return None
        return self.dir / f"{sanitize(id)}.json"

    def get(self, id: str) -> Task | None:
        if not storable(id):
            return None
        new = self.path_for(id)
        task = _read(new)
        if _holds(task, id):
            return task
        legacy = self.legacy_path_for(id)
        if legacy is None:
            return None
        task = _read(legacy)
        if _holds(task, id):
            return task
        # A writer may have migrated the Task between our two reads; it writes
        # the new file before the legacy one goes, so it is there by now.
        task = _read(new)
        return task if _holds(task, id) else None

    def save(self, task: Task) -> None:
        tid = task_id_of(task)
        if not storable(tid):
            raise ValueError(f"Task id {tid[:50]!r}… is too long to have a file name")
        with self._locked():
            stored = self.get(tid)
            if state_of(stored) in TERMINAL_STATES:
                raise TerminalTaskError(tid, state_of(stored))
            self._put(tid, task)

    def create(self, task: Task, event: Event | None = None) -> None:
        """Store a new Task (its event inline), unless its message key is
        taken: the keys live in ``<dir>/.messages/`` (a file per key, named
        by its sha256), written under the same lock, so every process of the
        machine sees them."""
        tid = task_id_of(task)
        key = message_key_of(task)
        with self._locked():
            marker = (
                self.dir / MESSAGES_DIR / hashlib.sha256(key.encode()).hexdigest() if key else None
            )
            if marker is not None and (taken := _marker_task(marker)) is not None:
                if self.get(taken) is not None:
                    raise DuplicateMessage(taken)
            stored = self.get(tid)
            if state_of(stored) in TERMINAL_STATES:
                raise TerminalTaskError(tid, state_of(stored))
            add_inline_event(task, None, event)
            self._put(tid, task)
            if marker is not None:
                marker.parent.mkdir(exist_ok=True)
                marker.write_text(json.dumps({"task": tid, "at": datetime.now(UTC).isoformat()}))

    def compare_and_set(self, expected: Task, new: Task, event: Event | None = None) -> bool:
        tid = task_id_of(new)
        with self._locked():
            stored = self.get(tid)
            if not same_version(stored, expected) or state_of(stored) in TERMINAL_STATES:
                return False
            bump_revision(expected, new)
            add_inline_event(new, stored, event)
            self._put(tid, new)
            return True

    def _put(self, tid: str, task: Task) -> None:
        """Write ``task`` at its name (under the lock), migrating legacy files."""
        target = self.path_for(tid)
        occupant = _peek(target)
        other = (occupant or {}).get("id")
        if occupant is not None and isinstance(other, str) and other != tid:
            if file_name(other) == target.name:
                raise ValueError(f"Task ids {tid[:100]!r} and {other[:100]!r} share a file name")
            # Our name is another Task's legacy file: move that Task to its own
            # name first (unless it already has one) — never overwrite it.
            other_path = self.path_for(other)
            if self.legacy_path_for(other) == target and not other_path.exists():
                self._write(other_path, occupant)
        self._write(target, task)
        legacy = self.legacy_path_for(tid)
        if legacy is not None and _holds(_peek(legacy), tid):  # never another id's file
            legacy.unlink(missing_ok=True)
            self._fsync_dir()

    def _all(self) -> list[Task]:
        # Sweeps scan every file: fine for the file store's scale; use the
        # django store when thousands of Tasks are in flight at once. Each
        # Task counts once — from the file get() would read it from.
        tasks: dict[str, Task] = {}
        legacy: dict[str, Task] = {}
        for path in self.dir.glob("*.json"):
            task = _peek(path)
            tid = (task or {}).get("id")
            if task is None or not isinstance(tid, str) or not storable(tid):
                continue
            if path.name == file_name(tid):
                tasks[tid] = task
            elif path == self.legacy_path_for(tid):
                legacy[tid] = task
        return list(tasks.values()) + [t for i, t in legacy.items() if i not in tasks]

    def waiting_ids(self, expired_by: datetime | None = None) -> list[str]:
        return select_waiting(self._all(), expired_by)

    def stale_ids(
        self, now: datetime, *, submitted_before: datetime, unleased_before: datetime
    ) -> list[str]:
        return select_stale(self._all(), now, submitted_before, unleased_before)

    def _write(self, target: Path, task: Task) -> None:
        data = json.dumps(task, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        # The temp name must fit the 255-byte limit too: keep only a readable prefix.
        fd, tmp = tempfile.mkstemp(prefix=f".{target.stem[:64]}.", suffix=".tmp", dir=self.dir)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        self._fsync_dir()

    def _fsync_dir(self) -> None:
        # Make the rename itself durable; not every platform can open a directory.
        try:
            dfd = os.open(self.dir, os.O_RDONLY)
        except OSError:
            return
        try:
            os.fsync(dfd)
        except OSError:
            pass
        finally:
            os.close(dfd)

    def __repr__(self) -> str:
        return f"<FileTaskStore {self.dir}>"
