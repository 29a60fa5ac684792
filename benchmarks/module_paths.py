"""Which of the app's modules does one request cross? (issue 20's targets)

Serves the testproject with ``manage.py toolnexus_serve --workers 1`` (the
shipped socket path: gunicorn's master, one uvicorn worker) on a throwaway SQLite
database, the model a fake over HTTP answering at once (tests/fakes), and records
with a profile function in every thread of the worker (the event loop, database
threads, the runtime loop, pools) each call into ``toolnexus_django`` while a
request is under way -- each path run twice, the second recorded (the first
imports lazily):

* send: a blocking v1.0 SendMessage (``returnImmediately: false``) from the socket
  to its reply, the run included (until the Task is stored completed, its lease
  released, and the worker quiet);
* get: a v1.0 GetTask of a completed Task;
* approve: a reviewer's approval in the admin (session login, a real POST with
  CSRF; its redirect not followed) until the resumed run has completed the Task.

Per path: the modules called, the hand-overs (calls whose nearest app caller up
the stack, started in the window, is another module), the distinct module pairs
of those, the calls (a coroutine or generator counts when it starts, not when it
resumes; comprehensions not at all), the calls handed in (no app caller: the
server, a pool, a loop), and the background calls left out (what the worker also
calls with no request: the lease keeper's beat).

    .venv/bin/python benchmarks/module_paths.py [--list] [--edges]
    git archive main | tar -x -C /tmp/main
    .venv/bin/python benchmarks/module_paths.py --root /tmp/main   # another tree

Results: benchmarks/RESULTS.md ("Modules per request (issue 20 targets)").
"""

from __future__ import annotations

import argparse
import dis
import inspect
import json
import os
import re
import runpy
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

TREE = Path(__file__).resolve().parent.parent  # this checkout: the fake model's tests/
PKG = "toolnexus_django"
V1 = {"A2A-Version": "1.0"}
#: The worker is quiet when no app call came for this long (seconds).
QUIET = 0.3
SETTLE_MAX = 5.0
#: How long the worker is watched with no request, to tell its beats (the
#: lease keeper ticks every second) from a request's work.
IDLE = 1.5

# -- inside the served worker: the recorder ------------------------------------------------

_GENERATOR = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR
_INLINE = frozenset({"<genexpr>", "<listcomp>", "<dictcomp>", "<setcomp>"})
_start_offset: dict[CodeType, int] = {}
_lock = threading.Lock()
_mode = 0  # 0: off; 1: learning the worker's background beats; 2: recording
#: What the worker calls with no request under way (a keeper's beat): code handed in then.
_background: set[CodeType] = set()
#: The app frames started in this window: id -> (code, whether background work).
_entered: dict[int, tuple[CodeType, bool]] = {}
_calls: dict[str, int] = {}  # module -> calls, in first-call order
_edges: dict[tuple[str, str], int] = {}  # (caller module, callee module) -> calls
_counts = {"entries": 0, "background": 0}
_threads: set[str] = set()
_last = 0.0


def _ours(module: str) -> bool:
    return module == PKG or module.startswith(PKG + ".")


def _starts(frame: FrameType) -> bool:
    """A call, not a coroutine or generator resuming: a fresh frame stands on
    its code's first RESUME instruction."""
    code = frame.f_code
    if not code.co_flags & _GENERATOR:
        return True
    start = _start_offset.get(code)
    if start is None:
        resumes = [i.offset for i in dis.get_instructions(code) if i.opname == "RESUME"]
        start = _start_offset[code] = resumes[0] if resumes else 0
    return frame.f_lasti <= start


def _caller(frame: FrameType) -> tuple[str | None, bool]:
    """The nearest app frame up the stack started in this window: its module,
    and whether it was background work."""
    back = frame.f_back
    while back is not None:
        seen = _entered.get(id(back))
        if seen is not None and seen[0] is back.f_code:
            return str(back.f_globals["__name__"]), seen[1]
        back = back.f_back
    return None, False


def _record(frame: FrameType, module: str) -> None:
    global _last
    caller, background = _caller(frame)
    if caller is None:  # handed in: by the server, a library, or a loop running before
        if _mode == 1:
            _background.add(frame.f_code)
        background = frame.f_code in _background
    _entered[id(frame)] = (frame.f_code, background)
    if background:
        _counts["background"] += 1
        return
    _calls[module] = _calls.get(module, 0) + 1
    if caller is None:
        _counts["entries"] += 1
    elif caller != module:
        _edges[caller, module] = _edges.get((caller, module), 0) + 1
    _threads.add(threading.current_thread().name)
    _last = time.monotonic()


