"""The gRPC binding of a real ``toolnexus_serve`` against hostile clients
(issue 29), driven by the official a2a-sdk's generated stub and client:

- calls cancelled by their client while their work waits for a database
  thread (wrong Basic credentials, whose check costs a password hash; and
  streaming sends with valid ones) never crash a worker: nothing of a grpc
  call is read off its loop (SIGSEGV in cygrpc before);
- a request message is bounded by ``DATA_UPLOAD_MAX_MEMORY_SIZE`` as an
  HTTP body is: ``RESOURCE_EXHAUSTED`` naming the setting, nothing stored,
  nothing sent to the model (3 MB was stored and sent before);
- a message that does not decode is ``INVALID_ARGUMENT`` with the A2A
  ``ErrorInfo`` (``UNKNOWN`` before), for every case of
  tests/corpus/grpc_messages.py;
- an ``a2a-version`` of 5,000 digits is ``FAILED_PRECONDITION``
  (``INTERNAL`` and a traceback before)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from a2a.types import a2a_pb2_grpc
from a2a.types.a2a_pb2 import GetTaskRequest, SendMessageRequest
from a2a.utils.errors import InvalidRequestError
from google.rpc import error_details_pb2, status_pb2

from tests.a2a.test_grpc_served import (
    credentials,
    grpc_address,
    grpc_client,
    grpc_server,
    request,
    send,
)
from tests.corpus.grpc_messages import CASES, STREAMING, Case
from tests.corpus.version_headers import REFUSED, SERVED, sendable
from tests.fakes import FakeLLM
from tests.pg_sessions import process_group
from toolnexus_django.models import TaskRecord

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

#: What a worker that died of a signal leaves in the server's output.
CRASHED = ("SIGSEGV", "was sent", "Fatal Python error")
#: How long the campaign's client waited for an answer before cancelling.
PATIENCE = 0.3
LIMIT = 2_621_440  # Django's DATA_UPLOAD_MAX_MEMORY_SIZE, the testproject's


def error_info(err: grpc.aio.AioRpcError) -> error_details_pb2.ErrorInfo | None:
    """The A2A ErrorInfo of a status's ``grpc-status-details-bin`` trailer."""
    for key, value in err.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            status = status_pb2.Status.FromString(value)
            assert status.code == err.code().value[0]  # the SDK checks the same
            info = error_details_pb2.ErrorInfo()
            if status.details and status.details[0].Unpack(info):
                return info
    return None


async def impatiently(calls: list[Any], run: Callable[[Any], Awaitable[Any]]) -> None:
    """Wait up to :data:`PATIENCE` for ``calls`` to end, then cancel the rest
    (the client gives up), and wait until each has ended."""
    pending = [asyncio.ensure_future(run(call)) for call in calls]
    await asyncio.wait(pending, timeout=PATIENCE)
    for call in calls:
        call.cancel()
    await asyncio.gather(*pending, return_exceptions=True)


async def drain(call: Any) -> None:
    async for _ in call:
        pass


async def cancel_rounds(address: str) -> grpc.StatusCode:
    """The campaign's reproductions; then the status of a call that waits."""
    wrong, ann = credentials("nobody", "wrong"), credentials("ann")
    async with grpc.aio.insecure_channel(address) as channel:
        stub = a2a_pb2_grpc.A2AServiceStub(channel)
        for _ in range(4):  # 30 wrong passwords, each check queued on the database threads
            calls = [stub.GetTask(GetTaskRequest(id="any"), metadata=wrong) for _ in range(30)]
            await impatiently(calls, lambda call: call)
        for _ in range(2):  # 12 streaming sends, with valid credentials
            sends = [request(f"stream {i}") for i in range(12)]
            streams = [stub.SendStreamingMessage(s, metadata=ann) for s in sends]
            await impatiently(streams, drain)
        # A call that waits its turn after all of that: the worker still serves.
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.GetTask(GetTaskRequest(id="no-such-task"), metadata=ann, timeout=60)
        return caught.value.code()


def test_calls_cancelled_while_they_wait_never_crash_a_worker(
    fake_llm: FakeLLM, tmp_path: Path, django_user_model: Any
) -> None:
    django_user_model.objects.create_user("ann", password="ann-pw")
    env = {"DEMO_AGENT": "expenses", "PYTHONFAULTHANDLER": "1"}  # HTTP Basic
    with grpc_server(tmp_path, fake_llm, "--workers", "1", **env) as server:
        address = grpc_address(server)
        pids = sorted(process_group(server.proc.pid))
        assert len(pids) == 2  # the master and its worker
        status = asyncio.run(asyncio.wait_for(cancel_rounds(address), timeout=90))
        output = server.output()
        assert not [line for line in output.splitlines() if any(m in line for m in CRASHED)]
        assert sorted(process_group(server.proc.pid)) == pids  # no worker died, none replaced
        assert status == grpc.StatusCode.NOT_FOUND
        assert "Traceback" not in output


def just_under(limit: int) -> SendMessageRequest:
    """A SendMessage of at most ``limit`` bytes, and within a few of it."""
    sized = request("")
    sized.message.parts[0].text = "x" * (limit - sized.ByteSize() - 16)
    sized.message.parts[0].text += "x" * (limit - sized.ByteSize())
    assert limit - 4 <= sized.ByteSize() <= limit
    return sized


