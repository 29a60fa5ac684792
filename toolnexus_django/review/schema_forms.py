"""The reply form generated from a Request's ``data["schema"]`` (the flat
object schema MCP elicitation sends): :func:`schema_form_class`. Anything
richer raises :class:`~.forms.SchemaNotSupported`, and the caller falls back
to :class:`~.forms.JsonReplyForm`.

The browser is not trusted: each field re-checks the schema's constraints on
the server, and ``answer_data()`` returns only keys the schema declares.
"""

from __future__ import annotations

import datetime
import math
import re
from collections.abc import Callable
from typing import Any, ClassVar

from django import forms
from django.core.exceptions import NON_FIELD_ERRORS
from django.core.validators import (
    BaseValidator,
    MaxLengthValidator,
    MinLengthValidator,
    RegexValidator,
)
from toolnexus import Answer

from .forms import ReviewForm, SchemaNotSupported, text_help

_SCALAR_TYPES = ("string", "number", "integer", "boolean")
# Keywords that constrain values in ways these fields cannot enforce. Ignoring
# them would let the form accept answers the schema rejects, so they force the
# JSON fallback instead. Unknown annotations (examples, x-*, ...) are harmless.
_UNSUPPORTED_TOP = frozenset(
    {"$ref", "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "patternProperties",
     "dependentRequired", "dependentSchemas", "dependencies", "minProperties",
     "maxProperties", "propertyNames", "unevaluatedProperties"}
)  # fmt: skip
_UNSUPPORTED_PROP = frozenset(
    {"$ref", "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "const", "multipleOf",
     "properties", "items", "prefixItems", "contains", "additionalProperties"}
)  # fmt: skip


class _IsoDateField(forms.DateField):
    """A DateField whose cleaned value is the ISO string, so Answer.data stays JSON.

    Converting in ``to_python`` means string validators (pattern, lengths) see
    the same "YYYY-MM-DD" value the agent will receive."""

    def to_python(self, value: Any) -> str | None:  # type: ignore[override]
        parsed = super().to_python(value)
        return parsed.isoformat() if isinstance(parsed, datetime.date) else None


class _ExclusiveMin(BaseValidator):
    message = "Ensure this value is greater than %(limit_value)s."
    code = "min_value"

    def compare(self, a: Any, b: Any) -> bool:
        return bool(a <= b)


class _ExclusiveMax(BaseValidator):
    message = "Ensure this value is less than %(limit_value)s."
    code = "max_value"

    def compare(self, a: Any, b: Any) -> bool:
        return bool(a >= b)


class SchemaReplyForm(ReviewForm):
    """Base of the classes :func:`schema_form_class` builds; not used directly."""

    # (property name, JSON type) in schema order; set by schema_form_class.
    schema_properties: ClassVar[tuple[tuple[str, str], ...]] = ()

    def answer_data(self) -> dict[str, Any]:
        """The JSON-able Answer.data: declared keys only; empty optional fields
        are left out, booleans are always present."""
        cleaned = self._valid_data()
        out: dict[str, Any] = {}
        for name, kind in self.schema_properties:
            value = cleaned.get(name)
            if kind == "boolean":
                out[name] = bool(value)
            elif value is not None:
                out[name] = value
        return out

    def to_answer(self, request_id: str) -> Answer:
        return Answer(id=request_id, ok=True, data=self.answer_data(), reason=None)


def schema_form_class(schema: Any) -> type[SchemaReplyForm]:
    """Build a form class for ``schema`` (a flat JSON Schema object).

    Field names are the property names, in schema order; fields live only in
    ``form.fields`` (never as class attributes), so names like "data", "clean"
    or "my-field" are safe. Raises :class:`SchemaNotSupported` otherwise."""
    if not isinstance(schema, dict):
        raise SchemaNotSupported(f"schema must be a JSON object, got {type(schema).__name__}")
    if schema.get("type", "object") != "object":
        raise SchemaNotSupported(f"schema type must be 'object', got {schema['type']!r}")
    bad = sorted(_UNSUPPORTED_TOP & schema.keys())
    if bad:
        raise SchemaNotSupported(f"schema uses unsupported keyword(s): {', '.join(bad)}")
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        raise SchemaNotSupported("schema has no 'properties' object")
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise SchemaNotSupported("schema 'required' must be a list of property names")
    undeclared = [r for r in required if r not in properties]
    if undeclared:
        # The form could never produce these keys, so no answer would be valid.
        raise SchemaNotSupported(f"required but not in properties: {', '.join(undeclared)}")

    fields: dict[str, forms.Field] = {}
    kinds: list[tuple[str, str]] = []
    for name, prop in properties.items():
        if name in ("", NON_FIELD_ERRORS):
            # Browsers do not submit nameless inputs; "__all__" is Django's
            # key for form-wide errors.
            raise SchemaNotSupported(f"property name {name!r} cannot be a form field")
        field, kind = _field_for(name, prop, name in required)
        fields[name] = field
        kinds.append((name, kind))

    comment_name = "comment"
    while comment_name in fields:
        comment_name += "_"

    form_class: type[SchemaReplyForm] = type(
        "SchemaForm",
        (SchemaReplyForm,),
        {"schema_properties": tuple(kinds), "comment_field_name": comment_name},
    )
    # Set after class creation: the metaclass would treat names such as
    # "__module__" or ones shadowing None-valued attributes specially.
    form_class.base_fields = fields
    form_class.declared_fields = fields
    return form_class


