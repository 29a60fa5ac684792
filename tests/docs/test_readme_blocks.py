"""README.md is the package's long description and a newcomer's first hour:
short, every link and image absolute (it renders on a package index, where
relative paths break), and every code block either run by a test, as
printed, or the test command CI runs itself.

The helpers here read README's sections and code blocks; the slow tests that
run the blocks (tests/docs/test_readme_quickstart.py,
tests/e2e/test_install_pastes.py) import them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"

#: The line CI runs (.ci/run embeds it as TEST_COMMAND): README must print it as is.
TEST_COMMAND = "python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && .venv/bin/pytest"

QUICK_START = "Quick start"
FIRST_APPROVAL = "Your first approval in 60 seconds"
INSTALL = "Install into your project"
TESTS = "Run the tests"

#: Every code block of README, by (section, position in it), and what runs it.
#: A block added, removed or merged into another changes this map: the fast test
#: below fails until a test runs the new block.
RUN_BY: dict[tuple[str, int], str] = {
    (QUICK_START, 0): "tests/docs/test_readme_quickstart.py",
    (FIRST_APPROVAL, 0): "tests/docs/test_readme_quickstart.py",
    (FIRST_APPROVAL, 1): "tests/docs/test_readme_quickstart.py",
    (FIRST_APPROVAL, 2): "tests/docs/test_readme_quickstart.py",
    (INSTALL, 0): "tests/e2e/test_install_pastes.py",
    (INSTALL, 1): "tests/e2e/test_install_pastes.py",
    (INSTALL, 2): "tests/e2e/test_install_pastes.py",
    (INSTALL, 3): "tests/e2e/test_install_pastes.py",
    (TESTS, 0): "CI (.ci/run): the test command itself",
}

FENCE = re.compile(r"^```([\w-]*)\n(.*?)^```[ \t]*$", re.S | re.M)


@dataclass(frozen=True)
class Block:
    lang: str
    text: str


def sections(text: str | None = None) -> dict[str, str]:
    """README's ``## `` sections, by heading (the text before the first is ``""``)."""
    text = README.read_text() if text is None else text
    parts = re.split(r"^## (.+)\n", text, flags=re.M)
    found = {"": parts[0]}
    for heading, body in zip(parts[1::2], parts[2::2], strict=True):
        assert heading not in found, f"README has two sections named {heading!r}"
        found[heading] = body
    return found


def blocks(heading: str) -> list[Block]:
    """The fenced code blocks of README's section ``heading``, in order."""
    body = sections()[heading]
    return [Block(m.group(1), m.group(2)) for m in FENCE.finditer(body)]


def targets(text: str) -> list[str]:
    """Every link and image target of a Markdown text: inline ``[..](x)`` and
    ``![..](x)``, reference definitions ``[..]: x``, autolinks ``<x>`` and
    HTML ``href``/``src`` attributes."""
    text = FENCE.sub("", text)  # code is not a link
    found = re.findall(r"\]\(\s*<?([^)\s>]+)", text)
    found += re.findall(r"^\s*\[[^\]]+\]:\s*<?(\S+?)>?\s*$", text, re.M)
    found += re.findall(r"<((?:https?|ftp|mailto|file):[^>\s]+)>", text)
    found += re.findall(r"""\b(?:href|src)\s*=\s*["']([^"']+)["']""", text)
    return found


def test_readme_is_at_most_200_lines() -> None:
    assert len(README.read_text().splitlines()) <= 200


def test_every_link_and_image_is_absolute_or_an_anchor() -> None:
    found = targets(README.read_text())
    assert found, "README links nothing (the parser is broken?)"
    assert [t for t in found if not re.match(r"(https?://|#)", t)] == []


def test_the_link_finder_sees_every_form_of_link() -> None:
    text = (
        "[a](docs/a.md) ![b](img.png) [c]: rel/c.md\n<https://ok.example/>\n"
        '<img src="x.png"> <a href="#top">top</a>\n```\n[not](code.md)\n```\n'
    )
    assert targets(text) == ["docs/a.md", "img.png", "https://ok.example/", "x.png", "#top"]


def test_the_review_queue_screenshot_is_near_the_top() -> None:
    lines = README.read_text().splitlines()
    image = next(i for i, line in enumerate(lines) if line.startswith("!["))
    assert image < 20
    assert lines[image].endswith(
        "(https://raw.githubusercontent.com/toolnexus-django/toolnexus-django/main/docs/review-queue.png)"
    )
    assert (ROOT / "docs" / "review-queue.png").is_file()


def test_the_test_command_is_a_line_of_its_own() -> None:
    assert TEST_COMMAND in README.read_text().splitlines()
    assert blocks(TESTS) == [Block("sh", TEST_COMMAND + "\n")]


def test_every_code_block_is_run_by_a_test_or_is_the_test_command() -> None:
    found = {
        (heading, i) for heading in sections() if heading for i, _ in enumerate(blocks(heading))
    }
    assert not FENCE.search(sections()[""]), "a code block above the first section"
    assert found == set(RUN_BY)


def test_install_shows_settings_and_urls_as_two_blocks() -> None:
    settings_block, urls_block = blocks(INSTALL)[1:3]
    assert (settings_block.lang, urls_block.lang) == ("python", "python")
    assert settings_block.text.startswith("# settings.py")
    assert urls_block.text.startswith("# urls.py")
    assert "urlpatterns" not in settings_block.text and "TOOLNEXUS" not in urls_block.text


def test_the_unpublished_package_is_not_offered_from_pypi() -> None:
    text = README.read_text()
    assert "not published" in text
    for block in (b for heading in sections() if heading for b in blocks(heading)):
        assert "pip install toolnexus-django" not in block.text
