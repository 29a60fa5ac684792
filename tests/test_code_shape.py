"""The code's shape (DESIGN §6): no module of the package over 400 lines and
no function over 60, migrations excluded. A module that outgrows its bound is
split by concept (a new module in the package it belongs to), not trimmed of
its comments; a function that outgrows its bound is split into steps that each
have a name. (benchmarks/code_shape.py reports the same bounds, with the
imports, for the record; this is the rule.)"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "toolnexus_django"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def modules(package: Path) -> Iterator[Path]:
    for path in sorted(package.rglob("*.py")):
        if "migrations" not in path.relative_to(package).parts:
            yield path


def long_modules(package: Path) -> dict[str, int]:
    """Modules over :data:`MAX_MODULE_LINES` lines -> their length."""
    found = {}
    for path in modules(package):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_MODULE_LINES:
            found[path.relative_to(package).as_posix()] = lines
    return found


def long_functions(package: Path) -> dict[str, int]:
    """Functions (and methods) over :data:`MAX_FUNCTION_LINES` lines, from
    their ``def`` to their last line -> their length."""
    found = {}
    for path in modules(package):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    found[f"{path.relative_to(package).as_posix()}:{node.name}"] = length
    return found


def test_no_module_is_over_400_lines() -> None:
    assert long_modules(PACKAGE) == {}, "split these modules by concept"


def test_no_function_is_over_60_lines() -> None:
    assert long_functions(PACKAGE) == {}, "split these functions into named steps"


def test_the_rule_bites_at_the_first_line_past_each_bound(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "migrations").mkdir(parents=True)

    def function(name: str, lines: int) -> str:
        return f"def {name}():\n" + "    x = 1\n" * (lines - 1)

    files = {
        "at_the_bound.py": "x = 1\n" * 400,
        "one_past.py": "x = 1\n" * 401,
        "functions.py": function("sixty", 60)
        + "\n\nclass C:\n"
        + textwrap.indent(function("sixty_one", 61), "    "),
        "migrations/0001_initial.py": "x = 1\n" * 500 + function("long", 100),
    }
    for name, text in files.items():
        (package / name).write_text(text)

    assert long_modules(package) == {"one_past.py": 401}
    assert long_functions(package) == {"functions.py:sixty_one": 61}
