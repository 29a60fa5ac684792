"""Only the lifecycle and the stores know the private section's keys.

The server-side section of a stored Task (``task["_private"]``) is read and
written through :mod:`toolnexus_django.lifecycle` (``read``, ``write``, the
verbs); the stores persist it. Every other module of the package is parsed
here, and fails the test if it

(a) uses the name ``PRIVATE_KEY`` or the string ``"_private"``, or
(b) takes one of the section's keys (``phase``, ``lease``, ``pending``, ...)
    by subscript or ``.get(...)`` from an expression that is itself the
    private section (``task["_private"]``, ``task.get(PRIVATE_KEY) or {}``, a
    name bound to one of those).

Each offence is reported as ``path:line: what``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import toolnexus_django
from tests.layers import parse
from toolnexus_django.lifecycle import private

PACKAGE = Path(toolnexus_django.__file__).resolve().parent
REPO = PACKAGE.parent
#: The parts of the package that own the private section.
OWNERS = ("lifecycle", "stores")
#: Keys the stores (and earlier versions) keep in the section besides the lifecycle's own.
STORE_KEYS = frozenset({"revision", "events", "audit"})

PRIVATE = "_private"
PRIVATE_NAME = "PRIVATE_KEY"
#: Methods that take a key as their first argument.
KEYED_METHODS = frozenset({"get", "setdefault", "pop"})
#: Calls that hand back (a copy of) what they are given.
COPIES = frozenset({"dict", "copy", "deepcopy"})
SCOPES = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


# -- the keys ------------------------------------------------------------------------------


def table_keys(doc: str) -> frozenset[str]:
    """The keys in the first column of the reST table in ``doc``."""
    lines = doc.splitlines()
    rules = [i for i, line in enumerate(lines) if re.fullmatch(r"=+(\s+=+)+", line.strip())]
    if len(rules) < 3:
        return frozenset()
    width = len(lines[rules[1]].strip().split()[0])
    keys: set[str] = set()
    for line in lines[rules[1] + 1 : rules[2]]:
        keys.update(k.strip() for k in line[:width].split(",") if k.strip())
    return frozenset(keys)


def private_keys() -> frozenset[str]:
    """The private section's keys, as :mod:`.lifecycle.private` names them."""
    return table_keys(private.__doc__ or "") | frozenset(private._KNOWN) | STORE_KEYS


# -- the checker ---------------------------------------------------------------------------


@dataclass(frozen=True, order=True)
class Offence:
    path: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}"


def names_private(node: ast.AST) -> bool:
    """``"_private"`` or ``PRIVATE_KEY`` (bare or as an attribute)."""
    if isinstance(node, ast.Constant):
        return node.value == PRIVATE
    if isinstance(node, ast.Name):
        return node.id == PRIVATE_NAME
    return isinstance(node, ast.Attribute) and node.attr == PRIVATE_NAME


def is_section(node: ast.AST, tainted: frozenset[str]) -> bool:
    """Whether ``node`` evaluates to the private section: ``x["_private"]``,
    ``x.get(PRIVATE_KEY)`` (also ``setdefault``/``pop``), ``(... or {})``,
    ``a if c else b``, ``dict(...)``/``copy(...)`` of one, or a name bound to one."""
    if isinstance(node, ast.Name):
        return node.id in tainted
    if isinstance(node, ast.Subscript):
        return names_private(node.slice)
    if isinstance(node, ast.BoolOp):
        return any(is_section(v, tainted) for v in node.values)
    if isinstance(node, ast.IfExp):
        return is_section(node.body, tainted) or is_section(node.orelse, tainted)
    if isinstance(node, ast.NamedExpr):
        return is_section(node.value, tainted)
    if isinstance(node, ast.Call) and node.args:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in KEYED_METHODS:
            return names_private(node.args[0])
        called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        return called in COPIES and is_section(node.args[0], tainted)
    return False


