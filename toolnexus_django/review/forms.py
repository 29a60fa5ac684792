"""Forms a reviewer fills in to answer a suspended Task's pending ``Request``.

Each form turns into a toolnexus ``Answer`` with ``to_answer(request_id)``:

* :class:`ApproveForm` / :class:`DeclineForm` — yes or no (``kind="approval"``);
* :func:`.schema_forms.schema_form_class` — a form generated from
  ``Request.data["schema"]`` (the flat object schema MCP elicitation sends);
  raises :class:`SchemaNotSupported` for anything richer, and the caller falls
  back to
* :class:`JsonReplyForm` — a raw JSON object;
* :class:`AuthorizationForm` — the reviewer reports how an out-of-band login went.

Every form also takes an optional ``comment`` (read it with ``form.comment``).
It is not part of the Answer; it is for whoever stores the review.

The browser is not trusted: each field re-checks the schema's constraints on the
server, and ``answer_data()`` returns only keys the schema declares.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from django import forms
from django.core.exceptions import ValidationError
from django.utils.html import escape
from toolnexus import Answer

__all__ = [
    "COMMENT_MAX_LENGTH",
    "ApproveForm",
    "AuthorizationForm",
    "DeclineForm",
    "JsonReplyForm",
    "ReviewForm",
    "SchemaNotSupported",
    "text_help",
]

COMMENT_MAX_LENGTH = 2000

# Answer.reason values a reviewer may pick; "expired" is set only by expiry.
DECLINE_REASONS = [
    ("declined", "Declined: refuse the request"),
    ("cancelled", "Cancelled: dismiss it without a decision"),
]
AUTHORIZATION_OUTCOMES = [
    ("done", "Done: the sign-in at the link succeeded"),
    ("failed", "Failed: the sign-in did not succeed"),
]


def text_help(text: str) -> str:
    """``text`` from a tool, a model or a peer, as a field's help text.
    Django's form and admin templates render help texts as HTML (``|safe``),
    so outside text is escaped here, once; this app's own templates render
    help texts escaped too (an escaped string is not escaped twice)."""
    return escape(text)


class SchemaNotSupported(ValueError):
    """The schema is more than a flat object of scalars; use :class:`JsonReplyForm`."""


def _comment_field() -> forms.CharField:
    return forms.CharField(
        required=False,
        max_length=COMMENT_MAX_LENGTH,
        strip=True,
        label="Reviewer comment",
        help_text="Optional note; it is not part of the answer sent to the agent.",
        widget=forms.Textarea(attrs={"class": "vLargeTextField", "rows": 3}),
    )


class ReviewForm(forms.Form):
    # The comment field is added per instance (not declared) so the ``comment``
    # property below can keep its name, and so a schema form can move the field
    # out of the way of a schema property called "comment".
    comment_field_name: ClassVar[str] = "comment"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields[self.comment_field_name] = _comment_field()

    @property
    def comment(self) -> str:
        """The cleaned comment, or "" (also before validation)."""
        cleaned = getattr(self, "cleaned_data", {})
        return str(cleaned.get(self.comment_field_name) or "")

    def _valid_data(self) -> dict[str, Any]:
        # An Answer built from unchecked input would reach the agent; refuse loudly.
        if not self.is_valid():
            raise ValueError(f"{type(self).__name__} is not valid: {self.errors.as_json()}")
        return self.cleaned_data


class ApproveForm(ReviewForm):
    def to_answer(self, request_id: str) -> Answer:
        self._valid_data()
        return Answer(id=request_id, ok=True, data=None, reason=None)


class DeclineForm(ReviewForm):
    reason = forms.ChoiceField(
        choices=DECLINE_REASONS, initial="declined", widget=forms.RadioSelect
    )

    def to_answer(self, request_id: str) -> Answer:
        reason = self._valid_data()["reason"]
        return Answer(id=request_id, ok=False, data=None, reason=reason)


class AuthorizationForm(ReviewForm):
    # No initial value: the reviewer must say what happened, not accept a default.
    outcome = forms.ChoiceField(choices=AUTHORIZATION_OUTCOMES, widget=forms.RadioSelect)

    def to_answer(self, request_id: str) -> Answer:
        if self._valid_data()["outcome"] == "done":
            return Answer(id=request_id, ok=True, data=None, reason=None)
        return Answer(id=request_id, ok=False, data=None, reason="declined")


# --------------------------------------------------------------------------- #
# JSON reply
# --------------------------------------------------------------------------- #


class _JsonObjectField(forms.JSONField):
    # {} is a legitimate answer; only a blank box counts as "missing".
    empty_values = [None, ""]

    def to_python(self, value: Any) -> Any:
        converted = super().to_python(value)
        if converted is None and value not in self.empty_values:
            # The literal ``null`` must not read as "left blank".
            raise ValidationError("Enter a JSON object.", code="not_object")
        return converted

    def validate(self, value: Any) -> None:
        super().validate(value)
        if not isinstance(value, dict):
            raise ValidationError(
                "Enter a JSON object ({...}), not a list, string or number.",
                code="not_object",
            )
        try:
            # Python's json accepts NaN/Infinity; other toolnexus ports would not.
            json.dumps(value, allow_nan=False)
        except ValueError:
            raise ValidationError("NaN and Infinity are not JSON.", code="invalid") from None


class JsonReplyForm(ReviewForm):
    # The metaclass moves declared fields into base_fields, so this does not
    # shadow BaseForm.data at runtime; mypy only sees the class attribute.
    data = _JsonObjectField(  # type: ignore[assignment]
        label="Reply (JSON object)",
        widget=forms.Textarea(attrs={"class": "vLargeTextField", "rows": 10}),
    )

    def answer_data(self) -> dict[str, Any]:
        return dict(self._valid_data()["data"])

    def to_answer(self, request_id: str) -> Answer:
        return Answer(id=request_id, ok=True, data=self.answer_data(), reason=None)
