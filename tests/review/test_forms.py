"""Reviewer forms (toolnexus_django/forms.py): the schema-generated form, the JSON
fallback, approve / decline / authorization, and the Answers they build."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django import forms
from toolnexus import Answer

from toolnexus_django.review.forms import (
    COMMENT_MAX_LENGTH,
    ApproveForm,
    AuthorizationForm,
    DeclineForm,
    JsonReplyForm,
    SchemaNotSupported,
)
from toolnexus_django.review.schema_forms import SchemaReplyForm, schema_form_class


def obj(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required)}


def bind(schema: dict[str, Any], data: dict[str, Any], **kwargs: Any) -> SchemaReplyForm:
    return schema_form_class(schema)(data=data, **kwargs)


ALL_TYPES = obj(
    {
        "name": {"type": "string"},
        "price": {"type": "number"},
        "count": {"type": "integer"},
        "urgent": {"type": "boolean"},
    },
    required=("name", "price", "count"),
)


# --------------------------------------------------------------------------- #
# schema_form_class: types, order, answer_data
# --------------------------------------------------------------------------- #


def test_each_type_gets_its_field_in_schema_order() -> None:
    form_class = schema_form_class(ALL_TYPES)
    assert issubclass(form_class, forms.Form)
    fields = form_class().fields
    assert list(fields) == ["name", "price", "count", "urgent", "comment"]
    assert type(fields["name"]) is forms.CharField
    assert type(fields["price"]) is forms.FloatField
    assert type(fields["count"]) is forms.IntegerField
    assert type(fields["urgent"]) is forms.BooleanField


def test_answer_data_is_typed_json() -> None:
    form = bind(ALL_TYPES, {"name": "Ada", "price": "9.5", "count": "3", "urgent": "on"})
    assert form.is_valid(), form.errors
    data = form.answer_data()
    assert data == {"name": "Ada", "price": 9.5, "count": 3, "urgent": True}
    assert type(data["count"]) is int and type(data["price"]) is float
    assert json.loads(json.dumps(data, allow_nan=False)) == data


def test_integer_given_as_whole_float_string_is_an_int() -> None:
    form = bind(ALL_TYPES, {"name": "a", "price": "1", "count": "4.0"})
    assert form.is_valid(), form.errors
    assert form.answer_data()["count"] == 4 and type(form.answer_data()["count"]) is int


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("count", "abc"),
        ("count", "2.5"),
        ("price", "cheap"),
        ("price", "nan"),
        ("price", "inf"),
    ],
)
def test_wrong_types_are_rejected_server_side(field: str, value: str) -> None:
    data = {"name": "a", "price": "1", "count": "1", field: value}
    form = bind(ALL_TYPES, data)
    assert not form.is_valid()
    assert list(form.errors) == [field]


def test_missing_required_keys_are_errors() -> None:
    form = bind(ALL_TYPES, {"name": "   "})
    assert not form.is_valid()
    assert set(form.errors) == {"name", "price", "count"}
    assert form.errors["name"] == ["This field is required."]


def test_optional_fields_left_empty_are_omitted_but_booleans_stay() -> None:
    schema = obj(
        {
            "must": {"type": "string"},
            "text": {"type": "string"},
            "num": {"type": "number"},
            "int": {"type": "integer"},
            "when": {"type": "string", "format": "date"},
            "mail": {"type": "string", "format": "email"},
            "pick": {"type": "string", "enum": ["a", "b"]},
            "flag": {"type": "boolean"},
        },
        required=("must",),
    )
    empty = {"text": "", "num": "", "int": "", "when": "", "mail": "", "pick": ""}
    form = bind(schema, {"must": "x", **empty})
    assert form.is_valid(), form.errors
    assert form.answer_data() == {"must": "x", "flag": False}


def test_answer_data_only_has_declared_keys() -> None:
    form = bind(ALL_TYPES, {"name": "a", "price": "1", "count": "1", "extra": "smuggled"})
    assert form.is_valid()
    assert set(form.answer_data()) == {"name", "price", "count", "urgent"}


def test_booleans_are_never_html_required() -> None:
    schema = obj({"agree": {"type": "boolean"}}, required=("agree",))
    form = bind(schema, {})
    assert form.fields["agree"].required is False
    assert 'name="agree"' in str(form["agree"]) and "required" not in str(form["agree"])
    assert form.is_valid(), form.errors
    assert form.answer_data() == {"agree": False}
    checked = bind(schema, {"agree": "on"})
    assert checked.is_valid() and checked.answer_data() == {"agree": True}


def test_title_description_default_become_label_help_initial() -> None:
    schema = obj(
        {
            "cc": {
                "type": "string",
                "title": "Cost centre",
                "description": "Four letters",
                "default": "OPSX",
            },
            "ok": {"type": "boolean", "default": True},
        }
    )
    form = schema_form_class(schema)()
    assert form.fields["cc"].label == "Cost centre"
    assert form.fields["cc"].help_text == "Four letters"
    assert form.fields["cc"].initial == "OPSX"
    assert 'value="OPSX"' in str(form["cc"])
    assert "checked" in str(form["ok"])


def test_description_is_escaped_when_rendered() -> None:
    schema = obj({"x": {"type": "string", "description": "<script>alert(1)</script>"}})
    html = schema_form_class(schema)().as_p()
    assert "<script>" not in html
    assert "&lt;script&gt;" in html


def test_generated_classes_do_not_share_fields() -> None:
    first = schema_form_class(obj({"a": {"type": "string"}}))
    second = schema_form_class(obj({"b": {"type": "integer"}}))
    assert list(first.base_fields) == ["a"]
    assert list(second.base_fields) == ["b"]
    assert SchemaReplyForm.base_fields == {}


# --------------------------------------------------------------------------- #
# enum
# --------------------------------------------------------------------------- #


def test_integer_enum_gives_ints_back_and_refuses_other_values() -> None:
    schema = obj({"level": {"type": "integer", "enum": [1, 2, 3]}}, required=("level",))
    field = schema_form_class(schema)().fields["level"]
    assert isinstance(field, forms.ChoiceField)
    form = bind(schema, {"level": "2"})
    assert form.is_valid(), form.errors
    assert form.answer_data() == {"level": 2}
    assert type(form.answer_data()["level"]) is int
    bad = bind(schema, {"level": "4"})
    assert not bad.is_valid() and "level" in bad.errors


def test_number_enum_returns_the_schema_values() -> None:
    schema = obj({"rate": {"type": "number", "enum": [0.5, 1]}}, required=("rate",))
    half = bind(schema, {"rate": "0.5"})
    one = bind(schema, {"rate": "1"})
    assert half.is_valid() and one.is_valid()
    assert half.answer_data() == {"rate": 0.5}
    assert one.answer_data()["rate"] == 1 and type(one.answer_data()["rate"]) is int
    assert not bind(schema, {"rate": "1.0"}).is_valid()


def test_string_enum_with_enum_names_as_labels() -> None:
    schema = obj(
        {"size": {"type": "string", "enum": ["s", "l"], "enumNames": ["Small", "Large"]}},
        required=("size",),
    )
    field = schema_form_class(schema)().fields["size"]
    assert isinstance(field, forms.ChoiceField)
    assert list(field.choices) == [("", "---------"), ("s", "Small"), ("l", "Large")]
    assert bind(schema, {"size": "l"}).is_valid()
    assert not bind(schema, {"size": "Large"}).is_valid()
    assert not bind(schema, {"size": ""}).is_valid()


def test_required_enum_with_default_has_no_blank_choice() -> None:
    schema = obj({"size": {"type": "string", "enum": ["s", "l"], "default": "l"}}, ("size",))
    field = schema_form_class(schema)().fields["size"]
    assert isinstance(field, forms.ChoiceField)
    assert [value for value, _ in field.choices] == ["s", "l"]
    assert field.initial == "l"


# --------------------------------------------------------------------------- #
# bounds and string constraints
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize(
    ("prop", "value", "valid"),
    [
        ({"type": "integer", "minimum": 1, "maximum": 5}, "1", True),
        ({"type": "integer", "minimum": 1, "maximum": 5}, "5", True),
        ({"type": "integer", "minimum": 1, "maximum": 5}, "0", False),
        ({"type": "integer", "minimum": 1, "maximum": 5}, "6", False),
        ({"type": "number", "minimum": 0.5}, "0.4", False),
        ({"type": "number", "maximum": 10}, "10.01", False),
        ({"type": "number", "exclusiveMinimum": 0}, "0", False),
        ({"type": "number", "exclusiveMinimum": 0}, "0.001", True),
        ({"type": "integer", "exclusiveMaximum": 10}, "10", False),
        ({"type": "integer", "exclusiveMaximum": 10}, "9", True),
    ],
)
def test_numeric_bounds(prop: dict[str, Any], value: str, valid: bool) -> None:
    assert bind(obj({"v": prop}, ("v",)), {"v": value}).is_valid() is valid


@pytest.mark.parametrize(
    ("prop", "value", "valid"),
    [
        ({"minLength": 3}, "ab", False),
        ({"minLength": 3}, "abc", True),
        ({"maxLength": 3}, "abcd", False),
        ({"maxLength": 3}, "abc", True),
        ({"pattern": "^[A-Z]{4}$"}, "OPSX", True),
        ({"pattern": "^[A-Z]{4}$"}, "opsx", False),
        # JSON Schema patterns are not anchored.
        ({"pattern": "[0-9]"}, "room 101", True),
        ({"pattern": "[0-9]"}, "room", False),
    ],
)
def test_string_constraints(prop: dict[str, Any], value: str, valid: bool) -> None:
    schema = obj({"s": {"type": "string", **prop}}, ("s",))
    assert bind(schema, {"s": value}).is_valid() is valid


def test_string_lengths_reach_the_html_too() -> None:
    schema = obj({"s": {"type": "string", "minLength": 2, "maxLength": 8}})
    html = str(schema_form_class(schema)()["s"])
    assert 'maxlength="8"' in html and 'minlength="2"' in html


# --------------------------------------------------------------------------- #
# formats
# --------------------------------------------------------------------------- #


def test_email_format() -> None:
    schema = obj({"to": {"type": "string", "format": "email"}}, ("to",))
    assert isinstance(schema_form_class(schema)().fields["to"], forms.EmailField)
    assert bind(schema, {"to": "ada@example.com"}).answer_data() == {"to": "ada@example.com"}
    assert not bind(schema, {"to": "not an address"}).is_valid()


def test_uri_format() -> None:
    schema = obj({"link": {"type": "string", "format": "uri"}}, ("link",))
    assert isinstance(schema_form_class(schema)().fields["link"], forms.URLField)
    form = bind(schema, {"link": "https://example.com/a"})
    assert form.is_valid() and form.answer_data() == {"link": "https://example.com/a"}
    assert not bind(schema, {"link": "no such thing"}).is_valid()


def test_date_format_comes_back_as_an_iso_string() -> None:
    schema = obj({"due": {"type": "string", "format": "date"}}, ("due",))
    field = schema_form_class(schema)().fields["due"]
    assert isinstance(field, forms.DateField)
    form = bind(schema, {"due": "2024-02-29"})
    assert form.is_valid(), form.errors
    assert form.answer_data() == {"due": "2024-02-29"}
    assert not bind(schema, {"due": "2023-02-29"}).is_valid()
    assert not bind(schema, {"due": "soon"}).is_valid()


def test_date_pattern_applies_to_the_iso_string() -> None:
    schema = obj({"due": {"type": "string", "format": "date", "pattern": "^2024-"}}, ("due",))
    assert bind(schema, {"due": "2024-05-01"}).is_valid()
    assert not bind(schema, {"due": "2025-05-01"}).is_valid()


def test_unknown_format_is_plain_text() -> None:
    schema = obj({"at": {"type": "string", "format": "date-time"}}, ("at",))
    form = bind(schema, {"at": "whenever"})
    assert type(form.fields["at"]) is forms.CharField
    assert form.is_valid() and form.answer_data() == {"at": "whenever"}


# --------------------------------------------------------------------------- #
# odd property names
# --------------------------------------------------------------------------- #

ODD = obj(
    {
        "data": {"type": "string"},
        "clean": {"type": "integer"},
        "my-field": {"type": "boolean"},
        "größe": {"type": "number"},
        "prefix": {"type": "string"},
        "comment": {"type": "string"},
    },
    required=("data", "clean", "größe"),
)


def test_odd_property_names_work_and_do_not_shadow_form_attributes() -> None:
    posted = {
        "data": "d",
        "clean": "7",
        "my-field": "on",
        "größe": "1.5",
        "prefix": "p",
        "comment": "schema's comment",
    }
    form = bind(ODD, posted)
    assert form.data == posted  # still the bound data, not a field
    assert callable(form.clean) and form.prefix is None
    assert form.is_valid(), form.errors
    assert form.answer_data() == {
        "data": "d",
        "clean": 7,
        "my-field": True,
        "größe": 1.5,
        "prefix": "p",
        "comment": "schema's comment",
    }
    # The reviewer's comment moved aside for the property called "comment".
    assert form.comment_field_name == "comment_"
    assert form.comment == ""


def test_odd_property_names_with_a_form_prefix() -> None:
    posted = {"r-data": "d", "r-clean": "7", "r-größe": "2", "r-comment_": "  looks fine  "}
    form = bind(ODD, posted, prefix="r")
    assert 'name="r-my-field"' in str(form["my-field"])
    assert form.is_valid(), form.errors
    assert form.answer_data() == {"data": "d", "clean": 7, "my-field": False, "größe": 2.0}
    assert form.comment == "looks fine"


# --------------------------------------------------------------------------- #
# unsupported schemas
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        (None, "must be a JSON object"),
        ([{"type": "string"}], "must be a JSON object"),
        ({"type": "object"}, "no 'properties'"),
        ({"type": "object", "properties": []}, "no 'properties'"),
        ({"type": "array", "properties": {}}, "type must be 'object'"),
        ({"$ref": "#/$defs/x", "properties": {}}, "$ref"),
        ({"anyOf": [], "properties": {}}, "anyOf"),
        (obj({"a": {"type": "object", "properties": {}}}), "type 'object'"),
        (obj({"a": {"type": "array", "items": {"type": "string"}}}), "type 'array'"),
        (obj({"a": {"$ref": "#/$defs/x"}}), "type None"),
        (obj({"a": {"type": "string", "$ref": "#/$defs/x"}}), "$ref"),
        (obj({"a": {"type": ["string", "null"]}}), "is not supported"),
        (obj({"a": {"type": "string", "oneOf": []}}), "oneOf"),
        (obj({"a": {"type": "number", "multipleOf": 5}}), "multipleOf"),
        (obj({"a": True}), "must be an object"),
        (obj({"a": {"type": "string"}}, ("b",)), "required but not in properties: b"),
        ({"type": "object", "properties": {}, "required": "a"}, "'required' must be a list"),
        (obj({"a": {"type": "string", "pattern": "("}}), "pattern does not compile"),
        (obj({"a": {"type": "boolean", "enum": [True]}}), "enum on a boolean"),
        (obj({"a": {"type": "integer", "enum": [1, "2"]}}), "not of type integer"),
        (obj({"a": {"type": "integer", "enum": [1, True]}}), "not of type integer"),
        (obj({"a": {"type": "integer", "enum": [1, 2.5]}}), "not of type integer"),
        (obj({"a": {"type": "string", "enum": []}}), "non-empty list"),
        (obj({"a": {"type": "integer", "minimum": "1"}}), "minimum must be a number"),
        (obj({"a": {"type": "string", "maxLength": -1}}), "maxLength must be"),
        (obj({"a": {"type": "string", "title": 5}}), "title must be a string"),
        (obj({"": {"type": "string"}}), "cannot be a form field"),
        (obj({"__all__": {"type": "string"}}), "cannot be a form field"),
    ],
)
def test_unsupported_schemas_raise(schema: Any, message: str) -> None:
    with pytest.raises(SchemaNotSupported) as info:
        schema_form_class(schema)
    assert message in str(info.value)
    assert isinstance(info.value, ValueError)


def test_type_object_may_be_omitted() -> None:
    form_class = schema_form_class({"properties": {"a": {"type": "string"}}})
    assert list(form_class.base_fields) == ["a"]


def test_empty_properties_give_an_empty_answer() -> None:
    form = bind(obj({}), {})
    assert form.is_valid()
    assert form.to_answer("r") == Answer(id="r", ok=True, data={}, reason=None)


# --------------------------------------------------------------------------- #
# JSON fallback
# --------------------------------------------------------------------------- #


def test_json_form_accepts_an_object() -> None:
    form = JsonReplyForm(data={"data": '{"cost_center": "OPSX", "n": [1, 2]}'})
    assert form.is_valid(), form.errors
    assert form.answer_data() == {"cost_center": "OPSX", "n": [1, 2]}
    assert form.to_answer("req-1") == Answer(
        id="req-1", ok=True, data={"cost_center": "OPSX", "n": [1, 2]}, reason=None
    )


def test_json_form_accepts_an_empty_object() -> None:
    form = JsonReplyForm(data={"data": "{}"})
    assert form.is_valid(), form.errors
    assert form.answer_data() == {}


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        ("[1, 2]", "not_object"),
        ('"text"', "not_object"),
        ("42", "not_object"),
        ("null", "not_object"),
        ("{not json", "invalid"),
        ('{"x": NaN}', "invalid"),
        ("", "required"),
    ],
)
def test_json_form_rejects_anything_but_an_object(raw: str, code: str) -> None:
    form = JsonReplyForm(data={"data": raw})
    assert not form.is_valid()
    assert [e["code"] for e in form.errors.get_json_data()["data"]] == [code]
    with pytest.raises(ValueError, match="not valid"):
        form.to_answer("r")


def test_json_form_uses_the_admin_large_text_class() -> None:
    form = JsonReplyForm()
    assert 'class="vLargeTextField"' in str(form["data"])
    assert form.data == {}  # the field named "data" does not replace the bound data


# --------------------------------------------------------------------------- #
# approve / decline / authorization
# --------------------------------------------------------------------------- #


def test_approve_answer() -> None:
    form = ApproveForm(data={"comment": "  fine by me  "})
    assert form.to_answer("req-9") == Answer(id="req-9", ok=True, data=None, reason=None)
    assert form.comment == "fine by me"


def test_approve_without_comment() -> None:
    form = ApproveForm(data={})
    assert form.to_answer("r") == Answer(id="r", ok=True)
    assert form.comment == ""


@pytest.mark.parametrize("reason", ["declined", "cancelled"])
def test_decline_answer(reason: str) -> None:
    form = DeclineForm(data={"reason": reason})
    assert form.to_answer("req-2") == Answer(id="req-2", ok=False, data=None, reason=reason)


def test_decline_offers_only_reviewer_reasons() -> None:
    field = DeclineForm().fields["reason"]
    assert isinstance(field, forms.ChoiceField)
    assert [value for value, _ in field.choices] == ["declined", "cancelled"]
    assert all(label and label != value for value, label in field.choices)
    for reason in ("expired", "", "nope"):
        assert not DeclineForm(data={"reason": reason}).is_valid()


def test_authorization_done_is_ok() -> None:
    form = AuthorizationForm(data={"outcome": "done"})
    assert form.to_answer("auth-1") == Answer(id="auth-1", ok=True, data=None, reason=None)


def test_authorization_failed_is_declined() -> None:
    form = AuthorizationForm(data={"outcome": "failed", "comment": "wrong account"})
    assert form.to_answer("auth-1") == Answer(id="auth-1", ok=False, data=None, reason="declined")
    assert form.comment == "wrong account"


def test_authorization_needs_an_outcome() -> None:
    form = AuthorizationForm(data={})
    assert not form.is_valid() and "outcome" in form.errors
    with pytest.raises(ValueError, match="AuthorizationForm is not valid"):
        form.to_answer("auth-1")


def test_schema_form_to_answer_and_invalid_refusal() -> None:
    good = bind(ALL_TYPES, {"name": "a", "price": "2", "count": "1"})
    assert good.to_answer("in-1") == Answer(
        id="in-1", ok=True, data={"name": "a", "price": 2.0, "count": 1, "urgent": False}
    )
    bad = bind(ALL_TYPES, {})
    with pytest.raises(ValueError, match="not valid"):
        bad.answer_data()
    with pytest.raises(ValueError, match="not valid"):
        schema_form_class(ALL_TYPES)().to_answer("in-1")  # unbound


# --------------------------------------------------------------------------- #
# comment
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize(
    "form_class",
    [ApproveForm, DeclineForm, AuthorizationForm, JsonReplyForm, schema_form_class(obj({}))],
)
def test_comment_is_optional_stripped_and_bounded(form_class: type[forms.Form]) -> None:
    field = form_class().fields["comment"]
    assert isinstance(field, forms.CharField)
    assert field.required is False and field.max_length == COMMENT_MAX_LENGTH == 2000
    assert 'class="vLargeTextField"' in str(form_class()["comment"])
    too_long = form_class(data={"comment": "x" * 2001})
    assert not too_long.is_valid() and "comment" in too_long.errors


# --------------------------------------------------------------------------- #
# admin look
# --------------------------------------------------------------------------- #


def test_schema_widgets_use_admin_classes() -> None:
    form = schema_form_class(
        obj(
            {
                "s": {"type": "string"},
                "i": {"type": "integer"},
                "u": {"type": "string", "format": "uri"},
                "d": {"type": "string", "format": "date"},
            }
        )
    )()
    assert 'class="vTextField"' in str(form["s"])
    assert 'class="vIntegerField"' in str(form["i"])
    assert 'class="vURLField"' in str(form["u"])
    assert 'type="date"' in str(form["d"]) and 'class="vDateField"' in str(form["d"])
