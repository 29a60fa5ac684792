"""The code's shape, measured: a report, not a test.

    python benchmarks/code_shape.py            # the app (toolnexus_django/, migrations aside)
    python benchmarks/code_shape.py --brief    # the counts only

Prints modules over 400 lines, functions over 60 lines, the imports made inside
functions (all of them, and those of the app's own modules, with locations),
and the import cycles among the app's modules: strongly connected components of
the graph of every import that runs (at module level or inside a function;
imports under ``if TYPE_CHECKING:`` run never, and are counted apart).
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "toolnexus_django"
MODULE_LINES = 400
FUNCTION_LINES = 60


@dataclass(frozen=True)
class Import:
    module: str  # the importing module, dotted
    line: int
    target: str  # what it names, dotted (absolute)
    in_function: bool
    type_only: bool


@dataclass
class Module:
    name: str  # dotted
    path: Path  # as shown: relative to the package's parent
    tree: ast.Module
    lines: int
    imports: list[Import] = field(default_factory=list)


def dotted(path: Path, package: Path) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def load(package: Path) -> dict[str, Module]:
    found = {}
    for path in sorted(package.rglob("*.py")):
        if "migrations" in path.parts:
            continue
        text = path.read_text()
        name = dotted(path, package)
        shown = path.relative_to(package.parent)
        module = Module(name, shown, ast.parse(text), len(text.splitlines()))
        module.imports = list(imports_of(module, path.name == "__init__.py"))
        found[name] = module
    return found


def is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def walk(node: ast.AST, in_function: bool, type_only: bool) -> Iterator[tuple[ast.AST, bool, bool]]:
    """Every node under ``node``, with whether it sits in a function / under TYPE_CHECKING."""
    for child in ast.iter_child_nodes(node):
        yield child, in_function, type_only
        inner = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
        guarded = type_only or (isinstance(child, ast.If) and is_type_checking(child))
        if isinstance(child, ast.If) and is_type_checking(child):
            for part in child.body:
                yield part, inner, True
                yield from walk(part, inner, True)
            for part in child.orelse:
                yield part, inner, type_only
                yield from walk(part, inner, type_only)
            continue
        yield from walk(child, inner, guarded)


def imports_of(module: Module, is_package: bool) -> Iterator[Import]:
    here = module.name.split(".") if is_package else module.name.split(".")[:-1]
    for node, in_function, type_only in walk(module.tree, False, False):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(module.name, node.lineno, alias.name, in_function, type_only)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - (node.level - 1)]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            for alias in node.names:
                target = f"{origin}.{alias.name}"
                yield Import(module.name, node.lineno, target, in_function, type_only)


def resolve(target: str, modules: dict[str, Module]) -> str | None:
    """The app's module that ``target`` (a module, or a name in one) imports, if any."""
    while target:
        if target in modules:
            return target
        target = target.rpartition(".")[0]
    return None


def long_functions(module: Module) -> Iterator[tuple[str, int, int]]:
    for node in ast.walk(module.tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > FUNCTION_LINES:
                yield node.name, node.lineno, length


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's components of more than one module (or one importing itself)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in graph.get(node, ()):
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found, key=lambda c: (-len(c), c))


def graph_of(modules: dict[str, Module], *, with_functions: bool) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for module in modules.values():
        for imp in module.imports:
            if imp.type_only or (imp.in_function and not with_functions):
                continue
            target = resolve(imp.target, modules)
            if target and target != module.name:
                graph[module.name].add(target)
    return graph


def where(module: Module, line: int) -> str:
    return f"{module.path}:{line}"


def statements(modules: dict[str, Module], test: Callable[[Import], bool]) -> dict[str, list[str]]:
    """Import statements passing ``test``: "path:line" -> the names each imports."""
    found: dict[str, list[str]] = {}
    for module in modules.values():
        for imp in module.imports:
            if test(imp):
                found.setdefault(where(module, imp.line), []).append(imp.target)
    return found


def own_names(names: list[str], modules: dict[str, Module]) -> bool:
    return any(resolve(name, modules) for name in names)


def report(modules: dict[str, Module], brief: bool) -> list[str]:
    out: list[str] = []

    def section(title: str, rows: list[str]) -> None:
        out.append(f"{title}: {len(rows)}")
        if not brief:
            out.extend(f"  {row}" for row in rows)

    long_modules = sorted(
        (m for m in modules.values() if m.lines > MODULE_LINES), key=lambda m: -m.lines
    )
    section(
        f"modules over {MODULE_LINES} lines",
        [f"{m.path}: {m.lines}" for m in long_modules],
    )
    functions = sorted(
        (
            (length, where(m, line), name)
            for m in modules.values()
            for name, line, length in long_functions(m)
        ),
        reverse=True,
    )
    section(
        f"functions over {FUNCTION_LINES} lines",
        [f"{place} {name}: {length}" for length, place, name in functions],
    )
    for label, test in (
        ("import statements inside functions", lambda i: i.in_function),
        ("import statements under TYPE_CHECKING (type-only)", lambda i: i.type_only),
    ):
        found = statements(modules, test)
        own = {place: names for place, names in found.items() if own_names(names, modules)}
        out.append(f"{label}: {len(found)}")
        section("  of the app's own modules", [f"{p} {' '.join(n)}" for p, n in own.items()])
    for label, with_functions in (("module level", False), ("module level + in functions", True)):
        cycles = strongly_connected(graph_of(modules, with_functions=with_functions))
        section(
            f"import cycles ({label}), as groups of modules that reach each other",
            [f"{len(c)} modules: {' '.join(c)}" for c in cycles],
        )
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--brief", action="store_true", help="the counts only")
    parser.add_argument("--package", type=Path, default=PACKAGE, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    modules = load(args.package.resolve())
    print(
        f"{args.package.name}: {len(modules)} modules, "
        f"{sum(m.lines for m in modules.values())} lines"
    )
    print("\n".join(report(modules, args.brief)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
