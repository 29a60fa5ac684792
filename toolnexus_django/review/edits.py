"""Edit, then approve: a reviewer changes the halted tool call's arguments.

Built on toolnexus's public pieces only: the resumed run re-executes the
halted call through ``Toolkit.execute(name, arguments, ToolContext(answer))``
(:mod:`..agent.replay`) with the arguments it finds in the transcript, so the
edit is the transcript's call rewritten (:func:`..agent.transcript.with_arguments`)
— the tool runs with the edited arguments, and the model, reading on, sees
the call that ran. The arguments are checked against the tool's input
schema, recorded at suspension (the private ``halt``); the decision's event
keeps both versions.
"""

from __future__ import annotations

from typing import Any

from toolnexus import Answer

from ..agent.transcript import TranscriptError, find_halt, with_arguments
from ..conf import toolnexus_settings
from ..lifecycle import Edit, Private
from ..lifecycle.requests import REVIEWER, AnswerRefused, halted_tool_name, invalid
from ..schemas import violations_of


def can_edit(private: Private) -> bool:
    """Whether the waiting Request's call may be edited: an approval, with the
    tool's input schema known, and ``REVIEW["EDIT_ARGUMENTS"]`` on. The schema
    and arguments recorded must be the halted call's: a halt recorded from a
    turn whose calls shared an id (before those were refused) may be another's."""
    pending = private.pending or {}
    halt = private.halt or {}
    return (
        bool(toolnexus_settings.REVIEW["EDIT_ARGUMENTS"])
        and pending.get("kind") == "approval"
        and isinstance(halt.get("schema"), dict)
        and halt.get("tool") == halted_tool_name(halt, private.transcript, private.style or "")
    )


def edited_transcript(private: Private, given: Answer, arguments: Any, *, role: str) -> Edit:
    """The transcript with the halted call's arguments replaced by ``arguments``;
    raises :class:`AnswerRefused` when the edit cannot be taken."""
    if role != REVIEWER or not given.ok:
        raise AnswerRefused("invalid", "Only a reviewer approving a call can edit its arguments.")
    if not can_edit(private):
        raise AnswerRefused("invalid", "The arguments of this request's call cannot be edited.")
    if not isinstance(arguments, dict):
        raise AnswerRefused("invalid", "The edited arguments must be a JSON object.")
    schema = (private.halt or {}).get("schema")
    violations = violations_of(arguments, schema)
    if violations:
        raise invalid("The edited arguments do not match the tool's input schema", violations)
    style = private.style or "openai"
    try:
        halt = find_halt(private.transcript, style)
        transcript = with_arguments(private.transcript, style, halt, arguments)
    except TranscriptError as exc:
        raise AnswerRefused("invalid", f"The call cannot be edited: {exc}") from None
    return Edit(transcript, halt.halted.arguments, arguments)
