"""Which run a tool call belongs to: :func:`current_run`.

toolnexus's ``ToolContext`` carries a cancel signal, a timeout and the answer
to a suspension, never who asked. The runner sets a :class:`RunContext` in a
context variable before it starts a run (a first run or a resume); a context
variable travels with the run's coroutine, into the tasks it starts and into
the threads ``asyncio.to_thread`` and ``run_in_executor`` hand sync tools to,
so every tool call of the run reads the same one, in whichever process runs it.
"""

from __future__ import annotations

import contextvars
import dataclasses
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from toolnexus import Answer

_current: contextvars.ContextVar[RunContext | None] = contextvars.ContextVar(
    "toolnexus_django_run", default=None
)


class _Owner:
    """The owner's user, loaded at most once per run, from whichever thread asks
    first (the run's context objects share this holder)."""

    def __init__(self, owner_id: str | None, user: Any = None) -> None:
        self.owner_id = owner_id
        self._user = user
        self._lock = threading.Lock()

    def get(self) -> Any:
        if self._user is None:
            with self._lock:
                if self._user is None:
                    self._user = load_user(self.owner_id)
        return self._user

    @property
    def loaded(self) -> bool:
        return self._user is not None


def load_user(owner_id: str | None) -> Any:
    """The Django user a stored owner id names: ``AnonymousUser`` for the
    anonymous owner, and for a user deleted since the Task was sent (who may
    no longer do anything)."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import AnonymousUser

    if owner_id in (None, ""):
        return AnonymousUser()
    model = get_user_model()
    try:
        pk = model._meta.pk.to_python(owner_id)
    except Exception:  # an owner id of another user model's shape
        return AnonymousUser()
    return model._default_manager.filter(pk=pk).first() or AnonymousUser()


@dataclasses.dataclass(frozen=True)
class RunContext:
    """The run a tool call belongs to. Immutable; read it with :func:`current_run`.

    ``owner`` is the Task owner's Django user (``AnonymousUser`` for an
    anonymous owner), loaded on first use and then kept for the whole run. It
    queries the database the first time: in an ``async def`` tool read
    ``await run.aowner()`` instead (as Django's ``request.auser()``).
    ``answer`` and ``approved_by`` are set only on the call a person answered:
    toolnexus's ``Answer``, and the usernames of the reviewers who approved
    it, in the order they did (two for a four-eyes tool). ``call_id`` and
    ``tool_name`` name the tool call being made (the model's id for it), and
    :attr:`idempotency_key` is the key to dedupe its side effects with.
    """

    task_id: str | None
    context_id: str | None
    answer: Answer | None = None
    approved_by: tuple[str, ...] = ()
    #: Where the run came from: "a2a" (a Task) or "mcp" (a tools/call).
    via: str = "a2a"
    #: The tool call being made (None between calls): the model's id for it, the
    #: tool's name, and where it is in the Task's transcript (the index of the
    #: model's message that made it; a model may reuse its ids on later turns).
    call_id: str | None = None
    tool_name: str | None = None
    turn: int | None = None
    _owner: _Owner = dataclasses.field(default_factory=lambda: _Owner(None), repr=False)
    #: Tool names this run may call, when the runner worked them out (None: not known).
    _offered: frozenset[str] | None = dataclasses.field(default=None, repr=False)
    #: The answer being resumed and its approvers, until the answered call is made.
    _resumed: tuple[Answer, tuple[str, ...]] | None = dataclasses.field(default=None, repr=False)
    #: Where the model's next message goes in the transcript (the run's contexts share it).
    _next_turn: _NextTurn = dataclasses.field(default_factory=lambda: _NextTurn(), repr=False)

    @property
    def owner(self) -> Any:
        return self._owner.get()

    async def aowner(self) -> Any:
        """:attr:`owner` from async code (the first read runs on a thread)."""
        if self._owner.loaded:
            return self._owner.get()
        from asgiref.sync import sync_to_async

        return await sync_to_async(self._owner.get, thread_sensitive=False)()

    @property
    def owner_id(self) -> str | None:
        """The owner as the Task stores it: the user's pk as text, or None (anonymous)."""
        return self._owner.owner_id

    @property
    def idempotency_key(self) -> str | None:
        """A key for this tool call that a replay of the same call repeats
        (``"<task id>:<turn>:<call id>"``): hand it to the service the tool
        acts on (a payment provider's ``Idempotency-Key``, a unique column) so
        a call replayed after a crash acts once. None outside a Task's tool call."""
        if self.task_id is None or self.call_id is None or self.turn is None:
            return None
        return f"{self.task_id}:{self.turn}:{self.call_id}"

    def offers(self, name: str) -> bool | None:
        """Whether the model was offered tool ``name`` on this run (None: not worked out)."""
        return None if self._offered is None else name in self._offered


def current_run() -> RunContext | None:
    """The run the calling code belongs to (a tool call of a Task's run, or
    of an MCP ``tools/call``), or None outside any run."""
    return _current.get()


def new_run(
    *,
    task_id: str | None,
    context_id: str | None,
    owner_id: str | None = None,
    owner: Any = None,
    via: str = "a2a",
    offered: frozenset[str] | None = None,
    resumed: tuple[Answer, tuple[str, ...]] | None = None,
) -> RunContext:
    """A run's context: ``owner_id`` as stored (loaded when first read), or the
    ``owner`` user itself when the caller has it (an MCP call's DRF user)."""
    holder = _Owner(owner_id if owner is None else _pk_text(owner), owner)
    return RunContext(
        task_id=task_id,
        context_id=context_id,
        via=via,
        _owner=holder,
        _offered=offered,
        _resumed=resumed,
    )


def _pk_text(user: Any) -> str | None:
    pk = getattr(user, "pk", None)
    return None if pk is None else str(pk)


@contextmanager
def running(run: RunContext | None) -> Iterator[RunContext | None]:
    """Make ``run`` the current run for the enclosed code, and for the tasks and
    threads it starts."""
    token = _current.set(run)
    try:
        yield run
    finally:
        _current.reset(token)


@contextmanager
def answered_call(answer: Answer, call: CallIdentity | None = None) -> Iterator[RunContext | None]:
    """The context of the call a person answered: the run's, with ``answer``
    and — when it echoes the Request being resumed — the approvers (and the
    call itself, when the caller knows which it is)."""
    run = _current.get()
    if run is None:
        yield None
        return
    approved: tuple[str, ...] = ()
    if run._resumed is not None and run._resumed[0].id == answer.id and answer.ok:
        approved = run._resumed[1]
    answered = dataclasses.replace(run, answer=answer, approved_by=approved)
    with running(answered if call is None else call.of(answered)) as made:
        yield made


@dataclasses.dataclass(frozen=True)
class CallIdentity:
    """One tool call of the model: its id, the tool, and the index in the
    Task's transcript of the model's message that made it."""

    id: str | None
    tool_name: str | None
    turn: int | None

    def of(self, run: RunContext) -> RunContext:
        """``run``'s context for this call."""
        return dataclasses.replace(run, call_id=self.id, tool_name=self.tool_name, turn=self.turn)


@contextmanager
def calling(call: CallIdentity) -> Iterator[RunContext | None]:
    """The context of one tool call of the run: the run's, naming the call."""
    run = _current.get()
    if run is None:
        yield None
        return
    with running(call.of(run)) as made:
        yield made


class _NextTurn:
    """Where the model's next message goes in the transcript."""

    position: int | None = None


def note_turn(messages: list[Any]) -> None:
    """toolnexus's ``before_llm`` hook, with the messages the model is sent:
    its answer (and the tool calls in it) will be the next message."""
    run = _current.get()
    if run is not None:
        run._next_turn.position = len(messages)


def name_call(event: dict[str, Any]) -> None:
    """toolnexus's ``before_tool`` hook: the call about to run is ``event``'s
    (its ``id`` and ``name``), made on the turn :func:`note_turn` noted.
    toolnexus runs each call of a turn as an asyncio task of its own, with the
    hook inside it: setting the run's context here names the call for that
    task alone, until it ends."""
    run = _current.get()
    if run is not None:
        call_id, name = event.get("id"), event.get("name")
        call = CallIdentity(
            None if call_id is None else str(call_id),
            None if name is None else str(name),
            run._next_turn.position,
        )
        _current.set(call.of(run))


def within(run: RunContext | None, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` run with ``run`` current (for work handed to another thread)."""

    def call(*args: Any, **kwargs: Any) -> Any:
        with running(run):
            return fn(*args, **kwargs)

    return call
