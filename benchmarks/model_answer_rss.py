"""How much memory does one huge model answer cost a worker?

Not a test. A fake model (a thread of this script, on 127.0.0.1) answers
every call with one valid OpenAI chat completion whose text is ``--mb`` MB;
``manage.py toolnexus_serve --workers 1`` (the django store on a scratch
SQLite file) runs one Task against it. The worker's resident memory is read
from /proc before the Task, its peak (VmHWM) and what it keeps afterwards
(VmRSS, once the Task has ended and the worker has been idle ``--settle``
seconds), with the Task's end state and status message.

    .venv/bin/python benchmarks/model_answer_rss.py                  # a 50 MB answer
    .venv/bin/python benchmarks/model_answer_rss.py --shape list     # 50 MB of small strings
    .venv/bin/python benchmarks/model_answer_rss.py --unsized        # no Content-Length
    .venv/bin/python benchmarks/model_answer_rss.py --bound 1000000000   # no bound, in effect

``--bound`` sets TOOLNEXUS["MAX_MODEL_RESPONSE_BYTES"] through the
testproject's TOOLNEXUS_MAX_MODEL_RESPONSE_BYTES (unset: the default).
Everything started here is stopped here. Results: benchmarks/RESULTS.md
("A huge model answer").
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from servers import PY, Server, card_ready, free_port, post_json, wait_until  # noqa: E402

TERMINAL = ("completed", "failed", "canceled", "rejected")


def answer_of(megabytes: float, shape: str = "text") -> bytes:
    """A valid chat completion of about ``megabytes`` MB: one long text
    (``text``), or a short text and a long list of short strings in a field
    the client ignores (``list``: many small objects once parsed)."""
    size = int(megabytes * 1_000_000)
    text = "x" * size if shape == "text" else "short"
    envelope: dict[str, Any] = {
        "id": "chatcmpl-huge",
        "object": "chat.completion",
        "model": "demo-model",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }
    if shape == "list":
        envelope["padding"] = ["ab"] * (size // 6)  # '"ab", ': six bytes, a str object each
    return json.dumps(envelope).encode()


def start_model(bodies: list[bytes], sized: bool = True) -> tuple[ThreadingHTTPServer, str]:
    """A model answering ``bodies`` in turn, the last one for ever after
    (without Content-Length unless ``sized``: the body ends with the connection)."""
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with lock:
                body = bodies.pop(0) if len(bodies) > 1 else bodies[0]
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            if sized:
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            try:
                self.wfile.write(body)
            except OSError:
                pass  # the worker stopped reading at its bound

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


def memory_kb(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (peak) of ``pid``, in kB."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0])
    return out


def only_worker(master: int) -> int:
    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    assert len(children) == 1, children
    return int(children[0])


def run_task(endpoint: str, text: str, context: str | None = None) -> dict[str, Any]:
    """Send ``text`` (in conversation ``context``); the Task once it has ended."""
    message: dict[str, Any] = {"role": "user", "parts": [{"kind": "text", "text": text}]}
    if context:
        message["contextId"] = context
    params = {"message": message}
    sent = post_json(
        endpoint, {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params}
    )
    task_id = sent["result"]["id"]

    def ended() -> dict[str, Any] | None:
        got = post_json(
            endpoint,
            {"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": task_id}},
            timeout=30,
        )["result"]
        return got if got["status"]["state"] in TERMINAL else None

    return wait_until(ended, 300, f"the Task {text!r} to end")


def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    database = f"sqlite:///{workdir / 'rss.sqlite3'}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "TOOLNEXUS_"))}
    env.update({"DATABASE_URL": database, "DJANGO_SETTINGS_MODULE": "testproject.settings"})
    subprocess.run([PY, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    # The first Task's answer is small: it loads the runtime (toolkit,
    # client) before the baseline is read; the second's is huge.
    model, model_url = start_model(
        [answer_of(0.000_01), answer_of(args.mb, args.shape)], sized=not args.unsized
    )
    env.update({
        "LLM_BASE_URL": model_url, "LLM_RETRIES": "0", "LLM_TIMEOUT_MS": "120000",
        "TOOLNEXUS_STORE": "django", "TOOLNEXUS_LOG_LEVEL": "WARNING",
    })  # fmt: skip
    if args.bound is not None:
        env["TOOLNEXUS_MAX_MODEL_RESPONSE_BYTES"] = str(args.bound)
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}/agent/"
    argv = [PY, "manage.py", "toolnexus_serve", f"127.0.0.1:{port}", "--workers", "1"]
    try:
        with Server(argv, env, workdir / "server.log") as server:
            assert server.proc is not None
            wait_until(lambda: card_ready(endpoint.removesuffix("/agent/")), 60, "the Agent Card")
            worker = only_worker(server.proc.pid)
            run_task(endpoint, "warm up", args.context)
            before = memory_kb(worker)
            t0 = time.monotonic()
            task = run_task(endpoint, "say a lot", args.context)
            seconds = time.monotonic() - t0
            time.sleep(args.settle)  # a bounded pause: what the worker keeps when idle
            after = memory_kb(worker)
            server.stop()
    finally:
        model.shutdown()
    parts = (task["status"].get("message") or {}).get("parts") or []
    return {
        "answer_mb": args.mb,
        "shape": args.shape,
        "bound": args.bound,
        "context": args.context,
        "content_length_sent": not args.unsized,
        "state": task["status"]["state"],
        "message": "".join(p.get("text", "") for p in parts)[:200],
        "seconds": round(seconds, 2),
        "rss_before_mb": round(before["VmRSS"] / 1024, 1),
        "peak_mb": round(after["VmHWM"] / 1024, 1),
        "rss_after_mb": round(after["VmRSS"] / 1024, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=50.0, help="the answer's size (MB)")
    parser.add_argument("--shape", choices=("text", "list"), default="text", help=answer_of.__doc__)
    parser.add_argument("--unsized", action="store_true", help="send no Content-Length")
    parser.add_argument("--context", default=None, help="a contextId (conversation memory)")
    parser.add_argument("--bound", type=int, default=None, help="MAX_MODEL_RESPONSE_BYTES")
    parser.add_argument("--settle", type=float, default=2.0, help="idle seconds before 'after'")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tnx-rss-") as tmp:
        print(json.dumps(run(args, Path(tmp)), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
