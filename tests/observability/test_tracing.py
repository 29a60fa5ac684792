"""OpenTelemetry traces (TOOLNEXUS["TRACING"]): with the SDK's in-memory
exporter as the global provider, a Task's request, run, model calls and tool
calls are spans of one trace, after the GenAI and A2A conventions; the trace
goes on across an approval, in another process too; off, nothing is recorded."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from toolnexus import Answer

from tests import mcp_tools, tools
from tests.conftest import RpcClient, wait_until
from tests.fakes import Fail, FakeLLM, Text, ToolCall
from tests.mcp_client import MCP_HEADERS
from tests.observability.imports import imported_by_the_app
from tests.observability.tracing_spans import (
    finished,
    hex_span,
    hex_trace,
    installed_exporter,
    named,
    parent_of,
    spans_in_file,
    wait_for_span,
)
from tests.servers import ROOT, database_url, fake_env
from tests.utils import pending_id, suspend
from tests.webhooks import Receiver
from toolnexus_django.review import answer_task
from toolnexus_django.serving.handler import EndpointActions
from toolnexus_django.stores import get_task_store

LOOKUP = ToolCall("lookup", {"code": "ZX-42"})
#: A client's own trace: version 00, its trace id, its span id, sampled.
CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CLIENT_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"


@pytest.fixture
def spans() -> Iterator[Any]:
    """The in-memory exporter (the global provider's, added once), empty at the start."""
    exporter = installed_exporter()
    exporter.clear()
    yield exporter
    exporter.clear()


def user_message(text: str) -> dict[str, Any]:
    return {"messageId": f"m-{time.monotonic_ns()}", "role": "user",
            "parts": [{"kind": "text", "text": text}]}  # fmt: skip


def send_message(rpc: RpcClient, text: str, headers: dict[str, str] | None = None) -> Any:
    reply = rpc.call("SendMessage", {"message": user_message(text)}, headers=headers or {})
    return reply["result"]


def test_one_send_message_is_one_trace_of_request_run_chat_and_tool_spans(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM, spans: Any
) -> None:
    configure(fake_llm, TOOLKIT=tools.toolkit_setting(), TRACING=True)
    fake_llm.push(LOOKUP, Text("ZX-42 is a widget."))
    task = send_message(rpc, "what is ZX-42?")
    assert rpc.wait(task["id"])["status"]["state"] == "completed"
    [run] = wait_for_span(spans, "invoke_agent")

    [request] = [s for s in named(spans, "SendMessage")]
    chats = named(spans, "chat ")
    [tool] = named(spans, "execute_tool ")
    assert len(chats) == 2  # the call that asked for the tool, the one that answered
    assert {hex_trace(s) for s in [request, run, tool, *chats]} == {hex_trace(request)}

    assert request.kind.name == "SERVER"
    assert request.attributes["a2a.task.id"] == task["id"]
    assert request.attributes["a2a.task.state"] == "TASK_STATE_SUBMITTED"
    assert request.attributes["gen_ai.conversation.id"] == task["contextId"]
    assert request.attributes["toolnexus.a2a.dialect"] == "toolnexus"
    assert request.attributes["toolnexus.a2a.binding"] == "jsonrpc"
    assert request.attributes["user.id"] == "anonymous"

    assert run.name == "invoke_agent filing-desk"  # AGENT["name"]
    assert run.attributes["gen_ai.agent.name"] == "filing-desk"
    assert parent_of(run) == hex_span(request)
    assert run.kind.name == "INTERNAL"
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["gen_ai.provider.name"] == "openai"
    assert run.attributes["gen_ai.conversation.id"] == task["contextId"]
    assert run.attributes["a2a.task.id"] == task["id"]
    assert run.attributes["a2a.task.state"] == "TASK_STATE_COMPLETED"
    assert run.attributes["toolnexus.run.attempt"] == 1
    assert run.attributes["gen_ai.usage.input_tokens"] == 20  # the fake's 10 per call
    assert run.attributes["gen_ai.usage.output_tokens"] == 10

    for chat in chats:
        assert chat.name == "chat test-model"
        assert chat.kind.name == "CLIENT"
        assert parent_of(chat) == hex_span(run)
        assert chat.attributes["gen_ai.operation.name"] == "chat"
        assert chat.attributes["gen_ai.request.model"] == "test-model"
        assert chat.attributes["gen_ai.provider.name"] == "openai"
        assert chat.attributes["gen_ai.usage.input_tokens"] == 10
        assert chat.attributes["gen_ai.usage.output_tokens"] == 5
    reasons = sorted(c.attributes["gen_ai.response.finish_reasons"][0] for c in chats)
    assert reasons == ["stop", "tool_calls"]

    assert tool.name == "execute_tool lookup"
    assert tool.kind.name == "INTERNAL"
    assert parent_of(tool) == hex_span(run)
    assert tool.attributes["gen_ai.tool.name"] == "lookup"
    assert tool.attributes["gen_ai.tool.call.id"]
    assert tool.attributes["toolnexus.tool.waiting"] is False
    assert tool.status.status_code.name == "UNSET"
    # What the person and the model said is never recorded.
    for span in finished(spans):
        said = " ".join(str(v) for v in span.attributes.values())
        assert "ZX-42" not in said and "widget" not in said


def test_a_clients_traceparent_is_the_parent_of_the_request_span(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM, spans: Any
) -> None:
    configure(fake_llm, TRACING=True)
    task = send_message(rpc, "hello", headers={"traceparent": TRACEPARENT})
    rpc.wait(task["id"])
    [run] = wait_for_span(spans, "invoke_agent")

    [request] = named(spans, "SendMessage")
    assert hex_trace(request) == CLIENT_TRACE
    assert parent_of(request) == CLIENT_SPAN
    assert hex_trace(run) == CLIENT_TRACE


def test_a_tool_call_that_waits_for_a_person_and_the_resume_continue_the_trace(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM, spans: Any
) -> None:
    configure(fake_llm, TRACING=True)
    waiting = suspend(rpc, fake_llm, then="Filed.")
    [first_run] = wait_for_span(spans, "invoke_agent")
    [halted] = named(spans, "execute_tool file_expense")
    assert halted.attributes["toolnexus.tool.waiting"] is True
    assert first_run.attributes["a2a.task.state"] == "TASK_STATE_INPUT_REQUIRED"

    answer_task(
        waiting["id"], Answer(id=pending_id(waiting["id"]), ok=True), decision="approve",
        actor="rita",
    )  # fmt: skip
    assert rpc.wait(waiting["id"])["status"]["state"] == "completed"
    _, resumed = sorted(wait_for_span(spans, "invoke_agent", 2), key=lambda s: s.start_time)

    [request] = named(spans, "SendMessage")
    [decision] = named(spans, "review approve")
    assert decision.attributes["a2a.task.id"] == waiting["id"]
    assert decision.attributes["user.id"] == "rita"
    assert decision.attributes["a2a.task.state"] == "TASK_STATE_WORKING"
    assert hex_trace(resumed) == hex_trace(request)
    assert parent_of(resumed) == hex_span(request)
    assert resumed.attributes["toolnexus.run.resumed"] is True
    assert resumed.attributes["a2a.task.state"] == "TASK_STATE_COMPLETED"
    [link] = resumed.links
    assert link.context.span_id == decision.context.span_id
    assert link.attributes["toolnexus.link"] == "answer"
    # The answered call runs again in the resume: its own span there, done.
    [_, answered] = sorted(named(spans, "execute_tool file_expense"), key=lambda s: s.start_time)
    assert parent_of(answered) == hex_span(resumed)
    assert answered.attributes["toolnexus.tool.waiting"] is False
    assert answered.attributes["gen_ai.tool.call.id"] == halted.attributes["gen_ai.tool.call.id"]


@pytest.mark.slow
def test_a_task_resumed_in_another_process_continues_the_same_trace(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM, spans: Any, tmp_path: Path
) -> None:
    configure(fake_llm, TRACING=True)
    fake_llm.push(ToolCall("file_expense", {"amount": 12.5, "description": "taxi"}))
    fake_llm.push(Text("Filed in the other process."))
    waiting = suspend(rpc, fake_llm)
    [request] = named(spans, "SendMessage")
    spans_file = tmp_path / "spans.jsonl"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.observability.tracing_settings",
        "TRACE_SPANS_FILE": str(spans_file),
        "DATABASE_URL": database_url(),
        "TOOLNEXUS_STORE": "django",
        **fake_env(fake_llm),
        "LLM_MODEL": "test-model",
        "TOOLNEXUS_LOG_LEVEL": "WARNING",
    }
    answered = subprocess.run(
        [sys.executable, "-m", "tests.answer_race", waiting["id"], pending_id(waiting["id"]),
         str(time.time()), "rita"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert answered.returncode == 0, answered.stderr[-2000:]
    assert answered.stdout.strip() == "won"
    assert rpc.wait(waiting["id"])["status"]["state"] == "completed"

    theirs = spans_in_file(spans_file)
    [resumed] = [s for s in theirs if s["name"].startswith("invoke_agent")]
    [decision] = [s for s in theirs if s["name"] == "review approve"]
    assert resumed["context"]["trace_id"] == f"0x{hex_trace(request)}"
    assert resumed["parent_id"] == f"0x{hex_span(request)}"
    assert [link["context"]["span_id"] for link in resumed["links"]] == [
        decision["context"]["span_id"]
    ]
    assert resumed["attributes"]["a2a.task.state"] == "TASK_STATE_COMPLETED"
    [chat] = [s for s in theirs if s["name"] == "chat test-model"]
    assert chat["parent_id"] == resumed["context"]["span_id"]
    assert chat["context"]["trace_id"] == f"0x{hex_trace(request)}"


@pytest.mark.parametrize("style", ["openai", "anthropic"])
def test_a_streamed_runs_chat_spans_say_their_own_usage_and_time_to_first_chunk(
    rpc: RpcClient,
    configure: Any,
    fake_llm: FakeLLM,
    fake_anthropic: FakeLLM,
    spans: Any,
    style: str,
) -> None:
    fake = fake_llm if style == "openai" else fake_anthropic
    configure(fake, TOOLKIT=tools.toolkit_setting(), TRACING=True)
    fake.push(LOOKUP, Text("ZX-42 is a widget.", usage=(30, 7)))
    message = user_message("what is ZX-42?")
    task = EndpointActions(get_task_store()).start(message, owner=None, text="x", streamed=True)
    assert rpc.wait(task["id"])["status"]["state"] == "completed"
    [run] = wait_for_span(spans, "invoke_agent")

    first, second = sorted(named(spans, "chat "), key=lambda s: s.start_time)
    assert run.attributes["gen_ai.provider.name"] == style
    # Each call's own tokens, though a streamed call reports the run's sums so far.
    assert (first.attributes["gen_ai.usage.input_tokens"], first.attributes[
        "gen_ai.usage.output_tokens"]) == (10, 5)  # fmt: skip
    assert (second.attributes["gen_ai.usage.input_tokens"], second.attributes[
        "gen_ai.usage.output_tokens"]) == (30, 7)  # fmt: skip
    assert run.attributes["gen_ai.usage.input_tokens"] == 40
    assert second.attributes["gen_ai.request.stream"] is True
    assert second.attributes["gen_ai.provider.name"] == style
    waited = second.attributes["gen_ai.response.time_to_first_chunk"]
    assert 0 <= waited <= (second.end_time - second.start_time) / 1e9
    assert "gen_ai.response.time_to_first_chunk" not in first.attributes  # no text: a call


def test_a_failing_tool_call_and_a_failing_model_call_mark_their_spans_as_errors(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM, spans: Any
) -> None:
    configure(fake_llm, TOOLKIT=tools.toolkit_setting(), TRACING=True)
    fake_llm.push(ToolCall("no_such_tool", {}), Fail(500, "model down"))
    task = send_message(rpc, "try something")
    assert rpc.wait(task["id"])["status"]["state"] == "failed"
    [run] = wait_for_span(spans, "invoke_agent")

    [tool] = named(spans, "execute_tool no_such_tool")
    assert tool.status.status_code.name == "ERROR"
    assert tool.attributes["error.type"] == "tool_error"
    answered, failed = sorted(named(spans, "chat "), key=lambda s: s.start_time)
    assert answered.status.status_code.name == "UNSET"
    assert failed.status.status_code.name == "ERROR"
    assert run.status.status_code.name == "ERROR"
    assert run.attributes["a2a.task.state"] == "TASK_STATE_FAILED"


def test_a_push_delivery_is_a_span_of_its_tasks_trace(
    agent_url: str, configure: Any, fake_llm: FakeLLM, spans: Any
) -> None:
    configure(fake_llm, TRACING=True, PUSH={"ALLOWED_HOSTS": ["127.0.0.1"], "RETRY_DELAY": 0.1})
    rpc = RpcClient(agent_url, {"A2A-Version": "1.0"})
    message = {"messageId": f"m-{time.monotonic_ns()}", "role": "ROLE_USER", "parts": [
        {"text": "hello"}]}  # fmt: skip
    with Receiver() as hook:
        config = {"url": hook.url, "token": "tok"}
        sent = rpc.call("SendMessage", {"message": message, "configuration": {
            "returnImmediately": True, "taskPushNotificationConfig": config}})  # fmt: skip
        task_id = sent["result"]["task"]["id"]
        rpc.wait(task_id, ("TASK_STATE_COMPLETED",))
        pushes = wait_until(
            lambda: [s for s in named(spans, "push notification")
                     if s.attributes["a2a.task.state"] == "TASK_STATE_COMPLETED"],
            what="the completion's push span",
        )  # fmt: skip

    [request] = named(spans, "SendMessage")
    push = pushes[0]
    assert push.kind.name == "CLIENT"
    assert hex_trace(push) == hex_trace(request)
    assert parent_of(push) == hex_span(request)
    assert push.attributes["a2a.task.id"] == task_id
    assert push.attributes["toolnexus.push.outcome"] == "delivered"


@pytest.mark.django_db
def test_a_grpc_calls_traceparent_metadata_is_the_parent_of_its_span(
    settings: Any, spans: Any
) -> None:
    from toolnexus_django.a2a.jsonrpc import RpcError, RpcRequest
    from toolnexus_django.serving.endpoint import bound
    from toolnexus_django.serving.grpcbinding import grpc_call_context
    from toolnexus_django.serving.grpccall import CallInfo
    from toolnexus_django.serving.handler import handler

    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "STORE": "memory", "TRACING": True}
    # What the binding copies of a call before it hands it to a database thread.
    info = CallInfo((("a2a-version", "1.0"), ("traceparent", TRACEPARENT)), "ipv4:127.0.0.1:1")
    ctx = grpc_call_context(info, bound(), None, "127.0.0.1:50051")
    with pytest.raises(RpcError):
        handler.dispatch(RpcRequest(None, "GetTask", {"id": "no-such-task"}), ctx)

    [served] = named(spans, "GetTask")
    assert (hex_trace(served), parent_of(served)) == (CLIENT_TRACE, CLIENT_SPAN)
    assert served.attributes["toolnexus.a2a.binding"] == "grpc"
    assert served.attributes["toolnexus.a2a.dialect"] == "1.0"
    assert served.attributes["a2a.task.id"] == "no-such-task"
    assert served.attributes["error.type"] == "-32001"  # the A2A error: not found
    assert served.status.status_code.name == "ERROR"


@pytest.mark.django_db(transaction=True)
def test_an_mcp_tool_call_is_a_server_span_named_after_its_method_and_tool(
    settings: Any, client: Any, spans: Any
) -> None:
    toolkit = dict(settings.TOOLNEXUS["TOOLKIT"])
    toolkit["tools"] = [*toolkit["tools"], *mcp_tools.PATHS]
    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "STORE": "memory", "TOOLKIT": toolkit,
                          "MCP": {"tools": "__all__"}, "TRACING": True}  # fmt: skip
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "broken", "arguments": {"reason": "traced"}}}  # fmt: skip
    reply = client.post(
        "/agent/mcp", call, content_type="application/json",
        HTTP_ACCEPT=MCP_HEADERS["accept"], HTTP_TRACEPARENT=TRACEPARENT,
    )  # fmt: skip
    assert reply.json()["result"]["isError"] is True

    [served] = named(spans, "tools/call")
    assert served.name == "tools/call broken"
    assert served.kind.name == "SERVER"
    assert (hex_trace(served), parent_of(served)) == (CLIENT_TRACE, CLIENT_SPAN)
    assert served.attributes["mcp.method.name"] == "tools/call"
    assert served.attributes["gen_ai.tool.name"] == "broken"
    assert served.attributes["toolnexus.a2a.binding"] == "mcp"
    assert served.attributes["http.response.status_code"] == 200
    assert "traced" not in " ".join(str(v) for v in served.attributes.values())