def keyed(node: ast.AST) -> tuple[str, ast.expr, str] | None:
    """``(key, container, how)`` when ``node`` takes a constant string key."""
    if isinstance(node, ast.Subscript):
        key = node.slice
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            return key.value, node.value, f"[{key.value!r}]"
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in KEYED_METHODS
        and node.args
    ):
        key = node.args[0]
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            return key.value, node.func.value, f".{node.func.attr}({key.value!r})"
    return None


def own_nodes(scope: ast.AST) -> Iterator[ast.AST]:
    """The nodes of ``scope`` outside its nested scopes (those are yielded, not entered)."""
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, SCOPES):
            stack.extend(ast.iter_child_nodes(node))


def bound_sections(nodes: list[ast.AST], inherited: frozenset[str]) -> frozenset[str]:
    """The names bound to the private section in a scope (flow-insensitive)."""
    tainted = set(inherited)
    while True:
        before = len(tainted)
        for node in nodes:
            if isinstance(node, ast.Assign) and is_section(node.value, frozenset(tainted)):
                tainted.update(t.id for t in node.targets if isinstance(t, ast.Name))
            elif (
                isinstance(node, (ast.AnnAssign, ast.NamedExpr))
                and isinstance(node.target, ast.Name)
                and node.value is not None
                and is_section(node.value, frozenset(tainted))
            ):
                tainted.add(node.target.id)
        if len(tainted) == before:
            return frozenset(tainted)


def check_scope(
    scope: ast.AST, path: str, keys: frozenset[str], inherited: frozenset[str]
) -> Iterator[Offence]:
    nodes = list(own_nodes(scope))
    tainted = bound_sections(nodes, inherited)
    for node in nodes:
        found = keyed(node)
        if found is not None:
            key, container, how = found
            if key in keys and is_section(container, tainted):
                line = getattr(node, "lineno", 0)
                yield Offence(path, line, f"takes private key {key!r} ({how} on _private)")
        if isinstance(node, SCOPES):
            yield from check_scope(node, path, keys, tainted)


def check_names(tree: ast.AST, path: str) -> Iterator[Offence]:
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Name) and node.id == PRIVATE_NAME:
            yield Offence(path, line, f"uses {PRIVATE_NAME}")
        elif isinstance(node, ast.Attribute) and node.attr == PRIVATE_NAME:
            yield Offence(path, line, f"uses .{PRIVATE_NAME}")
        elif isinstance(node, ast.alias) and node.name == PRIVATE_NAME:
            yield Offence(path, line, f"imports {PRIVATE_NAME}")
        elif isinstance(node, ast.Constant) and node.value == PRIVATE:
            yield Offence(path, line, f"names {PRIVATE!r}")
        elif isinstance(node, ast.keyword) and node.arg == PRIVATE:
            yield Offence(path, line, f"passes {PRIVATE}= as a keyword")


def offences_in(source: str, path: str, keys: frozenset[str] | None = None) -> list[Offence]:
    tree = parse(source, path)
    keys = private_keys() if keys is None else keys
    found = {*check_names(tree, path), *check_scope(tree, path, keys, frozenset())}
    return sorted(found)


def modules(*, owners: bool = False) -> list[Path]:
    """The package's modules (no migrations): those outside :data:`OWNERS`,
    or with ``owners`` only theirs."""
    found = []
    for file in sorted(PACKAGE.rglob("*.py")):
        parts = file.relative_to(PACKAGE).parts
        if "migrations" in parts:
            continue
        if (len(parts) > 1 and parts[0] in OWNERS) == owners:
            found.append(file)
    return found


def scan(files: list[Path]) -> list[Offence]:
    return [
        offence
        for file in files
        for offence in offences_in(
            file.read_text(encoding="utf-8"), file.relative_to(REPO).as_posix()
        )
    ]


# -- today's tree ----------------------------------------------------------------------------


def test_no_module_outside_the_lifecycle_and_the_stores_names_the_private_section() -> None:
    files = modules()
    names = {f.relative_to(PACKAGE).as_posix() for f in files}
    # The scan sees the package (so it cannot pass by finding nothing to read).
    assert {"serving/wsgi.py", "models/tasks.py", "admin/display.py", "review/__init__.py"} <= names
    assert not any(n.startswith(("lifecycle/", "stores/", "migrations/")) for n in names)
    found = scan(files)
    assert not found, "the private section named outside the lifecycle:\n" + "\n".join(
        map(str, found)
    )


