"""The Task's states, the phases hidden inside them, and which move is legal when.

The public states are A2A's (the canonical, v0.3 spelling). Two of them hide
more than one situation, so the lifecycle names those explicitly as *phases*:

=================  ==========  ==================================================
state              phase       meaning
=================  ==========  ==================================================
submitted          queued      saved, waiting for a worker to take it
working            running     a worker holds its lease and runs the model
working            answered    a person answered; waiting for a worker to resume
working            resuming    a worker holds its lease and resumes the run
input-required,    waiting     the run stopped on a Request; no lease, no worker
auth-required
completed, failed, done        terminal: never changes again
canceled, rejected
=================  ==========  ==================================================
"""

from __future__ import annotations

from ..stores.base import AWAITING_HUMAN_STATES, TERMINAL_STATES

SUBMITTED = "submitted"
WORKING = "working"
INPUT_REQUIRED = "input-required"
AUTH_REQUIRED = "auth-required"
COMPLETED = "completed"
FAILED = "failed"
CANCELED = "canceled"
REJECTED = "rejected"

STATES = (
    SUBMITTED,
    WORKING,
    INPUT_REQUIRED,
    AUTH_REQUIRED,
    COMPLETED,
    FAILED,
    CANCELED,
    REJECTED,
)
TERMINAL = TERMINAL_STATES
AWAITING_HUMAN = AWAITING_HUMAN_STATES
#: States a blocking send waits for and a stream ends on.
SETTLED = TERMINAL | AWAITING_HUMAN

QUEUED = "queued"
RUNNING = "running"
ANSWERED = "answered"
RESUMING = "resuming"
WAITING = "waiting"
DONE = "done"
PHASES = (QUEUED, RUNNING, ANSWERED, RESUMING, WAITING, DONE)

#: Phases in which a worker holds the Task's lease.
LEASED = frozenset({RUNNING, RESUMING})

#: Each move (the kind of its event) and the phases it may start from.
#: ``submit`` starts from nothing; every move but ``renew`` records an event.
MOVES: dict[str, frozenset[str]] = {
    "submit": frozenset(),
    "claim": frozenset({QUEUED}),
    "renew": LEASED,
    "suspend": LEASED,
    "complete": LEASED,
    "fail": LEASED | {QUEUED, ANSWERED},
    "answer": frozenset({WAITING}),
    "expire": frozenset({WAITING}),
    "resume": frozenset({ANSWERED}),
    "cancel": frozenset({QUEUED, RUNNING, ANSWERED, RESUMING, WAITING}),
    "release": LEASED,
    # A lapsed lease; or an answered Task whose resume was never taken.
    "requeue": LEASED | {ANSWERED},
    "give_up": LEASED,
    # A reviewer's moves on a waiting Task: they change who holds it (or how
    # many approvals it has) but not its public state, so they are never sent
    # on the wire (UNSEEN).
    "review_hold": frozenset({WAITING}),
    "review_release": frozenset({WAITING}),
    "review_approval": frozenset({WAITING}),
    "remind": frozenset({WAITING}),
    "escalate": frozenset({WAITING}),
}

#: Moves recorded in the event log that streams and push notifications skip:
#: the Task's public side is as it was.
UNSEEN = frozenset({"review_hold", "review_release", "review_approval", "remind", "escalate"})


def default_phase(state: str) -> str:
    """The phase of a state that has only one."""
    if state == SUBMITTED:
        return QUEUED
    if state in AWAITING_HUMAN:
        return WAITING
    if state in TERMINAL:
        return DONE
    return RUNNING


class IllegalMove(ValueError):
    """A move the state machine does not allow from the Task's phase."""

    def __init__(self, kind: str, task_id: str, state: str, phase: str) -> None:
        super().__init__(f"Task {task_id[:100]}: {kind!r} is not allowed while {state} ({phase})")
        self.kind = kind
        self.state = state
        self.phase = phase
