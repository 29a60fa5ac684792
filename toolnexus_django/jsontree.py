"""JSON values of any depth, walked without recursion.

A stored Task holds what a model and its tools wrote: a transcript, a
Request's data, tool arguments, nested as deep as whatever wrote them. The
recursive walkers Python has fail on deep values long before JSON does:
``copy.deepcopy`` overflowed the stack on a tool argument 600 lists deep (about
500 levels from the top of the stack, fewer inside a request), which left a
Task nobody could answer or cancel. The functions here keep their own stack,
so no depth can overflow them:

- :func:`copy_json` — a deep copy (what every move of a Task starts from);
- :func:`depth` — how deep a value nests, counted up to a limit;
- :func:`shallow_view` — a copy cut below a depth, for pages that render it;
- :func:`dumps_shown` — ``json.dumps`` for display that never fails.
"""

from __future__ import annotations

import json
from typing import Any

#: What :func:`shallow_view` puts where it cut a value.
CUT = "…"

#: How deep :func:`dumps_shown` renders a value that ``json.dumps`` cannot
#: (or that nests past :data:`SHOWN_MAX_DEPTH`).
SHOWN_DEPTH = 32
#: The deepest value :func:`dumps_shown` renders whole (a model's answer is
#: refused past 64 levels: only what was stored before that goes deeper).
SHOWN_MAX_DEPTH = 128

_CONTAINERS = (dict, list, tuple)


def copy_json(value: Any) -> Any:
    """A deep copy of ``value``'s dicts and lists (tuples become lists, as
    JSON has them), shared and cyclic parts shared and cyclic as in
    ``copy.deepcopy``; anything else (strings, numbers) is kept as is."""
    return _copy(value, None)


def shallow_view(value: Any, max_depth: int) -> Any:
    """A copy of ``value`` whose containers nested deeper than ``max_depth``
    (``value`` itself is level 1) are replaced by :data:`CUT`."""
    return _copy(value, max_depth)


def _copy(value: Any, max_depth: int | None) -> Any:
    if not isinstance(value, _CONTAINERS):
        return value
    if max_depth is not None and max_depth < 1:
        return CUT
    memo: dict[int, Any] = {}
    root = _new(value, memo)
    stack: list[tuple[Any, Any, int]] = [(value, root, 1)]
    while stack:
        source, target, level = stack.pop()
        deeper = max_depth is not None and level >= max_depth
        items = source.items() if isinstance(source, dict) else enumerate(source)
        for key, item in items:
            if not isinstance(item, _CONTAINERS):
                made = item
            elif deeper:
                made = CUT
            elif id(item) in memo:
                made = memo[id(item)]
            else:
                made = _new(item, memo)
                stack.append((item, made, level + 1))
            if isinstance(target, dict):
                target[key] = made
            else:
                target.append(made)
    return root


def _new(value: Any, memo: dict[int, Any]) -> Any:
    made: Any = {} if isinstance(value, dict) else []
    memo[id(value)] = made
    return made


def depth(value: Any, limit: int) -> int:
    """How many containers deep ``value`` nests (a scalar 0, ``[]`` 1, ``[[1]]``
    2), counted level by level and no further than ``limit + 1``: a value over
    the limit costs no more than one at it."""
    level: list[Any] = [value] if isinstance(value, _CONTAINERS) else []
    found = 0
    seen: set[int] = set()  # a cyclic value (never JSON) still ends
    while level and found <= limit:
        found += 1
        below: list[Any] = []
        for item in level:
            if id(item) in seen:
                continue
            seen.add(id(item))
            children = item.values() if isinstance(item, dict) else item
            below.extend(c for c in children if isinstance(c, _CONTAINERS))
        level = below
    return found


def dumps_shown(value: Any, **options: Any) -> str:
    """``json.dumps(value, **options)`` for a page to show: a value too deep
    for it (``RecursionError``) is shown cut at :data:`SHOWN_DEPTH` levels, and
    one it cannot write at all (an integer past Python's 4300 digits) as its
    type's name — rendering never fails on what was stored."""
    options.setdefault("default", str)
    # Measured, not attempted: whether json's recursion gives out on a deep
    # value depends on the stack it starts from (it did in one test run, not
    # in another), and a page should not.
    if depth(value, SHOWN_MAX_DEPTH) <= SHOWN_MAX_DEPTH:
        try:
            return json.dumps(value, **options)
        except RecursionError:
            pass
        except (TypeError, ValueError):
            return f"<{type(value).__name__} that cannot be shown>"
    try:
        return json.dumps(shallow_view(value, SHOWN_DEPTH), **options)
    except (RecursionError, TypeError, ValueError):
        return f"<{type(value).__name__} that cannot be shown>"
