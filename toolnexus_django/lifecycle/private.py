"""The server-side section of a stored Task, typed.

Stores persist it as plain JSON under ``task["_private"]``; nothing outside
the lifecycle and the stores reads or writes its keys. :func:`read` gives a
:class:`Private`, :func:`write` puts one back. Keys this version does not
know — the stores' own (``revision``, ``events``) and any a newer version
wrote — are carried through untouched in ``extra``.

=============  ====================================================  =========
key            holds                                                 written by
=============  ====================================================  =========
v              the layout's version (1)                              lifecycle
owner          the owner's id (the DRF user's pk as text), or null   submit
input          ``{"text": ...}``: the message the run starts from;   submit
               ``"new_context": true`` when submit made the
               contextId up (no conversation to load)
phase          queued | running | answered | resuming | waiting      every move
pending        the Request the run waits on (toolnexus ``Request``)  suspend
transcript     the messages to resume from; ``style`` their shape    suspend
halt           the halted call: ``{"tool", "arguments", "source",    suspend
               "schema", "skill"}`` (its input schema; the skill the run
               loaded last), for the review queue's filters and
               the edit form
review         reviewers on the waiting Request: ``{"hold": {"by",   review_*,
               "at"}, "approvals": [{"by", "at", "comment"}],        remind,
               "reminded", "escalated"}`` (a hold stored before      escalate
               the rename is a ``"claim"``)
reviewed       what the last answered Request's reviewer saw:        answer
               ``{"pending", "halt", "transcript", "style"}``; kept
               after the run ends (the read-only review page)
answer         the Answer taken, until the resumed run ends          answer
approved_by    the reviewers who approved it, in order (the          answer
               answered call's ``current_run().approved_by``)
lease          ``{"owner", "until"}``: which worker, until when      claim, renew
worker         who ran it last (kept after the lease)                claim
attempts       runs started, in all; ``segment_attempts``: in the    claim, resume
               current run segment (the first run, or a resume
               after an answer), what MAX_ATTEMPTS counts; a clean
               end (a suspension) starts a new segment
seq            the number of the Task's last event                   every move
error          why it failed                                         fail
usage, turns   what the last run used (to its end, or its            complete,
               suspension)                                           suspend
first_text_ms  milliseconds from the start of the last run to its    complete,
               first chunk of text (a streamed run)                  suspend
tokens         ``{"input", "output"}``: tokens of all the Task's     complete,
               runs and resumes, summed (the dashboard's; the        suspend,
               django store mirrors them in columns)                 fail
streamed       someone streams the Task: its runs stream from the    submit
               model and keep their live updates (:mod:`.live`)
trace          W3C trace context (``traceparent``, ``tracestate``)   submit,
               of the request that started the Task (``start``)     answer
               and of the decision that answered it (``answer``):
               its runs continue that trace (TRACING)
revision       guarded transitions so far (compare-and-set)          stores
events         the Task's events, where the store keeps them inline  stores
=============  ====================================================  =========

Tasks stored by earlier versions read the same: ``resuming`` (an answer
being resumed) becomes ``answer`` with phase ``resuming``; ``audit`` (the
earlier decision trail) is kept for the event log to read (see
:func:`legacy_audit`). Without ``segment_attempts`` (stored before it
existed) a first run's segment is all its ``attempts``, and a resumed one
counts from its current attempt: an upgrade never gives up approved work
early.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..jsontree import copy_json
from ..stores.base import PRIVATE_KEY, Task, parse_instant
from . import states

VERSION = 1
_KNOWN = (
    "v",
    "owner",
    "input",
    "phase",
    "pending",
    "transcript",
    "style",
    "halt",
    "review",
    "reviewed",
    "answer",
    "approved_by",
    "resuming",
    "lease",
    "worker",
    "attempts",
    "segment_attempts",
    "seq",
    "message_key",
    "error",
    "usage",
    "turns",
    "first_text_ms",
    "tokens",
    "streamed",
    "trace",
)


@dataclass
class Lease:
    owner: str
    until: str  # ISO 8601, aware

    def expires(self) -> datetime | None:
        return parse_instant(self.until)


@dataclass
class Private:
    owner: str | None = None
    input_text: str = ""
    #: The Task's contextId was made by submit: no conversation has it yet.
    new_context: bool = False
    phase: str = ""
    pending: dict[str, Any] | None = None
    transcript: list[dict[str, Any]] | None = None
    style: str | None = None
    halt: dict[str, Any] | None = None
    review: dict[str, Any] | None = None
    reviewed: dict[str, Any] | None = None
    answer: dict[str, Any] | None = None
    approved_by: list[str] | None = None
    lease: Lease | None = None
    worker: str | None = None
    attempts: int = 0
    segment_attempts: int = 0
    seq: int = 0
    error: str | None = None
    usage: dict[str, Any] | None = None
    turns: int | None = None
    first_text_ms: int | None = None
    #: Tokens of every run so far: ``{"input": n, "output": n}`` (:meth:`add_usage`).
    tokens: dict[str, int] | None = None
    #: Sent by a streaming method: its runs stream (:mod:`.live`).
    streamed: bool = False
    #: Trace context to continue: ``{"start": {...}, "answer": {...}}`` (TRACING).
    trace: dict[str, Any] | None = None
    #: Who sent which messageId (idempotent sends: a repeat returns this Task).
    message_key: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def start_attempt(self) -> None:
        """A worker starts a run: one more attempt, in all and in this segment."""
        self.attempts += 1
        self.segment_attempts += 1

    def refund_attempt(self) -> None:
        """The run was given back unfinished (not interrupted): it does not count."""
        self.attempts = max(0, self.attempts - 1)
        self.segment_attempts = max(0, self.segment_attempts - 1)

    def add_usage(self, usage: dict[str, Any] | None) -> None:
        """Add a run's usage (toolnexus's ``prompt_tokens`` / ``completion_tokens``,
        or ``input_tokens`` / ``output_tokens``) to the Task's running sum."""
        if not usage:
            return
        spent = {
            "input": _whole(usage.get("prompt_tokens", usage.get("input_tokens"))),
            "output": _whole(usage.get("completion_tokens", usage.get("output_tokens"))),
        }
        so_far = self.tokens or {}
        self.tokens = {k: _whole(so_far.get(k)) + n for k, n in spent.items()}

    def end_segment(self) -> None:
        """The run ended cleanly (suspended, finished): the next run — a
        resume after an answer — starts a segment with the whole budget."""
        self.segment_attempts = 0

    def drop_suspension(self) -> None:
        """Forget what only a suspended run needs."""
        self.pending = self.transcript = self.style = self.answer = None
        self.halt = self.review = self.approved_by = None