def _profile(frame: FrameType, event: str, arg: Any) -> None:
    if not _mode or event != "call":
        return
    module = frame.f_globals.get("__name__", "")
    if _ours(module) and frame.f_code.co_name not in _INLINE and _starts(frame):
        with _lock:
            _record(frame, module)


def _command(words: list[str]) -> dict[str, Any]:
    global _mode, _last
    if words[0] in ("start", "idle"):
        with _lock:
            for kept in (_entered, _calls, _edges, _threads):
                kept.clear()
            _counts.update(entries=0, background=0)
            _mode, _last = (2 if words[0] == "start" else 1), time.monotonic()
        if words[0] == "idle":  # idle SECONDS: learn what runs with no request
            time.sleep(float(words[1]))
            _mode = 0
        return {"ok": True}
    if words[0] == "stop":  # once no app call came for QUIET s (SETTLE_MAX at most)
        deadline = time.monotonic() + SETTLE_MAX
        while time.monotonic() - _last < QUIET and time.monotonic() < deadline:
            time.sleep(0.02)
        with _lock:
            _mode = 0
            return {
                "settled": time.monotonic() - _last >= QUIET,
                "calls": list(_calls.items()),
                "edges": [[a, b, n] for (a, b), n in _edges.items()],
                **_counts,
                "threads": sorted(_threads),
            }
    package = sys.modules.get(PKG)
    return {"pid": os.getpid(), "package": getattr(package, "__file__", None)}


def _control(path: str) -> None:
    """The measurer's line into this worker: one command per connection."""
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(path)
    listener.listen()

    def loop() -> None:
        sys.setprofile(None)  # this thread is the measurer's, not the server's
        while True:
            conn, _ = listener.accept()
            with conn:
                words = conn.makefile().readline().split()
                conn.sendall(json.dumps(_command(words)).encode() + b"\n")

    threading.Thread(target=loop, name="module-paths-control", daemon=True).start()


def serve_profiled(control: str, argv: list[str]) -> None:
    """Run ``argv`` (manage.py ...) profiled; its forked worker answers on ``control``."""
    sys.path[0] = os.getcwd()  # as `python manage.py` has it, not this script's folder
    threading.setprofile(_profile)
    sys.setprofile(_profile)

    def in_worker() -> None:
        sys.setprofile(_profile)
        _control(control)

    os.register_at_fork(after_in_child=in_worker)
    sys.argv = argv
    runpy.run_path(argv[0], run_name="__main__")


# -- the measurer ----------------------------------------------------------------------------


def wait_for(probe: Any, what: str, timeout: float = 30) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := probe()):
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.02)
    return value


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


@dataclass
class Served:
    proc: subprocess.Popen[bytes]
    base: str
    control_path: str
    db: Path
    log: Path

    def control(self, *words: object) -> dict[str, Any]:
        with socket.socket(socket.AF_UNIX) as conn:
            conn.connect(self.control_path)
            conn.sendall(" ".join(map(str, words)).encode() + b"\n")
            return dict(json.loads(conn.makefile().readline()))

    def rpc(self, method: str, params: dict[str, Any]) -> Any:
        body = {"jsonrpc": "2.0", "id": uuid.uuid4().hex[:8], "method": method, "params": params}
        request = urllib.request.Request(
            f"{self.base}/agent/", json.dumps(body).encode(),
            {"Content-Type": "application/json", **V1},
        )  # fmt: skip
        with urllib.request.urlopen(request, timeout=30) as reply:
            answer = json.loads(reply.read())
        if "result" not in answer:
            raise RuntimeError(f"{method}: {answer}")
        return answer["result"]

    def send(self, text: str) -> dict[str, Any]:
        message = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}]}
        params = {"message": message, "configuration": {"returnImmediately": False}}
        return dict(self.rpc("SendMessage", params)["task"])

    def row(self, task_id: str) -> tuple[str, str] | None:
        """The Task's state and lease holder, read from the database file
        (not through the server: nothing here may cross its modules)."""
        with sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=5) as conn:
            got = conn.execute(
                "SELECT state, lease_owner FROM toolnexus_django_taskrecord WHERE id = ?",
                [task_id],
            ).fetchone()
        return (str(got[0]), str(got[1])) if got else None

    def finished(self, task_id: str) -> None:
        wait_for(lambda: self.row(task_id) == ("completed", ""), f"Task {task_id} to finish")


