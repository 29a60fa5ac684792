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
                data = [
                    line[5:].strip() for line in event.split(b"\n") if line.startswith(b"data:")
                ]
                if data:
                    yield json.loads(b"\n".join(data))
        self.close()


# -- the fake model ---------------------------------------------------------------------

SLEEP = re.compile(r"\[sleep ([0-9.]+)\]")
#: ``[call NAME N]`` in the user's message: call tool NAME with ``{"n": N}``.
CALL = re.compile(r"\[call (\w+) (\d+)\]")
#: ``[hold]`` in the user's message: answered once the gate opens (a request to
#: ``/release``; ``/held`` tells how many calls wait there) -- Tasks that stay
#: idle for as long as a benchmark needs, then complete together.
HOLD = "[hold]"


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


async def serve_fake_model(port: int = 0) -> tuple[asyncio.Server, int]:
    """An OpenAI-shaped chat-completions endpoint: it answers a message
    containing ``[sleep S]`` after S seconds, any other at once; a message
    containing ``[call NAME N]`` gets a call of tool NAME, then its result;
    one containing ``[hold]`` waits until a request to ``/release`` opens the
    gate (``/held``: how many wait)."""
    seq = 0
    gate = asyncio.Event()
    held = 0

    def reply(writer: asyncio.StreamWriter, payload: dict[str, Any]) -> None:
        out = json.dumps(payload).encode()
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(out)}\r\n\r\n".encode()
            + out
        )

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal seq, held
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
                    reply(writer, {"held": held, "answered": seq})
                    await writer.drain()
                    continue
                messages = json.loads(body).get("messages", [])
                text = json.dumps(messages)
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
                said = _tool_turn(messages) or {"role": "assistant", "content": f"answer {seq}"}
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
                    "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
                }
                reply(writer, answer)
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
