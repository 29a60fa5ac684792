"""The project's ASGI application (the agent's endpoint served lean) on a
real uvicorn server in a thread of the test process — what ``live_server`` is
for the WSGI views. It serves on 127.0.0.1 with the same HTTP protocol as
``toolnexus_serve`` (httptools, READ_TIMEOUT and MAX_HEADER_BYTES)."""

from __future__ import annotations

import socket
import threading
from typing import Any

import uvicorn


class AsgiServer:
    def __init__(self, read_timeout: float | None = None, lifespan: str = "off") -> None:
        from toolnexus_django.asgi import get_asgi_application
        from toolnexus_django.conf import toolnexus_settings
        from toolnexus_django.serving.httpprotocol import BoundedHttpProtocol

        limits = {
            "read_timeout": float(read_timeout or toolnexus_settings.READ_TIMEOUT),
            "max_header_bytes": int(toolnexus_settings.MAX_HEADER_BYTES),
        }
        self.config = uvicorn.Config(
            get_asgi_application(),
            http=type("BoundedHttpProtocol", (BoundedHttpProtocol,), limits),
            loop="uvloop",
            lifespan=lifespan,  # "on": the application starts and stops the runtime
            proxy_headers=False,  # as toolnexus_serve: Django's settings decide
            log_config=None,
            access_log=False,
            timeout_graceful_shutdown=2,
        )
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(2048)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.server = uvicorn.Server(self.config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, name="asgi-server", daemon=True
        )

    def start(self) -> AsgiServer:
        self.thread.start()
        deadline = threading.Event()
        for _ in range(200):
            if self.server.started:
                return self
            deadline.wait(0.05)
        raise AssertionError("the ASGI test server did not start in 10s")

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        self.sock.close()

    def __enter__(self) -> AsgiServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
