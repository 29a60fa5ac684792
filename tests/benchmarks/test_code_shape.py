"""benchmarks/code_shape.py as shipped (in this process), on a small package with what it must find
planted: a long module, a long function, imports inside functions (one of the
package's own, closing a cycle), a type-only import."""

from __future__ import annotations

import runpy
import textwrap
from pathlib import Path

import pytest

from tests.servers import ROOT

#: The script's namespace, loaded as it is shipped (benchmarks/ is not a package).
SHAPE = runpy.run_path(str(ROOT / "benchmarks" / "code_shape.py"))


def shape_of(capsys: pytest.CaptureFixture[str], package: Path, *flags: str) -> str:
    assert SHAPE["main"](["--package", str(package), *flags]) == 0
    return capsys.readouterr().out


def test_it_finds_what_was_planted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "",
        "sub/__init__.py": "from .low import f\n",
        "sub/low.py": """\
            from typing import TYPE_CHECKING

            if TYPE_CHECKING:
                from ..high import g


            def f():
                import json

                from .. import high

                return json, high
        """,
        "high.py": "from .sub import low\n\n\ndef g():\n" + "    x = 1\n" * 61,
        "long.py": "x = 1\n" * 401,
    }
    for name, text in files.items():
        (package / name).write_text(textwrap.dedent(text))

    assert shape_of(capsys, package, "--brief").splitlines() == [
        "pkg: 5 modules, 479 lines",
        "modules over 400 lines: 1",
        "functions over 60 lines: 1",
        "import statements inside functions: 2",
        "  of the app's own modules: 1",
        "import statements under TYPE_CHECKING (type-only): 1",
        "  of the app's own modules: 1",
        "import cycles (module level), as groups of modules that reach each other: 0",
        "import cycles (module level + in functions), as groups of modules that reach each "
        "other: 1",
    ]
    full = shape_of(capsys, package)
    assert "  pkg/high.py:4 g: 62\n" in full
    assert "  pkg/sub/low.py:10 pkg.high\n" in full
    assert "  pkg/sub/low.py:4 pkg.high.g\n" in full
    assert "  2 modules: pkg.high pkg.sub.low\n" in full
