"""The server behind ``manage.py toolnexus_serve``: gunicorn's master, forking
worker processes that each serve the ASGI application with uvicorn
(httptools, uvloop) — chosen by measurement (benchmarks/RESULTS.md).

In a worker a waiting request (an open stream, a blocking send) is a
coroutine, not a thread: it costs memory, no thread and no database
connection. This module holds the wiring that makes the workers safe for
this app:

* Nothing of toolnexus starts in the master. Each worker builds its own agent
  runtime lazily, on its first run (it is pid-aware), and database
  connections are closed before every fork so no worker shares a socket with
  its parent.
* A client gets ``READ_TIMEOUT`` seconds to send a request's headers and
  again its body, and ``MAX_HEADER_BYTES`` for its headers, whatever the
  path (:mod:`.httpprotocol`): slow and idle clients are disconnected, never
  waited on for ever, and a header never grows past the limit in memory.
* Each worker runs the housekeeping sweep (expired Requests, recovery of
  Tasks whose worker died), starting at boot, so a restarted server picks up
  what its previous life left behind.
* Ctrl-C and SIGTERM both stop gracefully: workers end blocking waits and
  streams at once (clients resubscribe), stop accepting, finish in-flight
  requests, then give running Tasks what is left of ``grace`` seconds. A
  second Ctrl-C stops at once. A run still going when the grace ends is
  stopped and its Task released (back to ``submitted``, the attempt not
  counted) for a sweep to enqueue again.
"""

from __future__ import annotations

import inspect
import logging
import math
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from django.core.exceptions import FieldError, ImproperlyConfigured
from django.db import connections
from django.urls import NoReverseMatch, reverse
from gunicorn.app.base import BaseApplication
from gunicorn.arbiter import Arbiter

from ..conf import import_path, setting_name, toolnexus_settings
from ..observability import metrics
from ..runtime import grace_seconds
from .addresses import DEFAULT_ADDR, DEFAULT_PORT, netloc, parse_addrport
from .httpprotocol import DEFAULT_MAX_HEADER_BYTES
from .worker import AgentWorker

logger = logging.getLogger("toolnexus_django.server")

#: How long the master waits for a worker beyond ``grace`` before SIGKILL:
#: stopping the runtime (toolkit/MCP close is bounded at 5 s) plus exit.
_STOP_MARGIN = 7.0


