"""``manage.py toolnexus_serve``: a real server process on the test database."""

from __future__ import annotations

import os
import queue
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from django.conf import settings
from django.core.management import CommandError, call_command
from django.db import connection

from tests.conftest import RpcClient, http, wait_until
from tests.fakes import FakeLLM, Hang, Text
from tests.servers import (
    CARD_PATH,
    MANAGE,
    ROOT,
    fake_env,
    free_port,
    serve,
)
from tests.utils import private_of
from toolnexus_django.serving.server import describe_model, parse_addrport
from toolnexus_django.serving.worker import STOP_SIGNALS, AgentServer, AgentWorker
from toolnexus_django.stores import DjangoTaskStore


def stored_state(task_id: str) -> str | None:
    task = DjangoTaskStore().get(task_id)
    return task["status"]["state"] if task else None


# -- the real process ----------------------------------------------------------


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_serves_the_agent_and_stops_on_sigterm(
    fake_llm: FakeLLM, tmp_path: Path, django_user_model: Any
) -> None:
    fake_llm.default = Text("filed by the fake model")
    django_user_model.objects.create_superuser("root")  # someone can sign in: no hint
    with serve(tmp_path, env=fake_env(fake_llm)) as server:
        card = server.wait_ready()
        assert card["name"] == settings.TOOLNEXUS["AGENT"]["name"]
        assert card["url"].endswith("/agent/")
        assert card["url"] == f"{server.base}/agent/"

        rpc = RpcClient(card["url"])
        submitted = rpc.send("please file my taxi receipt")
        assert submitted["status"]["state"] == "submitted"
        done = rpc.wait(submitted["id"], states=("completed", "failed"))
        assert done["status"]["state"] == "completed", done
        assert done["artifacts"][0]["parts"] == [
            {"kind": "text", "text": "filed by the fake model"}
        ]
        assert fake_llm.requests, "the served process called the model"
        # The server wrote to this session's database.
        assert stored_state(submitted["id"]) == "completed"

        out = server.output()
        assert f"Model: openai model 'demo-model' at {fake_llm.url}" in out
        assert f"Admin: {server.base}/admin/" in out
        assert "createsuperuser" not in out
        master_threads = Path(f"/proc/{server.proc.pid}/task")
        if master_threads.exists():  # Linux: the master runs nothing but gunicorn
            assert len(list(master_threads.iterdir())) == 1

        server.signal(signal.SIGTERM)
        assert server.wait(timeout=20) == 0
        out = server.output()
        assert "toolnexus_serve stopped." in out
        # Every worker stopped on the signal -- none was left for the master to
        # kill at the end of its graceful timeout (one that was booting when
        # the signal came used to be).
        booted = re.findall(r"Booting worker with pid: (\d+)", out)
        assert booted
        assert sorted(re.findall(r"Worker exiting \(pid: (\d+)\)", out)) == sorted(booted)
        assert "SIGKILL" not in out


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_admin_is_styled_out_of_the_box(tmp_path: Path) -> None:
    # No collectstatic, DEBUG off: the admin's CSS still comes (from the
    # apps' static directories), with validators a browser can revalidate by.
    with serve(tmp_path) as server:
        server.wait_ready()
        css = http(f"{server.base}/static/admin/css/base.css")
        assert css.status == 200, css.body[:200]
        assert css.headers["content-type"].startswith("text/css")
        assert b"body" in css.body
        again = http(
            f"{server.base}/static/admin/css/base.css",
            headers={"If-None-Match": css.headers["etag"]},
        )
        assert again.status == 304
        assert http(f"{server.base}/static/admin/css/missing.css").status == 404
        # The login page links it.
        login = http(f"{server.base}/admin/login/")
        assert b"/static/admin/css/base.css" in login.body
        assert "Static files: /static/" in server.output()
    with serve(tmp_path, "--no-static") as server:
        server.wait_ready()
        assert http(f"{server.base}/static/admin/css/base.css").status == 404


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_startup_names_the_card_and_the_model_and_ctrl_c_stops(tmp_path: Path) -> None:
    # No LLM_BASE_URL: the testproject's offline demo model (a dotted-path factory).
    with serve(tmp_path) as server:
        server.wait_ready()
        out = server.output()
        assert f"Agent Card: {server.base}{CARD_PATH}" in out
        # Where a reviewer goes, and (nobody could sign in yet) how to get in.
        assert f"Admin: {server.base}/admin/" in out
        assert "python manage.py createsuperuser" in out
        assert "Model: testproject.demo.offline_client - Deterministic offline demo model" in out
        # No flags: one worker per core, each with the default database threads
        # (16; 4 when the database is SQLite, which takes one writer at a time).
        cores = len(os.sched_getaffinity(0))
        threads = 4 if connection.vendor == "sqlite" else 16
        assert f"{cores} worker{'s' if cores > 1 else ''} x {threads} database threads" in out
        server.signal(signal.SIGINT, group=True)  # what a terminal's Ctrl-C does
        assert server.wait(timeout=20) == 0


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("sig", "group", "logged"),
    [(signal.SIGTERM, False, "term"), (signal.SIGINT, True, "int")],
    ids=["sigterm", "ctrl-c"],
)
def test_a_run_in_flight_finishes_during_the_grace(
    fake_llm: FakeLLM, tmp_path: Path, sig: int, group: bool, logged: str
) -> None:
    fake_llm.push(Hang(then=Text("finished while stopping")))
    with serve(tmp_path, "--grace", "20", env=fake_env(fake_llm)) as server:
        card = server.wait_ready()
        task_id = RpcClient(card["url"]).send("a slow one")["id"]
        fake_llm.wait_held(1, timeout=20)

        server.signal(sig, group=group)
        wait_until(
            lambda: f"Handling signal: {logged}" in server.output(),
            timeout=10,
            what="the server to begin stopping",
        )
        assert server.proc.poll() is None, "the server waits for the running Task"
        fake_llm.release()
        assert server.wait(timeout=20) == 0
    assert stored_state(task_id) == "completed"
    assert DjangoTaskStore().get(task_id)["artifacts"][0]["parts"][0]["text"] == (
        "finished while stopping"
    )


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_second_ctrl_c_stops_at_once(fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.push(Hang(max_seconds=60))
    with serve(tmp_path, "--grace", "30", env=fake_env(fake_llm)) as server:
        card = server.wait_ready()
        RpcClient(card["url"]).send("this one hangs")
        fake_llm.wait_held(1, timeout=20)

        t0 = time.monotonic()
        server.signal(signal.SIGINT, group=True)
        wait_until(
            lambda: "Handling signal: int" in server.output(),
            timeout=10,
            what="the server to begin stopping",
        )
        server.signal(signal.SIGINT, group=True)
        assert server.wait(timeout=20) == 0
        assert time.monotonic() - t0 < 10, "the second Ctrl-C does not wait out the grace"


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_hung_run_does_not_hold_the_shutdown_past_the_grace(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    fake_llm.push(Hang(max_seconds=60))
    with serve(tmp_path, "--grace", "1", env=fake_env(fake_llm)) as server:
        card = server.wait_ready()
        task_id = RpcClient(card["url"]).send("this one hangs")["id"]
        fake_llm.wait_held(1, timeout=20)

        t0 = time.monotonic()
        server.signal(signal.SIGTERM)
        assert server.wait(timeout=20) == 0
        assert time.monotonic() - t0 < 8, "bounded by --grace, not by the model call"
        assert "released 1 Task(s) to be run again" in server.output()
    # Handed back for another worker, not left 'working' until its lease expires.
    task = DjangoTaskStore().get(task_id)
    assert task is not None
    assert task["status"]["state"] == "submitted"
    assert private_of(task).attempts == 0


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_several_workers_each_run_tasks(fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.default = Text("ok")
    with serve(tmp_path, "--workers", "2", "--threads", "2", env=fake_env(fake_llm)) as server:
        card = server.wait_ready()
        wait_until(
            lambda: server.output().count("Booting worker with pid") >= 2,
            timeout=20,
            what="two workers",
        )
        rpc = RpcClient(card["url"])
        ids = [rpc.send(f"task {n}")["id"] for n in range(6)]
        for task_id in ids:
            assert rpc.wait(task_id)["status"]["state"] == "completed"
        server.signal(signal.SIGTERM)
        assert server.wait(timeout=20) == 0


@pytest.mark.slow
def test_a_bad_address_exits_non_zero_with_a_clear_message() -> None:
    result = subprocess.run(
        [sys.executable, MANAGE, "toolnexus_serve", "nonsense:port"],
        cwd=ROOT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "testproject.settings"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert '"nonsense:port" is not a valid port number or address:port pair' in result.stderr


# -- in-process ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, ("127.0.0.1", 8000)),
        ("9000", ("127.0.0.1", 9000)),
        ("0.0.0.0:8080", ("0.0.0.0", 8080)),
        ("[::1]:8001", ("::1", 8001)),
        ("localhost:8002", ("localhost", 8002)),
    ],
)
def test_parse_addrport(value: str | None, expected: tuple[str, int]) -> None:
    assert parse_addrport(value) == expected


@pytest.mark.parametrize("value", ["nonsense:port", "8000:", "1.2.3.999:80", "[zz]:80", "70000"])
def test_parse_addrport_rejects(value: str) -> None:
    with pytest.raises(ValueError):
        parse_addrport(value)


def test_bad_address_and_busy_port_are_command_errors() -> None:
    with pytest.raises(CommandError, match="not a valid port number or address:port pair"):
        call_command("toolnexus_serve", "nonsense:port")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(CommandError, match="already in use"):
            call_command("toolnexus_serve", f"127.0.0.1:{port}")
    with pytest.raises(CommandError):
        call_command("toolnexus_serve", "--workers", "0")


def test_a_bad_or_busy_grpc_address_is_a_command_error(configure: Any) -> None:
    """Checked in the master with a plain socket, before anything forks."""
    configure(None, GRPC={"ADDRESS": "nowhere"})
    with pytest.raises(CommandError, match=r"GRPC.*not a valid port number"):
        call_command("toolnexus_serve", f"127.0.0.1:{free_port()}")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = f"127.0.0.1:{busy.getsockname()[1]}"
        configure(None, GRPC={"ADDRESS": taken})
        with pytest.raises(CommandError, match=f"cannot listen on {taken}: .*already in use"):
            call_command("toolnexus_serve", f"127.0.0.1:{free_port()}")


def test_describe_model() -> None:
    assert (
        describe_model(
            {"style": "anthropic", "model": "m1", "base_url": "https://u:secret@llm.example/v1"}
        )
        == "anthropic model 'm1' at https://llm.example/v1"
    )
    assert describe_model("testproject.demo.offline_client").startswith(
        "testproject.demo.offline_client - Deterministic offline demo model"
    )
    assert "cannot be imported" in describe_model("nowhere.factory")


# -- a stop asked while a worker boots -----------------------------------------


@pytest.fixture
def stop_handlers() -> Any:
    """Put this process's stop-signal handlers back after the test."""
    before = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    yield
    for sig, handler in before.items():
        signal.signal(sig, handler)


def booting_worker() -> AgentWorker:
    from gunicorn.config import Config
    from gunicorn.glogging import Logger

    cfg = Config()
    return AgentWorker(1, os.getpid(), [], None, 30, cfg, Logger(cfg))


def test_a_stop_signal_queued_for_the_master_before_the_worker_took_over_is_kept(
    stop_handlers: None,
) -> None:
    # From the fork until a worker has its own handlers, gunicorn's master
    # handler is in place and only queues the signal in the child's copy of
    # the master's queue: that SIGTERM used to be lost, and the master waited
    # out its graceful timeout before killing the worker.
    master_queue: queue.SimpleQueue[int] = queue.SimpleQueue()
    master_queue.put_nowait(signal.SIGWINCH)
    master_queue.put_nowait(signal.SIGTERM)
    worker = booting_worker()
    worker.hold_stop_signals(master_queue)
    assert worker.early_stops == [signal.SIGTERM]

    # gunicorn before 24 queued in a list.
    worker = booting_worker()
    worker.hold_stop_signals([signal.SIGINT])
    assert worker.early_stops == [signal.SIGINT]


def test_a_stop_signal_while_the_worker_boots_is_kept_for_the_server(stop_handlers: None) -> None:
    worker = booting_worker()
    worker.hold_stop_signals(queue.SimpleQueue())
    worker.init_signals()  # gunicorn's step: the stop signals stay held
    os.kill(os.getpid(), signal.SIGTERM)  # would end this test process if lost to SIG_DFL
    wait_until(lambda: worker.early_stops == [signal.SIGTERM], timeout=5)

    stopped: list[bool] = []
    server = AgentServer(uvicorn.Config(app=None), lambda: stopped.append(True), worker.early_stops)
    with server.capture_signals():
        # The server starts out stopping: it drains and ends as on any SIGTERM.
        assert server.should_exit and not server.force_exit
        assert stopped == [True]
    assert signal.getsignal(signal.SIGTERM) == worker._note_stop
