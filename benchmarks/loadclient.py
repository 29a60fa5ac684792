"""A small asyncio HTTP/1.1 client and fake model for the side-by-side benchmark.

Raw sockets, not httpx: with a thousand streams open at once the client
shares the two cores with the server, and every cycle it spends is one the
server does not get. Everything listens and connects on 127.0.0.1 only.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class Connection:
    """One keep-alive HTTP/1.1 connection."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port, limit=2**20)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.reader = self.writer = None

    async def _send(self, path: str, body: bytes, headers: dict[str, str]) -> None:
        if self.writer is None:
            await self.open()
        assert self.writer is not None
        head = [f"POST {path} HTTP/1.1", f"Host: {self.host}:{self.port}"]
        head += [f"{k}: {v}" for k, v in headers.items()]
        head += [f"Content-Length: {len(body)}", "Content-Type: application/json", "", ""]
        self.writer.write("\r\n".join(head).encode() + body)
        await self.writer.drain()

    async def _head(self) -> tuple[int, dict[str, str]]:
        assert self.reader is not None
        raw = await self.reader.readuntil(b"\r\n\r\n")
        lines = raw.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                k, _, v = line.partition(":")
                headers[k.strip().lower()] = v.strip()
        return status, headers

    async def _chunks(self, headers: dict[str, str]) -> AsyncIterator[bytes]:
        assert self.reader is not None
        if headers.get("transfer-encoding", "").lower() == "chunked":
            while True:
                size = int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16)
                if size == 0:
                    await self.reader.readuntil(b"\r\n")
                    return
                chunk = await self.reader.readexactly(size)
                await self.reader.readexactly(2)
                yield chunk
        elif "content-length" in headers:
            yield await self.reader.readexactly(int(headers["content-length"]))
        else:  # until the server closes
            while chunk := await self.reader.read(65536):
                yield chunk

    async def post(self, path: str, payload: Any, headers: dict[str, str]) -> Reply:
        try:
            await self._send(path, json.dumps(payload).encode(), headers)
            status, got = await self._head()
        except (ConnectionError, asyncio.IncompleteReadError):
            # The server closed an idle keep-alive connection: once more, anew.
            self.close()
            await self._send(path, json.dumps(payload).encode(), headers)
            status, got = await self._head()
        body = b"".join([c async for c in self._chunks(got)])
        if got.get("connection", "").lower() == "close":
            self.close()
        return Reply(status, got, body)

    async def events(
        self, path: str, payload: Any, headers: dict[str, str]
    ) -> AsyncIterator[dict[str, Any]]:
        """The ``data:`` payloads of an SSE response, parsed."""
        async for _, data in self.events_with_ids(path, payload, headers):
            yield data

    async def events_with_ids(
        self, path: str, payload: Any, headers: dict[str, str]
    ) -> AsyncIterator[tuple[str | None, dict[str, Any]]]:
        """(SSE ``id:``, parsed ``data:``) of each event of an SSE response
        (the id None when the event has none), so a client can come back
        with ``Last-Event-ID``; comments (keep-alives) are skipped."""
        await self._send(
            path, json.dumps(payload).encode(), {**headers, "Accept": "text/event-stream"}
        )
        status, got = await self._head()
        if status != 200:
            body = b"".join([c async for c in self._chunks(got)])
            raise RuntimeError(f"HTTP {status}: {body[:200]!r}")
        buffer = b""
        async for chunk in self._chunks(got):
            buffer += chunk.replace(b"\r\n", b"\n")  # sse-starlette ends lines with CRLF
            while b"\n\n" in buffer:
                event, buffer = buffer.split(b"\n\n", 1)
                data, event_id = [], None
                for line in event.split(b"\n"):
                    if line.startswith(b"data:"):
                        data.append(line[5:].strip())
                    elif line.startswith(b"id:"):
                        event_id = line[3:].strip().decode()
                if data:
                    yield event_id, json.loads(b"\n".join(data))
        self.close()


# -- the fake model ---------------------------------------------------------------------

