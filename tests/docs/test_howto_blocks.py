"""The install guide (docs/howto/install.md) and the Write tools page
(docs/howto/tools.md) are a newcomer's first day, so their blocks run as
printed, as README's do: each is either run by a test, as :data:`RUN_BY`
says, or marked ``% illustrative`` (the local model servers, the demo's code,
fragments) — and the install guide's install is README's, to the letter.

The helpers here hand the slow test that runs them
(tests/e2e/test_install_pastes.py) each block, found by what it says it is,
so that a block moved, merged or split fails here first."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import toolnexus
from django.utils.module_loading import import_string

from tests.docs.test_docs_examples_marked import unmarked
from tests.docs.test_readme_blocks import FENCE, INSTALL, ROOT, Block, blocks, sections
from toolnexus_django.review.reviewers import ANSWER_PERMISSION

GUIDES = ROOT / "docs" / "howto"
INSTALL_GUIDE = GUIDES / "install.md"
TOOLS_GUIDE = GUIDES / "tools.md"
MARKER = "% illustrative"
E2E = "tests/e2e/test_install_pastes.py"

#: The install guide's sections, and the tools page's, whose blocks run.
PACKAGE = "Install the package"
SETTINGS = "Settings and URLs"
SERVE = "Migrate, make a reviewer, serve"
NO_KEY = "Run without an API key"
FIRST_TOOL = "A first tool"
TESTING = "Testing tools"

#: Every block of the two pages that is not illustrative, by (page, section,
#: position in it), and what runs it. A block added, removed or merged changes
#: this map: the fast test below fails until a test runs the new block.
RUN_BY: dict[tuple[str, str, int], str] = {
    **{("install.md", PACKAGE, 0): E2E},
    **{("install.md", SETTINGS, i): E2E for i in range(2)},
    **{("install.md", SERVE, 0): E2E},
    **{("install.md", NO_KEY, 0): E2E},
    **{("tools.md", FIRST_TOOL, i): E2E for i in range(7)},
    **{("tools.md", TESTING, i): E2E for i in range(5)},
}


@dataclass(frozen=True)
class Shown:
    """A code block of a page: where it is, and whether it says it is illustrative."""

    page: str
    section: str
    index: int
    block: Block
    illustrative: bool


def shown(page: Path) -> list[Shown]:
    """Every fenced block of ``page``'s ``## `` sections, in order."""
    found = []
    for heading, body in sections(page.read_text()).items():
        for i, match in enumerate(FENCE.finditer(body)):
            above = body[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
            block = Block(match.group(1), match.group(2))
            found.append(Shown(page.name, heading, i, block, above.strip() == MARKER))
    return found


def run_blocks(page: Path, heading: str) -> list[Block]:
    """The blocks of ``page``'s section ``heading`` that a test runs, in order."""
    return [s.block for s in shown(page) if s.section == heading and not s.illustrative]


def install_guide_blocks() -> tuple[str, str, str, str]:
    """The install guide's (install, settings.py, urls.py, migrate-and-serve)
    blocks — README's Install, the same text."""
    found = [*run_blocks(INSTALL_GUIDE, PACKAGE), *run_blocks(INSTALL_GUIDE, SETTINGS)]
    found += run_blocks(INSTALL_GUIDE, SERVE)
    assert found == blocks(INSTALL), "the install guide and README's Install differ"
    install, settings_part, urls_part, then = (b.text for b in found)
    return install, settings_part, urls_part, then


def offline_settings() -> str:
    """The install guide's settings line that selects the shipped offline model."""
    (block,) = run_blocks(INSTALL_GUIDE, NO_KEY)
    assert block.lang == "python" and block.text.startswith("# settings.py (append)"), block
    assert '"toolnexus_django.offline.client"' in block.text, block
    return block.text


def first_tool_blocks() -> dict[str, str]:
    """The tools page's first tool, by what each block is: ``startapp``, the
    files (by path), ``migrate``, ``people`` (a requester and a ticket), ``ask``."""
    found = run_blocks(TOOLS_GUIDE, FIRST_TOOL)
    assert [b.lang for b in found] == ["sh", "python", "python", "python", "sh", "sh", "sh"]
    startapp, models, tools, settings_part, migrate, people, ask = (b.text for b in found)
    assert startapp.strip() == "python manage.py startapp tickets", startapp
    assert "makemigrations tickets" in migrate and "migrate\n" in migrate, migrate
    assert people.startswith("python manage.py shell <<'EOF'\n"), people
    assert ask.startswith("curl ") and "close ticket 1" in ask, ask
    return {
        "startapp": startapp,
        **files(models, tools, settings_part),
        "migrate": migrate,
        "people": people,
        "ask": ask,
    }


def tool_test_blocks() -> dict[str, str]:
    """The tools page's test set-up and test, by what each block is:
    ``install``, the files (by path), ``run``."""
    found = run_blocks(TOOLS_GUIDE, TESTING)
    assert [b.lang for b in found] == ["sh", "ini", "python", "python", "sh"], found
    install, ini, conftest, test, run = (b.text for b in found)
    assert install.strip() == "pip install pytest pytest-django", install
    assert run.strip() == "pytest", run
    return {"install": install, **files(ini, conftest, test), "run": run}


def files(*texts: str) -> dict[str, str]:
    """File blocks by the path their first line names (``# tickets/tools.py``,
    ``# settings.py (append)``)."""
    found = {}
    for text in texts:
        first = re.match(r"# (\S+)( \(append\))?", text)
        assert first, f"a file block that names no file: {text[:60]!r}"
        found[first.group(1) + (" (append)" if first.group(2) else "")] = text
    return found


def test_every_block_is_run_by_a_test_or_marked_illustrative() -> None:
    everything = [*shown(INSTALL_GUIDE), *shown(TOOLS_GUIDE)]
    assert len(everything) > 20
    run = {(s.page, s.section, s.index) for s in everything if not s.illustrative}
    assert run == set(RUN_BY)
    # The site's own rule finds as many unmarked blocks (indented ones too), no more.
    for page in (INSTALL_GUIDE, TOOLS_GUIDE):
        assert len(unmarked(page.read_text())) == len([k for k in RUN_BY if k[0] == page.name])


def test_the_install_guide_installs_from_a_checkout_as_readme_does() -> None:
    install, *_ = install_guide_blocks()
    assert install.startswith("git clone https://github.com/")
    assert "pip install -e ./toolnexus-django" in install
    everything = [s.block.text for s in shown(INSTALL_GUIDE)]
    assert not [text for text in everything if "pip install toolnexus-django" in text]


def test_the_local_servers_are_chosen_by_the_variables_the_settings_read() -> None:
    _, settings_part, _, _ = install_guide_blocks()
    read = set(re.findall(r'os\.environ\.get\("(\w+)"', settings_part))
    assert read == {"OPENAI_BASE_URL", "OPENAI_MODEL", "OPENAI_API_KEY"}
    servers = [s.block.text for s in shown(INSTALL_GUIDE) if s.section == NO_KEY]
    exports = [line for text in servers for line in text.splitlines() if "export " in line]
    assert len(exports) == 2, exports  # Ollama's, llama-server's
    for line in exports:
        given = dict(re.findall(r"(\w+)=(\S+)", line))
        assert set(given) == read, line
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/v1", given["OPENAI_BASE_URL"]), line
        assert given["OPENAI_API_KEY"], "toolnexus's client refuses an empty key"


def test_the_tools_page_serves_as_the_install_guide_does() -> None:
    *_, then = install_guide_blocks()
    serve = then.strip().splitlines()[-1].split("  #")[0]
    assert f"Serve it (`{serve}`)" in TOOLS_GUIDE.read_text()


def test_the_offline_line_selects_the_shipped_offline_client() -> None:
    toolnexus_setting: dict[str, object] = {"CLIENT": {"model": "gpt-4o-mini"}}
    exec(offline_settings(), {"TOOLNEXUS": toolnexus_setting})  # as appended to settings.py
    assert toolnexus_setting["CLIENT"] == "toolnexus_django.offline.client"
    client = import_string(str(toolnexus_setting["CLIENT"]))()
    assert isinstance(client, toolnexus.Client)


def test_the_test_fixtures_give_the_permission_the_review_checks() -> None:
    conftest = tool_test_blocks()["conftest.py"]
    assert f'"{ANSWER_PERMISSION}"' in conftest
    assert (
        '"tickets.change_ticket"' in conftest
        and "tickets.change_ticket" in first_tool_blocks()["tickets/tools.py"]
    )


def test_no_table_has_an_empty_header_cell() -> None:
    for page in (INSTALL_GUIDE, TOOLS_GUIDE):
        lines = page.read_text().splitlines()
        headers = [
            line
            for before, line in zip(["", *lines], lines, strict=False)
            if line.startswith("|") and not before.startswith("|")
        ]
        for header in headers:
            cells = [c.strip() for c in header.strip().strip("|").split("|")]
            assert all(cells), f"{page.name}: a table whose header has an empty cell: {header}"
