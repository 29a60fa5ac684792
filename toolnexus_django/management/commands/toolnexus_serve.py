"""``manage.py toolnexus_serve [addr:port]`` -- serve the project for real.

gunicorn's master forks worker processes (one per core by default), each
serving the project's ASGI application with uvicorn (chosen by measurement:
benchmarks/RESULTS.md) and running the agent's Tasks in-process. See
:mod:`toolnexus_django.serving.server` for the wiring.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

import gunicorn
import uvicorn
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError, connections

from ...conf import import_path, toolnexus_settings
from ...observability import metrics
from ...runtime import dbthreads, grace_seconds
from ...serving.filelimit import raise_open_files
from ...serving.server import (
    ServeOptions,
    admin_url,
    agent_card_url,
    check_bindable,
    describe_fulfilment,
    describe_model,
    describe_sweep,
    grpc_address,
    parse_addrport,
    serve,
    superuser_hint,
)


def _positive_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a positive whole number")
    return number


def default_workers() -> int:
    """One worker process per core this process may run on (measured best:
    benchmarks/RESULTS.md)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def asgi_application(serve_static: bool = True) -> Any:
    """``settings.ASGI_APPLICATION`` (a dotted path) when the project names
    one, else the project with the agent's endpoint served lean
    (:func:`toolnexus_django.asgi.get_asgi_application`); with
    ``serve_static``, static files answered in front of it
    (:class:`toolnexus_django.serving.asgi.StaticFiles`)."""
    from ...serving.asgi import StaticFiles, get_asgi_application

    path = getattr(settings, "ASGI_APPLICATION", None)
    app = import_path(path, "ASGI_APPLICATION") if path else get_asgi_application()
    return StaticFiles(app) if serve_static else app


