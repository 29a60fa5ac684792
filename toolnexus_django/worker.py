"""A worker process of ``toolnexus_serve``: uvicorn (httptools, uvloop)
serving the ASGI application, and this app's start and stop around it
(:mod:`.server` has the master and the reasons)."""

from __future__ import annotations

import contextlib
import logging
import math
import os
import queue
import signal
import time
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

import uvicorn
from django.db import connections
from gunicorn.workers.base import Worker

from .serving.httpprotocol import DEFAULT_MAX_HEADER_BYTES, BoundedHttpProtocol

logger = logging.getLogger("toolnexus_django.server")

#: Seconds a stopping worker gives running Tasks.
DEFAULT_GRACE = 10.0

#: The signals that stop a worker (see AgentServer.handle_exit).
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT)


def start_housekeeping() -> Any:
    """This worker's sweep thread (its first sweep runs at once)."""
    from .fulfilment.sweep import Housekeeper

    return Housekeeper().start()


def waiting_stopper() -> Callable[[], None]:
    """What ends this process's blocking sends and SSE streams at their next
    poll, so open streams do not hold the HTTP drain for the whole grace.
    (Imported up front: it is called from a signal handler.)"""
    from .a2a.follow import stop_waiting

    return stop_waiting


def stop_background_work(timeout: float) -> bool:
    """Let this process's running Tasks finish (at most ``timeout`` seconds),
    then stop its agent runtime. Returns whether every run finished."""
    from . import dbthreads
    from .agent.runtime import shutdown_runtime
    from .fulfilment.leases import release_runs
    from .fulfilment.runs import close_runs

    deadline = time.monotonic() + max(0.0, timeout)
    finished = close_runs(timeout=max(0.0, timeout))
    if not finished:
        # Hand them back now rather than leave them 'working' until their
        # leases expire: another worker (or this server's next life) runs them.
        released = release_runs()
        logger.warning(
            "worker %s: the grace period ended with runs still going; released %d "
            "Task(s) to be run again: %s",
            os.getpid(),
            len(released),
            ", ".join(released) or "-",
        )
    # The loop stops at once; what takes time is closing the toolkit (MCP).
    shutdown_runtime(timeout=min(5.0, max(0.5, deadline - time.monotonic())))
    dbthreads.close(timeout=2)
    connections.close_all()
    return finished


class AgentServer(uvicorn.Server):
    """uvicorn's server, stopping as this app stops (see the module).

    SIGTERM or a first SIGINT: end blocking waits and streams at once (their
    clients resubscribe), stop accepting, drain requests; a second SIGINT or
    SIGQUIT: stop now. Signals are not re-raised after the server stops (as
    uvicorn does): the worker still has its running Tasks to see to.
    """

    def __init__(
        self,
        config: uvicorn.Config,
        stop_waiting: Callable[[], None],
        early_stops: list[int] | None = None,
    ) -> None:
        super().__init__(config)
        self.stop_waiting = stop_waiting
        #: Stop signals that came before this server handled signals itself.
        self.early_stops = early_stops if early_stops is not None else []
        self.stopping_since: float | None = None
        self.quick = False

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        before = {sig: signal.signal(sig, self.handle_exit) for sig in STOP_SIGNALS}
        for sig in list(self.early_stops):  # a stop asked while the worker booted
            self.handle_exit(sig, None)
        try:
            yield
        finally:
            for sig, handler in before.items():
                signal.signal(sig, handler)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if sig == signal.SIGQUIT or (sig == signal.SIGINT and self.should_exit):
            self.quick = self.force_exit = True
        self.should_exit = True
        if self.stopping_since is None:
            self.stopping_since = time.monotonic()
            self.stop_waiting()


class AgentWorker(Worker):
    """A gunicorn worker process serving the ASGI application with uvicorn
    (httptools, uvloop), with one grace period for requests and runs."""

    grace: float = DEFAULT_GRACE
    #: READ_TIMEOUT and MAX_HEADER_BYTES (:mod:`.httpprotocol`).
    read_timeout: float = 30.0
    max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES

    def hold_stop_signals(self, master_queue: Any) -> None:
        """Called first thing after the fork: keep a stop signal for the server.

        Works around gunicorn: from the fork until a worker installs its own
        handlers, the master's handler is still in place, which only queues
        the signal in the child's copy of the master's queue. A SIGTERM sent
        while a worker boots was lost that way, and the master waited out its
        whole graceful timeout before it killed the worker.
        """
        self.early_stops: list[int] = []
        for sig in STOP_SIGNALS:
            signal.signal(sig, self._note_stop)
        # What reached the master's handler here before this one took over
        # (a SimpleQueue since gunicorn 24, a list before).
        if isinstance(master_queue, list):
            queued = list(master_queue)
        else:
            queued = []
            with contextlib.suppress(queue.Empty, AttributeError):
                while True:
                    queued.append(master_queue.get_nowait())
        for sig in queued:
            if sig in STOP_SIGNALS:
                self._note_stop(sig, None)

    def _note_stop(self, sig: int, frame: FrameType | None) -> None:
        self.early_stops.append(sig)

    def init_signals(self) -> None:
        # The server installs its own handlers (AgentServer.capture_signals);
        # until then a stop signal is kept for it (hold_stop_signals) and any
        # other signal ends the process as it would by default.
        for sig in self.SIGNALS:
            if sig not in STOP_SIGNALS:
                signal.signal(sig, signal.SIG_DFL)

    def run(self) -> None:
        protocol = type(
            "BoundedHttpProtocol",
            (BoundedHttpProtocol,),
            {"read_timeout": self.read_timeout, "max_header_bytes": self.max_header_bytes},
        )
        config = uvicorn.Config(
            self.wsgi,  # gunicorn's name for the loaded application: ours is ASGI
            http=protocol,
            loop="uvloop",
            lifespan="off",  # this worker starts and stops the app's work itself
            proxy_headers=False,  # Django decides (SECURE_PROXY_SSL_HEADER, USE_X_FORWARDED_HOST)
            log_config=None,
            access_log=bool(self.cfg.accesslog),
            timeout_keep_alive=5,
            timeout_graceful_shutdown=max(1, math.ceil(self.grace)),
            timeout_notify=self.timeout,
            callback_notify=self._notify,
            backlog=self.cfg.backlog,
        )
        server = AgentServer(config, waiting_stopper(), getattr(self, "early_stops", None))
        housekeeper = start_housekeeping()
        try:
            server.run(sockets=[s.sock for s in self.sockets])
        finally:
            server.handle_exit(signal.SIGTERM, None)  # stopping, whatever ended the server
            assert server.stopping_since is not None
            deadline = time.monotonic() if server.quick else server.stopping_since + self.grace

            def left() -> float:
                return max(0.0, deadline - time.monotonic())

            # No new recoveries while stopping; a sweep mid-query may finish.
            housekeeper.stop(timeout=min(1.0, left()))
            stop_background_work(left())

    async def _notify(self) -> None:
        self.notify()