def _field_for(name: str, prop: Any, required: bool) -> tuple[forms.Field, str]:
    where = f"property {name!r}"
    if not isinstance(prop, dict):
        raise SchemaNotSupported(f"{where}: schema must be an object")
    kind = prop.get("type")
    if kind not in _SCALAR_TYPES:
        raise SchemaNotSupported(
            f"{where}: type {kind!r} is not supported (only {', '.join(_SCALAR_TYPES)})"
        )
    bad = sorted(_UNSUPPORTED_PROP & prop.keys())
    if bad:
        raise SchemaNotSupported(f"{where}: unsupported keyword(s): {', '.join(bad)}")

    common: dict[str, Any] = {"required": required}
    for key, arg in (("title", "label"), ("description", "help_text")):
        if key in prop:
            if not isinstance(prop[key], str):
                raise SchemaNotSupported(f"{where}: {key} must be a string")
            # Labels are escaped where they are rendered; help texts are not.
            common[arg] = prop[key] if arg == "label" else text_help(prop[key])
    if "default" in prop:
        common["initial"] = prop["default"]

    if kind == "boolean":
        if "enum" in prop:
            raise SchemaNotSupported(f"{where}: enum on a boolean is not supported")
        # An unchecked box is a real answer (False), so never HTML-required.
        common["required"] = False
        return forms.BooleanField(**common), kind
    if "enum" in prop:
        return _enum_field(where, prop, kind, common), kind
    if kind == "string":
        return _string_field(where, prop, common), kind

    validators: list[Callable[[Any], None]] = []
    for key, bound in (("minimum", "min_value"), ("maximum", "max_value")):
        if key in prop:
            common[bound] = _number(where, key, prop[key])
    for key, validator in (
        ("exclusiveMinimum", _ExclusiveMin),
        ("exclusiveMaximum", _ExclusiveMax),
    ):
        if key in prop:
            validators.append(validator(_number(where, key, prop[key])))
    if kind == "integer":
        widget = forms.NumberInput(attrs={"class": "vIntegerField"})
        return forms.IntegerField(validators=validators, widget=widget, **common), kind
    # vBigIntegerField only for its wider box: decimals need the room.
    widget = forms.NumberInput(attrs={"class": "vBigIntegerField"})
    return forms.FloatField(validators=validators, widget=widget, **common), kind


def _number(where: str, key: str, value: Any) -> float | int:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise SchemaNotSupported(f"{where}: {key} must be a number, got {value!r}")
    return value


def _count(where: str, key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise SchemaNotSupported(f"{where}: {key} must be a non-negative integer")
    return value


def _string_field(where: str, prop: dict[str, Any], common: dict[str, Any]) -> forms.Field:
    lengths: dict[str, int] = {}
    for key, arg in (("minLength", "min_length"), ("maxLength", "max_length")):
        if key in prop:
            lengths[arg] = _count(where, key, prop[key])
    validators: list[Callable[[Any], None]] = []
    if "pattern" in prop:
        pattern = prop["pattern"]
        try:
            compiled = re.compile(pattern) if isinstance(pattern, str) else None
        except re.error as exc:
            raise SchemaNotSupported(f"{where}: pattern does not compile: {exc}") from None
        if compiled is None:
            raise SchemaNotSupported(f"{where}: pattern must be a string")
        # JSON Schema patterns are unanchored, like RegexValidator's search().
        # The message is %-formatted (with the value): a % of the pattern is literal.
        said = f"Enter a value matching {pattern}.".replace("%", "%%")
        validators.append(RegexValidator(compiled, message=said))

    fmt = prop.get("format")
    widget: forms.Widget
    if fmt == "date":
        # DateField takes no length arguments; check the ISO string instead.
        if "min_length" in lengths:
            validators.append(MinLengthValidator(lengths["min_length"]))
        if "max_length" in lengths:
            validators.append(MaxLengthValidator(lengths["max_length"]))
        widget = forms.DateInput(format="%Y-%m-%d", attrs={"type": "date", "class": "vDateField"})
        return _IsoDateField(validators=validators, widget=widget, **common)
    # Optional strings left blank clean to None, so answer_data() omits them.
    text: dict[str, Any] = {"validators": validators, "empty_value": None, **lengths, **common}
    if fmt == "email":
        return forms.EmailField(widget=forms.EmailInput(attrs={"class": "vTextField"}), **text)
    if fmt == "uri":
        # URLField accepts only web schemes: narrower than "uri", never wider.
        widget = forms.URLInput(attrs={"class": "vURLField"})
        return forms.URLField(assume_scheme="https", widget=widget, **text)
    # Other formats are annotations (JSON Schema does not require checking them).
    return forms.CharField(widget=forms.TextInput(attrs={"class": "vTextField"}), **text)


def _enum_field(where: str, prop: dict[str, Any], kind: str, common: dict[str, Any]) -> forms.Field:
    values = prop["enum"]
    if not isinstance(values, list) or not values:
        raise SchemaNotSupported(f"{where}: enum must be a non-empty list")
    for value in values:
        ok = (
            isinstance(value, str)
            if kind == "string"
            else isinstance(value, int | float) and not isinstance(value, bool)
            and (kind == "number" or isinstance(value, int))
            and math.isfinite(value)
        )  # fmt: skip
        if not ok:
            raise SchemaNotSupported(f"{where}: enum value {value!r} is not of type {kind}")
    names = prop.get("enumNames")  # MCP elicitation's display labels
    if not (
        isinstance(names, list)
        and len(names) == len(values)
        and all(isinstance(n, str) for n in names)
    ):
        names = [str(v) for v in values]
    # The browser sends str(value); map it back to the typed schema value.
    by_key = {str(v): v for v in values}
    choices = [(str(v), n) for v, n in zip(values, names, strict=True)]
    if not common["required"] or "default" not in prop:
        # Without a default, a blank first option forces a deliberate choice.
        choices.insert(0, ("", "---------"))
    return forms.TypedChoiceField(
        choices=choices, coerce=by_key.__getitem__, empty_value=None, **common
    )
