"""A model's SSE stream with its text deltas merged before toolnexus reads it
(toolnexus_django/agent/ssemerge.py): the same text, character for
character, in far fewer events; anything else at once and in order; the
end and errors as the stream gave them."""

from __future__ import annotations

import json
import queue
import threading
import time
import types
from typing import Any

import pytest

from toolnexus_django.agent import ssemerge
from toolnexus_django.agent.sseanswer import sse_of
from toolnexus_django.agent.ssemerge import MergedEvents, merged, text_of


def openai_text(piece: str, **extra: Any) -> bytes:
    data = {"id": "c", "choices": [{"index": 0, "delta": {"content": piece}}], **extra}
    return b"data: " + json.dumps(data).encode() + b"\n\n"


def anthropic_text(index: int, piece: str) -> bytes:
    data = {"type": "content_block_delta", "index": index}
    data["delta"] = {"type": "text_delta", "text": piece}
    return b"event: content_block_delta\ndata: " + json.dumps(data).encode() + b"\n\n"


def texts(stream: bytes, style: str) -> list[str]:
    events = [e + b"\n\n" for e in stream.split(b"\n\n") if e]
    found = [text_of(e, style) for e in events]
    return [t[1] for t in found if t is not None]


def test_openai_text_deltas_merge_and_nothing_else_does() -> None:
    tool = b'data: {"choices": [{"delta": {"tool_calls": [{"index": 0}]}}]}\n\n'
    usage = openai_text("", usage={"prompt_tokens": 3})
    finish = b'data: {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}\n\n'
    events = [openai_text("Filed"), openai_text(" claim", usage=None), tool, openai_text(" EXP-1")]
    events += [usage, finish, b"data: [DONE]\n\n"]
    out = merged(events, "openai")
    assert texts(out, "openai") == ["Filed claim", " EXP-1"]
    assert out.count(b"tool_calls") == 1 and out.endswith(finish + b"data: [DONE]\n\n")
    assert b'"prompt_tokens": 3' in out  # usage is never merged away


def test_anthropic_text_deltas_merge_within_their_block() -> None:
    events = [anthropic_text(0, "Hel"), anthropic_text(0, "lo"), anthropic_text(1, " you")]
    events.append(b'event: message_stop\ndata: {"type": "message_stop"}\n\n')
    out = merged(events, "anthropic")
    assert texts(out, "anthropic") == ["Hello", " you"]
    assert out.endswith(b'{"type": "message_stop"}\n\n')


class Feed:
    """A live response fed by the test: ``read1`` blocks for the next piece."""

    def __init__(self) -> None:
        self.pieces: queue.Queue[bytes | BaseException] = queue.Queue()
        self.closed = threading.Event()

    def read1(self, amount: int = -1) -> bytes:
        piece = self.pieces.get(timeout=10)
        if isinstance(piece, BaseException):
            raise piece
        return piece

    def close(self) -> None:
        self.closed.set()
        self.pieces.put(b"")


def test_the_first_text_goes_at_once_and_the_rest_a_window_at_a_time() -> None:
    feed = Feed()
    events = MergedEvents(feed, "openai", window=3600)
    feed.pieces.put(openai_text("first"))
    assert texts(events.read1(), "openai") == ["first"]  # at once
    for piece in (" second", " third"):
        feed.pieces.put(openai_text(piece))
    feed.pieces.put(b'data: {"choices": [{"delta": {"tool_calls": []}}]}\n\ndata: [D')
    # Not text: it goes at once, with the text before it merged.
    out = events.read1()
    assert texts(out, "openai") == [" second third"] and b"tool_calls" in out
    feed.pieces.put(b"ONE]\n\n")
    feed.pieces.put(b"")
    assert events.read1() == b"data: [DONE]\n\n"
    assert events.read1() == b""


def test_the_first_text_goes_at_once_on_a_machine_up_for_less_than_a_window(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    began = time.monotonic()
    young = types.SimpleNamespace(monotonic=lambda: time.monotonic() - began + 1.0)
    monkeypatch.setattr(ssemerge, "time", young)  # its clock: up for a second
    feed = Feed()
    events = MergedEvents(feed, "openai", window=3600)
    feed.pieces.put(openai_text("first"))
    out: list[bytes] = []
    reader = threading.Thread(target=lambda: out.append(events.read1()), daemon=True)
    reader.start()
    reader.join(timeout=5)  # before the feed gives up on a next piece (10 s)
    assert out and texts(out[0], "openai") == ["first"]
    events.close()


def test_a_long_window_never_holds_the_next_read(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every read "waited" for the model: the reader pauses after each. With
    # a window of an hour it once paused an hour, and a tool call behind
    # held text was never read (CI hung on the test above).
    monkeypatch.setattr(ssemerge, "WAITED", -1.0)
    feed = Feed()
    events = MergedEvents(feed, "openai", window=3600)
    feed.pieces.put(openai_text("first"))
    assert texts(events.read1(), "openai") == ["first"]
    feed.pieces.put(openai_text(" held"))
    feed.pieces.put(b'data: {"choices": [{"delta": {"tool_calls": []}}]}\n\n')
    out: list[bytes] = []
    reader = threading.Thread(target=lambda: out.append(events.read1()), daemon=True)
    reader.start()
    reader.join(timeout=10)
    assert out and texts(out[0], "openai") == [" held"] and b"tool_calls" in out[0]
    events.close()


def test_an_answer_reads_the_same_merged() -> None:
    answer = {"choices": [{"message": {"role": "assistant", "content": "one two three four"}}]}
    answer["usage"] = {"prompt_tokens": 1, "completion_tokens": 4}
    stream = b"".join(sse_of(answer, "openai", words=True))
    feed = Feed()
    for i in range(0, len(stream), 7):  # bytes as a network cuts them
        feed.pieces.put(stream[i : i + 7])
    feed.pieces.put(b"")
    events, out = MergedEvents(feed, "openai", window=0), b""
    while piece := events.read1():
        out += piece
    assert "".join(texts(out, "openai")) == "one two three four"
    assert b'"completion_tokens":4' in out and out.endswith(b"data: [DONE]\n\n")


def test_an_error_reading_comes_after_what_was_read() -> None:
    feed = Feed()
    events = MergedEvents(feed, "openai", window=0)
    feed.pieces.put(openai_text("partial"))
    feed.pieces.put(TimeoutError("the call's deadline"))
    assert texts(events.read1(), "openai") == ["partial"]
    with pytest.raises(TimeoutError, match="deadline"):
        events.read1()


def test_closing_ends_the_reads() -> None:
    feed = Feed()
    events = MergedEvents(feed, "openai", window=0)
    events.close()
    assert feed.closed.is_set()
    assert events.read1() == b""
