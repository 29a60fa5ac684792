"""The pages that show runnable examples (docs/tutorial.md,
docs/howto/clients.md and docs/howto/observability.md) include them from
docs/examples/ — where a test runs each one — and mark every other code block
illustrative (a ``% illustrative`` line directly above its fence, the site's
rule)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.docs.test_readme_blocks import ROOT

DOCS = ROOT / "docs"
PAGES = [DOCS / "tutorial.md", DOCS / "howto" / "clients.md", DOCS / "howto" / "observability.md"]
EXAMPLES = DOCS / "examples"
TESTS = Path(__file__).resolve().parent

OPENING = re.compile(r"^\s*(`{3,}|~{3,})(.*)$")  # indented: in a list item


def fences(page: Path) -> list[tuple[int, str]]:
    """(line number, info string) of each opening fence of a Markdown page."""
    lines = page.read_text().splitlines()
    found, closing = [], None
    for number, line in enumerate(lines):
        if closing is not None:
            if line.strip() == closing:
                closing = None
            continue
        match = OPENING.match(line)
        if match:
            found.append((number, match.group(2).strip()))
            closing = match.group(1)
    return found


def test_every_code_block_is_included_or_marked_illustrative() -> None:
    unmarked = []
    for page in PAGES:
        lines = page.read_text().splitlines()
        for number, info in fences(page):
            if info.startswith("{literalinclude}"):
                continue
            if info.startswith("{") and not info.startswith("{code-block}"):
                continue  # a directive (note, toctree, ...), not code
            if number == 0 or lines[number - 1].strip() != "% illustrative":
                unmarked.append(f"{page.relative_to(ROOT)}:{number + 1}")
    assert unmarked == []


def test_every_example_is_shown_on_a_page_and_run_by_a_test() -> None:
    included = {
        (page.parent / info.split(None, 1)[1]).resolve()
        for page in PAGES
        for _, info in fences(page)
        if info.startswith("{literalinclude}")
    }
    tests = "".join(p.read_text() for p in TESTS.glob("test_examples_*.py"))
    for example in sorted(EXAMPLES.iterdir()):
        assert example.resolve() in included, f"{example.name} is on no page"
        assert f'"{example.name}"' in tests, f"no test runs {example.name}"


def test_the_included_files_exist() -> None:
    for page in PAGES:
        for _, info in fences(page):
            if info.startswith("{literalinclude}"):
                assert (page.parent / info.split(None, 1)[1]).is_file(), info
