"""A deterministic offline model, for development, tests and demos: no LLM, no
network, no key. Select it in your settings::

    TOOLNEXUS = {"CLIENT": "toolnexus_django.offline.client"}

and the agent answers at once, the same way every time, and calls your tools
when a message names them. On each turn it looks at the conversation's last
message, and:

- after a tool's result, it answers with it: ``Done. <the result>``;
- when the user's latest message names a tool the run offers (its name, or
  the name with spaces for underscores, any case: ``close_ticket 7`` or
  "Close ticket 7"), it calls that tool, with arguments read from the message
  against the tool's JSON schema, in this order: ``name=value`` or
  ``name: value`` pairs (quote a value with spaces: ``reason="a duplicate"``);
  then the message's numbers, in order, for the number and integer parameters;
  then its quoted text (``"..."`` or ``'...'``), in order, for the string
  parameters; then a parameter's schema ``default``. A required parameter
  still without a value makes it say which one it could not find, and call
  nothing: it never makes a value up;
- a tool the run does not offer (there is none of that name, or the person
  asking lacks its permission) is never called: a message naming one
  (``close_ticket``, written as a name with its underscores) gets an answer
  saying it is not offered;
- anything else gets a short one-line echo, the same for the same message:
  ``Summary (<n> words): <its first twelve words> ...``.

A streamed run (a Task sent by a streaming method) gets its answer a word at
a time, at once by default (``words_per_second`` sets a reading pace).

It is not a language model: it does not reason, reads no meaning into words,
and knows no language — it matches tool and parameter names, numbers and
quotes. It makes at most one tool call per turn (then answers with its
result), reads only the latest user message (not the conversation before
it), and picks the tool named first when a message names several (the
longest name at the same place). A short tool name that is also a word
("add", "search") is called whenever the word appears.

To teach it your own phrasing, give it rules: functions of a :class:`Prompt`
that answer a turn (``{"content": "..."}``, or ``{"tool_calls": [{"name":
..., "arguments": {...}}]}``) or return ``None`` to leave it to the next
rule, and at last to the behaviour above. Rules see only user turns (a tool's
result is always answered with ``Done. ...``), and a rule's call of a tool
the run does not offer is answered as not offered instead::

    from toolnexus_django import offline

    def taxi(prompt: offline.Prompt) -> dict | None:
        if "taxi" in prompt.text.lower():
            return {"content": "Taxis go under travel."}
        return None

    def client():  # TOOLNEXUS = {"CLIENT": "myproject.offline.client"}
        return offline.client(rules=[taxi])
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import toolnexus

from .agent.inprocess import in_process_client

#: How many of a message's words the plain answer repeats.
ECHO_WORDS = 12


@dataclass(frozen=True)
class Prompt:
    """The turn a rule answers: the user's latest message, and what the run offers."""

    #: The text of the user's latest message ("" if there is none).
    text: str
    #: Each tool the run offers the model, by name: its parameters' JSON schema.
    offered: Mapping[str, Mapping[str, Any]]
    #: toolnexus's whole request (``messages``, ``tools``, ``model``, ``body``).
    request: Mapping[str, Any] = field(repr=False, default_factory=dict)


#: A rule: an answer to the turn, or None to leave it to the next rule.
Rule = Callable[[Prompt], Mapping[str, Any] | None]


def client(
    *,
    rules: Sequence[Rule] = (),
    model: str = "offline",
    words_per_second: float | None = None,
    **options: Any,
) -> toolnexus.Client:
    """A deterministic offline model (no LLM, no network): for development, tests and demos.

    ``rules`` answer a turn before the built-in behaviour (this module's
    docstring); a streamed answer comes a word at a time, ``words_per_second``
    of them (None or 0: at once); ``options`` go to ``toolnexus.create_client``
    (``max_turns``, ``system_prompt``, ...)."""
    rules = tuple(rules)
    return in_process_client(
        model=model,
        generate=lambda request: generate(request, rules=rules),
        words_per_second=words_per_second,
        **options,
    )


def generate(request: Mapping[str, Any], *, rules: Sequence[Rule] = ()) -> dict[str, Any]:
    """The offline model's answer to one toolnexus ``generate`` request."""
    messages = request.get("messages") or []
    last = messages[-1] if messages else {}
    if last.get("role") == "tool":
        return {"content": f"Done. {_text_of(last.get('content'))}"}
    prompt = Prompt(_last_user_text(messages), _offered(request), request)
    for rule in rules:
        answer = rule(prompt)
        if answer is not None:
            return _only_offered(dict(answer), prompt)
    named = _named_tool(prompt)
    if named is not None:
        arguments = _arguments(named, prompt.offered[named], _without_name(prompt.text, named))
        if isinstance(arguments, str):
            return {"content": arguments}
        return {"tool_calls": [{"name": named, "arguments": arguments}]}
    unknown = _named_identifier(prompt.text)
    if unknown is not None:
        return {"content": not_offered(unknown)}
    return {"content": echo(prompt.text)}


def not_offered(name: str) -> str:
    """The plain answer to a message that names a tool the run does not offer."""
    return (
        f"I cannot call {name}: this run does not offer it "
        "(there is no such tool, or you may not use it)."
    )


def echo(text: str) -> str:
    """The plain answer to anything else: ``Summary (<n> words): <the first twelve> ...``."""
    words = text.split()
    summary = " ".join(words[:ECHO_WORDS]) + (" ..." if len(words) > ECHO_WORDS else "")
    return f"Summary ({len(words)} words): {summary}"


