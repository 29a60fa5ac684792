"""``manage.py db_worker`` processes (django-tasks-db's DatabaseBackend) on the
test database, for tests whose Tasks run in a worker of their own: started
when asked, stopped gracefully by the test or killed at the end whatever happens."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tests.conftest import wait_until
from tests.servers import ROOT, database_url


@dataclass
class Worker:
    proc: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.proc.pid

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_ready(self, timeout: float = 30) -> None:
        """Until it polls for jobs (it says so just before); fail at once if it died."""

        def polling() -> bool:
            if self.proc.poll() is not None:
                raise AssertionError(f"the worker exited early: {self.output()[-2000:]}")
            return "Starting worker" in self.output()

        wait_until(polling, timeout=timeout, interval=0.05, what="the db_worker to start")

    def stop(self, timeout: float = 20) -> int:
        """SIGTERM: it ends the job in hand, then exits."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the worker did not stop within {timeout}s") from None


@dataclass
class Workers:
    tmp_path: Path
    env: dict[str, str]
    started: list[Worker] = field(default_factory=list)

    def start(self) -> Worker:
        n = len(self.started)
        log = self.tmp_path / f"db-worker-{n}.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith("LLM_")}
        env.update(
            {
                "DATABASE_URL": database_url(),
                "TOOLNEXUS_STORE": "django",
                "TOOLNEXUS_TASK_BACKEND": "database",
                "PYTHONUNBUFFERED": "1",
                **self.env,
            }
        )
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "manage.py",
                    "db_worker",
                    "--backend",
                    "database",
                    "--interval",
                    "0.1",
                    "--no-startup-delay",
                    "--no-reload",
                    "--worker-id",
                    f"w{n}-{os.getpid()}",
                ],
                cwd=ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        worker = Worker(proc, log)
        self.started.append(worker)
        return worker


@contextmanager
def db_workers(tmp_path: Path, env: dict[str, str]) -> Iterator[Workers]:
    """A place to start db_worker processes (``.start()``); every one still
    running at the end is killed, and their output printed if the test failed."""
    workers = Workers(tmp_path, env)
    try:
        yield workers
    except BaseException:
        for w in workers.started:
            print(f"--- db_worker {w.pid} output ({w.log}) ---\n{w.output()[-4000:]}")
        raise
    finally:
        for w in workers.started:
            if w.proc.poll() is None:
                w.proc.kill()
                w.proc.wait(10)