def _seconds(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = -1.0
    if not 0 <= number < float("inf"):
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds")
    return number


class Command(BaseCommand):
    serving_static = False
    #: The createsuperuser hint, when the admin is served and nobody can sign in.
    admin_hint: str | None = None
    #: Whether the open-file limit was raised, and what to say of it (None: nothing).
    open_files: tuple[bool, str] | None = None

    help = (
        "Serve the project (ASGI: uvicorn workers under gunicorn's master) and run the "
        "agent's Tasks in each worker process. Stops gracefully on Ctrl-C or SIGTERM."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "addrport", nargs="?", help="[addr:]port to listen on (default 127.0.0.1:8000)"
        )
        parser.add_argument(
            "--workers",
            type=_positive_int,
            default=None,
            help="server processes, each with its own agent runtime "
            f"(default: one per core, here {default_workers()})",
        )
        parser.add_argument(
            "--threads",
            type=_positive_int,
            default=None,
            help="database threads per process, so its most database connections "
            "(default TOOLNEXUS['DATABASE_THREADS'])",
        )
        parser.add_argument(
            "--grace",
            type=_seconds,
            default=None,
            help="seconds a stopping process gives in-flight requests and running Tasks "
            "(default TOOLNEXUS['GRACE_SECONDS'], 10)",
        )
        parser.add_argument("--access-log", action="store_true", help="log every request to stdout")
        parser.add_argument(
            "--no-static",
            action="store_true",
            help="do not serve STATIC_URL (a proxy or CDN in front serves it)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            host, port = parse_addrport(options["addrport"])
            grpc = self.grpc_target()
        except ValueError as e:
            raise CommandError(str(e)) from None
        if options["threads"] is not None:
            # Read by each worker's database pool, which it builds after the fork.
            dbthreads.threads_override = options["threads"]
        opts = ServeOptions(
            host=host,
            port=port,
            workers=options["workers"] or default_workers(),
            grace=grace_seconds() if options["grace"] is None else options["grace"],
            access_log=options["access_log"],
            read_timeout=float(toolnexus_settings.READ_TIMEOUT),
            max_header_bytes=int(toolnexus_settings.MAX_HEADER_BYTES),
            grpc_address=grpc[2] if grpc else None,
        )
        try:
            check_bindable(host, port)
            if grpc:
                check_bindable(grpc[0], grpc[1])
        except OSError as e:
            raise CommandError(str(e)) from None
        # Metrics on: every worker writes its values where a scrape in any reads them all.
        self.metrics_dir = metrics.prepare_multiprocess()
        try:
            self.serving_static = not options["no_static"]
            app = asgi_application(serve_static=self.serving_static)
        except ImproperlyConfigured as e:
            raise CommandError(str(e)) from None
        try:
            self.check_migrations()
        except DatabaseError as e:  # the store may not even use the database
            self.stderr.write(f"Could not check migrations: {e}")
        # Read here, not in the banner: the database is closed before the fork.
        self.admin_hint = superuser_hint() if admin_url(opts.base_url) else None
        # Nothing opened in this (master) process may leak into the workers.
        connections.close_all()
        # Before the workers fork: they inherit it (one descriptor per stream).
        self.open_files = raise_open_files()

        master = os.getpid()
        try:
            serve(opts, app, on_ready=lambda: self.banner(opts), on_stopped=self.stopped)
        except SystemExit as exc:
            if os.getpid() != master:
                raise  # a worker leaving: nothing of the master's to do here
            if exc.code not in (0, None):
                code = exc.code if isinstance(exc.code, int) else 1
                raise CommandError(
                    f"the server stopped with exit status {exc.code} (see the log above)",
                    returncode=code,
                ) from None

    def grpc_target(self) -> tuple[str, int, str] | None:
        """gRPC's (host, port, target) when ``TOOLNEXUS["GRPC"]`` turns it on."""
        address = toolnexus_settings.GRPC.get("ADDRESS")
        if not address:
            return None
        try:
            return grpc_address(str(address))
        except ValueError as e:
            raise ValueError(f'TOOLNEXUS["GRPC"]["ADDRESS"]: {e}') from None

    def banner(self, opts: ServeOptions) -> None:
        """Runs in the master once the socket is bound, before any worker forks."""
        workers = f"{opts.workers} worker{'s' if opts.workers > 1 else ''}"
        self.stdout.write(
            f"toolnexus_serve: uvicorn {uvicorn.__version__} under gunicorn "
            f"{gunicorn.__version__}, {workers} x {dbthreads.threads()} database threads, "
            f"at {opts.base_url}/"
        )
        card = agent_card_url(opts.base_url)
        if card:
            self.stdout.write(f"Agent Card: {card}")
        else:
            self.stderr.write(
                "No Agent Card: toolnexus_django's URLs are not in ROOT_URLCONF "
                '(add path("agent/", include("toolnexus_django.urls"))).'
            )
        admin = admin_url(opts.base_url)
        if admin:
            self.stdout.write(f"Admin: {admin}")
            if self.admin_hint:
                self.stdout.write(self.admin_hint)
        if opts.grpc_address:
            self.stdout.write(f"gRPC: {opts.grpc_address} (A2A v1.0, in every worker)")
        self.stdout.write(f"Model: {describe_model()}")
        if self.open_files is not None:
            raised, said = self.open_files
            (self.stdout if raised else self.stderr).write(said)
        if self.serving_static:
            from ...serving.staticfiles import static_prefix

            prefix = static_prefix()
            if prefix:
                self.stdout.write(
                    f"Static files: {prefix} (STATIC_ROOT, else the apps' static/ directories; "
                    "--no-static when a proxy serves them)"
                )
        store = toolnexus_settings.STORE
        store_name = store if isinstance(store, str) else type(store).__name__
        self.stdout.write(
            f"Tasks: store {store_name!r}; fulfilment {describe_fulfilment()}; {describe_sweep()}"
        )
        self.stdout.write(
            f"Quit with CONTROL-C or SIGTERM; running Tasks get {opts.grace:g}s to finish."
        )
        self.stdout.flush()

    def stopped(self) -> None:
        metrics.remove_directory(getattr(self, "metrics_dir", None))
        self.stdout.write("toolnexus_serve stopped.")
        self.stdout.flush()
