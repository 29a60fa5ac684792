"""Review: people answering the Tasks that wait on them, and canceling.

=========================  ======================================================
module                     holds
=========================  ======================================================
:mod:`.answering`          :func:`answer_task`, the one way an answer goes in
:mod:`.cancel`             :func:`cancel_task`
:mod:`.forms`              the admin's answer forms (generated from data.schema)
:mod:`.notifications`      the reviewer e-mail when a Task starts waiting
:mod:`.reminders`          :func:`remind_due`: reminders, escalations before expiry
=========================  ======================================================

Expired Requests are answered by the sweep (``fulfilment.sweep.expire_due``,
re-exported here).
"""

from ..fulfilment.sweep import expire_due
from ..lifecycle.requests import ANSWER_PERMISSION, DECISIONS, AnswerRefused
from .answering import answer_task, answerers_for, check_answer_data, normalize_answerers
from .cancel import NotCancelable, TaskNotFound, cancel_task
from .reminders import remind_due

__all__ = [
    "ANSWER_PERMISSION",
    "DECISIONS",
    "AnswerRefused",
    "NotCancelable",
    "TaskNotFound",
    "answer_task",
    "answerers_for",
    "cancel_task",
    "check_answer_data",
    "expire_due",
    "normalize_answerers",
    "remind_due",
]
