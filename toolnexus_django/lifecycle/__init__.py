"""The Task's lifecycle: its states and phases, the typed private section,
one verb per move, the events the moves record, and the wake-ups that tell
waiters a Task moved.

Everything that changes a Task goes through here; nothing else reads or
writes the private section's keys (the stores persist it as plain JSON).
Whether a person's answer may be taken (who answers, four eyes, edits) and
what a reviewer's move means are the reviewer's side, :mod:`..review`.

======================  ==========================================================
module                  holds
======================  ==========================================================
:mod:`.states`          states, phases, which move is legal from which phase
:mod:`.private`         the typed private section (:class:`Private`)
:mod:`.verbs`           a run's moves: submit, claim, start_resume, renew,
                        suspend, complete, fail, release, requeue, give_up
                        (and the attempt budget of a run segment)
:mod:`.answers`         a person's moves: an answer taken (a :class:`Verdict`),
                        expire, cancel, and the moves that keep a waiting
                        Task waiting (:func:`review_move`)
:mod:`.moves`           what every move shares (legality, compare-and-set, event)
:mod:`.events`          the event each move records
:mod:`.requests`        who may answer a Request, what an answer must look like
:mod:`.messages`        messages and parts in the canonical shape
:mod:`.public`          what of a Task anyone may see: its public keys, its
                        valid parts (what a valid part is)
:mod:`.wakeups`         waking blocking sends and streams when a Task moves
======================  ==========================================================
"""

from .answers import (
    Edit,
    Verdict,
    cancel,
    expire,
    refuse_not_waiting,
    review_move,
    take_answer,
    waiting_on,
)
from .events import Event
from .moves import Moved, interrupted_message
from .private import Lease, Private, legacy_audit, owner_of, phase_of, read, write
from .public import public_task
from .requests import DECISIONS, AnswerRefused
from .states import AWAITING_HUMAN, SETTLED, TERMINAL, IllegalMove
from .verbs import (
    claim,
    complete,
    fail,
    give_up,
    out_of_attempts,
    release,
    renew,
    requeue,
    start_resume,
    submit,
    suspend,
)

__all__ = [
    "AWAITING_HUMAN",
    "DECISIONS",
    "SETTLED",
    "TERMINAL",
    "AnswerRefused",
    "Edit",
    "Event",
    "IllegalMove",
    "Lease",
    "Moved",
    "Private",
    "Verdict",
    "cancel",
    "claim",
    "complete",
    "expire",
    "fail",
    "give_up",
    "interrupted_message",
    "legacy_audit",
    "out_of_attempts",
    "owner_of",
    "phase_of",
    "public_task",
    "read",
    "refuse_not_waiting",
    "release",
    "renew",
    "requeue",
    "review_move",
    "start_resume",
    "submit",
    "suspend",
    "take_answer",
    "waiting_on",
    "write",
]