def test_the_owners_do_name_it_and_the_checker_sees_them() -> None:
    """Run on the modules that may name the section, the checker finds both
    kinds of naming — the real shapes, not only the snippets below."""
    found = [str(o) for o in scan(modules(owners=True))]
    assert any(
        o.startswith("toolnexus_django/stores/base.py:") and "uses PRIVATE_KEY" in o for o in found
    )
    assert any(
        o.startswith("toolnexus_django/stores/base.py:") and "'revision'" in o for o in found
    )
    # private.read binds the section to a name, then takes its keys.
    assert any(
        o.startswith("toolnexus_django/lifecycle/private.py:") and "'lease'" in o for o in found
    )


def test_the_keys_are_the_ones_the_lifecycle_names() -> None:
    table = table_keys(private.__doc__ or "")
    assert {"v", "owner", "phase", "pending", "lease", "usage", "turns", "revision"} <= table
    assert set(private._KNOWN) <= private_keys()
    assert {"revision", "events", "audit", "style", "resuming"} <= private_keys()
    assert "key" not in private_keys(), "the table's header is not a key"


# -- the checker itself ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        pytest.param(
            'def f(task):\n    return task["_private"]["lease"]\n',
            [
                "x.py:2: names '_private'",
                "x.py:2: takes private key 'lease' (['lease'] on _private)",
            ],
            id="subscript",
        ),
        pytest.param(
            "from toolnexus_django.stores.base import PRIVATE_KEY\n"
            "def f(task):\n"
            '    return (task.get(PRIVATE_KEY) or {}).get("phase")\n',
            [
                "x.py:1: imports PRIVATE_KEY",
                "x.py:3: takes private key 'phase' (.get('phase') on _private)",
                "x.py:3: uses PRIVATE_KEY",
            ],
            id="get-or-empty",
        ),
        pytest.param(
            "from toolnexus_django import stores\n"
            "def f(task):\n"
            "    raw = task.get(stores.PRIVATE_KEY)\n"
            "    raw = raw if isinstance(raw, dict) else {}\n"
            "    def inner():\n"
            '        return raw.get("attempts")\n'
            '    raw["seq"] = 0\n'
            "    return inner\n",
            [
                "x.py:3: uses .PRIVATE_KEY",
                "x.py:6: takes private key 'attempts' (.get('attempts') on _private)",
                "x.py:7: takes private key 'seq' (['seq'] on _private)",
            ],
            id="bound-to-a-name",
        ),
        pytest.param('SECTION = "_private"\n', ["x.py:1: names '_private'"], id="the-string-alone"),
        pytest.param(
            "def f():\n    return dict(_private={})\n",
            ["x.py:2: passes _private= as a keyword"],
            id="keyword",
        ),
    ],
)
def test_the_checker_catches_each_way_of_naming_it(source: str, expected: list[str]) -> None:
    assert [str(o) for o in offences_in(source, "x.py")] == sorted(expected)


def test_the_checker_leaves_lookalikes_alone() -> None:
    """The same keys on anything but the private section are fine."""
    source = (
        "from toolnexus_django import lifecycle\n"
        "def f(task, event, cfg, pending, options):\n"
        "    private = event.get('private') or {}\n"
        "    state = lifecycle.read(task)\n"
        "    return (\n"
        "        pending.get('id'), private.get('error'), cfg.get('style'), state.lease,\n"
        "        options['owner'], task['status']['state'], event.get('seq'),\n"
        "        task.get('private_notes'), (task.get('metadata') or {}).get('phase'),\n"
        "    )\n"
    )
    assert offences_in(source, "x.py") == []


def test_an_offence_reads_as_path_line_what() -> None:
    [offence] = offences_in("\n\nKEY = '_private'\n", "toolnexus_django/somewhere.py")
    assert str(offence) == "toolnexus_django/somewhere.py:3: names '_private'"
