"""The server harness: ``manage.py toolnexus_serve`` (and other management
commands) as real subprocesses on the test database, stopped whatever happens."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests.conftest import http, wait_until
from tests.fakes import FakeLLM

ROOT = Path(__file__).resolve().parent.parent
MANAGE = str(ROOT / "manage.py")
CARD_PATH = "/agent/.well-known/agent-card.json"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def database_url() -> str:
    """A DATABASE_URL for the database this test session uses (the test DB)."""
    from django.db import connection

    s = connection.settings_dict
    if s["ENGINE"] == "django.db.backends.sqlite3":
        return f"sqlite:///{Path(s['NAME']).resolve()}"
    if s["ENGINE"] == "django.db.backends.postgresql":
        auth = quote(s["USER"] or "postgres", safe="")
        if s.get("PASSWORD"):
            auth += ":" + quote(s["PASSWORD"], safe="")
        return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"
    pytest.skip(f"no DATABASE_URL form for {s['ENGINE']}")


@dataclass
class Served:
    proc: subprocess.Popen[bytes]
    log: Path
    base: str

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_ready(self, timeout: float = 30) -> dict[str, Any]:
        """Wait for the Agent Card to answer; fail at once if the server died."""

        def card() -> dict[str, Any] | None:
            if self.proc.poll() is not None:
                raise AssertionError(f"the server exited early with {self.proc.returncode}")
            try:
                reply = http(self.base + CARD_PATH, timeout=2)
            except OSError:
                return None
            return reply.json if reply.status == 200 else None

        return wait_until(card, timeout=timeout, interval=0.05, what="the Agent Card")

    def signal(self, sig: int, *, group: bool = False) -> None:
        """Send ``sig`` to the server, or (``group``, like a terminal's Ctrl-C)
        to its master and workers at once."""
        if group:
            os.killpg(self.proc.pid, sig)
        else:
            self.proc.send_signal(sig)

    def wait(self, timeout: float) -> int:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the server did not exit within {timeout}s") from None


@contextmanager
def serve(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> Iterator[Served]:
    """Run ``manage.py toolnexus_serve 127.0.0.1:<free port> *args`` against the
    test database; print its output if the test fails; kill it no matter what."""
    port = free_port()
    log = tmp_path / f"serve-{port}.log"
    child_env = {k: v for k, v in os.environ.items() if not k.startswith("LLM_")}
    child_env.update(
        {
            "DATABASE_URL": database_url(),
            "TOOLNEXUS_STORE": "django",
            "DJANGO_SETTINGS_MODULE": "testproject.settings",
            "PYTHONUNBUFFERED": "1",
            **(env or {}),
        }
    )
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, MANAGE, "toolnexus_serve", f"127.0.0.1:{port}", *args],
            cwd=ROOT,
            env=child_env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: killpg reaches the workers
        )
    served = Served(proc, log, f"http://127.0.0.1:{port}")
    try:
        yield served
    except BaseException:
        print(f"--- toolnexus_serve output ({log}) ---\n{served.output()}")
        raise
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        else:
            try:  # workers left behind by a master that died
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


@contextmanager
def server_group(
    argv: Sequence[str], cwd: Path, log: Path, env: dict[str, str], port: int
) -> Iterator[Served]:
    """``argv`` (a server listening on ``port``) in its own process group,
    output to ``log``; stopped, workers and all, whatever happens."""
    with log.open("wb") as out:
        proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: killpg reaches the workers
        )
    server = Served(proc, log, f"http://127.0.0.1:{port}")
    try:
        yield server
    except BaseException:
        print(f"--- server output ({log}) ---\n{server.output()}")
        raise
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
        try:  # workers left behind by a master that died
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def fake_env(fake: FakeLLM) -> dict[str, str]:
    return {"LLM_BASE_URL": fake.url, "LLM_STYLE": fake.style, "LLM_RETRIES": "0"}


def migrate(url: str, log: Path) -> None:
    """``manage.py migrate`` on the database at ``url`` (a DATABASE_URL, not
    the test database: a cluster of a test's own), its output to ``log``."""
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "DJANGO_SETTINGS_MODULE": "testproject.settings",
    }
    with log.open("wb") as out:
        done = subprocess.run(
            [sys.executable, MANAGE, "migrate", "--noinput"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=120,
        )
    assert done.returncode == 0, f"migrate failed:\n{log.read_text(errors='replace')}"


def group_members(pgid: int) -> set[int]:
    """The live processes (zombies excluded) of process group ``pgid``."""
    members = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            raw = (entry / "stat").read_text()
        except OSError:
            continue
        state, _ppid, group = raw[raw.rindex(")") + 2 :].split()[:3]
        if int(group) == pgid and state not in ("Z", "X"):
            members.add(int(entry.name))
    return members


def kill_group(server: Served, timeout: float = 10) -> set[int]:
    """kill -9 of a server's whole process group (gunicorn's master and its
    workers), as a lost machine would; waits until every one is dead.
    Returns the pids killed."""
    pgid = server.proc.pid
    members = group_members(pgid)
    assert pgid in members, f"the server {pgid} is not running"
    server.signal(signal.SIGKILL, group=True)
    assert server.wait(timeout) == -signal.SIGKILL
    wait_until(
        lambda: not group_members(pgid),
        timeout=timeout,
        what=f"every process of the server ({sorted(members)}) to die",
    )
    return members
