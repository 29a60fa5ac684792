"""What ``TRACING`` costs one GetTask, paired: on and off round by round in one process.

Not a test. The served ASGI application (``toolnexus_serve``'s, without
static files) answers GetTask of a completed Task, called in-process with no
sockets, so nothing but the request path is measured: its CPU (this process,
all threads: the database threads included) per call. Each round measures
``--calls`` calls with ``TRACING`` off, then as many with it on (the setting
is switched with ``override_settings``, as a deploy would switch it), and the
table shows the medians over rounds and the median of the per-round
differences — the paired number a noisy box cannot fake.

What "on" records depends on ``--provider``:

* ``none`` — no SDK: the OpenTelemetry API's no-op spans (what the app's own
  instrumentation costs);
* ``all`` — the SDK's ``TracerProvider`` with a ``BatchSpanProcessor`` whose
  exporter drops every batch (benchmarks/traced_settings.py's set-up);
* ``ratio`` — the same with ``ParentBased(TraceIdRatioBased(--ratio))``.

    .venv/bin/python benchmarks/tracing_cost.py --provider none all ratio
    .venv/bin/python benchmarks/tracing_cost.py --provider all --rounds 20 --calls 3000

Each provider runs in a process of its own (a tracer provider is set once per
process). Results: benchmarks/RESULTS.md, "Observability (issue 34)".
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))  # the testproject

from versus_sdk import message, prepare_sqlite, rpc  # noqa: E402


def install_provider(provider: str, ratio: float) -> None:
    """The global tracer provider ``provider`` names (``none``: leave the API's proxy)."""
    if provider == "none":
        return
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
    from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

    class Dropped(SpanExporter):  # traced_settings.py's; importing it would set its provider
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    sampler = ParentBased(TraceIdRatioBased(ratio if provider == "ratio" else 1.0))
    made = TracerProvider(sampler=sampler)
    made.add_span_processor(BatchSpanProcessor(Dropped()))
    trace.set_tracer_provider(made)


class InProcess:
    """POSTs to the ASGI application ``app``, in this process."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def post(self, body: bytes) -> bytes:
        sent: list[dict[str, Any]] = []
        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
            "method": "POST", "scheme": "http", "path": "/agent/", "raw_path": b"/agent/",
            "query_string": b"", "root_path": "", "client": ("127.0.0.1", 1),
            "server": ("127.0.0.1", 80),
            "headers": [(b"host", b"127.0.0.1"), (b"content-type", b"application/json"),
                        (b"a2a-version", b"1.0"), (b"content-length", str(len(body)).encode())],
        }  # fmt: skip
        pending = [{"type": "http.request", "body": body, "more_body": False}]

        async def receive() -> dict[str, Any]:
            if pending:
                return pending.pop()
            await asyncio.Event().wait()  # the client never leaves
            raise AssertionError("unreachable")

        async def send(event: dict[str, Any]) -> None:
            sent.append(event)

        await self.app(scope, receive, send)
        return b"".join(e.get("body", b"") for e in sent if e["type"] == "http.response.body")


async def measure(args: argparse.Namespace) -> dict[bool, list[float]]:
    from django.conf import settings
    from django.test import override_settings

    from toolnexus_django.management.commands.toolnexus_serve import asgi_application

    client = InProcess(asgi_application(serve_static=False))
    sent = rpc("SendMessage", {"message": message("seed"), "configuration": {"blocking": True}})
    task_id = json.loads(await client.post(json.dumps(sent).encode()))["result"]["task"]["id"]
    body = json.dumps(rpc("GetTask", {"id": task_id})).encode()
    per_call: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(args.rounds):
        for on in (False, True):
            with override_settings(TOOLNEXUS={**settings.TOOLNEXUS, "TRACING": on}):
                for _ in range(args.calls // 10):  # warm: the switch empties caches
                    await client.post(body)
                started = time.process_time()
                for _ in range(args.calls):
                    reply = await client.post(body)
                per_call[on].append((time.process_time() - started) / args.calls * 1e6)
                assert b'"TASK_STATE_COMPLETED"' in reply, reply[:300]
    return per_call


def one(args: argparse.Namespace) -> None:
    """Measure one provider (this process's), print a row."""
    model = subprocess.Popen(
        [sys.executable, str(HERE / "loadclient.py")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )  # fmt: skip  (its keep-alive reader's cancellation at exit is no news)
    try:
        assert model.stdout is not None
        database = prepare_sqlite(Path(tempfile.mkdtemp(prefix="tnx-tracing-")) / "db.sqlite3")
        os.environ.update(
            DATABASE_URL=database, DJANGO_SETTINGS_MODULE="testproject.settings",
            LLM_BASE_URL=model.stdout.readline().strip(), LLM_RETRIES="0",
            TOOLNEXUS_STORE="django", TOOLNEXUS_LOG_LEVEL="WARNING",
        )  # fmt: skip
        install_provider(args.provider[0], args.ratio)
        import django

        django.setup()
        per_call = asyncio.run(measure(args))
    finally:
        assert model.stdin is not None
        model.stdin.close()
        model.wait(10)
    off, on = statistics.median(per_call[False]), statistics.median(per_call[True])
    paired = statistics.median(b - a for a, b in zip(per_call[False], per_call[True], strict=True))
    provider = args.provider[0]
    label = f"{provider} ({args.ratio:g})" if provider == "ratio" else provider
    print(f"| {label} | {off:.0f} µs | {on:.0f} µs | +{paired:.0f} µs ({paired / off:+.0%}) |")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--provider", nargs="+", choices=["none", "all", "ratio"],
                        default=["none", "all", "ratio"])  # fmt: skip
    parser.add_argument("--ratio", type=float, default=0.1, help="ratio's share of traces")
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--calls", type=int, default=2000, help="GetTasks per round and side")
    args = parser.parse_args()
    if len(args.provider) == 1:
        one(args)
        return 0
    print(f"load average {os.getloadavg()}; {args.rounds} rounds x {args.calls} GetTasks a side")
    print("| on records | CPU per GetTask, off | on | paired difference (median) |")
    print("|---|---:|---:|---:|")
    for provider in args.provider:
        argv = [a for a in sys.argv[1:] if a not in ("none", "all", "ratio", "--provider")]
        subprocess.run([sys.executable, __file__, *argv, "--provider", provider], check=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
