"""The reference: an agent like ours, served by the OFFICIAL a2a-sdk 1.3.0.

Run with a separate venv's python (not the project's), built by
``benchmarks/sdk_venv.sh``::

    PY=$(bash benchmarks/sdk_venv.sh)
    $PY benchmarks/sdk_agent.py --port 8123 --model-url http://127.0.0.1:9000/v1 --store memory
    $PY benchmarks/sdk_agent.py --port 8123 --model-url http://127.0.0.1:9000/v1 \
        --store sqlite:/tmp/sdk-bench.sqlite3
    $PY benchmarks/sdk_agent.py --port 8123 --grpc-port 50123 --model-url ... --store memory

What it serves, on 127.0.0.1:

* ``POST /``  -- the SDK's JSON-RPC binding (``create_jsonrpc_routes``) over
  the SDK's ``DefaultRequestHandler``. v1.0 (header ``A2A-Version: 1.0``):
  ``SendMessage``, ``SendStreamingMessage``, ``GetTask``, ...; v0.3 (no
  ``A2A-Version`` header, or ``0.3``): ``message/send``, ``message/stream``,
  ``tasks/get``, ... through the SDK's compat adapter
  (``enable_v0_3_compat=True``).
* ``GET /.well-known/agent-card.json`` -- the agent card
  (``capabilities.streaming`` true; JSONRPC interfaces for 1.0 and 0.3).
* with ``--grpc-port N``: the SDK's gRPC binding (``GrpcHandler`` over the
  same ``DefaultRequestHandler`` and store, ``grpc.aio`` on 127.0.0.1:N, in
  the same process and event loop as the HTTP app), declared in the card as
  a GRPC interface. Needs ``a2a-sdk[grpc]`` (benchmarks/sdk_venv.sh).

The executor does what our agent does for each message: publish the Task
(submitted), mark it working, ask an OpenAI-shaped model
``POST {model-url}/chat/completions`` with the user's text, add the answer
``choices[0].message.content`` as a text artifact and complete the Task; an
HTTP error fails the Task with the reason.

``--store memory`` uses ``InMemoryTaskStore``; ``--store sqlite:<path>`` the
SDK's ``DatabaseTaskStore`` on ``sqlite+aiosqlite:///<path>`` (its ``tasks``
table is created at start-up with ``initialize()``; connections get the same
``journal_mode=WAL``, ``synchronous=NORMAL``, 20 s busy timeout as
testproject/settings.py).

SIGTERM (or Ctrl-C) shuts uvicorn down gracefully and exits 0.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import signal
import sys
from collections.abc import AsyncIterator
from typing import Any


def _exit_ok(_signum: int, _frame: Any) -> None:
    raise SystemExit(0)


# SIGTERM/SIGINT exit 0, even during the (slow) imports below. uvicorn swaps in
# its own handlers while serving and, after its graceful shutdown, re-raises
# the signal it caught -- which lands here again and exits 0 instead of dying
# by the signal.
signal.signal(signal.SIGTERM, _exit_ok)
signal.signal(signal.SIGINT, _exit_ok)

_MISSING_HINT = (
    "sdk_agent.py needs the a2a-sdk 1.3.0 server stack in the python running it:\n"
    '  pip install "a2a-sdk[http-server,sqlite]==1.3.0" uvicorn httpx httptools uvloop\n'
    "or build the venv with:  bash benchmarks/sdk_venv.sh  (then run with the python it prints)"
)

try:
    import httpx
    import uvicorn
    from a2a.server.agent_execution import AgentExecutor, RequestContext
    from a2a.server.events import EventQueue
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
    from a2a.server.tasks import InMemoryTaskStore, TaskStore, TaskUpdater
    from a2a.types import (
        AgentCapabilities,
        AgentCard,
        AgentInterface,
        AgentSkill,
        Part,
        Task,
        TaskState,
        TaskStatus,
    )
    from starlette.applications import Starlette
except ImportError as exc:  # pragma: no cover - environment problem
    sys.exit(f"sdk_agent.py: missing import: {exc}\n{_MISSING_HINT}")

try:
    from importlib.metadata import version as _dist_version

    SDK_VERSION = _dist_version("a2a-sdk")
except Exception:
    SDK_VERSION = "unknown"

log = logging.getLogger("sdk_agent")

MODEL_NAME = "bench"


class ChatAgentExecutor(AgentExecutor):
    """One chat completion per message: submitted -> working -> artifact -> completed."""

    def __init__(self, client: httpx.AsyncClient, model_url: str) -> None:
        self._client = client
        self._url = model_url.rstrip("/") + "/chat/completions"

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id = context.task_id or ""
        context_id = context.context_id or ""
        task = context.current_task
        if task is None:
            # First event of a new task must be the Task itself (SDK contract).
            task = Task(
                id=task_id,
                context_id=context_id,
                status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
                history=[context.message] if context.message else [],
            )
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.start_work()

        text = context.get_user_input()
        try:
            response = await self._client.post(
                self._url,
                json={"model": MODEL_NAME, "messages": [{"role": "user", "content": text}]},
            )
            response.raise_for_status()
            answer = response.json()["choices"][0]["message"]["content"]
        except httpx.HTTPStatusError as exc:
            body = exc.response.text[:200].strip()
            reason = f"model returned HTTP {exc.response.status_code}" + (
                f": {body}" if body else ""
            )
        except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError) as exc:
            reason = f"model call failed: {type(exc).__name__}: {exc}"
        else:
            reason = ""
        if reason:
            log.warning("task %s: %s", task.id, reason)
            await updater.failed(updater.new_agent_message([Part(text=reason)]))
            return

        await updater.add_artifact([Part(text=str(answer))], name="answer")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id = context.task_id or (context.current_task.id if context.current_task else "")
        context_id = context.context_id or (
            context.current_task.context_id if context.current_task else ""
        )
        await TaskUpdater(event_queue, task_id, context_id).cancel()


def agent_card(base_url: str, grpc_port: int | None = None) -> AgentCard:
    grpc = [
        AgentInterface(
            url=f"127.0.0.1:{grpc_port}", protocol_binding="GRPC", protocol_version="1.0"
        )
    ]
    return AgentCard(
        name="toolnexus-bench (a2a-sdk reference)",
        description="Answers each message with one chat completion; reference for benchmarks.",
        version=SDK_VERSION,
        supported_interfaces=[
            AgentInterface(url=base_url, protocol_binding="JSONRPC", protocol_version="1.0"),
            AgentInterface(url=base_url, protocol_binding="JSONRPC", protocol_version="0.3"),
            *(grpc if grpc_port else []),
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[
            AgentSkill(
                id="chat",
                name="chat",
                description="Forward the user's text to the model, return its answer.",
                tags=["chat"],
            )
        ],
    )


def make_task_store(spec: str) -> tuple[TaskStore, Any]:
    """Return (task_store, engine_or_None) for ``memory`` or ``sqlite:<path>``."""
    if spec == "memory":
        return InMemoryTaskStore(), None
    if spec.startswith("sqlite:"):
        path = spec[len("sqlite:") :]
        if not path:
            raise SystemExit("sdk_agent.py: --store sqlite:<path> needs a path")
        try:
            from a2a.server.tasks.database_task_store import DatabaseTaskStore
            from sqlalchemy import event
            from sqlalchemy.ext.asyncio import create_async_engine
        except ImportError as exc:
            raise SystemExit(
                f"sdk_agent.py: missing import for SQLite store: {exc}\n{_MISSING_HINT}"
            ) from None

        engine = create_async_engine(f"sqlite+aiosqlite:///{path}", connect_args={"timeout": 20})

        # Same SQLite tuning as testproject/settings.py, for a fair comparison.
        @event.listens_for(engine.sync_engine, "connect")
        def _pragmas(dbapi_connection: Any, _record: Any) -> None:
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.close()

        return DatabaseTaskStore(engine, create_table=True), engine
    raise SystemExit(f"sdk_agent.py: unknown --store {spec!r} (use memory or sqlite:<path>)")


@contextlib.asynccontextmanager
async def grpc_serving(handler: DefaultRequestHandler, port: int | None) -> AsyncIterator[None]:
    """The SDK's own gRPC server over ``handler`` on 127.0.0.1:``port`` (None: none)."""
    if port is None:
        yield
        return
    try:
        import grpc.aio
        from a2a.server.request_handlers.grpc_handler import GrpcHandler
        from a2a.types import a2a_pb2_grpc
    except ImportError as exc:
        raise SystemExit(f"sdk_agent.py: --grpc-port needs a2a-sdk[grpc]: {exc}") from None
    server = grpc.aio.server()
    a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(handler), server)
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    try:
        yield
    finally:
        await server.stop(5)


