"""What runs per process, behind one :func:`start` / :func:`stop`.

The pieces are the registered per-process values and hooks of
:mod:`.registry` (the one registry :func:`stop` walks), in :class:`Stage`
order:

- WAITS: blocking sends and streams (``a2a.follow``); start() lets them wait
- SWEEP: the sweep thread (``fulfilment.sweep``); start() starts it
- RUNS: runs in flight (``fulfilment.runs``); first run
- LEASES: the lease keeper (``fulfilment.leases``); first run
- PUSH: the push pool (``push.delivery``); first delivery
- LOOP: the runtime loop, its toolkit and model client (``agent.runtime``); first run
- TOOLS: the tool threads (``tools.budget``); first tool call
- DATABASE: the database threads (:mod:`.dbthreads`); start() starts them

Why hooks rather than a module that imports the pieces: this package sits at
the bottom of the layers (the stores and every package above use its
registry and threads), so it cannot import what runs above it. Each piece
registers itself where it is defined (a :class:`PerProcess` with a
``stage``), and the app's ``ready()`` imports the modules that define them,
so the registry is complete before a server starts. The runtime loop is
here (:mod:`.loop`); its toolkit and model client are built in
``agent.runtime``, which reads the agent's settings and the project's tools
(above), and which so also holds the loop's per-process value.

:func:`start` is idempotent and optional: every piece not started by it
starts on first use, as before (tests, management commands, ``db_worker``).
The runtime loop is not built up front: building it builds the toolkit
(imports the project's tools, connects MCP servers) and that stays on the
first run.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import warnings

from django.db import connections

from ..conf import toolnexus_settings
from .registry import Hook, PerProcess, Piece, Stage, pieces

logger = logging.getLogger("toolnexus_django.runtime")

#: The environment variable that set the ASGI shutdown's grace before
#: ``TOOLNEXUS["GRACE_SECONDS"]``: still read (with a warning) for one release.
DEPRECATED_GRACE_ENV = "TOOLNEXUS_GRACE"

_lock = threading.Lock()
_stop_by: float | None = None


def grace_seconds() -> float:
    """``TOOLNEXUS["GRACE_SECONDS"]`` (or, unset there, the deprecated
    ``TOOLNEXUS_GRACE`` environment variable)."""
    env = os.environ.get(DEPRECATED_GRACE_ENV)
    if env and "GRACE_SECONDS" not in toolnexus_settings.user_settings:
        warnings.warn(
            f"the {DEPRECATED_GRACE_ENV} environment variable is deprecated: "
            'set TOOLNEXUS["GRACE_SECONDS"]',
            DeprecationWarning,
            stacklevel=2,
        )
        try:
            seconds = float(env)
        except ValueError:
            seconds = -1.0
        if seconds >= 0:  # NaN fails this too
            return seconds
        # Read while stopping: a typo must not turn a graceful stop into a crash.
        logger.warning(
            "%s=%r is not a number of seconds >= 0: ignored, GRACE_SECONDS applies",
            DEPRECATED_GRACE_ENV,
            env,
        )
    return float(toolnexus_settings.GRACE_SECONDS)


def start() -> None:
    """Bring this process's runtime up (idempotent). Once a server announced
    a stop (:func:`stop_by`, a stop signal while it booted), nothing starts."""
    with _lock:
        if _stop_by is not None:
            return
        for piece in pieces():
            piece.start_piece()


def stop_by(deadline: float) -> None:
    """A server began stopping and must be done by ``deadline``
    (``time.monotonic()``): the next :func:`stop` without a grace gives what
    is left of it (the HTTP drain already spent some)."""
    global _stop_by
    _stop_by = deadline


def stop(grace: float | None = None) -> bool:
    """Stop this process's runtime, stage by stage: no new work, running
    Tasks get what is left of ``grace`` seconds (default: the time a server
    announced with :func:`stop_by`, else ``GRACE_SECONDS``), what did not
    finish is handed back, then the pools, the loop and the database threads
    last. Returns whether everything stopped in time."""
    global _stop_by
    if grace is None:
        announced = _stop_by
        grace = grace_seconds() if announced is None else announced - time.monotonic()
    deadline = time.monotonic() + max(0.0, grace)
    in_time = True
    with _lock:
        for piece in pieces():
            if not _stop_piece(piece, max(0.0, deadline - time.monotonic())):
                in_time = False
        connections.close_all()
        _stop_by = None  # carried out: a later start() starts again
    if not in_time:
        logger.warning("process %s: the runtime did not stop within the grace", os.getpid())
    return in_time


def _stop_piece(piece: Piece, timeout: float) -> bool:
    try:
        stopped = piece.stop_piece(timeout)
    except Exception:  # one piece failing to stop must not keep the others running
        logger.exception("stopping %s failed", piece.name)
        return False
    if not stopped:
        logger.warning("%s did not stop within the grace", piece.name)
    return stopped


__all__ = ["Hook", "PerProcess", "Stage", "grace_seconds", "pieces", "start", "stop", "stop_by"]
