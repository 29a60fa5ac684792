"""A streamed run's live updates, made from toolnexus's stream events
(:mod:`..agent.streaming`) on the runtime's loop.

- Text deltas are coalesced: each model turn's first chunk goes at once (a
  person sees the answer begin), later ones at most every ``STREAM_CHUNK_SECONDS``
  (sooner once ``STREAM_CHUNK_CHARS`` wait), so a fast model does not make
  one event per token. A model turn that ends in tool calls is not the
  answer: the next turn's first chunk resets the artifact.
- Each tool call is an update when it starts and when it ends (ok, error,
  or waiting for a person); a call that suspended the run shows no result.
- The answer's chunks stop at ``MAX_OUTPUT_CHARS`` per turn, as the answer does.

Every update goes to the run's :class:`~..lifecycle.live.Feed` (this
process's streams see it at once) and, for a store that keeps them, into the
store in batches (streams served by other processes): the first
:data:`FIRST_SAVE_AFTER` after the first update, then at most every
:data:`SAVE_SECONDS`. A run that ends sooner writes none (most runs of a
quick model), and a run's last updates are not written: its final event
carries the whole answer, and a stream elsewhere sends the rest of its text
as one chunk (:mod:`..a2a.follow`). A failed write is logged, never the run's
failure: live updates are a view, the event log is the truth.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from ..conf import toolnexus_settings
from ..lifecycle import live
from ..lifecycle.moves import max_output_chars
from ..observability import genai
from ..runtime.outages import log_exception
from ..stores import TaskStore

logger = logging.getLogger("toolnexus_django.fulfilment")

#: How often at most a run writes its live updates to the store: about
#: 4 writes a second per streamed run, whatever the model's pace.
SAVE_SECONDS = 0.25
#: How long after a run's first update its first write waits (a stream in
#: another process sees the answer begin this much later than one here).
FIRST_SAVE_AFTER = 0.1


class RunProgress:
    """The live updates of one streamed run (see the module's docstring);
    :meth:`take` each stream event, then :meth:`finish`, then :meth:`close`."""

    def __init__(self, store: TaskStore, task_id: str, seq: int, db: Any) -> None:
        self.task_id = task_id
        self.artifact_id = live.answer_artifact_id(task_id)
        self.feed = live.feeds().open(task_id, seq)
        self.seq = seq
        self._store = store if store.keeps_live_updates else None
        self._db = db
        self._loop = asyncio.get_running_loop()
        self._began = time.monotonic()
        #: Milliseconds from the run's start to its first chunk of text.
        self.first_text_ms: int | None = None
        self._interval = float(toolnexus_settings.STREAM_CHUNK_SECONDS)
        self._chars = int(toolnexus_settings.STREAM_CHUNK_CHARS)
        self._limit = max_output_chars()
        self._pending: list[str] = []
        self._pending_chars = 0
        self._shown = 0  # characters of this turn's text sent
        self._reset = True  # the next chunk starts the answer anew
        self._last_chunk: float | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._calls: list[tuple[str, str]] = []  # this turn's (call id, tool), in order
        self._ended: set[str] = set()  # call ids that ended (or wait for a person)
        self._unsaved: list[live.Update] = []
        self._saving: asyncio.Task[None] | None = None
        self._due = 0.0  # when the next write may be made
        self._over = asyncio.Event()  # the run is over: write nothing more
        self._wrote = False

    # -- toolnexus's stream events ---------------------------------------------------

    def take(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "text":
            self._text(str(event.get("delta") or ""))
        elif kind == "tool_call":
            self._tool_call(event)
        elif kind == "pending":
            self._pending_call()
        elif kind == "tool_result":
            self._tool_result(event)

    def _text(self, delta: str) -> None:
        if not delta:
            return
        now = time.monotonic()
        genai.first_chunk()  # the model call's span, when traced
        if self.first_text_ms is None:
            self.first_text_ms = round((now - self._began) * 1000)
        self._pending.append(delta)
        self._pending_chars += len(delta)
        # A turn's first chunk goes at once: a person sees the answer begin.
        due = self._reset or self._last_chunk is None or now - self._last_chunk >= self._interval
        if due or self._pending_chars >= self._chars:
            self._flush_text()
        elif self._timer is None:
            assert self._last_chunk is not None
            wait = self._last_chunk + self._interval - now
            self._timer = self._loop.call_later(wait, self._flush_text)

    def _flush_text(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._pending:
            return
        text = "".join(self._pending)
        self._pending, self._pending_chars = [], 0
        text = text[: max(0, self._limit - self._shown)]
        if not text:
            return
        self._shown += len(text)
        update = {"text": text, "artifact": self.artifact_id, "reset": self._reset}
        self._reset = False
        self._last_chunk = time.monotonic()
        self._add(update)

    def _turn_over(self) -> None:
        """Tool calls end the model's turn: its text so far is not the answer."""
        self._flush_text()
        self._reset, self._shown = True, 0

    def _tool_call(self, event: dict[str, Any]) -> None:
        self._turn_over()
        call, name = str(event.get("id") or ""), str(event.get("name") or "")
        if self._ended >= {c for c, _ in self._calls}:
            self._calls = []  # a new turn's calls
        self._calls.append((call, name))
        arguments = live.shown_arguments(event.get("args"))
        self._add({"tool": name, "call": call, "status": "running", "arguments": arguments})

    def _pending_call(self) -> None:
        """A call asked for a person: toolnexus tells it before that call's
        result, in the turn's order — the first call that has not ended."""
        for call, name in self._calls:
            if call not in self._ended:
                self._ended.add(call)
                self._add({"tool": name, "call": call, "status": "input-required"})
                return

    def _tool_result(self, event: dict[str, Any]) -> None:
        call = str(event.get("id") or "")
        if call in self._ended:
            return  # it waits for a person: its result is a placeholder
        self._ended.add(call)
        status = "error" if event.get("is_error") else "ok"
        self._add({"tool": str(event.get("name") or ""), "call": call, "status": status})

    # -- where updates go ------------------------------------------------------------

    def _add(self, update: live.Update) -> None:
        self.feed.add(update)
        if self._store is None:
            return
        self._unsaved.append(update)
        if self._saving is None and not self._over.is_set():
            if not self._due:
                self._due = time.monotonic() + FIRST_SAVE_AFTER
            self._saving = self._loop.create_task(self._save())

    async def _save(self) -> None:
        """Write what is unsaved once it is due, until the run is over."""
        try:
            while self._unsaved:
                wait = self._due - time.monotonic()
                if wait > 0:
                    try:
                        await asyncio.wait_for(self._over.wait(), wait)
                    except TimeoutError:
                        pass
                if self._over.is_set():
                    return
                batch, self._unsaved = self._unsaved, []
                self._due = time.monotonic() + SAVE_SECONDS
                self._wrote = True
                await self._write(batch)
        finally:
            self._saving = None

    async def _write(self, batch: list[live.Update]) -> None:
        assert self._store is not None
        try:
            await self._db(self._store.add_live_updates, self.task_id, self.seq, batch)
        except Exception:
            log_exception(logger, "Task %s: writing live updates failed", self.task_id)

    async def finish(self) -> None:
        """The run's stream ended: send what text waits; write nothing more
        (a write under way ends first: the rows are deleted after it)."""
        self._flush_text()
        self._over.set()
        if self._saving is not None:
            await asyncio.shield(self._saving)

    def close(self) -> None:
        """Forget the feed (the run's outcome is stored, or it never will be)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        live.feeds().close(self.feed)

    @property
    def saved(self) -> bool:
        """Whether the store may hold updates of this run (to delete at its end)."""
        return self._wrote
