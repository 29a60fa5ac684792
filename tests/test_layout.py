"""The package's layout: each layer imports only the layers below it (the map
in tests/layers.py, rendered into docs/explanation/architecture.md). The
modules' and functions' lengths: tests/test_code_shape.py."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.layers import (
    ARCHITECTURE,
    BEGIN,
    END,
    PACKAGE,
    ROWS,
    WRITE_COMMAND,
    Layer,
    imported_tops,
    misplaced,
    render,
    violations,
    with_map,
)


def test_every_top_level_name_is_in_one_layer() -> None:
    assert misplaced(PACKAGE, ROWS) == []


def test_every_layer_imports_only_the_layers_below_it() -> None:
    assert "lifecycle" in {
        top for _, top in imported_tops(PACKAGE / "serving" / "handler.py", PACKAGE)
    }  # it reads
    assert violations(PACKAGE, ROWS) == []


def test_the_architecture_page_shows_the_map_of_tests_layers() -> None:
    document = ARCHITECTURE.read_text()
    assert with_map(document, render(ROWS)) == document, (
        f"{ARCHITECTURE.name}'s map differs from tests/layers.py: run `{WRITE_COMMAND}`"
    )


# -- the check bites: a small package with planted imports ----------------------

#: pkg: base at the bottom; left and right side by side; top above them.
SMALL_ROWS = (
    (Layer("base", ("base",), "the bottom"),),
    (Layer("left", ("left",), "one side"), Layer("right", ("right",), "the other side")),
    (Layer("top", ("top", "__init__"), "the top and the facade"),),
)


def small_package(root: Path, files: dict[str, str]) -> Path:
    package = root / "pkg"
    for name, text in {"__init__.py": "", "base.py": "", "right.py": "", **files}.items():
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return package


def test_downward_imports_pass(tmp_path: Path) -> None:
    package = small_package(
        tmp_path,
        {
            "left/__init__.py": "from ..base import x\n",
            "left/inner.py": "from . import other\nfrom .other import y\n",
            "left/other.py": "import pkg.base\n",
            "top.py": "from pkg import left, right\nfrom .left.inner import z\n",
        },
    )
    assert misplaced(package, SMALL_ROWS) == []
    assert violations(package, SMALL_ROWS) == []


def test_an_upward_import_fails_with_its_edge_named(tmp_path: Path) -> None:
    package = small_package(
        tmp_path,
        {
            "left/__init__.py": "",
            "top.py": "",
            "base.py": "import os\n\nfrom .top import x\n",
            # absolute, and only inside a function
            "left/inner.py": """\
                def later():
                    import pkg.top

                    from pkg import thing  # a name of the facade
            """,
        },
    )
    assert violations(package, SMALL_ROWS) == [
        "pkg/base.py:3 imports top: layer 'base' may import only layers below it"
        " ('top' is above it)",
        "pkg/left/inner.py:2 imports top: layer 'left' may import only layers below it"
        " ('top' is above it)",
        "pkg/left/inner.py:4 imports __init__: layer 'left' may import only layers below it"
        " ('top' is above it)",
    ]


def test_a_sideways_import_fails_with_its_edge_named(tmp_path: Path) -> None:
    package = small_package(
        tmp_path,
        {
            "left/__init__.py": "",
            "top.py": "",
            "left/inner.py": """\
                def later():
                    from ..right import y
            """,
            "right.py": "from pkg.left.inner import later\n",
        },
    )
    assert violations(package, SMALL_ROWS) == [
        "pkg/left/inner.py:2 imports right: layer 'left' may import only layers below it"
        " ('right' is beside it)",
        "pkg/right.py:1 imports left: layer 'right' may import only layers below it"
        " ('left' is beside it)",
    ]


def test_a_name_in_no_layer_and_a_layer_holding_a_gone_name_fail(tmp_path: Path) -> None:
    package = small_package(tmp_path, {"left/__init__.py": "", "stray.py": ""})
    assert misplaced(package, SMALL_ROWS) == [
        "pkg/stray is in no layer: add it to ROWS in tests/layers.py",
        "layer 'top' holds 'top', which is not in pkg/",
    ]


def test_the_map_is_rewritten_between_its_markers() -> None:
    document = f"# Map\n\n{BEGIN}\nan old map\n{END}\n\nthe rest\n"
    block = render(SMALL_ROWS, PACKAGE)
    assert with_map(document, block) == f"# Map\n\n{BEGIN}\n{block}\n{END}\n\nthe rest\n"
    assert "  2 top" in block and "  1 left" in block and "    right" in block
