"""``approval=``: a tool whose body runs only once a person said yes.

The first call of such a tool returns toolnexus's ``pending(...)`` — a
Request the run stops on, shown in the admin's review queue with the call's
arguments — and the body does not run. When a person answers, the run
resumes and toolnexus calls the tool again with ``ctx.answer``: ``ok`` runs
the body (once: only one process resumes a Task), anything else returns the
reason to the model. Who may answer, four eyes, edits and expiry are the
Request's usual rules (``ANSWERERS``, ``TOOL_ANSWERERS``, ``REVIEW``).
"""

from __future__ import annotations

import re
import string
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import toolnexus
from toolnexus import Answer, ToolResult

from ..jsontree import dumps_shown

_KEYS = {"prompt", "kind", "schema", "data", "expires_in"}

#: The verb a Request's id starts with, by kind (the id reads "approve-refund-…").
_ID_VERBS = {"approval": "approve", "input": "ask", "authorization": "authorize"}


@dataclass(frozen=True)
class Approval:
    """What a tool's Request asks: its prompt (formatted with the call's
    arguments, ``"Refund {amount} on order {order_id}?"``), its kind, the
    schema an answer's data must match, extra data, and how long it waits."""

    prompt: str
    kind: str = "approval"
    schema: Mapping[str, Any] | None = None
    data: Mapping[str, Any] = field(default_factory=dict)
    expires_in: float | None = None

    @classmethod
    def of(cls, value: str | Mapping[str, Any] | Approval) -> Approval:
        """``approval=`` as the decorator takes it: a prompt, a dict, or an Approval."""
        if isinstance(value, Approval):
            return value
        if isinstance(value, str):
            return cls(prompt=value)
        if isinstance(value, Mapping):
            unknown = set(value) - _KEYS
            if unknown:
                raise TypeError(
                    f"approval= takes the keys {sorted(_KEYS)}; unknown: {sorted(unknown)}"
                )
            if not isinstance(value.get("prompt"), str):
                raise TypeError('approval= needs a "prompt" (a string)')
            expires = value.get("expires_in")
            if expires is not None and (isinstance(expires, bool) or float(expires) <= 0):
                raise TypeError('approval "expires_in" must be a number of seconds > 0')
            return cls(
                prompt=value["prompt"],
                kind=str(value.get("kind") or "approval"),
                schema=value.get("schema"),
                data=dict(value.get("data") or {}),
                expires_in=None if expires is None else float(expires),
            )
        raise TypeError(
            f"approval= takes a prompt, a dict or an Approval, not {type(value).__name__}"
        )

    def check_prompt(self, parameters: set[str]) -> None:
        """Refuse, at decoration, a prompt naming a field the tool does not take."""
        for _, name, _, _ in string.Formatter().parse(self.prompt):
            if name is None:
                continue
            root = name.split(".")[0].split("[")[0]
            if root and root not in parameters:
                raise TypeError(
                    f"the approval prompt {self.prompt!r} names {{{root}}}, "
                    f"which is not an argument of the tool ({sorted(parameters)})"
                )

    def request(self, tool: str, arguments: Mapping[str, Any]) -> ToolResult:
        """The Request the first call returns: the run stops on it."""
        # The call's arguments are not copied here: the review page shows the
        # halted call itself, which is what an edit changes and what runs.
        data: dict[str, Any] = {**self.data, "tool": tool}
        if self.schema is not None:
            data["schema"] = dict(self.schema)
        expires = None
        if self.expires_in is not None:
            at = datetime.now(UTC) + timedelta(seconds=self.expires_in)
            expires = at.isoformat(timespec="seconds").replace("+00:00", "Z")
        return toolnexus.pending(
            kind=self.kind,
            # Unique across processes (toolnexus's default ids are per process).
            id=f"{_ID_VERBS.get(self.kind, self.kind)}-{tool}-{uuid.uuid4().hex}",
            prompt=format_prompt(self.prompt, arguments),
            data=data,
            expiresAt=expires,
        )


def refused(answer: Answer) -> ToolResult:
    """What the model reads when the person did not approve: the body never ran."""
    return ToolResult(
        output=f"Not approved ({answer.reason or 'declined'}): nothing was done.",
        is_error=True,
    )


#: The most of one argument an approval prompt shows, and of the whole prompt:
#: a prompt is a line for a reviewer (the review page shows the call in full),
#: and a model may send megabytes in one argument.
MAX_FIELD_CHARS = 200
MAX_PROMPT_CHARS = 2000

#: The widest width or precision a field's format spec may ask for: past it
#: (``{amount:{width}}`` with the model's ``width``) the value is shown as is,
#: never padded to a gigabyte.
MAX_SPEC_NUMBER = 100

_SPEC_NUMBER = re.compile(r"\d+")


def format_prompt(prompt: str, arguments: Any) -> str:
    """``prompt`` formatted with the call's ``arguments``, at most
    :data:`MAX_PROMPT_CHARS` long; never fails on what the model sent."""
    given = arguments if isinstance(arguments, Mapping) else {}
    try:
        text = _PROMPT.vformat(prompt, (), given)
    except Exception:  # the prompt itself is checked at decoration: still, never fail
        text = prompt
    return _cut(text, MAX_PROMPT_CHARS)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _shown(value: Any) -> str:
    """``value`` as a prompt shows a field it cannot format: strings as they
    are, containers as JSON (cut in depth), anything else as ``str``; at most
    :data:`MAX_FIELD_CHARS` long, whatever it is."""
    if isinstance(value, str):
        return _cut(value, MAX_FIELD_CHARS)
    if isinstance(value, dict | list | tuple):
        return _cut(dumps_shown(value, ensure_ascii=False), MAX_FIELD_CHARS)
    try:
        return _cut(str(value), MAX_FIELD_CHARS)
    except Exception:  # an int past Python's 4300 digits, a str() that raises
        return f"<{type(value).__name__}>"


class _PromptFormatter(string.Formatter):
    """Formats an approval prompt with the call's arguments, never failing on
    what the model sent: an argument it left out reads as "", and a value its
    format spec does not fit (``{amount:.2f}`` of a string, of a 401-digit
    integer: OverflowError), a conversion that fails (``!r`` of a value nested
    past the stack) or a spec asking for a huge width reads as the value itself (:func:`_shown`).
    Every field is cut at :data:`MAX_FIELD_CHARS`."""

    def get_value(self, key: int | str, args: Any, kwargs: Mapping[str, Any]) -> Any:
        return kwargs.get(key, "") if isinstance(key, str) else ""

    def get_field(self, field_name: str, args: Any, kwargs: Mapping[str, Any]) -> Any:
        try:
            return super().get_field(field_name, args, kwargs)
        except Exception:  # an index or attribute the model's value does not have
            return "", field_name

    def convert_field(self, value: Any, conversion: str | None) -> Any:
        try:
            return super().convert_field(value, conversion)
        except Exception:
            return _shown(value)

    def format_field(self, value: Any, format_spec: str) -> str:
        numbers = _SPEC_NUMBER.findall(format_spec)
        if any(len(n) > 3 or int(n) > MAX_SPEC_NUMBER for n in numbers):
            return _shown(value)
        try:
            return _cut(str(super().format_field(value, format_spec)), MAX_FIELD_CHARS)
        except Exception:  # OverflowError, ValueError, TypeError, RecursionError, ...
            return _shown(value)


_PROMPT = _PromptFormatter()
