"""A worker process of ``toolnexus_serve``: uvicorn (httptools, uvloop)
serving the ASGI application (:mod:`.server` has the master and the reasons).

The process's runtime starts and stops through the application's ASGI
lifespan (:meth:`.asgi.AgentApplication.lifespan`: ``runtime.start()`` /
``runtime.stop()``), the one path for every ASGI server. This worker tells
the runtime by when it must be done (:func:`.runtime.stop_by`: the grace
counts from the stop signal, the HTTP drain included). Both calls are
idempotent, so it also makes them itself, before serving and after: for a
project's own ``ASGI_APPLICATION`` that answers no lifespan (plain Django's),
and for a quick stop, where uvicorn skips the lifespan's shutdown."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import queue
import signal
import socket
import sys
import time
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

import uvicorn
from gunicorn.workers.base import Worker

from .. import runtime
from ..a2a.follow import stop_waiting
from .httpprotocol import DEFAULT_MAX_HEADER_BYTES, BoundedHttpProtocol

logger = logging.getLogger("toolnexus_django.server")

#: gunicorn's exit status for a worker that could not boot: the master stops.
WORKER_BOOT_ERROR = 3
#: The signals that stop a worker (see AgentServer.handle_exit).
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT)


def waiting_stopper() -> Callable[[], None]:
    """What ends this process's blocking sends and SSE streams at their next
    poll, so open streams do not hold the HTTP drain for the whole grace.
    (Imported up front: it is called from a signal handler.)"""
    return stop_waiting


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
        grace: float | None = None,
    ) -> None:
        super().__init__(config)
        self.stop_waiting = stop_waiting
        #: Seconds from the stop signal to the end of the runtime's stop.
        self.grace = runtime.grace_seconds() if grace is None else grace
        #: Stop signals that came before this server handled signals itself.
        self.early_stops = early_stops if early_stops is not None else []
        self.stopping_since: float | None = None
        self.quick = False
        #: gRPC's "host:port" (``TOOLNEXUS["GRPC"]``), served beside HTTP; None: off.
        self.grpc_address: str | None = None
        #: The JSON-RPC endpoint's URL, which the extended card names.
        self.endpoint_url = ""
        self.grpc_server: Any = None

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.grpc_address and not self.should_exit:
            # grpc is imported here: after the fork, and only where gRPC is on.
            from .grpcserver import GrpcServer

            server = GrpcServer(self.grpc_address, self.endpoint_url)
            try:
                await server.start()
            except RuntimeError as e:
                logger.error("gRPC: cannot serve on %s: %s", self.grpc_address, e)
                sys.exit(WORKER_BOOT_ERROR)  # the master stops: retrying would fail the same way
            self.grpc_server = server

    async def _wait_tasks_to_complete(self) -> None:
        # uvicorn's drain of the requests in flight, and gRPC's beside it,
        # within what is left of the same grace (a quick stop: none).
        left = 0.0 if self.quick else self.grace
        if self.stopping_since is not None and not self.quick:
            left = self.stopping_since + self.grace - time.monotonic()
        grpc_stop = self.grpc_server.stop(left) if self.grpc_server else asyncio.sleep(0)
        await asyncio.gather(super()._wait_tasks_to_complete(), grpc_stop)

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
            runtime.stop_by(time.monotonic())
        self.should_exit = True
        if self.stopping_since is None:
            self.stopping_since = time.monotonic()
            if not self.quick:
                runtime.stop_by(self.stopping_since + self.grace)
            self.stop_waiting()


class AgentWorker(Worker):
    """A gunicorn worker process serving the ASGI application with uvicorn
    (httptools, uvloop), with one grace period for requests and runs."""

    #: Seconds for requests and runs (``toolnexus_serve --grace``; None:
    #: ``TOOLNEXUS["GRACE_SECONDS"]``).
    grace: float | None = None
    #: READ_TIMEOUT and MAX_HEADER_BYTES (:mod:`.httpprotocol`).
    read_timeout: float = 30.0
    max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES
    #: gRPC's address (None: off) and the endpoint's URL (:class:`AgentServer`).
    grpc_address: str | None = None
    endpoint_url: str = ""

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
        grace = runtime.grace_seconds() if self.grace is None else self.grace
        protocol = type(
            "BoundedHttpProtocol",
            (BoundedHttpProtocol,),
            {"read_timeout": self.read_timeout, "max_header_bytes": self.max_header_bytes},
        )
        config = uvicorn.Config(
            self.wsgi,  # gunicorn's name for the loaded application: ours is ASGI
            http=protocol,
            loop="uvloop",
            # The application starts and stops the runtime; "auto", not "on":
            # an ASGI_APPLICATION without a lifespan (Django's) still serves.
            lifespan="auto",
            proxy_headers=False,  # Django decides (SECURE_PROXY_SSL_HEADER, USE_X_FORWARDED_HOST)
            log_config=None,
            access_log=bool(self.cfg.accesslog),
            timeout_keep_alive=5,
            timeout_graceful_shutdown=max(1, math.ceil(grace)),
            timeout_notify=self.timeout,
            callback_notify=self._notify,
            backlog=self.cfg.backlog,
        )
        server = AgentServer(
            config, waiting_stopper(), getattr(self, "early_stops", None), grace=grace
        )
        server.grpc_address, server.endpoint_url = self.grpc_address, self.endpoint_url
        runtime.start()  # what the lifespan's startup does (then a no-op)
        try:
            server.run(sockets=[s.sock for s in self.sockets])
        finally:
            server.handle_exit(signal.SIGTERM, None)  # stopping, whatever ended the server
            # Done already by the lifespan's shutdown, unless there was none
            # (a quick stop, an application without one): what is left of the grace.
            runtime.stop()

    async def _notify(self) -> None:
        self.notify()