SLEEP = re.compile(r"\[sleep ([0-9.]+)\]")
#: ``[call NAME N]`` in the user's message: call tool NAME with ``{"n": N}``.
CALL = re.compile(r"\[call (\w+) (\d+)\]")
#: ``[hold]`` in the user's message: answered once the gate opens (a request to
#: ``/release``; ``/held`` tells how many calls wait there) -- Tasks that stay
#: idle for as long as a benchmark needs, then complete together.
HOLD = "[hold]"
#: ``[stream N R]`` in the last user message: the answer is N tokens,
#: ``"t0 t1 ... t<N-1>"``, R a second (streamed: one delta per token, each
#: with its leading space; not streamed: the whole text after N/R seconds).
STREAM = re.compile(r"\[stream (\d+) ([0-9.]+)\]")
#: ``[wait S]`` in the last user message: the first token (or the whole
#: answer) S seconds later.
WAIT = re.compile(r"\[wait ([0-9.]+)\]")
#: ``[tag X]`` in the last user message: the time.monotonic() at which the
#: first token was written is kept under X (``/firsts`` tells them all).
TAG = re.compile(r"\[tag ([\w.:-]+)\]")


def tokens(n: int) -> list[str]:
    """The ``[stream N R]`` answer's tokens: joined, ``"t0 t1 ... t<N-1>"``."""
    return [f"t{i}" if i == 0 else f" t{i}" for i in range(n)]