# -- reading the request ---------------------------------------------------------------


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}, ...]
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def _last_user_text(messages: Sequence[Mapping[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            return _text_of(message.get("content"))
    return ""


def _offered(request: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The tools the run offers the model (the person asking is not offered a
    tool whose permission they lack), by name: each one's parameters."""
    offered: dict[str, Mapping[str, Any]] = {}
    for declared in request.get("tools") or []:
        function = declared.get("function") if isinstance(declared, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            parameters = function.get("parameters")
            offered[function["name"]] = parameters if isinstance(parameters, dict) else {}
    return offered


def _only_offered(answer: dict[str, Any], prompt: Prompt) -> dict[str, Any]:
    for call in answer.get("tool_calls") or ():
        if call.get("name") not in prompt.offered:
            return {"content": not_offered(str(call.get("name")))}
    return answer


# -- which tool ------------------------------------------------------------------------


def _name_pattern(name: str) -> re.Pattern[str]:
    """``close_ticket`` as written, or with spaces for its underscores, any case."""
    words = r"(?:_|\s+)".join(re.escape(part) for part in name.split("_"))
    return re.compile(rf"(?<!\w){words}(?!\w)", re.IGNORECASE)


def _named_tool(prompt: Prompt) -> str | None:
    """The offered tool the message names first (the longest name at one place)."""
    found = [
        (match.start(), -len(name), name)
        for name in prompt.offered
        if (match := _name_pattern(name).search(prompt.text))
    ]
    return min(found)[2] if found else None


def _without_name(text: str, name: str) -> str:
    """The message without the tool's name (so that no digit of it is an argument)."""
    return _name_pattern(name).sub(" ", text, count=1)


#: A name with underscores that is not a ``name=value`` key: ``close_ticket``.
_IDENTIFIER = re.compile(r"(?<![\w.])[A-Za-z][A-Za-z0-9]*(?:_+[A-Za-z0-9]+)+(?!\w|\.\w|\s*[=:])")


def _named_identifier(text: str) -> str | None:
    match = _IDENTIFIER.search(text)
    return match.group(0) if match else None


# -- which arguments -------------------------------------------------------------------

_QUOTED = re.compile(r"(?<!\w)\"([^\"]*)\"|(?<!\w)'([^']*)'(?!\w)")
_NUMBER = re.compile(r"(?<![\w.-])-?\d+(?:\.\d+)?(?![\w]|\.\d)")


class _Unreadable(ValueError):
    """A value the message gives that the parameter's type cannot take."""


def _arguments(tool: str, schema: Mapping[str, Any], text: str) -> dict[str, Any] | str:
    """The call's arguments read from ``text``, or the plain answer saying why
    there can be no call."""
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    required = set(schema.get("required") or ())
    try:
        found, rest = _pairs(properties, text)
        quoted = [
            m.group(1) if m.group(1) is not None else m.group(2) for m in _QUOTED.finditer(rest)
        ]
        numbers = _NUMBER.findall(_QUOTED.sub(" ", rest))
        for name, spec in properties.items():
            if name in found:
                continue
            kinds = _kinds(spec)
            if kinds & {"integer", "number"} and numbers:
                found[name] = _convert(name, numbers.pop(0), spec)
            elif "string" in kinds and quoted:
                found[name] = quoted.pop(0)
            elif isinstance(spec, dict) and "default" in spec:
                found[name] = spec["default"]
            elif name in required:
                return (
                    f"I cannot call {tool}: I found no {name} in your message "
                    f'(write it as {name}=..., or {name}="..." for text with spaces).'
                )
    except _Unreadable as unreadable:
        return f"I cannot call {tool}: {unreadable}"
    return found


def _pairs(properties: Mapping[str, Any], text: str) -> tuple[dict[str, Any], str]:
    """The ``name=value`` / ``name: value`` pairs naming a parameter, and the
    text without them."""
    found: dict[str, Any] = {}
    for name, spec in properties.items():
        pair = re.compile(
            rf"(?<!\w){re.escape(name)}\s*[=:]\s*(?:\"([^\"]*)\"|'([^']*)'|([^\s,;]+))",
            re.IGNORECASE,
        )
        match = pair.search(text)
        if match is None:
            continue
        double, single, bare = match.groups()
        if bare is not None:
            value, quoted = bare.rstrip(".!?") or bare, False
        else:
            value, quoted = (double if double is not None else single), True
        found[name] = value if quoted and "string" in _kinds(spec) else _convert(name, value, spec)
        text = text[: match.start()] + " " + text[match.end() :]
    return found, text


def _kinds(spec: Any) -> set[str]:
    """The JSON types a parameter's schema allows (``type``, a list of them, or ``anyOf``)."""
    if not isinstance(spec, dict):
        return set()
    kind = spec.get("type")
    kinds = {kind} if isinstance(kind, str) else {k for k in kind or () if isinstance(k, str)}
    for option in spec.get("anyOf") or spec.get("oneOf") or ():
        kinds |= _kinds(option)
    return kinds


def _convert(name: str, value: str, spec: Any) -> Any:
    """``value`` as the parameter's type (its first of integer, number, boolean, string)."""
    kinds = _kinds(spec)
    if kinds & {"integer", "number"}:
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if not math.isfinite(number):
            raise _Unreadable(f"{name} must be a number, not {value!r}.")
        if "integer" in kinds and "number" not in kinds and not number.is_integer():
            raise _Unreadable(f"{name} must be a whole number, not {value!r}.")
        whole = number.is_integer() and ("integer" in kinds or "." not in value)
        return int(number) if whole else number
    if "boolean" in kinds:
        truth = {"true": True, "yes": True, "on": True, "false": False, "no": False, "off": False}
        if value.lower() not in truth:
            raise _Unreadable(f"{name} must be true or false, not {value!r}.")
        return truth[value.lower()]
    return value
