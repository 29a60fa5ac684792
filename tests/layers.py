"""The package's layers, bottom to top: the one copy of the map.

``tests/test_layout.py`` checks every import in the package against it, and
the docs site's architecture page (docs/explanation/architecture.md)
shows the map rendered from it. After editing ``ROWS``, run::

    python -m tests.layers --write

A layer imports only layers on rows below its own. The layers of one row sit
side by side: none imports another (an import between them is sideways).
Imports inside functions count like any other.
"""

from __future__ import annotations

import ast
import sys
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "toolnexus_django"
#: The docs site's architecture page: the one rendered copy of the map.
ARCHITECTURE = ROOT / "docs" / "explanation" / "architecture.md"
BEGIN = "<!-- layers:begin: rendered from tests/layers.py by `python -m tests.layers --write` -->"
END = "<!-- layers:end -->"
WRITE_COMMAND = "python -m tests.layers --write"


@dataclass(frozen=True)
class Layer:
    name: str
    #: The package's top-level names it holds: a module (without ".py") or a package.
    holds: tuple[str, ...]
    about: str


#: Bottom to top; one tuple per row, its layers side by side.
ROWS: tuple[tuple[Layer, ...], ...] = (
    (
        Layer(
            "conf",
            ("conf", "conf_docs", "conf_sections_docs", "conf_legacy"),
            "settings: defaults, sections, every read, dotted paths, what each means, "
            "keys retired or moved",
        ),
        Layer(
            "values",
            ("strictjson", "bounds", "schemas", "jsontree"),
            "strict JSON, bounds on what is stored, answer schemas, "
            "JSON of any depth walked without recursion",
        ),
        Layer("signals", ("signals",), "the signals a project connects to"),
        Layer("compat", ("compat",), "Django Tasks on Django 5.2 and 6"),
    ),
    (
        Layer(
            "runtime",
            ("runtime",),
            "what runs per process, behind start() / stop(grace)",
        ),
        Layer("keys", ("keys",), "signing keys: the JWKS, ES256 JWS (push, Agent Card)"),
        Layer(
            "observability",
            ("observability",),
            "traces and metrics (optional extras): spans after the GenAI and A2A "
            "conventions, Prometheus counters",
        ),
    ),
    (
        Layer(
            "stores",
            ("stores", "models", "migrations"),
            "persistence: models, TaskStore, compare-and-set, events",
        ),
    ),
    (
        Layer(
            "tools",
            ("tools",),
            "a project's tools: run context, decorator, approvals, "
            "exactly-once outcomes, permissions offered, the connection budget",
        ),
    ),
    (
        Layer(
            "agent",
            ("agent",),
            "the model: runtime loop, transport, transcripts, replay",
        ),
    ),
    (
        Layer(
            "lifecycle",
            ("lifecycle",),
            "the Task's state machine: moves, events, wake-ups",
        ),
    ),
    (
        Layer(
            "fulfilment",
            ("fulfilment", "backends", "tasks"),
            "runs: jobs, runner, leases, recovery, sweep; the "
            "dotted paths that settings and enqueued jobs name",
        ),
        Layer(
            "a2a",
            ("a2a",),
            "the wire: JSON-RPC, HTTP+JSON, methods, streams, card",
        ),
    ),
    (
        Layer(
            "review",
            ("review",),
            "the reviewer's side: answers, holds, four eyes, bulk",
        ),
        Layer("push", ("push",), "push notifications: configs, SSRF, delivery, signing"),
        Layer(
            "mcp",
            ("mcp",),
            "the toolkit as an MCP server: exchange, guard, audit",
        ),
    ),
    (
        Layer(
            "serving",
            ("serving",),
            "the edge: one request handler, its bindings (JSON-RPC, HTTP+JSON, "
            "MCP) over ASGI, the DRF views over WSGI, SSE, static files, gRPC, "
            "toolnexus_serve's server and workers",
        ),
        Layer(
            "admin",
            ("admin",),
            "the admin: Tasks, review queue, decisions, push, MCP",
        ),
    ),
    (
        Layer("entry", ("asgi", "urls"), "what a project mounts: the ASGI app, the URLs"),
        Layer(
            "checks",
            ("checks",),
            "system checks: one module per part, one id per problem",
        ),
    ),
    (
        Layer(
            "management",
            ("management",),
            "toolnexus_serve, toolnexus_sweep, toolnexus_prune",
        ),
        Layer("apps", ("apps",), "the AppConfig: ready() connects the checks and handlers"),
    ),
    (
        Layer("facade", ("__init__",), "what a project imports: tool, current_run, Approval"),
        Layer(
            "testing",
            ("testing",),
            "a project's tests: a scripted model, run_task, answer",
        ),
        Layer(
            "offline",
            ("offline",),
            "a deterministic offline model, for tests and demos",
        ),
    ),
    (
        Layer(
            "examples",
            ("examples",),
            "the Install's example tool, as a project writes one",
        ),
    ),
)


# -- the check ----------------------------------------------------------------


def top_names(package: Path) -> set[str]:
    """The package's top-level modules and packages ("__init__" for the package itself)."""
    names = {p.stem for p in package.glob("*.py")}
    names |= {p.name for p in package.iterdir() if (p / "__init__.py").is_file()}
    return names


