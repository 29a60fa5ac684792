"""What a failed run says on the wire: what failed, in words.

A failed Task's status message is public — every dialect, stream and push
notification renders it — so it never carries an exception's class or text
(a model's garbage once put ``UnicodeDecodeError: 'utf-8' codec can't decode
byte 0xff…`` there). The exception goes to the server log, with its
traceback, and to the fail event's private detail (the admin's timeline);
when the words alone cannot say what went wrong, the message names a
reference that finds that log line.

=======================================  ============================================
the exception                            the words
=======================================  ============================================
the run outlived RUN_TIMEOUT             The run took longer than RUN_TIMEOUT (Ns)
an answer over MAX_MODEL_RESPONSE_BYTES  The model's answer was larger than N bytes
an answer of the wrong shape, not JSON,  The model's answer could not be read (why)
not UTF-8
toolnexus's ProviderError                The model service answered HTTP 503 (Service
                                         Unavailable)
a timeout (toolnexus's RunTimeout, a     The model did not answer in time
socket's)
a network error                          The model service could not be reached
a canceled run                           The run was cancelled
an answer the run cannot resume from     The run could not be resumed from where it
                                         stopped (…reference)
a broken CLIENT / TOOLKIT                The agent is not configured to run (…reference)
anything else                            The run failed (an internal error; see the
                                         server log, reference 0123456789ab)
=======================================  ============================================
"""

from __future__ import annotations

import http
import json
import logging
import uuid
from dataclasses import dataclass
from typing import Any

import toolnexus
from django.core.exceptions import ImproperlyConfigured
from toolnexus.client import ProviderError

from ..agent.modelanswer import ModelAnswerError
from ..agent.replay import ResumeError
from ..agent.runtime import RunDeadlineExceeded
from ..runtime.outages import log_exception

#: The longest exception text kept for operators (the event's private detail).
MAX_CAUSE_CHARS = 2000


@dataclass(frozen=True)
class Failure:
    """A run's failure: ``reason`` for the wire; ``cause`` (the exception)
    and ``reference`` (in the log line) for operators."""

    reason: str
    cause: str
    reference: str
    #: Whether the words say what failed (else it is an internal error: logged as one).
    known: bool

    @property
    def detail(self) -> dict[str, Any]:
        """What the fail event keeps privately."""
        return {"cause": self.cause, "reference": self.reference}


def failure_of(exc: BaseException, *, what: str | None = None) -> Failure:
    """The failure ``exc`` ended a run with; ``what`` replaces the words (an
    internal error either way: the message points to the log)."""
    reference = uuid.uuid4().hex[:12]
    words, hint = (what, "an internal error") if what else _words(exc)
    if hint:
        words = f"{words} ({hint}; see the server log, reference {reference})"
    cause = f"{type(exc).__name__}: {exc}"
    if exc.__cause__ is not None:  # what our own error words came from (a decode error, say)
        cause += f" (from {type(exc.__cause__).__name__}: {exc.__cause__})"
    return Failure(words, cause[:MAX_CAUSE_CHARS], reference, known=hint is None)


def log_failure(logger: logging.Logger, task_id: str, failure: Failure, exc: BaseException) -> None:
    """The log line the reference finds: the words, and the exception with
    its traceback (an ERROR for an internal one, else a WARNING) — or, for a
    database that is down, the error's first line."""
    log_exception(
        logger,
        "Task %s: %s [reference %s]",
        task_id,
        failure.reason,
        failure.reference,
        level=logging.WARNING if failure.known else logging.ERROR,
        exc=exc,
    )


def _words(exc: BaseException) -> tuple[str, str | None]:
    """What failed, and — when that is not all it takes to understand it —
    what kind of error (the message then names the log's reference)."""
    if isinstance(exc, RunDeadlineExceeded | ModelAnswerError):
        return str(exc), None  # this app's own words
    if isinstance(exc, toolnexus.RunCancelled):
        return "The run was cancelled", None
    if isinstance(exc, ProviderError):
        return f"The model service answered HTTP {exc.status}{_phrase(exc.status)}", None
    if isinstance(exc, toolnexus.RunTimeout | TimeoutError) or isinstance(
        getattr(exc, "reason", None), TimeoutError
    ):
        return "The model did not answer in time", None
    if isinstance(exc, UnicodeDecodeError | json.JSONDecodeError):
        # From a transport of the project's own (the default one words these itself).
        return "The model's answer could not be read", None
    if isinstance(exc, OSError):  # urllib's URLError, a refused or reset connection
        return "The model service could not be reached", None
    if isinstance(exc, ResumeError):
        return "The run could not be resumed from where it stopped", "an internal error"
    if isinstance(exc, ImproperlyConfigured):
        return "The agent is not configured to run", "a configuration error"
    return "The run failed", "an internal error"


def _phrase(status: int) -> str:
    try:
        return f" ({http.HTTPStatus(status).phrase})"
    except ValueError:
        return ""
