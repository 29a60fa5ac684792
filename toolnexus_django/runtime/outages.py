"""A database that is down is one log line per failure; a bug keeps its traceback.

During an outage (a restart, a failover, a connection the server dropped)
every query of a request, a run, a sweep, a lease renewal or a wake-up poll
fails with Django's ``OperationalError`` or ``InterfaceError``. Each is one
event worth a line — what failed, and the error's first line — not a
traceback: hundreds of tracebacks of the same outage hide the one that is a
bug. :func:`log_exception` is ``logger.exception`` with that difference, for
every place that logs a failure it then gets over (answers -32603, retries
next beat, leaves the Task to recovery).
"""

from __future__ import annotations

import logging
import sys

from django.db import InterfaceError, OperationalError

#: What a database that is down, or that dropped the connection, raises.
DATABASE_DOWN: tuple[type[BaseException], ...] = (OperationalError, InterfaceError)
#: How much of the error's first line the log keeps.
MAX_LINE_CHARS = 200


def database_down(exc: BaseException | None) -> BaseException | None:
    """The database error ``exc`` is, or was raised from (``raise ... from``),
    when the database is down or dropped the connection; else None."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, DATABASE_DOWN):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__
    return None


def first_line(exc: BaseException) -> str:
    """``OperationalError: connection failed: ...`` — the type and the
    message's first line, bounded."""
    lines = str(exc).strip().splitlines()
    said = lines[0].strip()[:MAX_LINE_CHARS] if lines else ""
    return f"{type(exc).__name__}: {said}" if said else type(exc).__name__


def log_exception(
    logger: logging.Logger,
    message: str,
    *args: object,
    level: int = logging.ERROR,
    exc: BaseException | None = None,
) -> None:
    """Log ``message % args`` at ``level`` for ``exc`` (default: the exception
    being handled): with its traceback, unless the database is down — then
    one line, ``<message>: database unavailable (<the error's first line>)``."""
    if exc is None:
        exc = sys.exc_info()[1]
    down = database_down(exc)
    if down is not None:
        logger.log(level, f"{message}: database unavailable (%s)", *args, first_line(down))
    else:
        logger.log(level, message, *args, exc_info=exc if exc is not None else False)


__all__ = ["DATABASE_DOWN", "database_down", "first_line", "log_exception"]
