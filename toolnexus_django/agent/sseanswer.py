"""A model's whole answer (the JSON body of a call that did not stream) as
the server-sent events of a streaming one, for toolnexus's streaming loop.

:func:`sse_of` turns an answer of the OpenAI or Anthropic shape (one
:func:`~.modelanswer.parse_answer` accepted) into the events toolnexus's
``_stream_openai`` / ``_stream_anthropic`` read into the same text, tool
calls and usage as its ``run`` reads from the answer itself; an
:class:`SSEResponse` hands those events to toolnexus's reader thread as a
live response would.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterable, Iterator
from typing import Any

#: A word with the whitespace around it (the first piece also takes what leads).
_WORD = re.compile(r"\s*\S+\s*")


def word_pieces(text: str) -> list[str]:
    """``text`` in word-sized pieces that keep their whitespace: joined, they
    are ``text`` exactly."""
    return _WORD.findall(text) or ([text] if text else [])


def sse_of(answer: dict[str, Any], style: str, *, words: bool = False) -> Iterator[bytes]:
    """The events, one ``bytes`` each, of ``answer`` streamed in ``style``
    ("openai" or "anthropic"); ``words``: its text in :func:`word_pieces`
    (else in one piece)."""
    if style == "anthropic":
        return _anthropic(answer, words)
    return _openai(answer, words)


def _event(data: Any, name: str | None = None) -> bytes:
    line = b"data: " + json.dumps(data, separators=(",", ":")).encode("ascii") + b"\n\n"
    return (b"event: " + name.encode("ascii") + b"\n" + line) if name else line


def _texts(text: str, words: bool) -> list[str]:
    return word_pieces(text) if words else ([text] if text else [])


def _arguments_text(raw: Any) -> str:
    """A call's arguments as the text a stream sends in pieces, read back by
    toolnexus's ``_safe_json`` as it reads ``raw`` itself: a string as is, a
    dict encoded, anything else (which it reads as ``{}``) as nothing."""
    if isinstance(raw, str):
        return raw
    return json.dumps(raw) if isinstance(raw, dict) else ""


def _openai(answer: dict[str, Any], words: bool) -> Iterator[bytes]:
    choice = answer["choices"][0]
    message = choice["message"]

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return _event({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    for piece in _texts(message.get("content") or "", words):
        yield chunk({"content": piece})
    calls = message.get("tool_calls") or []
    for index, call in enumerate(calls):
        function = call["function"]
        wire = {"name": function["name"], "arguments": _arguments_text(function.get("arguments"))}
        yield chunk({"tool_calls": [{"index": index, "id": call.get("id"), "function": wire}]})
    finish = choice.get("finish_reason") or ("tool_calls" if calls else "stop")
    yield chunk({}, finish)
    if answer.get("usage"):
        yield _event({"choices": [], "usage": answer["usage"]})
    yield b"data: [DONE]\n\n"


def _anthropic(answer: dict[str, Any], words: bool) -> Iterator[bytes]:
    usage = dict(answer.get("usage") or {})
    # toolnexus adds the usage of message_start and of message_delta: each
    # count goes in one of them, so the sum is the answer's.
    output = {"output_tokens": usage.pop("output_tokens")} if "output_tokens" in usage else None
    start = {k: v for k, v in answer.items() if k not in ("content", "stop_reason", "usage")}
    start.update(content=[], stop_reason=None, usage=usage or None)
    yield _event({"type": "message_start", "message": start}, "message_start")
    # Only text and tool_use blocks: toolnexus's stream keeps any other block
    # (thinking, say) as an empty text block, which Anthropic refuses next turn.
    blocks = [b for b in answer.get("content") or () if b.get("type") in ("text", "tool_use")]
    for index, block in enumerate(blocks):
        yield from _anthropic_block(index, block, words)
    # The stream acts on tool calls only when stop_reason says tool_use; run
    # acts on tool_use blocks whatever it says.
    uses = any(b["type"] == "tool_use" for b in blocks)
    stop = "tool_use" if uses else (answer.get("stop_reason") or "end_turn")
    delta = {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}}
    yield _event({**delta, "usage": output}, "message_delta")
    yield _event({"type": "message_stop"}, "message_stop")


def _anthropic_block(index: int, block: dict[str, Any], words: bool) -> Iterator[bytes]:
    if block["type"] == "text":
        start: dict[str, Any] = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": t} for t in _texts(block.get("text", ""), words)]
    else:
        start = {"type": "tool_use", "id": block.get("id"), "name": block["name"], "input": {}}
        given = block.get("input")
        deltas = [{"type": "input_json_delta", "partial_json": json.dumps(given)}] if given else []
    opened = {"type": "content_block_start", "index": index, "content_block": start}
    yield _event(opened, "content_block_start")
    for delta in deltas:
        yield _event(
            {"type": "content_block_delta", "index": index, "delta": delta}, "content_block_delta"
        )
    yield _event({"type": "content_block_stop", "index": index}, "content_block_stop")


class SSEResponse:
    """A live response, as toolnexus's reader reads one (``read1`` / ``read``
    / ``readline`` / ``close``), made of ``events``: each read returns at most
    the rest of one event, waiting ``pause`` seconds before each event but the
    first (a blocking wait: toolnexus reads on a worker thread; :meth:`close`
    ends it at once, and the reads then find the end)."""

    def __init__(self, events: Iterable[bytes], pause: float = 0.0) -> None:
        self._events = iter(events)
        self._pause = pause
        self._buffer = b""
        self._started = False
        self._closed = threading.Event()
        self.status = 200
        self.headers = {"Content-Type": "text/event-stream"}

    def _fill(self) -> bool:
        """Whether there is something to read (the next event, once waited for)."""
        if self._buffer:
            return True
        if self._started and self._pause > 0:
            self._closed.wait(self._pause)
        self._started = True
        if self._closed.is_set():
            return False
        self._buffer = next(self._events, b"")
        return bool(self._buffer)

    def read1(self, amount: int = -1) -> bytes:
        if not self._fill():
            return b""
        size = len(self._buffer) if amount is None or amount < 0 else amount
        data, self._buffer = self._buffer[:size], self._buffer[size:]
        return data

    def read(self, amount: int = -1) -> bytes:
        if amount is not None and amount >= 0:
            return self.read1(amount)
        return b"".join(iter(self.read1, b""))

    def readline(self, limit: int = -1) -> bytes:
        line = b""
        while not line.endswith(b"\n") and (limit is None or limit < 0 or len(line) < limit):
            if not self._fill():
                break
            end = self._buffer.find(b"\n") + 1 or len(self._buffer)
            if limit is not None and limit >= 0:
                end = min(end, limit - len(line))
            line, self._buffer = line + self._buffer[:end], self._buffer[end:]
        return line

    def close(self) -> None:
        self._closed.set()

    def __enter__(self) -> SSEResponse:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
