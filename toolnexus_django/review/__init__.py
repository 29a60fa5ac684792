"""Review: the reviewer's side of a Task that waits on a person — every
move a reviewer (or the requester, or code acting for one) makes, and the
rules that say whether it may be made. The lifecycle makes the moves
(:mod:`..lifecycle.answers`); the admin's pages call these.

=========================  ======================================================
module                     holds
=========================  ======================================================
:mod:`.answering`          :func:`answer` (the rules, then the move) of a
                           :class:`Verdict`, four eyes' first approvals;
                           :func:`decide_task`, the one door by Task id, and
                           :func:`answer_task`, its keyword form
:mod:`.reviewers`          who reviews (the permission, segregation of duties);
                           who holds a Task, who approved it (four eyes)
:mod:`.holds`              a reviewer holding a Task, releasing it
:mod:`.edits`              edit, then approve: a reviewer's arguments for the call
:mod:`.bulk`               one decision for many Tasks
:mod:`.cancel`             :func:`cancel_task`
:mod:`.answer_forms`       which forms answer a Request, the edit form among them;
                           :mod:`.forms`, the forms; :mod:`.schema_forms`, the
                           reply form generated from data.schema
:mod:`.notifications`      the reviewer e-mail when a Task starts waiting
:mod:`.reminders`          :func:`remind_due`: reminders, escalations before expiry
=========================  ======================================================

Expired Requests are answered by the sweep (``fulfilment.sweep.expire_due``,
re-exported here).
"""

from ..fulfilment.sweep import expire_due
from ..lifecycle import Verdict
from ..lifecycle.requests import (
    DECISIONS,
    AnswerRefused,
    answerers_for,
    check_answer_data,
    normalize_answerers,
)
from .answering import answer, answer_task, decide_task
from .bulk import BulkResult, decide_many
from .cancel import NotCancelable, TaskNotFound, cancel_task
from .holds import hold_task, release_task
from .reminders import remind_due
from .reviewers import ANSWER_PERMISSION, hold_of

__all__ = [
    "ANSWER_PERMISSION",
    "DECISIONS",
    "AnswerRefused",
    "BulkResult",
    "NotCancelable",
    "TaskNotFound",
    "Verdict",
    "answer",
    "answer_task",
    "answerers_for",
    "cancel_task",
    "check_answer_data",
    "decide_many",
    "decide_task",
    "expire_due",
    "hold_of",
    "hold_task",
    "normalize_answerers",
    "release_task",
    "remind_due",
]