def _whole(value: Any) -> int:
    try:
        return max(0, int(value or 0))
    except (TypeError, ValueError):
        return 0


def _segment_attempts(raw: dict[str, Any], phase: str) -> int:
    if "segment_attempts" in raw:
        return _whole(raw["segment_attempts"])
    # Stored before segments were counted: a first run has had no suspension,
    # so all its attempts are the segment's; a resumed run's are unknown, so
    # they count from the one under way (never more than were spent).
    if phase in (states.QUEUED, states.RUNNING):
        return _whole(raw.get("attempts"))
    return min(1, _whole(raw.get("attempts"))) if phase == states.RESUMING else 0


def _tokens(raw: Any) -> dict[str, int] | None:
    if not isinstance(raw, dict):
        return None
    return {"input": _whole(raw.get("input")), "output": _whole(raw.get("output"))}


def read(task: Task | None) -> Private:
    """The typed private section of ``task`` (an empty one when it has none)."""
    raw = (task or {}).get(PRIVATE_KEY)
    raw = raw if isinstance(raw, dict) else {}
    lease = raw.get("lease")
    answer = raw.get("answer")
    phase = raw.get("phase")
    state = str(((task or {}).get("status") or {}).get("state") or "")
    if not isinstance(answer, dict) and isinstance(raw.get("resuming"), dict):
        answer, phase = raw["resuming"], phase or states.RESUMING  # an earlier version's
    if not isinstance(phase, str) or phase not in states.PHASES:
        phase = states.ANSWERED if state == states.WORKING and answer else ""
        phase = phase or states.default_phase(state)
    given = raw.get("input")
    given = given if isinstance(given, dict) else {}
    owner = raw.get("owner")
    return Private(
        owner=None if owner is None else str(owner),
        input_text=str(given.get("text") or ""),
        new_context=given.get("new_context") is True,
        phase=phase,
        pending=raw.get("pending") if isinstance(raw.get("pending"), dict) else None,
        transcript=raw.get("transcript") if isinstance(raw.get("transcript"), list) else None,
        style=raw.get("style") if isinstance(raw.get("style"), str) else None,
        halt=raw.get("halt") if isinstance(raw.get("halt"), dict) else None,
        review=raw.get("review") if isinstance(raw.get("review"), dict) else None,
        reviewed=raw.get("reviewed") if isinstance(raw.get("reviewed"), dict) else None,
        answer=answer if isinstance(answer, dict) else None,
        approved_by=[str(a) for a in raw["approved_by"]]
        if isinstance(raw.get("approved_by"), list)
        else None,
        lease=Lease(str(lease.get("owner") or ""), str(lease.get("until") or ""))
        if isinstance(lease, dict)
        else None,
        worker=raw.get("worker") if isinstance(raw.get("worker"), str) else None,
        attempts=_whole(raw.get("attempts")),
        segment_attempts=_segment_attempts(raw, phase),
        seq=_whole(raw.get("seq")),
        error=raw.get("error") if isinstance(raw.get("error"), str) else None,
        usage=raw.get("usage") if isinstance(raw.get("usage"), dict) else None,
        turns=raw.get("turns") if isinstance(raw.get("turns"), int) else None,
        first_text_ms=raw["first_text_ms"] if isinstance(raw.get("first_text_ms"), int) else None,
        tokens=_tokens(raw.get("tokens")),
        streamed=raw.get("streamed") is True,
        trace=raw.get("trace") if isinstance(raw.get("trace"), dict) else None,
        message_key=raw.get("message_key") if isinstance(raw.get("message_key"), str) else None,
        extra={k: copy_json(v) for k, v in raw.items() if k not in _KNOWN},
    )