def review_form(session: Any, task_id: str) -> tuple[str, dict[str, str]]:
    """The review page's path and the form that approves its Request."""
    path = f"/admin/{PKG}/awaitinghumantask/{task_id}/review/"
    page = session.get(path)
    found = re.search(r'name="request_id" value="([^"]+)"', page.text)
    assert page.status == 200 and found, f"no Request to approve on {path} ({page.status})"
    return path, {"request_id": found.group(1), "_answer": "approve"}


def post_unfollowed(session: Any, path: str, form: dict[str, str]) -> int:
    """POST ``form`` with the session's cookies and CSRF token; a redirect is
    answered, not followed (the page it names is another request)."""
    cookies = urllib.request.HTTPCookieProcessor(session.jar)
    opener = urllib.request.build_opener(cookies, NoRedirect())
    data = urllib.parse.urlencode({"csrfmiddlewaretoken": session.csrf(), **form}).encode()
    try:
        with opener.open(urllib.request.Request(session.base + path, data), timeout=30) as r:
            return int(r.status)
    except urllib.error.HTTPError as err:
        return err.code


def start_server(root: Path, workdir: Path, model_url: str | None) -> Served:
    """Migrate a fresh SQLite database in ``workdir``, add a reviewer, then
    serve ``root``'s testproject with this module's recorder in its worker."""
    db, log, control = workdir / "paths.sqlite3", workdir / "serve.log", workdir / "control.sock"
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("LLM_", "TOOLNEXUS_", "DJANGO_", "DEMO_", "DATABASE_", "PYTHONPATH"))
    }
    env.update(
        DATABASE_URL=f"sqlite:///{db}", DJANGO_SETTINGS_MODULE="testproject.settings",
        # The suite's agent: the example tools, an endpoint open to anonymous peers.
        DEMO_AGENT="example", TOOLNEXUS_STORE="django", TOOLNEXUS_LOG_LEVEL="WARNING",
        # The housekeeping sweep is no part of a request: keep it out of the window.
        TOOLNEXUS_SWEEP_INTERVAL="3600",
        PYTHONPATH=str(root), PYTHONUNBUFFERED="1", DJANGO_SUPERUSER_PASSWORD="reviewer-pw",
    )  # fmt: skip
    if model_url:
        env.update(LLM_BASE_URL=model_url, LLM_STYLE="openai", LLM_RETRIES="0")
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "-v0"], cwd=root, env=env, check=True)
    subprocess.run([*manage, "createsuperuser", "--noinput", "--username", "reviewer",
                    "--email", "reviewer@example.invalid"], cwd=root, env=env, check=True,
                   stdout=subprocess.DEVNULL)  # fmt: skip
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    argv = [sys.executable, str(Path(__file__).resolve()), "--serve", str(control), "--",
            "manage.py", "toolnexus_serve", f"127.0.0.1:{port}", "--workers", "1"]  # fmt: skip
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)  # fmt: skip
    served = Served(proc, f"http://127.0.0.1:{port}", str(control), db, log)

    def ready() -> bool:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited: {log.read_text(errors='replace')[-2000:]}")
        try:
            card = f"{served.base}/agent/.well-known/agent-card.json"
            with urllib.request.urlopen(card, timeout=2) as reply:
                return reply.status == 200 and control.exists()
        except OSError:
            return False

    wait_for(ready, "the server to answer", timeout=60)
    return served


def stop_server(served: Served) -> None:
    if served.proc.poll() is None:
        os.killpg(served.proc.pid, signal.SIGTERM)
        try:
            served.proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(served.proc.pid, signal.SIGKILL)
            served.proc.wait(10)


def twice(served: Served, prepare: Any, request: Any) -> dict[str, Any]:
    """Run ``request(prepare())`` twice; record the second run from the moment
    the worker is quiet and its background beats are known, until ``request``
    returns (its path is over) and the worker is quiet again."""
    request(prepare())
    ready = prepare()
    served.control("start")
    served.control("stop")
    served.control("idle", IDLE)
    served.control("start")
    request(ready)
    return served.control("stop")


