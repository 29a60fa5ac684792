"""The "Edit, then approve" form: the halted call's arguments as fields
generated from the tool's input schema (or one JSON object when the schema
is more than the generated forms support), filled with what the model asked."""

from __future__ import annotations

from typing import Any

from django import forms

from .forms import JsonReplyForm, SchemaNotSupported, text_help
from .schema_forms import schema_form_class

PREFIX = "edit"


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
