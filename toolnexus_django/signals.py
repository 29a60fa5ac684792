"""Signals the app sends.

``run_finished`` — a run stopped: the Task reached ``completed``, ``failed`` or
``input-required`` (SPEC §7B's onTask). Keyword arguments:

- ``task_id``: the Task's id
- ``state``: the state it reached
- ``task``: the public Task (what GetTask returns)
- ``result``: the toolnexus ``RunResult`` (turns, usage, tool calls, model),
  or ``None`` when the run raised before producing one

Receivers run on the worker that ran the Task; an exception in one is logged
and never changes the Task.
"""

from __future__ import annotations

from django.dispatch import Signal

run_finished = Signal()
