"""Testing helpers: run your agent's tools and Tasks offline, in your own tests.

A scripted model stands in for the LLM; :func:`run_task` runs a Task the way
the server would — your ``TOOLNEXUS`` settings, your toolkit, the owner's
permissions, the durable suspension — on the test's own thread, to its end
or to the Request it waits on; :func:`answer` answers that Request as a
given person, as the admin would, and runs the resumed run the same way::

    from toolnexus_django.testing import ScriptedModel, answer, call, run_task, say

    @pytest.mark.django_db(transaction=True)
    def test_a_claim_is_filed_once_approved(alice, rita):
        script = ScriptedModel(call("file_expense", amount=42, description="taxi"), say("Filed."))
        with script:
            waiting = run_task("file an expense of 42 for a taxi", owner=alice)
            assert waiting.state == "input-required" and not Expense.objects.exists()
            done = answer(waiting, as_user=rita, data={"cost_center": "travel"})
        assert done.state == "completed" and done.text == "Filed."
        assert Expense.objects.get().owner == alice
        assert "file_expense" in script.turns[0].offered

**The test database.** Tool bodies run on the app's tool threads, each with
its own database connection (as they do in production): they see only
committed rows, and what they write is committed. So these helpers need a
test whose transactions really commit — ``TransactionTestCase``, or
``@pytest.mark.django_db(transaction=True)`` — and refuse to run inside a
transaction (``TestCase``), where a tool would not see the test's rows and
its writes would outlive the test.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import toolnexus
from django.db import connections
from toolnexus import Answer, Request

from . import lifecycle
from .fulfilment import jobs
from .fulfilment.runner import run_fulfilment, run_resume
from .lifecycle.messages import message_text, new_id, text_part
from .lifecycle.requests import REQUESTER, REVIEWER
from .review import AnswerRefused, answer_task
from .stores import TaskStore, get_task_store, resolve_store
from .stores.base import Task

#: What a scripted model answers on one turn: a ``generate`` reply
#: (``{"content": ...}`` or ``{"tool_calls": [...]}``), or a function of the
#: request that returns one.
Step = Mapping[str, Any] | Callable[[dict[str, Any]], Mapping[str, Any]]


def call(name: str, /, **arguments: Any) -> dict[str, Any]:
    """A turn on which the model calls the tool ``name`` with ``arguments``."""
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def say(text: str) -> dict[str, Any]:
    """A turn on which the model answers ``text`` (the run ends with it)."""
    return {"content": text}


class ScriptExhausted(AssertionError):
    """The model was asked for more turns than its script has."""


@dataclass(frozen=True)
class Turn:
    """One call of the scripted model: what it was offered and sent, what it said."""

    #: The names of the tools the run offered the model on this turn.
    offered: frozenset[str]
    #: The messages it was sent (openai shape).
    messages: list[dict[str, Any]]
    #: What it answered.
    reply: dict[str, Any]


class ScriptedModel:
    """An offline model that answers from a script, one step per turn, and
    records every turn (:attr:`turns`). Built on toolnexus's public
    ``create_in_process_client``: the runs, tool calls and suspensions are
    toolnexus's own.

    Use it as a context manager (it becomes ``TOOLNEXUS["CLIENT"]`` inside,
    the rest of your settings unchanged), or put it in ``TOOLNEXUS["CLIENT"]``
    yourself: it is a factory of toolnexus Clients. Runs share one script,
    consumed in order; past its end a turn fails the run
    (:class:`ScriptExhausted`)."""

    def __init__(self, *steps: Step, model: str = "scripted-model") -> None:
        self.model = model
        self.turns: list[Turn] = []
        self._steps: list[Step] = list(steps)
        self._lock = threading.Lock()
        self._override: Any = None

    def then(self, *steps: Step) -> ScriptedModel:
        """Add steps to the end of the script."""
        with self._lock:
            self._steps.extend(steps)
        return self

    @property
    def offered(self) -> list[frozenset[str]]:
        """The tools offered on each turn so far, in order."""
        return [turn.offered for turn in self.turns]

    def generate(self, request: dict[str, Any]) -> dict[str, Any]:
        """toolnexus's ``generate``: the next step's reply."""
        offered = frozenset(
            t["function"]["name"]
            for t in request.get("tools") or ()
            if isinstance(t, dict) and isinstance(t.get("function"), dict)
        )
        with self._lock:
            if not self._steps:
                raise ScriptExhausted(
                    f"the scripted model was asked for turn {len(self.turns) + 1}, "
                    f"but its script has {len(self.turns)} step(s)"
                )
            step = self._steps.pop(0)
            reply = dict(step(request) if callable(step) else step)
            self.turns.append(Turn(offered, list(request.get("messages") or ()), reply))
        return reply

    def __call__(self) -> toolnexus.Client:
        return toolnexus.create_in_process_client(model=self.model, generate=self.generate)

    def __enter__(self) -> ScriptedModel:
        from django.conf import settings
        from django.test.utils import override_settings

        current = dict(getattr(settings, "TOOLNEXUS", None) or {})
        self._override = override_settings(TOOLNEXUS={**current, "CLIENT": self})
        self._override.enable()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._override is not None:
            self._override.disable()
            self._override = None


@dataclass(frozen=True)
class TaskRun:
    """A Task as a run left it."""

    task_id: str
    context_id: str | None
    #: ``completed``, ``failed``, ``input-required``, ``auth-required``, ...
    state: str
    #: The answer (completed), the Request's prompt (waiting) or the reason (failed).
    text: str
    #: The Request it waits on, or None.
    request: Request | None
    #: The Task as a peer sees it (``GetTask``).
    task: dict[str, Any] = field(repr=False)
    #: Why a failed run failed, as the server log has it (the exception; the
    #: wire says it in words only), else None.
    cause: str | None = None

    @classmethod
    def read(cls, task_id: str, store: TaskStore | None = None) -> TaskRun:
        """The Task ``task_id`` as it is now."""
        store = store or get_task_store()
        stored = store.get(task_id)
        if stored is None:
            raise LookupError(f"no Task {task_id!r}")
        failures = [e for e in store.events(task_id) if e.get("kind") in ("fail", "give_up")]
        cause = (failures[-1].get("private") or {}).get("cause") if failures else None
        public = lifecycle.public_task(stored)
        pending = lifecycle.read(stored).pending
        request = Request(**pending) if pending else None
        return cls(
            task_id=task_id,
            context_id=stored.get("contextId"),
            state=str(public["status"]["state"]),
            text=request.prompt if request is not None else _text_of(public),
            request=request,
            task=public,
            cause=cause,
        )


def run_task(
    text: str,
    *,
    owner: Any = None,
    context_id: str | None = None,
    store: TaskStore | str | None = None,
) -> TaskRun:
    """Send ``text`` as ``owner`` (a user; None or ``AnonymousUser``: an
    anonymous caller) and run the Task on this thread until it ends or waits
    on a person; the Task as the run left it."""
    _refuse_inside_a_transaction()
    tasks = _store(store)
    message: dict[str, Any] = {"role": "user", "parts": [text_part(text)], "messageId": new_id()}
    if context_id:
        message["contextId"] = context_id
    task = lifecycle.submit(tasks, message, owner=_owner_id(owner), text=text, via="test").task
    run_fulfilment(task["id"], tasks)
    return TaskRun.read(task["id"], tasks)


def answer(
    run: TaskRun | str,
    *,
    as_user: Any = None,
    ok: bool = True,
    data: dict[str, Any] | None = None,
    reason: str | None = None,
    arguments: dict[str, Any] | None = None,
    role: str = REVIEWER,
    comment: str = "",
    store: TaskStore | str | None = None,
) -> TaskRun:
    """Answer the Request the Task waits on, as the admin or a peer would
    (:func:`toolnexus_django.review.answer_task`: who may answer, its schema,
    four eyes, edits), then run the resumed run on this thread; the Task as
    it left it — still waiting, when a four-eyes tool needs another approval.

    ``as_user``: the reviewer (``role="reviewer"``, the default: they need
    the ``answer_task`` permission), or the Task's owner answering their own
    Request (``role="requester"``). ``ok=False`` declines (``reason``,
    default ``"declined"``); ``data``: a reply; ``arguments``: the call's
    arguments edited before approving. Raises :class:`AnswerRefused` when
    the answer is not allowed, as the admin refuses it."""
    _refuse_inside_a_transaction()
    tasks = _store(store)
    task_id = run.task_id if isinstance(run, TaskRun) else str(run)
    task = tasks.get(task_id)
    pending = lifecycle.read(task).pending if task is not None else None
    if pending is None:
        raise ValueError(f"Task {task_id!r} waits on no Request")
    reason = reason or (None if ok else "declined")
    given = Answer(id=pending["id"], ok=ok, data=data, reason=reason)
    decision = "decline" if not ok else ("reply" if data else "approve")
    if role == REQUESTER:
        actor = lifecycle.owner_of(task)
    else:
        actor = as_user.get_username() if as_user is not None else "test"
    with jobs.held() as resumes:
        answer_task(
            task_id,
            given,
            decision=decision,
            role=role,
            user=as_user if role == REVIEWER else None,
            actor=actor,
            comment=comment,
            via="test",
            store=tasks,
            arguments=arguments,
        )
    for _, resumed in resumes:
        run_resume(resumed, tasks)
    return TaskRun.read(task_id, tasks)


def _store(store: TaskStore | str | None) -> TaskStore:
    return get_task_store() if store is None else resolve_store(store)


def _owner_id(owner: Any) -> str | None:
    if owner is None or not getattr(owner, "is_authenticated", False):
        return None
    return str(owner.pk)


def _refuse_inside_a_transaction() -> None:
    for connection in connections.all(initialized_only=True):
        if connection.in_atomic_block:
            raise RuntimeError(
                "toolnexus_django.testing runs tools on their own threads and database "
                "connections, which cannot see this test's uncommitted rows (and would "
                f"write past its rollback): database {connection.alias!r} is inside a "
                "transaction. Use TransactionTestCase, or "
                "@pytest.mark.django_db(transaction=True)."
            )


def _text_of(public: Task) -> str:
    state = public["status"]["state"]
    if state == "completed":
        artifacts = public.get("artifacts") or []
        return "\n".join(message_text(a) for a in artifacts if isinstance(a, dict))
    message = public["status"].get("message")
    return message_text(message) if isinstance(message, dict) else ""


__all__ = [
    "AnswerRefused",
    "ScriptExhausted",
    "ScriptedModel",
    "Step",
    "TaskRun",
    "Turn",
    "answer",
    "call",
    "run_task",
    "say",
]