def modules(package: Path) -> list[Path]:
    """Every module whose imports are checked (migrations are Django's, not ours)."""
    return sorted(p for p in package.rglob("*.py") if "migrations" not in p.parts)


def parse(source: str, filename: str | Path = "<unknown>") -> ast.Module:
    """``ast.parse``, once more on CPython's "AST constructor recursion depth
    mismatch": on 3.11 the check is not thread-safe (python/cpython#106905),
    and a background thread formatting a traceback (3.11 parses the failing
    line for its carets) can trip it while a test scans the package."""
    try:
        return ast.parse(source, filename=str(filename))
    except SystemError:
        return ast.parse(source, filename=str(filename))


def top_of(path: Path, package: Path) -> str:
    return path.relative_to(package).parts[0].removesuffix(".py")


def imported_tops(path: Path, package: Path) -> list[tuple[int, str]]:
    """(line, top-level name) of every import of the package's own modules in ``path``:
    relative or absolute, at module level or inside a function."""
    here = list(path.relative_to(package).parts[:-1])
    tops = top_names(package)
    found: list[tuple[int, str]] = []
    for node in ast.walk(parse(path.read_text(), path)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == package.name:
                    found.append((node.lineno, parts[1] if len(parts) > 1 else "__init__"))
            continue
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = here[: len(here) - (node.level - 1)]
            target = base + (node.module.split(".") if node.module else [])
        elif node.module and node.module.split(".")[0] == package.name:
            target = node.module.split(".")[1:]
        else:
            continue
        if target:
            found.append((node.lineno, target[0]))
        else:  # "from toolnexus_django import x": a module, or a name of the facade
            found += [
                (node.lineno, alias.name if alias.name in tops else "__init__")
                for alias in node.names
            ]
    return found


def placement(rows: Sequence[Sequence[Layer]]) -> dict[str, tuple[int, Layer]]:
    """Each held name's (row, layer)."""
    placed: dict[str, tuple[int, Layer]] = {}
    for index, row in enumerate(rows):
        for layer in row:
            for name in layer.holds:
                if name in placed:
                    raise ValueError(f"{name!r} is held by two layers")
                placed[name] = (index, layer)
    return placed


def misplaced(package: Path, rows: Sequence[Sequence[Layer]]) -> list[str]:
    """Top-level names in no layer, and names a layer holds that the package lacks."""
    placed = placement(rows)
    tops = top_names(package)
    where = f"{package.name}/"
    return [
        f"{where}{name} is in no layer: add it to ROWS in tests/layers.py"
        for name in sorted(tops - placed.keys())
    ] + [
        f"layer {placed[name][1].name!r} holds {name!r}, which is not in {where}"
        for name in sorted(placed.keys() - tops)
    ]


def violations(package: Path, rows: Sequence[Sequence[Layer]]) -> list[str]:
    """Every import of a layer on the same row or a row above, with its edge named."""
    placed = placement(rows)
    found = []
    for path in modules(package):
        if top_of(path, package) not in placed:
            continue  # misplaced() names it
        mine, layer = placed[top_of(path, package)]
        for line, top in imported_tops(path, package):
            if top not in placed:
                found.append(
                    f"{path.relative_to(package.parent)}:{line} imports {top}: no such module"
                )
                continue
            theirs, other = placed[top]
            if other is layer or theirs < mine:
                continue
            where = "beside" if theirs == mine else "above"
            found.append(
                f"{path.relative_to(package.parent)}:{line} imports {top}: layer "
                f"{layer.name!r} may import only layers below it ({other.name!r} is {where} it)"
            )
    return found


# -- the map on the architecture page ------------------------------------------


def shown(name: str, package: Path) -> str:
    return f"{name}.py" if (package / f"{name}.py").is_file() else f"{name}/"


def render(rows: Sequence[Sequence[Layer]], package: Path = PACKAGE) -> str:
    """The fenced map, top row first; layers sharing a row number sit side by side."""
    lines = [f"row {'layer':<11} {'holds':<28} what it is"]
    for index in reversed(range(len(rows))):
        for position, layer in enumerate(rows[index]):
            holds = textwrap.wrap(" ".join(shown(n, package) for n in layer.holds), 28)
            about = textwrap.wrap(layer.about, 55, break_on_hyphens=False)
            number = f"{index:>3}" if position == 0 else "   "
            for row_line in range(max(len(holds), len(about))):
                lead = f"{number} {layer.name:<11}" if row_line == 0 else " " * 15
                hold = holds[row_line] if row_line < len(holds) else ""
                text = about[row_line] if row_line < len(about) else ""
                lines.append(f"{lead} {hold:<28} {text}".rstrip())
    return "\n".join(["```", *lines, "```"])


def with_map(document: str, block: str) -> str:
    """``document`` with the text between the markers replaced by ``block``."""
    head, found, rest = document.partition(BEGIN)
    _, end, tail = rest.partition(END)
    if not (found and end):
        raise ValueError(f"{ARCHITECTURE.name} lacks the markers {BEGIN} ... {END}")
    return f"{head}{BEGIN}\n{block}\n{END}{tail}"


def main(argv: Iterable[str]) -> int:
    document = ARCHITECTURE.read_text()
    updated = with_map(document, render(ROWS))
    if "--write" in argv:
        ARCHITECTURE.write_text(updated)
        return 0
    print(render(ROWS))
    return 0 if updated == document else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
