"""What ``toolnexus_django.tool`` accepts and refuses when it is declared, and
the approval Request it makes (pure logic, no database)."""

from __future__ import annotations

import pytest
from toolnexus import pending_of

import toolnexus_django
from toolnexus_django.tools import Approval


def test_an_approval_prompt_is_formatted_with_the_call_arguments() -> None:
    spec = Approval.of("Refund {amount:.2f} on order {order_id}?")
    request = pending_of(spec.request("refund", {"amount": 12.5, "order_id": 7}))
    assert request is not None
    assert request.prompt == "Refund 12.50 on order 7?"
    assert request.kind == "approval" and request.id.startswith("approve-refund-")
    assert request.data == {"tool": "refund"}


def test_an_approval_prompt_never_fails_on_what_the_model_sent() -> None:
    spec = Approval.of("Refund {amount:.2f} on order {order_id}?")
    missing = pending_of(spec.request("refund", {}))
    wrong_type = pending_of(spec.request("refund", {"amount": "lots", "order_id": 1}))
    assert missing is not None and missing.prompt == "Refund  on order ?"
    assert wrong_type is not None and wrong_type.prompt == "Refund lots on order 1?"


def test_each_request_has_its_own_id() -> None:
    spec = Approval.of("Go?")
    ids = {pending_of(spec.request("t", {})).id for _ in range(50)}  # type: ignore[union-attr]
    assert len(ids) == 50


def test_an_approval_dict_carries_kind_schema_data_and_expiry() -> None:
    schema = {"type": "object", "properties": {"note": {"type": "string"}}}
    spec = Approval.of(
        {
            "prompt": "Tell me {what}",
            "kind": "input",
            "schema": schema,
            "data": {"x": 1},
            "expires_in": 60,
        }
    )
    request = pending_of(spec.request("ask", {"what": "more"}))
    assert request is not None
    assert (request.kind, request.prompt) == ("input", "Tell me more")
    assert request.data == {"x": 1, "tool": "ask", "schema": schema}
    assert request.expiresAt is not None and request.expiresAt.endswith("Z")


@pytest.mark.parametrize(
    "value, message",
    [
        ({"prompt": "x", "color": "red"}, r"unknown: \['color'\]"),
        ({"kind": "approval"}, 'needs a "prompt"'),
        ({"prompt": "x", "expires_in": 0}, "expires_in"),
        (42, "not int"),
    ],
)
def test_a_wrong_approval_is_refused_at_declaration(value: object, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        Approval.of(value)  # type: ignore[arg-type]


def test_a_prompt_naming_no_argument_is_refused_at_declaration() -> None:
    with pytest.raises(TypeError, match=r"names \{amount\}"):

        @toolnexus_django.tool(approval="Pay {amount}?")
        def pay(total: float) -> str:
            return "paid"


def test_atomic_needs_a_plain_def() -> None:
    with pytest.raises(TypeError, match="atomic= needs a plain def"):

        @toolnexus_django.tool(atomic=True)
        async def write() -> str:
            return "x"


@pytest.mark.parametrize("permission", ["add_expense", "a.b.c", ".x", ["ok.perm", 3]])
def test_a_permission_must_be_app_label_dot_codename(permission: object) -> None:
    with pytest.raises(TypeError, match=r"app_label\.codename"):
        toolnexus_django.tool(permission=permission)(lambda: "x")  # type: ignore[arg-type]


def test_the_decorator_works_bare_and_with_options_and_keeps_toolnexus_shapes() -> None:
    @toolnexus_django.tool
    def add(a: int, b: int) -> str:
        """Add two numbers."""
        return str(a + b)

    @toolnexus_django.tool(name="adder", permission="auth.view_user", atomic="default")
    def add2(a: int) -> str:
        return str(a)

    assert (add.name, add.description, add.source) == ("add", "Add two numbers.", "native")
    assert add.input_schema["required"] == ["a", "b"]
    assert (add2.name, add2.permissions, add2.atomic) == ("adder", ("auth.view_user",), "default")
    assert add.func is not None and add.func(1, 2) == "3"