def _tool_turn(messages: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The assistant message for a ``[call NAME N]`` conversation: the tool
    call first, then (once the tool answered) its result said back, so the
    Task's artifact is the tool's own output."""
    results = [m for m in messages if m.get("role") == "tool"]
    if results:
        return {"role": "assistant", "content": f"tool said: {results[-1].get('content')}"}
    users = [m for m in messages if m.get("role") == "user"]
    match = CALL.search(json.dumps(users[0].get("content"))) if users else None
    if match is None:
        return None
    name, n = match.group(1), int(match.group(2))
    call = {"id": f"call_{name}_{n}", "type": "function",
            "function": {"name": name, "arguments": json.dumps({"n": n})}}  # fmt: skip
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def _sse(data: Any) -> bytes:
    return b"data: " + json.dumps(data, separators=(",", ":")).encode() + b"\n\n"


def _chunked(data: bytes) -> bytes:
    """``data`` as one chunk of an HTTP/1.1 chunked body."""
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


async def serve_fake_model(port: int = 0) -> tuple[asyncio.Server, int]:
    """An OpenAI-shaped chat-completions endpoint: it answers a message
    containing ``[sleep S]`` after S seconds, any other at once; a message
    containing ``[call NAME N]`` gets a call of tool NAME, then its result;
    one containing ``[hold]`` waits until a request to ``/release`` opens the
    gate (``/held``: how many wait, how many were answered, how many streamed).

    A request with ``"stream": true`` is answered with server-sent events
    (HTTP/1.1 chunked, kept alive): a ``delta.content`` per piece of text,
    ``delta.tool_calls`` for a call, a chunk with ``finish_reason``, the usage
    chunk when ``stream_options.include_usage`` asks for it, ``data: [DONE]``.
    ``[stream N R]``, ``[wait S]`` and ``[tag X]`` (see their patterns) shape
    the answer's text and pace, streamed or not; ``/firsts`` (GET or POST)
    answers ``{tag: time.monotonic() of its first token}`` -- on Linux the
    clock is the machine's, so a client in another process compares it with
    its own."""
    seq = 0
    gate = asyncio.Event()
    held = 0
    streams = 0  # requests answered as event streams
    firsts: dict[str, float] = {}

    def reply(writer: asyncio.StreamWriter, payload: dict[str, Any]) -> None:
        out = json.dumps(payload).encode()
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(out)}\r\n\r\n".encode()
            + out
        )

    async def stream(
        writer: asyncio.StreamWriter,
        said: dict[str, Any],
        pieces: list[str],
        rate: float,
        wait: float,
        usage: dict[str, int] | None,
        tag: str | None,
    ) -> None:
        """``said`` as an event stream: its text in ``pieces``, ``rate`` a
        second (0: at once), the first ``wait`` seconds after the head."""
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        await writer.drain()
        if wait:
            await asyncio.sleep(wait)
        start = time.monotonic()
        i = 0
        while i < len(pieces):
            if rate:
                delay = start + i / rate - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
            # Every piece due by now, in one write (a late wake-up catches up).
            now, j = time.monotonic(), i + 1
            while j < len(pieces) and (not rate or start + j / rate <= now):
                j += 1
            out = b"".join(
                _sse({"choices": [{"index": 0, "delta": {"content": p}}]}) for p in pieces[i:j]
            )
            if writer.is_closing():
                raise ConnectionResetError("the caller went away mid-stream")
            writer.write(_chunked(out))
            if i == 0 and tag is not None:
                firsts[tag] = time.monotonic()
            await writer.drain()
            i = j
        calls = said.get("tool_calls") or []
        tail = b""
        if calls:
            wire = [{"index": k, **call} for k, call in enumerate(calls)]
            tail += _sse({"choices": [{"index": 0, "delta": {"tool_calls": wire}}]})
        if rate and pieces:  # the answer takes N/R seconds, as when not streamed
            delay = start + len(pieces) / rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
        finish = "tool_calls" if calls else "stop"
        tail += _sse({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        if usage is not None:
            tail += _sse({"choices": [], "usage": usage})
        tail += b"data: [DONE]\n\n"
        if tag is not None and not pieces:
            firsts[tag] = time.monotonic()
        writer.write(_chunked(tail) + b"0\r\n\r\n")
        await writer.drain()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal seq, held, streams
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                body = await reader.readexactly(length)
                path = head.split(b" ", 2)[1].split(b"?")[0]
                if path.endswith((b"/release", b"/held")):  # the gate of [hold]
                    if path.endswith(b"/release"):
                        gate.set()
                    reply(writer, {"held": held, "answered": seq, "streamed": streams})
                    await writer.drain()
                    continue
                if path.endswith(b"/firsts"):
                    reply(writer, firsts)
                    await writer.drain()
                    continue
                request = json.loads(body)
                messages = request.get("messages", [])
                text = json.dumps(messages)
                users = [m for m in messages if m.get("role") == "user"]
                last_user = json.dumps(users[-1].get("content")) if users else ""
                match = SLEEP.search(text)
                if match:
                    await asyncio.sleep(float(match.group(1)))
                if HOLD in text and not gate.is_set():
                    held += 1
                    try:
                        await gate.wait()
                    finally:
                        held -= 1
                seq += 1
                streamed = STREAM.search(last_user)
                waited = WAIT.search(last_user)
                tagged = TAG.search(last_user)
                wait = float(waited.group(1)) if waited else 0.0
                tag = tagged.group(1) if tagged else None
                said = _tool_turn(messages)
                pieces: list[str] = []
                rate = 0.0
                if said is None and streamed:
                    pieces = tokens(int(streamed.group(1)))
                    rate = float(streamed.group(2))
                    said = {"role": "assistant", "content": "".join(pieces)}
                elif said is None:
                    said = {"role": "assistant", "content": f"answer {seq}"}
                if not pieces and said.get("content"):
                    pieces = [said["content"]]
                completion = len(pieces) if streamed else 2
                usage = {"prompt_tokens": 10, "completion_tokens": completion,
                         "total_tokens": 10 + completion}  # fmt: skip
                if request.get("stream") is True:
                    streams += 1
                    include = (request.get("stream_options") or {}).get("include_usage")
                    await stream(writer, said, pieces, rate, wait, usage if include else None, tag)
                    continue
                if wait:
                    await asyncio.sleep(wait)
                if rate:  # the same model work as the stream: N/R seconds
                    await asyncio.sleep(len(pieces) / rate)
                answer = {
                    "id": f"chatcmpl-bench-{seq}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": "bench",
                    "choices": [
                        {
                            "index": 0,
                            "message": said,
                            "finish_reason": "tool_calls" if said.get("tool_calls") else "stop",
                        }
                    ],
                    "usage": usage,
                }
                reply(writer, answer)
                if tag is not None:
                    firsts[tag] = time.monotonic()
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=4096)
    return server, server.sockets[0].getsockname()[1]


def fake_model_main() -> None:
    """Run the fake model until stdin closes; print its URL first."""
    import sys

    async def main() -> None:
        server, port = await serve_fake_model()
        print(f"http://127.0.0.1:{port}/v1", flush=True)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, sys.stdin.read)
        server.close()

    asyncio.run(main())


if __name__ == "__main__":
    fake_model_main()
