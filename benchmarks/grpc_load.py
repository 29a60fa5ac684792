"""A gRPC load client for the A2A v1.0 service: N concurrent callers for a fixed time.

wrk does not speak gRPC, so benchmarks/versus_sdk.py runs this, in a process of
its own (its CPU is not the server's), with the SDK venv's python — it uses the
official a2a-sdk's generated stubs (``a2a.types.a2a_pb2``) and ``grpc.aio``::

    PY=$(bash benchmarks/sdk_venv.sh)
    $PY benchmarks/grpc_load.py --target 127.0.0.1:50051 --call get --callers 16 --seconds 10
    $PY benchmarks/grpc_load.py --target 127.0.0.1:50051 --call send --callers 16 --seconds 10

``get``: GetTask of one completed Task (sent first, over gRPC, by this client);
``send``: a blocking SendMessage each (v1.0: ``return_immediately`` false) that
must come back ``TASK_STATE_COMPLETED`` — with an instant model, end-to-end
Tasks/s. All callers share one channel (one HTTP/2 connection, as a client
process would). A warm-up of ``--warmup`` seconds comes first; then the client
prints ``measuring`` and, after ``--seconds``, one JSON line: calls that
succeeded, per second, p50/p99 in ms, and the failures by gRPC status.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
import grpc.aio
from a2a.types import a2a_pb2, a2a_pb2_grpc

METADATA = (("a2a-version", "1.0"),)
COMPLETED = a2a_pb2.TaskState.TASK_STATE_COMPLETED

Call = Callable[[], Awaitable[bool]]


def message(text: str) -> a2a_pb2.Message:
    return a2a_pb2.Message(
        message_id=str(uuid.uuid4()), role=a2a_pb2.Role.ROLE_USER, parts=[a2a_pb2.Part(text=text)]
    )


async def send(stub: Any, text: str = "x") -> Any:
    request = a2a_pb2.SendMessageRequest(message=message(text))
    return await stub.SendMessage(request, metadata=METADATA, timeout=120)


async def completed_task(stub: Any) -> str:
    reply = await send(stub, "seed")
    task_id = str(reply.task.id)
    for _ in range(600):  # a blocking send returns it completed; a slow one is polled
        got = await stub.GetTask(a2a_pb2.GetTaskRequest(id=task_id), metadata=METADATA)
        if got.status.state == COMPLETED:
            return task_id
        await asyncio.sleep(0.05)
    raise SystemExit(f"the seeded Task {task_id} did not complete")


async def make_call(stub: Any, kind: str) -> Call:
    if kind == "get":
        request = a2a_pb2.GetTaskRequest(id=await completed_task(stub))

        async def get() -> bool:
            task = await stub.GetTask(request, metadata=METADATA, timeout=30)
            return bool(task.status.state == COMPLETED)

        return get

    async def send_one() -> bool:
        reply = await send(stub)
        return bool(reply.task.status.state == COMPLETED)

    return send_one


async def phase(call: Call, callers: int, seconds: float) -> dict[str, Any]:
    latencies: list[float] = []
    failures: Counter[str] = Counter()
    stop_at = time.monotonic() + seconds

    async def caller() -> None:
        while time.monotonic() < stop_at:
            t0 = time.monotonic()
            try:
                ok = await call()
            except grpc.aio.AioRpcError as exc:
                failures[exc.code().name] += 1
                continue
            if ok:
                latencies.append(time.monotonic() - t0)
            else:
                failures["NOT_COMPLETED"] += 1

    await asyncio.gather(*(caller() for _ in range(callers)))
    latencies.sort()

    def ms(q: float) -> float:
        return (
            1000 * latencies[min(len(latencies) - 1, int(q * len(latencies)))] if latencies else 0
        )

    return {
        "calls": len(latencies),
        "per_s": len(latencies) / seconds,
        "p50_ms": ms(0.5),
        "p99_ms": ms(0.99),
        "failures": dict(failures),
    }


async def main(args: argparse.Namespace) -> None:
    async with grpc.aio.insecure_channel(args.target) as channel:
        await asyncio.wait_for(channel.channel_ready(), args.wait)
        stub = a2a_pb2_grpc.A2AServiceStub(channel)
        call = await make_call(stub, args.call)
        if args.warmup > 0:
            await phase(call, args.callers, args.warmup)
        print("measuring", flush=True)
        result = await phase(call, args.callers, args.seconds)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", required=True, help="host:port of the gRPC server")
    parser.add_argument("--call", choices=["get", "send"], required=True)
    parser.add_argument("--callers", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--warmup", type=float, default=2)
    parser.add_argument("--wait", type=float, default=30, help="seconds to wait for the server")
    asyncio.run(main(parser.parse_args()))
