"""The gRPC server of a ``toolnexus_serve`` worker (``TOOLNEXUS["GRPC"]``).

Each worker serves the A2A service (:mod:`.grpcbinding`) on the same address
with ``SO_REUSEPORT`` (grpc's default on Linux; the kernel spreads the
connections over the workers, as the master's shared socket does for HTTP),
on the worker's own event loop: ``grpc.aio`` runs on uvloop, so one loop
serves HTTP and gRPC, and a gRPC stream waits as an SSE stream does, a
coroutine on the Task's wake-ups. grpc is imported in the worker only, after
the fork (grpc's threads and fork do not mix): the master checks the address
with a plain socket (:func:`.server.check_bindable`) and never loads it.

A request message is bounded as an HTTP body is, by Django's
``DATA_UPLOAD_MAX_MEMORY_SIZE`` (:mod:`.grpccall`: refused in words naming
it); grpc's own receive limit is twice that, so a larger message is dropped
by grpc as it arrives, never held (``RESOURCE_EXHAUSTED`` too). Answers may
be up to 64 MiB (a Task carries up to ``MAX_OUTPUT_CHARS`` of text, and its
history).

Stopping is HTTP's: at the stop signal blocking sends and streams end at once
(``a2a.follow.stop_waiting``; clients resubscribe), the server stops taking
calls, and the calls in flight get what is left of the grace before they are
cancelled.
"""

from __future__ import annotations

import logging

import grpc

from ..a2a.card import grpc_interface
from .grpcbinding import add_service
from .grpccall import MAX_MESSAGE_BYTES, receive_limit

logger = logging.getLogger("toolnexus_django.server")


def grpc_interface_url() -> str:
    """The URL the card names for this binding (``GRPC["URL"]``, else ``ADDRESS``)."""
    return "".join(entry["url"] for entry in grpc_interface())


class GrpcServer:
    """One worker's gRPC server on ``address`` (``"host:port"``)."""

    def __init__(self, address: str, endpoint_url: str = "") -> None:
        self.address = address
        self.endpoint_url = endpoint_url
        self.server: grpc.aio.Server | None = None

    async def start(self) -> None:
        """Listen and serve; raises ``RuntimeError`` when the address cannot be bound."""
        server = grpc.aio.server(
            options=[
                ("grpc.so_reuseport", 1),
                ("grpc.max_receive_message_length", receive_limit()),
                ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            ]
        )
        # The Host a call's request gets: where clients dial, as the card says.
        add_service(server, self.endpoint_url, grpc_interface_url() or self.address)
        server.add_insecure_port(self.address)
        await server.start()
        self.server = server
        logger.info("gRPC: serving A2A on %s", self.address)

    async def stop(self, grace: float) -> None:
        """Stop taking calls; the calls in flight get ``grace`` seconds, then end."""
        server, self.server = self.server, None
        if server is not None:
            await server.stop(max(0.0, grace))