def measure(served: Served) -> dict[str, dict[str, Any]]:
    from tests.admin_http import AdminSession

    sent: list[str] = []
    reviewer = AdminSession(served.base).login("reviewer", "reviewer-pw")

    def blocking_send(_: None) -> None:
        task = served.send("Summarise: the module paths benchmark reads this sentence.")
        assert task["status"]["state"] == "TASK_STATE_COMPLETED", task
        served.finished(task["id"])
        sent.append(task["id"])

    def get_task(_: None) -> None:
        task = served.rpc("GetTask", {"id": sent[0]})
        assert task["status"]["state"] == "TASK_STATE_COMPLETED", task

    def waiting() -> tuple[str, str, dict[str, str]]:
        task = served.send("Please file an expense of 12.50 for a taxi.")
        assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED", task
        return (task["id"], *review_form(reviewer, task["id"]))

    def approve(ready: tuple[str, str, dict[str, str]]) -> None:
        task_id, path, form = ready
        status = post_unfollowed(reviewer, path, form)
        assert status == 302, f"the approval answered {status}"
        served.finished(task_id)

    return {
        "send": twice(served, lambda: None, blocking_send),
        "get": twice(served, lambda: None, get_task),
        "approve": twice(served, waiting, approve),
    }


def fake_model() -> Any:
    """The fake model over HTTP (tests/fakes): a tool call of the example
    ``file_expense`` for an expense, then the tool's result said back; any
    other message answered at once."""
    from tests.fakes import FakeLLM, Text, ToolCall

    def answer(body: dict[str, Any]) -> Any:
        messages = body.get("messages") or []
        if messages and messages[-1].get("role") == "tool":
            return Text(f"Done: {messages[-1].get('content')}")
        if "file an expense" in json.dumps(messages):
            return ToolCall("file_expense", {"amount": 12.5, "description": "a taxi"})
        return Text("A sentence about module paths.")

    fake = FakeLLM()
    fake.respond = answer
    return fake


PATHS = {
    "send": "blocking v1.0 SendMessage, socket to reply, run included",
    "get": "GetTask (v1.0) of a completed Task",
    "approve": "admin approval to the resumed run completing the Task",
}


def _short(module: str) -> str:
    return module.removeprefix(PKG + ".")


def report(results: dict[str, dict[str, Any]], args: argparse.Namespace) -> None:
    print("| path | modules | hand-overs | module pairs | calls | handed in | background |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, got in results.items():
        calls = sum(n for _, n in got["calls"])
        handovers = sum(n for *_, n in got["edges"])
        unsettled = "" if got["settled"] else " (never quiet)"
        counts = [len(got["calls"]), handovers, len(got["edges"]), calls, got["entries"]]
        print(
            f"| {PATHS[name]}{unsettled} | {' | '.join(map(str, counts))} | {got['background']} |"
        )
    for name, got in results.items():
        if args.list:
            print(f"\n{name}: {len(got['calls'])} modules in first-call order (calls); "
                  f"threads: {', '.join(got['threads'])}")  # fmt: skip
            for i, (module, n) in enumerate(got["calls"], 1):
                print(f"  {i:2} {_short(module):<32} {n:5}")
        if args.edges:
            print(f"\n{name}: hand-overs (caller -> callee: calls)")
            for caller, callee, n in got["edges"]:
                print(f"  {_short(caller)} -> {_short(callee)}: {n}")


def main() -> int:
    if sys.argv[1:2] == ["--serve"]:  # inside the server process (see start_server)
        serve_profiled(sys.argv[2], sys.argv[sys.argv.index("--") + 1 :])
        return 0
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--root", default=str(TREE), help="the source tree to serve")
    parser.add_argument("--list", action="store_true", help="the modules of each path")
    parser.add_argument("--edges", action="store_true", help="the hand-overs of each path")
    parser.add_argument(
        "--model",
        choices=["http", "offline"],
        default="http",
        help="the fake over HTTP, or the testproject's demo model in-process",
    )
    args = parser.parse_args()
    root = Path(args.root).resolve()
    sys.path.insert(0, str(TREE))  # this tree's tests/: the fake model, the admin session
    workdir = Path(tempfile.mkdtemp(prefix="tnx-paths-"))
    fake = fake_model().start() if args.model == "http" else None
    served = start_server(root, workdir, fake.url if fake else None)
    try:
        info = served.control("info")
        print(f"tree {root} (served {info['package']}); model: {args.model}; SQLite; "
              f"Python {sys.version.split()[0]}; logs in {workdir}")  # fmt: skip
        results = measure(served)
    finally:
        stop_server(served)
        if fake is not None:
            fake.stop()
    report(results, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