async def refused_sizes(base: str, address: str) -> list[grpc.aio.AioRpcError]:
    """Messages over the limit, sent as a send and as a streaming send."""
    errors = []
    async with grpc.aio.insecure_channel(address) as channel:
        stub = a2a_pb2_grpc.A2AServiceStub(channel)
        for size in (3_000_000, 3 * LIMIT):  # over it; over what grpc itself takes in
            big = request("x" * size)
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await stub.SendMessage(big)
            errors.append(caught.value)
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await drain(stub.SendStreamingMessage(big))
            errors.append(caught.value)
    async with grpc_client(base) as client:  # the SDK's client maps it to its own error
        with pytest.raises(InvalidRequestError, match="DATA_UPLOAD_MAX_MEMORY_SIZE"):
            await send(client, request("x" * 3_000_000))
    return errors


async def accepted(address: str) -> str:
    async with grpc.aio.insecure_channel(address) as channel:
        sent = await a2a_pb2_grpc.A2AServiceStub(channel).SendMessage(just_under(LIMIT))
    return str(sent.task.id)


def test_a_message_over_the_http_body_limit_is_refused_before_anything_reads_it(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    with grpc_server(tmp_path, fake_llm) as server:
        address = grpc_address(server)
        # HTTP first: the body limit the gRPC binding now shares.
        body = (
            b'{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": "' + b"x" * 3_000_000
        )
        answer = httpx.post(f"{server.base}/agent/", content=body + b'"}', timeout=20).json()
        assert answer["error"]["code"] == -32600 and answer["error"]["data"]["limit"] == LIMIT
        errors = asyncio.run(refused_sizes(server.base, address))
        assert {e.code() for e in errors} == {grpc.StatusCode.RESOURCE_EXHAUSTED}
        ours = errors[:2]  # 3 MB: refused in words, with the A2A error details
        for err in ours:
            assert "DATA_UPLOAD_MAX_MEMORY_SIZE" in err.details() and str(LIMIT) in err.details()
            info = error_info(err)
            assert info is not None and info.reason == "INVALID_REQUEST"
            assert dict(info.metadata)["limit"] == str(LIMIT)
        # Nothing was stored, nothing reached the model.
        assert TaskRecord.objects.count() == 0 and fake_llm.requests == []
        # Just under the limit, a message is served as ever.
        task_id = asyncio.run(accepted(address))
        assert list(TaskRecord.objects.values_list("id", flat=True)) == [task_id]


async def answer_to(channel: grpc.aio.Channel, case: Case) -> grpc.aio.AioRpcError | None:
    """The error ``case``'s body is answered with (None: it was served),
    sent as it is: no serializer, as a client of any language may."""
    method = f"/lf.a2a.v1.A2AService/{case.method}"
    try:
        if case.method in STREAMING:
            await drain(channel.unary_stream(method)(case.body, timeout=20))
        else:
            await channel.unary_unary(method)(case.body, timeout=20)
    except grpc.aio.AioRpcError as err:
        return err
    return None


def test_every_malformed_message_is_invalid_argument_and_the_server_serves_on(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    async def scenario(address: str) -> list[Any]:
        wrong = []
        async with grpc.aio.insecure_channel(address) as channel:
            for case in CASES:
                err = await answer_to(channel, case)
                code = err.code() if err is not None else grpc.StatusCode.OK
                if case.refused:
                    info = error_info(err) if err is not None else None
                    if code != grpc.StatusCode.INVALID_ARGUMENT or info is None:
                        wrong.append((case.name, code, err and err.details()))
                elif code in (grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL):
                    wrong.append((case.name, code, err and err.details()))
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await a2a_pb2_grpc.A2AServiceStub(channel).GetTask(GetTaskRequest(id="none"))
            assert caught.value.code() == grpc.StatusCode.NOT_FOUND  # it serves on
        return wrong

    with grpc_server(tmp_path, fake_llm) as server:
        assert asyncio.run(scenario(grpc_address(server))) == []
        assert "Traceback" not in server.output()


def test_an_a2a_version_of_5000_digits_is_failed_precondition(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    async def status(stub: Any, version: str) -> tuple[grpc.StatusCode, str]:
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.GetTask(
                GetTaskRequest(id="no-such-task"), metadata=(("a2a-version", version),)
            )
        info = error_info(caught.value)
        return caught.value.code(), info.reason if info is not None else ""

    async def scenario(address: str) -> None:
        async with grpc.aio.insecure_channel(address) as channel:
            stub = a2a_pb2_grpc.A2AServiceStub(channel)
            for name, value in REFUSED:
                if sendable(value, "ascii"):
                    got = await status(stub, value)
                    assert got == (grpc.StatusCode.FAILED_PRECONDITION, "VERSION_NOT_SUPPORTED"), (
                        name
                    )
            for name, value, version in SERVED:
                code, _ = await status(stub, value)
                # The binding speaks 1.0: a Task it does not have; 0.3 is refused.
                ok = (
                    grpc.StatusCode.NOT_FOUND
                    if version == "1.0"
                    else grpc.StatusCode.FAILED_PRECONDITION
                )
                assert code == ok, name

    with grpc_server(tmp_path, fake_llm) as server:
        asyncio.run(scenario(grpc_address(server)))
        assert "Traceback" not in server.output()
