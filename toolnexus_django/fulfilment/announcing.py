"""The signals a run's end sends (``run_finished``, ``awaiting_human``)."""

from __future__ import annotations

import logging
from typing import Any

from .. import lifecycle
from ..lifecycle import states
from ..signals import awaiting_human, run_finished
from ..stores.base import Task, state_of

logger = logging.getLogger("toolnexus_django.fulfilment")


def announce(task: Task, result: Any) -> None:
    """The signals of a finished run (``run_finished``, ``awaiting_human``)."""
    state = state_of(task)
    public = lifecycle.public_task(task)
    responses = run_finished.send_robust(
        sender=run_finished, task_id=task["id"], state=state, task=public, result=result
    )
    if state in states.AWAITING_HUMAN:
        request = lifecycle.read(task).pending
        responses += awaiting_human.send_robust(
            sender=awaiting_human, task_id=task["id"], task=public, request=request
        )
    for receiver, response in responses:
        if isinstance(response, Exception):
            logger.error("signal receiver %r raised %r", receiver, response)