def check_bindable(host: str, port: int) -> None:
    """Fail early, with a readable reason, if ``host:port`` cannot be bound
    (gunicorn would otherwise retry for five seconds and log a traceback)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as e:
        raise OSError(f"cannot resolve {host!r}: {e.strerror}") from None
    family, kind, proto, _, sockaddr = infos[0]
    with socket.socket(family, kind, proto) as sock:
        # As gunicorn does: a port in TIME_WAIT is free to bind.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(sockaddr)
        except OSError as e:
            reason = "that port is already in use" if e.errno == 98 else e.strerror
            raise OSError(f"cannot listen on {netloc(host, port)}: {reason}") from None


def agent_card_url(base_url: str) -> str | None:
    """The Agent Card's URL on this server, wherever the project mounted the app
    (``None`` when its URLs are not in the URLconf)."""
    try:
        return base_url.rstrip("/") + reverse("toolnexus_django:agent-card")
    except NoReverseMatch:
        return None


def served_endpoint_url(base_url: str) -> str:
    """The JSON-RPC endpoint's URL on this server (``""`` when the project's
    URLconf does not mount the app)."""
    try:
        return base_url.rstrip("/") + reverse("toolnexus_django:rpc")
    except NoReverseMatch:
        return ""


def admin_url(base_url: str) -> str | None:
    """The Django admin's URL on this server (``None`` when the admin is not
    installed, or not in the URLconf)."""
    from django.apps import apps

    if not apps.is_installed("django.contrib.admin"):
        return None
    try:
        return base_url.rstrip("/") + reverse("admin:index")
    except NoReverseMatch:
        return None


#: What the banner says when nobody can sign in to the admin yet.
CREATESUPERUSER_HINT = (
    "No superuser yet; to sign in to the admin, create one: python manage.py createsuperuser"
)


def superuser_hint() -> str | None:
    """:data:`CREATESUPERUSER_HINT` when the user model has no active
    superuser; ``None`` when it has one, or when the database cannot say (not
    migrated, unreachable; a user model without ``is_superuser``): the server
    starts either way."""
    from django.contrib.auth import get_user_model
    from django.db import DatabaseError

    try:
        users = get_user_model()._default_manager
        if users.filter(is_superuser=True, is_active=True).exists():
            return None
    except (DatabaseError, FieldError, ImproperlyConfigured) as e:
        logger.debug("could not look for a superuser: %s", e)
        return None
    return CREATESUPERUSER_HINT


def grpc_address(value: str) -> tuple[str, int, str]:
    """``TOOLNEXUS["GRPC"]["ADDRESS"]`` -> ``(host, port, grpc's target)``:
    ``"host:port"`` (an IPv6 host in brackets) or a port on 127.0.0.1, as
    for HTTP; raises ``ValueError``."""
    host, port = parse_addrport(value)
    return host, port, netloc(host, port)


def _without_credentials(url: str) -> str:
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    where = netloc(host, parts.port) if parts.port else host
    return urlunsplit(parts._replace(netloc=where))


def describe_model(setting: Any = None) -> str:
    """One line naming the model ``TOOLNEXUS["CLIENT"]`` will run, without
    building the client (that happens in the workers): style, model and
    base_url for a dict; for a factory, its dotted path and the first line of
    its docstring."""
    cfg = toolnexus_settings.CLIENT if setting is None else setting
    if isinstance(cfg, dict):
        style = cfg.get("style") or "openai"
        model = cfg.get("model") or "(no model set)"
        base_url = cfg.get("base_url")
        where = _without_credentials(str(base_url)) if base_url else "(no base_url set)"
        return f"{style} model {model!r} at {where}"
    if isinstance(cfg, str):
        name = cfg
        try:
            factory = import_path(cfg, setting_name("CLIENT"))
        except ImproperlyConfigured as e:
            return f"{name} (cannot be imported: {e.__cause__})"
    else:
        factory = cfg
        name = f"{getattr(cfg, '__module__', '?')}.{getattr(cfg, '__qualname__', repr(cfg))}"
    doc = inspect.getdoc(factory)
    summary = doc.strip().splitlines()[0] if doc else ""
    return f"{name} - {summary}" if summary else name


def describe_fulfilment() -> str:
    alias = toolnexus_settings.TASK_BACKEND
    if alias is not None:
        return f"Django Tasks backend {alias!r} (runs in that backend's workers)"
    return (
        f"in-process, up to {toolnexus_settings.MAX_RUNS} runs at once per worker "
        "(starts on the first message)"
    )


def describe_sweep() -> str:
    interval = float(toolnexus_settings.EXPIRY_SWEEP_INTERVAL or 0)
    if interval <= 0:
        return "no sweep (EXPIRY_SWEEP_INTERVAL is 0: run manage.py toolnexus_sweep)"
    return f"sweep every {interval:g}s per worker"


# -- gunicorn ------------------------------------------------------------------


class ServeArbiter(Arbiter):
    def handle_int(self) -> None:
        # gunicorn treats Ctrl-C as a quick stop; here it is as graceful as
        # SIGTERM. gunicorn's stop loop turns a second Ctrl-C into a quick one.
        raise StopIteration


@dataclass(frozen=True)
class ServeOptions:
    host: str = DEFAULT_ADDR
    port: int = DEFAULT_PORT
    workers: int = 1
    #: Seconds for requests and runs (default ``TOOLNEXUS["GRACE_SECONDS"]``).
    grace: float = field(default_factory=grace_seconds)
    #: Seconds a client has to send a request's headers, and again its body (READ_TIMEOUT).
    read_timeout: float = 30.0
    #: The most bytes of a request's line and headers (MAX_HEADER_BYTES).
    max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES
    access_log: bool = False
    #: Where every worker serves gRPC too (``"host:port"``; None: off).
    grpc_address: str | None = None

    @property
    def bind(self) -> str:
        return netloc(self.host, self.port)

    @property
    def base_url(self) -> str:
        return f"http://{self.bind}"


class ServeApplication(BaseApplication):
    """gunicorn, configured in code (no gunicorn.conf.py, no command line)."""

    def __init__(
        self,
        options: ServeOptions,
        asgi_app: Callable[..., Any],
        on_ready: Callable[[], None] = lambda: None,
        on_stopped: Callable[[], None] = lambda: None,
    ) -> None:
        self.options = options
        self.asgi_app = asgi_app
        self.on_ready = on_ready
        self.on_stopped = on_stopped
        super().__init__()

    def load_config(self) -> None:
        opts = self.options
        worker = type(
            "AgentWorker",
            (AgentWorker,),
            {
                "grace": opts.grace,
                "read_timeout": opts.read_timeout,
                "max_header_bytes": opts.max_header_bytes,
                "grpc_address": opts.grpc_address,
                "endpoint_url": served_endpoint_url(opts.base_url),
            },
        )
        config: dict[str, Any] = {
            "bind": [opts.bind],
            "worker_class": worker,
            "workers": opts.workers,
            # The master's wait before SIGKILL; the worker budgets ``grace``
            # itself (see _post_fork), the margin covers its runtime stop.
            "graceful_timeout": math.ceil(opts.grace + _STOP_MARGIN),
            # The app is built once in the master: a broken
            # application fails before anything forks.
            "preload_app": True,
            "proc_name": "toolnexus_serve",
            "accesslog": "-" if opts.access_log else None,
            "loglevel": "info",
            "when_ready": lambda arbiter: self.on_ready(),
            "pre_fork": _pre_fork,
            "post_fork": _post_fork,
            "on_exit": lambda arbiter: self.on_stopped(),
            # Metrics: a gone worker's live gauges stop counting.
            "child_exit": lambda arbiter, worker: metrics.process_exited(worker.pid),
        }
        if "control_socket_disable" in self.cfg.settings:
            # gunicorn >= 25.1 would run a control-socket thread in the master
            # (so later forks copy a threaded process) at a path shared by
            # every instance on the machine.
            config["control_socket_disable"] = True
        for key, value in config.items():
            self.cfg.set(key, value)

    def load(self) -> Callable[..., Any]:
        return self.asgi_app

    def run(self) -> None:
        ServeArbiter(self).run()


def _pre_fork(arbiter: Arbiter, worker: Any) -> None:
    # A forked worker must not share the master's database sockets: nor those
    # a connection pool keeps (PostgreSQL's OPTIONS["pool"], Django >= 5.1),
    # which close_all() hands back to the pool rather than closing.
    connections.close_all()
    for conn in connections.all(initialized_only=True):
        if conn.settings_dict.get("OPTIONS", {}).get("pool"):
            conn.close_pool()  # type: ignore[attr-defined]
    others = [t.name for t in threading.enumerate() if t is not threading.main_thread()]
    if others:
        logger.warning("forking with threads running in the master: %s", ", ".join(others))


def _post_fork(arbiter: Arbiter, worker: Any) -> None:
    worker.hold_stop_signals(getattr(arbiter, "SIG_QUEUE", None))
    # This copy of the config is the worker's own: its HTTP drain gets the
    # grace, the master (above) waits a little longer before SIGKILL.
    grace = grace_seconds() if worker.grace is None else worker.grace
    worker.cfg.set("graceful_timeout", math.ceil(grace))


def serve(
    options: ServeOptions,
    asgi_app: Callable[..., Any],
    on_ready: Callable[[], None] = lambda: None,
    on_stopped: Callable[[], None] = lambda: None,
) -> None:
    """Run gunicorn until it is stopped. Raises ``SystemExit`` -- in the master
    when it stops, and in every forked worker when that worker ends (so callers
    must not run clean-up code on the way out of a worker)."""
    ServeApplication(options, asgi_app, on_ready, on_stopped).run()