def build_app(port: int, model_url: str, store: str, grpc_port: int | None = None) -> Starlette:
    task_store, engine = make_task_store(store)
    client = httpx.AsyncClient(
        limits=httpx.Limits(
            max_connections=2000, max_keepalive_connections=2000, keepalive_expiry=60
        ),
        timeout=httpx.Timeout(120.0),
    )
    card = agent_card(f"http://127.0.0.1:{port}/", grpc_port)
    handler = DefaultRequestHandler(
        agent_executor=ChatAgentExecutor(client, model_url),
        task_store=task_store,
        agent_card=card,
    )

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        initialize = getattr(task_store, "initialize", None)
        if initialize is not None:  # DatabaseTaskStore: create its table now
            await initialize()
        try:
            async with grpc_serving(handler, grpc_port):
                yield
        finally:
            with contextlib.suppress(Exception):
                await handler.aclose()
            await client.aclose()
            if engine is not None:
                await engine.dispose()

    routes = [
        *create_agent_card_routes(card),
        *create_jsonrpc_routes(handler, rpc_url="/", enable_v0_3_compat=True),
    ]
    return Starlette(routes=routes, lifespan=lifespan)


def _importable(name: str) -> bool:
    try:
        __import__(name)
    except ImportError:
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8123)
    parser.add_argument(
        "--model-url", required=True, help="OpenAI-shaped base, e.g. http://127.0.0.1:9000/v1"
    )
    parser.add_argument("--store", default="memory", help="memory | sqlite:<path>")
    parser.add_argument("--grpc-port", type=int, help="also serve the SDK's gRPC binding here")
    args = parser.parse_args(argv)

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    app = build_app(args.port, args.model_url, args.store, args.grpc_port)
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=args.port,
        loop="uvloop" if _importable("uvloop") else "auto",
        http="httptools" if _importable("httptools") else "auto",
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=5,
    )
    server = uvicorn.Server(config)

    server.run()  # SIGTERM: graceful shutdown, then _exit_ok -> exit 0
    return 0 if server.started else 1


if __name__ == "__main__":
    sys.exit(main())