def test_with_tracing_off_nothing_is_recorded_though_the_sdk_is_installed(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM, spans: Any
) -> None:
    configure(fake_llm, TOOLKIT=tools.toolkit_setting(), TRACING=True)
    traced = send_message(rpc, "what is ZX-42?")
    rpc.wait(traced["id"])
    wait_for_span(spans, "invoke_agent")
    spans.clear()

    configure(fake_llm, TOOLKIT=tools.toolkit_setting(), TRACING=False)
    fake_llm.push(LOOKUP, Text("done"))
    task = send_message(rpc, "what is ZX-42?", headers={"traceparent": TRACEPARENT})
    assert rpc.wait(task["id"])["status"]["state"] == "completed"
    wait_until(lambda: len(fake_llm.requests) == 3, what="the model calls")
    assert rpc.get(task["id"])["result"]["status"]["state"] == "completed"
    assert finished(spans) == []


#: With TRACING off: `manage.py check`, a GetTask and a SendMessage run to its
#: end; then which OpenTelemetry modules the app's own code imported
#: (:mod:`tests.observability.imports`).
NO_IMPORT = """
from django.core.management import call_command
call_command("check")
for method, params in (("GetTask", {"id": "nope"}), ("SendMessage", {"message": MESSAGE})):
    reply = call(method, params)
    assert reply.status_code == 200, reply.content
from toolnexus_django.fulfilment.runs import close_runs
close_runs(timeout=30)
print(json.dumps(sorted(ours)))
"""


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_with_tracing_off_the_app_never_imports_opentelemetry() -> None:
    assert imported_by_the_app("opentelemetry", NO_IMPORT) == []
