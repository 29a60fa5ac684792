"""One ``<sanitize(id)>.json`` per Task under a directory, written atomically.

A write goes to a fresh temp file in the same directory (unique per writer, so
two threads saving the same Task never share one), is flushed and fsynced, then
``os.replace``-d over the target. A reader therefore sees either the previous
complete file or the new complete one — never a torn or missing file — and the
files are plain JSON, readable by any other process.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

try:
    import fcntl
except ImportError:  # not POSIX: transitions are guarded within this process only
    fcntl = None  # type: ignore[assignment]

from toolnexus import sanitize

from .base import (
    MAX_ID_LENGTH,
    TERMINAL_STATES,
    Task,
    TaskStore,
    TerminalTaskError,
    bump_revision,
    same_version,
    select_stale,
    select_waiting,
    state_of,
    task_id_of,
)

#: File names are limited to 255 bytes on common file systems (ext4, XFS,
#: APFS, NTFS): with the ".json" suffix, longer ids cannot have a file of
#: their own, so they are refused on save and unknown on get.
MAX_FILE_ID_LENGTH = min(MAX_ID_LENGTH, 255 - len(".json"))


#: The directory-wide lock file writers take (readers never need it).
LOCK_NAME = ".lock"


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
        """Where the Task with ``id`` lives. ``sanitize`` maps every character
        outside ``[a-zA-Z0-9_-]`` to ``_``, so no id can leave the directory."""
        return self.dir / f"{sanitize(id)}.json"

    def get(self, id: str) -> Task | None:
        if not isinstance(id, str) or not id or len(id) > MAX_FILE_ID_LENGTH:
            return None
        try:
            with open(self.path_for(id), encoding="utf-8") as f:
                task = json.load(f)
        except FileNotFoundError:
            return None
        # sanitize() is not injective ("a/b" and "a_b" share a file): only the
        # Task whose own id matches is returned.
        if not isinstance(task, dict) or task.get("id") != id:
            return None
        return task

    def save(self, task: Task) -> None:
        tid = task_id_of(task)
        if len(tid) > MAX_FILE_ID_LENGTH:
            raise ValueError(f"Task id longer than {MAX_FILE_ID_LENGTH} characters")
        with self._locked():
            stored = self.get(tid)
            if state_of(stored) in TERMINAL_STATES:
                raise TerminalTaskError(tid, state_of(stored))
            self._write(tid, task)

    def compare_and_set(self, expected: Task, new: Task) -> bool:
        tid = task_id_of(new)
        with self._locked():
            stored = self.get(tid)
            if not same_version(stored, expected) or state_of(stored) in TERMINAL_STATES:
                return False
            bump_revision(expected, new)
            self._write(tid, new)
            return True

    def _all(self) -> list[Task]:
        # Sweeps scan every file: fine for the file store's scale; use the
        # django store when thousands of Tasks are in flight at once.
        tasks = []
        for path in self.dir.glob("*.json"):
            try:
                with open(path, encoding="utf-8") as f:
                    task = json.load(f)
            except (OSError, ValueError):
                continue
            if isinstance(task, dict) and isinstance(task.get("id"), str):
                tasks.append(task)
        return tasks

    def waiting_ids(self, expired_by: datetime | None = None) -> list[str]:
        return select_waiting(self._all(), expired_by)

    def stale_ids(
        self, now: datetime, *, submitted_before: datetime, unleased_before: datetime
    ) -> list[str]:
        return select_stale(self._all(), now, submitted_before, unleased_before)

    def _write(self, tid: str, task: Task) -> None:
        data = json.dumps(task, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        target = self.path_for(tid)
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
