"""The Task's lifecycle: its states and phases, the typed private section,
one verb per move, the events the moves record, and the wake-ups that tell
waiters a Task moved.

Everything that changes a Task goes through here; nothing else reads or
writes the private section's keys (the stores persist it as plain JSON).

======================  ==========================================================
module                  holds
======================  ==========================================================
:mod:`.states`          states, phases, which move is legal from which phase
:mod:`.private`         the typed private section (:class:`Private`)
:mod:`.verbs`           a run's moves: submit, claim, start_resume, renew,
                        suspend, complete, fail, release, requeue, give_up
                        (and the attempt budget of a run segment)
:mod:`.answers`         a person's moves: answer, expire, cancel
:mod:`.reviewing`       reviewers' moves on a waiting Task: claim, release,
                        a first approval (four eyes); reminder marks
:mod:`.edits`           edit, then approve: a reviewer's arguments for the call
:mod:`.moves`           what every move shares (legality, compare-and-set, event)
:mod:`.events`          the event each move records
:mod:`.requests`        who may answer a Request, what an answer must look like
:mod:`.messages`        messages and parts in the canonical shape
:mod:`.parts`           what a valid part is; safe rendering of stored ones
:mod:`.public`          what of a Task anyone may see
:mod:`.wakeups`         waking blocking sends and streams when a Task moves
======================  ==========================================================
"""

from .answers import answer, cancel, expire
from .events import Event
from .moves import Moved, interrupted_message
from .private import Lease, Private, legacy_audit, owner_of, phase_of, read, write
from .public import public_task
from .requests import ANSWER_PERMISSION, DECISIONS, AnswerRefused
from .reviewing import (
    approvals_needed,
    approvals_of,
    claim_of,
    claim_review,
    mark_sent,
    release_review,
)
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
    "ANSWER_PERMISSION",
    "AWAITING_HUMAN",
    "DECISIONS",
    "SETTLED",
    "TERMINAL",
    "AnswerRefused",
    "Event",
    "IllegalMove",
    "Lease",
    "Moved",
    "Private",
    "answer",
    "approvals_needed",
    "approvals_of",
    "cancel",
    "claim",
    "claim_of",
    "claim_review",
    "complete",
    "expire",
    "fail",
    "give_up",
    "interrupted_message",
    "legacy_audit",
    "mark_sent",
    "out_of_attempts",
    "owner_of",
    "phase_of",
    "public_task",
    "read",
    "release",
    "release_review",
    "renew",
    "requeue",
    "start_resume",
    "submit",
    "suspend",
    "write",
]
