"""The package's layout: each layer imports only the layers below it
(ARCHITECTURE.md), and no module grows far past 400 lines."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "toolnexus_django"

#: Bottom to top. A module's layer is that of its top-level name in the package.
LAYERS: list[set[str]] = [
    {
        "conf",
        "signals",
        "strictjson",
        "bounds",
        "schemas",
        # What runs per process: the registry of per-process state, the
        # thread pools, the database threads, and start() / stop(grace).
        "runtime",
    },
    {"compat"},
    {"stores", "models", "migrations"},
    # A project's tools: the run context, the decorator, the connection budget.
    {"tools"},
    {"agent"},
    {"lifecycle"},
    {"fulfilment", "backends", "tasks"},
    {"review"},
    {"a2a"},
    # Push notifications: delivers what the wire renders.
    {"push"},
    # The toolkit as an MCP server: the exchange on the runtime's loop, its audit.
    {"mcp"},
    # The HTTP edge: every binding (JSON-RPC, HTTP+JSON, MCP) over ASGI, and
    # the DRF views over WSGI, on one request handler.
    {"serving"},
    {
        # The URLconf projects include (its patterns live in serving).
        "urls",
        "asgi",
        "admin",
        "management",
        # The system checks, one module per part of the setting; they read
        # the toolkit (agent), the stores, push's allowlist and MCP's config.
        "checks",
        "apps",
        # The README Install's example tool, written as a project writes one
        # (with toolnexus_django.tool), so it can be copied as it is.
        "examples",
        # Helpers for a project's own tests: run Tasks and answer them in-process.
        "testing",
        # The package's facade: re-exports the public names of the layers below.
        "__init__",
    },
]


def layer_of(name: str) -> int:
    for index, names in enumerate(LAYERS):
        if name in names:
            return index
    raise AssertionError(f"{name!r} is in no layer: add it to LAYERS (and ARCHITECTURE.md)")


def imported_tops(path: Path) -> list[tuple[int, str]]:
    """(line, top-level package name) of every relative import in ``path``."""
    here = list(path.relative_to(PACKAGE).parts[:-1])
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.ImportFrom) or not node.level:
            continue
        base = here[: len(here) - (node.level - 1)] if node.level > 1 else here
        target = base + (node.module.split(".") if node.module else [])
        if target:
            found.append((node.lineno, target[0]))
        else:  # "from . import x" at the top of the package
            found += [(node.lineno, alias.name) for alias in node.names]
    return found


def modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "migrations" not in p.parts)


def test_every_layer_imports_only_the_layers_below_it() -> None:
    assert "lifecycle" in {
        top for _, top in imported_tops(PACKAGE / "serving" / "handler.py")
    }  # it reads
    upward = []
    for path in modules():
        mine = layer_of(path.relative_to(PACKAGE).parts[0].removesuffix(".py"))
        for line, top in imported_tops(path):
            if layer_of(top) > mine:
                upward.append(f"{path.relative_to(PACKAGE)}:{line} imports {top}")
    assert upward == []


def test_no_module_is_much_over_400_lines() -> None:
    long = {
        str(p.relative_to(PACKAGE)): n
        for p in modules()
        if (n := len(p.read_text().splitlines())) > 440
    }
    assert long == {}
