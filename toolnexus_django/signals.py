"""Signals the app sends.

``run_finished`` — a run stopped: the Task reached ``completed``, ``failed``,
``input-required`` or ``auth-required`` (SPEC §7B's onTask) — also when a sweep
gives up an interrupted Task (``failed``, ``result=None``). Not for a cancel,
which ends the run without an outcome. Keyword arguments:

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

#: A Task started waiting on a person (``input-required`` / ``auth-required``).
#: Keyword arguments: ``task_id``, ``task`` (public), ``request`` (the pending
#: Request as a dict: id, kind, prompt, url, data, expiresAt).
awaiting_human = Signal()

#: Someone (or expiry) answered a waiting Task; its run resumes in the
#: background. Keyword arguments: ``task_id``, ``answer`` (toolnexus Answer),
#: ``event`` (the audit entry: actor, decision, comment, from/to state, ...).
task_answered = Signal()

#: A Task moved (every transition but a lease renewal), once its change is
#: stored. Keyword arguments: ``task_id``, ``event`` (a dict: ``seq``, ``kind``,
#: ``from_state``, ``to_state``, ``at``, ``actor``, ``actor_kind``, ``via``,
#: ``public``, ``private``). Sent where the move was made (a worker, a request).
task_event = Signal()

#: A ``tools/call`` at the MCP endpoint ended (also an unknown tool, a busy
#: refusal, a timeout, a suspended tool), once its audit row is stored.
#: Keyword arguments: ``call`` (a dict: ``at``, ``caller``, ``caller_name``,
#: ``tool``, ``arguments_digest``, ``duration_ms``, ``outcome`` "ok" | "error",
#: ``reason``, ``request_id``) and ``record`` (the ``McpCall`` row, or None with
#: ``MCP["AUDIT"]`` off). Sent in the serving process; a receiver's exception
#: is logged and never changes the call's result.
mcp_called = Signal()

#: A waiting Task's Request expires within ``REVIEW["REMIND_BEFORE"]``
#: seconds (``review_reminder``), and is still unanswered
#: ``REVIEW["ESCALATE_AFTER"]`` seconds after the reminder
#: (``review_escalation``). Each is sent once per Request, by whichever sweeping
#: process records it first, whether or not e-mail addresses are set (so a
#: project can send them to chat instead). Keyword arguments: ``task_id``,
#: ``task`` (public), ``request`` (the pending Request as a dict),
#: ``expires_at`` (an aware datetime). A receiver's exception is logged and
#: never changes the Task.
review_reminder = Signal()
review_escalation = Signal()
