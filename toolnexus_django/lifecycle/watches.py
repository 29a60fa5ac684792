"""One waiter's wait on one Task (a blocking send, a stream): told by the
hub of :mod:`.wakeups` when the Task moves, it returns at once, and hands over
what the wake-ups said (:meth:`Watch.news`).

A waiter keeps its Watch for as long as it waits: an idle stream for its whole
life, so 10,000 idle streams keep 10,000 (issue 32), and a Watch is lean — see
the class.
"""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING

from ..stores.base import Task
from .private import seq_of

if TYPE_CHECKING:
    from .wakeups import Hub


class Watch:
    """One waiter's view of one Task: :meth:`wait` returns as soon as the
    Task moved since the last call (or was already moved), else at the
    timeout.

    Lean, for 10,000 idle streams keep 10,000: slots; what only one kind of
    waiter needs is made by its first wait — a blocking wait's
    ``threading.Event``; a coroutine's wait is a future of its loop and a
    timer, and nothing is kept between waits (an ``asyncio.Event`` and
    ``wait_for``'s inner task cost 1.5 KB a stream). Whether the Task moved
    is one flag, set under the lock before any waiter is woken and taken
    under it after the wait ends, however it ends: a wake-up that lands as
    a wait times out is that wait's or the next one's, never lost."""

    __slots__ = (
        "_elsewhere_seq",
        "_interrupted",
        "_known_seq",
        "_latest",
        "_latest_seq",
        "_live",
        "_lock",
        "_moved",
        "_unknown",
        "_waiter",
        "_woken",
        "hub",
        "task_id",
    )  # fmt: skip

    def __init__(self, hub: Hub, task_id: str) -> None:
        self.hub = hub
        self.task_id = task_id
        self._lock = threading.Lock()
        #: A move since the last wait that returned True.
        self._woken = False
        #: A blocking waiter's event (made by its first wait).
        self._moved: threading.Event | None = None
        #: A coroutine's wait in progress: its loop and its future.
        self._waiter: tuple[asyncio.AbstractEventLoop, asyncio.Future[None]] | None = None
        #: The waiter's client went away: no wait waits any more.
        self._interrupted = False
        # What the wake-ups since the last news() told: the newest version a
        # move in this process stored, and whether anything else moved it.
        self._latest: Task | None = None
        self._latest_seq = -1
        self._unknown = False
        # The newest seq another process's move reached (its wake-up told it).
        self._elsewhere_seq = -1
        # The highest seq a local move handed over (news() keeps it): the
        # poller's report of an event up to it is this process's own move.
        self._known_seq = -1
        #: Live updates (:mod:`.live`): 0 not followed, 1 followed, 2 some came.
        self._live = 0

    def wait(self, timeout: float | None) -> bool:
        """From a thread: block until the Task moves (or ``timeout``)."""
        with self._lock:
            moved = self._moved = self._moved or threading.Event()
            if self._woken:
                moved.set()
        if not moved.wait(timeout):
            # Not cleared: a wake-up that lands as the wait times out is the
            # next wait's (cleared here, it was lost, and the waiter with it).
            return False
        with self._lock:
            moved.clear()
            self._woken = False
        return True

    async def wait_async(self, timeout: float | None) -> bool:
        """From a coroutine: wait until the Task moves (True), or
        ``timeout``, or :meth:`interrupt`, holding no thread."""
        loop = asyncio.get_running_loop()
        with self._lock:
            waiter = None if self._woken or self._interrupted else loop.create_future()
            self._waiter = None if waiter is None else (loop, waiter)
        if waiter is not None:
            timer = None if timeout is None else loop.call_later(timeout, _timed_out, waiter)
            try:
                await waiter
            finally:
                if timer is not None:
                    timer.cancel()
                with self._lock:
                    self._waiter = None
        # However the wait ended (woken, timed out, interrupted), the flag
        # says whether the Task moved: a wake-up whose loop callback is still
        # queued, or that landed as the timer fired, is taken here or by the
        # next wait. (Cleared on a timeout, such a wake-up was lost, and a
        # quiet stream never read its Task's last move: issue 32's 10,000
        # streams lost 24 and 737 final events so.)
        with self._lock:
            woken, self._woken = self._woken, False
            if woken and self._moved is not None:
                self._moved.clear()
        return woken

    def follow_live(self) -> None:
        """Be woken by the Task's live updates too (a stream; never a blocking send)."""
        self._live = 1
        self.hub.count_live(+1)

    def stirred(self) -> tuple[bool, bool]:
        """(whether the Task moved, whether live updates came) since the
        last call: what a stream must read after a wait."""
        with self._lock:
            moved = self._latest is not None or self._unknown or self._elsewhere_seq >= 0
            live = self._live == 2
            self._latest, self._latest_seq, self._unknown = None, -1, False
            self._elsewhere_seq = -1
            if live:
                self._live = 1
        return moved, live

    def _wake_live(self) -> None:
        """Live updates came (a no-op unless :meth:`follow_live`)."""
        with self._lock:
            if self._live == 0:
                return
            self._live = 2
            self._woken = True
            moved, waiter = self._moved, self._waiter
        self._rouse(moved, waiter)

    def interrupt(self, *_: object) -> None:
        """End a coroutine's wait now, and every later one at once, as if
        they timed out (the waiter's client went away). From the waiter's
        loop; any argument is ignored (it is a future's done callback)."""
        self._interrupted = True
        waiter = self._waiter
        if waiter is not None:
            _release(waiter[1])

    def news(self, current: Task) -> Task | None:
        """The Task as the wake-ups since the last call leave it, seen from
        ``current`` (the waiter's latest version): a newer version a move in
        this process stored, or ``current`` when they brought nothing newer;
        None when the store must be read (another process moved it, or a
        wake-up came with no version)."""
        with self._lock:
            latest, unknown, elsewhere = self._latest, self._unknown, self._elsewhere_seq
            self._latest, self._latest_seq, self._unknown = None, -1, False
            self._elsewhere_seq = -1
        newest = current if latest is None or seq_of(latest) <= seq_of(current) else latest
        # A move reported by its seq alone is in hand once a version that new
        # is (a listener's report can come before the local move hands it over).
        if unknown or (latest is None and elsewhere < 0) or elsewhere > seq_of(newest):
            return None
        return newest

    def _wake(self, task: Task | None = None, seq: int | None = None) -> None:
        """``task``: the version a local move stored; else the Task moved
        elsewhere (to ``seq``, when the poller knows it; None: unknown)."""
        with self._lock:
            if task is not None:
                seq = seq_of(task)
                if seq > self._latest_seq:  # moves of one Task are ordered by their seq
                    self._latest, self._latest_seq = task, seq
                self._known_seq = max(self._known_seq, seq)
            elif seq is not None and seq <= self._known_seq:
                return  # the poller found a move this process made and handed over
            elif seq is not None:
                self._elsewhere_seq = max(self._elsewhere_seq, seq)
            else:
                self._unknown = True
            self._woken = True
            moved, waiter = self._moved, self._waiter
        self._rouse(moved, waiter)

    @staticmethod
    def _rouse(
        moved: threading.Event | None,
        waiter: tuple[asyncio.AbstractEventLoop, asyncio.Future[None]] | None,
    ) -> None:
        if moved is not None:
            moved.set()
        if waiter is not None:
            try:
                waiter[0].call_soon_threadsafe(_release, waiter[1])
            except RuntimeError:  # its event loop is closed: nobody waits there
                pass

    def close(self) -> None:
        if self._live:
            self._live = 0
            self.hub.count_live(-1)
        self.hub.unwatch(self)

    def __enter__(self) -> Watch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _release(waiter: asyncio.Future[None]) -> None:
    """End a coroutine's wait (on its loop): woken, timed out or interrupted."""
    if not waiter.done():
        waiter.set_result(None)


def _timed_out(waiter: asyncio.Future[None]) -> None:
    """The timer of a coroutine's wait (a name of its own: tests race it)."""
    _release(waiter)
