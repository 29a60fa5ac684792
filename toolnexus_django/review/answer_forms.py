"""Which forms answer a waiting Request (:func:`answer_forms`, keyed by
action: approve, decline, reply, edit — or authorize a sign-in), and the
"Edit, then approve" form among them: the halted call's arguments as fields
generated from the tool's input schema (or one JSON object when the schema
is more than the generated forms support), filled with what the model asked."""

from __future__ import annotations

from typing import Any

from django import forms

from .. import lifecycle
from .edits import can_edit
from .forms import (
    ApproveForm,
    AuthorizationForm,
    DeclineForm,
    JsonReplyForm,
    SchemaNotSupported,
    text_help,
)
from .reviewers import approvals_needed, requesting_tool
from .schema_forms import schema_form_class

PREFIX = "edit"


def answer_forms(
    private: lifecycle.Private, action: str | None = None, data: Any = None
) -> dict[str, forms.Form]:
    """The forms that answer the waiting Request, keyed by action; the one
    named ``action`` is bound to ``data``."""
    actions = ("authorize",) if _asks_sign_in(private) else ACTIONS
    found = {name: answer_form(private, name, data if name == action else None) for name in actions}
    return {name: form for name, form in found.items() if form is not None}


#: The ways to answer a Request but a sign-in (an ``authorization``).
ACTIONS = ("approve", "decline", "reply", "edit")


def answer_form(private: lifecycle.Private, action: str, data: Any = None) -> forms.Form | None:
    """The form of ``action`` for the waiting Request, bound to ``data``; None
    when the Request is not answered that way."""
    if _asks_sign_in(private) != (action == "authorize"):
        return None
    if action == "authorize":
        return AuthorizationForm(data, prefix="authorize")
    if action == "approve":
        return ApproveForm(data, prefix="approve")
    if action == "decline":
        return DeclineForm(data, prefix="decline")
    if action == "reply":
        return _reply_class(private.pending or {})(data, prefix="reply")
    if action == "edit" and can_edit(private) and approvals_needed(requesting_tool(private)) <= 1:
        return edit_form(private.halt, data)
    return None


def _asks_sign_in(private: lifecycle.Private) -> bool:
    return (private.pending or {}).get("kind") == "authorization"


def _reply_class(pending: dict[str, Any]) -> type[forms.Form]:
    """The reply form generated from the Request's ``data.schema``, or the
    JSON object form when there is none or it is more than forms support."""
    request_data = pending.get("data")
    schema = request_data.get("schema") if isinstance(request_data, dict) else None
    if schema is None:
        return JsonReplyForm
    try:
        return schema_form_class(schema)
    except SchemaNotSupported:
        return JsonReplyForm


def edit_form(halt: dict[str, Any] | None, data: Any = None) -> forms.Form:
    """The form for ``halt`` (the private ``halt``: tool, arguments, schema);
    ``form.answer_data()`` is then the edited arguments."""
    halt = halt or {}
    found = halt.get("arguments")
    arguments: dict[str, Any] = found if isinstance(found, dict) else {}
    try:
        form_class: type[forms.Form] = schema_form_class(halt.get("schema"))
        initial: dict[str, Any] = dict(arguments)
    except SchemaNotSupported:
        form_class = JsonReplyForm
        initial = {"data": arguments}
    form = form_class(data, prefix=PREFIX, initial=initial)
    comment = getattr(form, "comment_field_name", "comment")
    for name, field in form.fields.items():
        if name != comment and not field.help_text:
            # What the model asked for is the peer's text: never HTML.
            field.help_text = text_help("The model asked for: " + _shown(arguments.get(name)))
    if isinstance(form, JsonReplyForm):
        form.fields["data"].label = "Arguments (JSON object)"
        form.fields["data"].help_text = "The tool runs with exactly this object."
    return form


def _shown(value: Any) -> str:
    if value is None:
        return "(nothing)"
    text = str(value)
    return text if len(text) <= 80 else text[:79] + "…"
