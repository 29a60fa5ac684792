"""A model's SSE stream with its text deltas merged, a window at a time,
before toolnexus reads it.

Works around toolnexus 0.21.0's streaming reader (``Client._sse_lines``): it
hands each line to the event loop on its own (``call_soon_threadsafe`` and
``wait_for(queue.get())``, about 90 µs of CPU per token: 72 ms for a
400-token answer, 0.6 ms for the same answer unstreamed), into a queue of 256
lines that *drops* the next line once the loop falls that far behind — a
lost token, or a lost end of stream and a run that never ends (200
concurrent streamed runs on PostgreSQL lost both, benchmarks/RESULTS.md).

:class:`MergedEvents` reads the stream on a thread of its own (bytes into a
buffer: no event loop) — and after each read that had to wait for the model,
lets a ``window`` (at most :data:`GATHER`) of its tokens gather in the socket
before reading again: about two wake-ups a window, not one per token — and
hands toolnexus's reader the events, with each run of consecutive text deltas
— OpenAI's ``choices[0].delta.content``, Anthropic's ``text_delta`` of one
block — merged into one event: the first text at once, then at most one
merged event per ``window`` (the ``STREAM_CHUNK_SECONDS`` the stream's chunks
are coalesced by anyway). Any other event (tool calls, usage, the end) goes
as soon as it is read, after the text before it. The text toolnexus
assembles is the same, character for character.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

#: The most bytes one read of the model's stream takes.
READ = 64 * 1024
#: A read that took longer waited for the model (the bytes were not there yet).
WAITED = 0.002
#: The longest a read that waited pauses to let the next tokens gather: a
#: window, but never so long that an event other than text (a tool call, the
#: end) waits long for its read — a long window (a test's) would hold it, and
#: a reader waiting on the window, for that long.
GATHER = 0.1


def _split(buffer: bytes) -> tuple[list[bytes], bytes]:
    """The whole events in ``buffer`` (each with its blank line) and the rest."""
    events = []
    normal = buffer.replace(b"\r\n", b"\n")
    while (end := normal.find(b"\n\n")) >= 0:
        events.append(normal[: end + 2])
        normal = normal[end + 2 :]
    return events, normal


def _data(event: bytes) -> Any:
    """The JSON of an event's ``data:`` line (None: none, or not JSON)."""
    for line in event.split(b"\n"):
        if line.startswith(b"data:"):
            try:
                return json.loads(line[5:].strip())
            except ValueError:
                return None
    return None


def text_of(event: bytes, style: str) -> tuple[Any, str] | None:
    """(what a text delta may merge with, its text) when ``event`` is one
    and nothing else; None for any other event."""
    data = _data(event)
    if not isinstance(data, dict):
        return None
    if style == "anthropic":
        delta = data.get("delta")
        if data.get("type") != "content_block_delta" or not isinstance(delta, dict):
            return None
        if delta.get("type") != "text_delta" or set(delta) != {"type", "text"}:
            return None
        text = delta.get("text")
        return (data.get("index"), text) if isinstance(text, str) else None
    choices = data.get("choices")
    if data.get("usage") is not None:
        return None  # toolnexus reads it (OpenAI sends "usage": null on the others)
    if not isinstance(choices, list) or len(choices) != 1 or not isinstance(choices[0], dict):
        return None
    choice = choices[0]
    delta = choice.get("delta")
    if choice.get("finish_reason") or not isinstance(delta, dict):
        return None
    if set(delta) - {"content", "role"} or not isinstance(delta.get("content"), str):
        return None
    return 0, delta["content"]


def merged(events: list[bytes], style: str) -> bytes:
    """``events`` with each run of text deltas that may merge as one event."""
    out: list[bytes] = []
    run: list[tuple[bytes, Any, str]] = []

    def flush() -> None:
        if run:
            out.append(_with_text(run[0][0], "".join(t for _, _, t in run), style))
            run.clear()

    for event in events:
        text = text_of(event, style)
        if text is not None and (not run or run[0][1] == text[0]):
            run.append((event, *text))
            continue
        flush()
        if text is not None:
            run.append((event, *text))
        else:
            out.append(event)
    flush()
    return b"".join(out)


def _with_text(event: bytes, text: str, style: str) -> bytes:
    """``event`` (a text delta) carrying ``text`` instead."""
    data = _data(event)
    if style == "anthropic":
        data["delta"]["text"] = text
        return b"event: content_block_delta\ndata: " + json.dumps(data).encode() + b"\n\n"
    data["choices"][0]["delta"]["content"] = text
    return b"data: " + json.dumps(data).encode() + b"\n\n"


class MergedEvents:
    """``response`` (a live SSE response) read on a thread of its own, its
    text deltas merged a ``window`` at a time (see the module's docstring)."""

    def __init__(self, response: Any, style: str, window: float) -> None:
        self._response = response
        self._style = style
        self._window = window
        self._lock = threading.Condition()
        self._raw = b""  # read, not yet handed over
        self._end: BaseException | bool = False  # True at the end; an error to raise
        # When text was last handed over: never yet (not 0.0, which the
        # monotonic clock of a machine up for less than a window is near).
        self._texted = float("-inf")
        self._closing = threading.Event()
        self.status = getattr(response, "status", 200)
        self.headers = getattr(response, "headers", {})
        self._reader = threading.Thread(target=self._read, name="toolnexus-sse", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        try:
            while True:
                began = time.monotonic()
                chunk = self._response.read1(READ)
                if not chunk:
                    break
                with self._lock:
                    self._raw += chunk
                    self._lock.notify()
                if time.monotonic() - began > WAITED and self._window > 0:
                    # the next tokens gather meanwhile
                    self._closing.wait(min(self._window, GATHER))
            end: BaseException | bool = True
        except BaseException as exc:  # handed to the reader of the events
            end = exc
        with self._lock:
            self._end = end
            self._lock.notify()

    def read1(self, amount: int = -1) -> bytes:
        with self._lock:
            while True:
                events, rest = _split(self._raw)
                texts = [text_of(e, self._style) is not None for e in events]
                due = self._texted + self._window - time.monotonic()
                if events and (not all(texts) or due <= 0 or self._end is not False):
                    self._raw = rest
                    break
                if self._end is not False:
                    if self._end is True:
                        rest, self._raw = self._raw, b""
                        return rest  # what followed the last whole event, if anything
                    raise self._end
                self._lock.wait(due if events else None)
        if any(texts):
            self._texted = time.monotonic()
        return merged(events, self._style)

    read = read1

    def close(self) -> None:
        self._closing.set()
        self._response.close()

    def __enter__(self) -> MergedEvents:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