def write(task: Task, private: Private) -> None:
    """Put ``private`` back as ``task``'s private section (in place)."""
    out: dict[str, Any] = {**private.extra, "v": VERSION, "owner": private.owner}
    out["input"] = {"text": private.input_text}
    if private.new_context:
        out["input"]["new_context"] = True
    out["phase"] = private.phase
    for key in (
        "pending", "transcript", "style", "halt", "review", "reviewed", "answer",
        "approved_by", "worker",
        "error",
        "usage", "turns", "first_text_ms", "tokens", "message_key",
    ):  # fmt: skip
        value = getattr(private, key)
        if value is not None:
            out[key] = value
    if private.lease is not None:
        out["lease"] = {"owner": private.lease.owner, "until": private.lease.until}
    out["attempts"] = private.attempts
    out["segment_attempts"] = private.segment_attempts
    out["seq"] = private.seq
    if private.streamed:
        out["streamed"] = True
    if private.trace:
        out["trace"] = private.trace
    task[PRIVATE_KEY] = out


def seq_of(task: Task | None) -> int:
    """The number of ``task``'s last event: :func:`read`'s ``seq``, read alone."""
    raw = (task or {}).get(PRIVATE_KEY)
    return _whole(raw.get("seq")) if isinstance(raw, dict) else 0


def owner_of(task: Task | None) -> str | None:
    return read(task).owner


def phase_of(task: Task | None) -> str:
    return read(task).phase


def legacy_audit(task: Task | None) -> list[dict[str, Any]]:
    """The decision trail an earlier version kept in the Task (read-only)."""
    audit = read(task).extra.get("audit")
    return [e for e in audit if isinstance(e, dict)] if isinstance(audit, list) else []
