"""Every code block in the docs pages either comes from a file that a test runs
(``{literalinclude}`` of docs/examples/) or says it is illustrative: a MyST
comment line ``% illustrative`` directly above its opening fence.

Skipped: the pages whose examples are executed files (docs/tutorial.md,
docs/howto/clients.md, docs/examples/); the pages whose blocks are run as
printed (docs/howto/install.md, docs/howto/tools.md: tests/docs/test_howto_blocks.py
holds them to the same rule, a block run by a test standing for an included
file); the layer map, rendered from tests/layers.py and checked by
tests/test_layout.py."""

from __future__ import annotations

import re
from pathlib import Path

from tests.layers import BEGIN, END

DOCS = Path(__file__).resolve().parents[2] / "docs"
MARKER = "% illustrative"
SKIPPED = {"tutorial.md", "howto/clients.md", "howto/install.md", "howto/tools.md"}
SKIPPED_DIRS = ("examples/", "_build/")
#: Directives whose body is code, like a fenced block.
CODE_DIRECTIVES = {"code-block", "code", "sourcecode"}
FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,}|:{3,})(?P<info>.*)$")


def unmarked(text: str) -> list[int]:
    """Line numbers (1-based) of the code blocks in ``text`` that are neither an
    included file nor marked illustrative."""
    found: list[int] = []
    lines = text.splitlines()
    open_fences: list[str] = []  # directive fences whose body is Markdown
    code_fence: str | None = None  # the fence of the code block being skipped
    generated = False
    for number, line in enumerate(lines, 1):
        if line.strip() == BEGIN:
            generated = True
        elif line.strip() == END:
            generated = False
        match = FENCE.match(line)
        if code_fence is not None:
            if match and closes(match, code_fence):
                code_fence = None
            continue
        if not match:
            continue
        if open_fences and closes(match, open_fences[-1]):
            open_fences.pop()
            continue
        fence, info = match["fence"], match["info"].strip()
        directive = re.match(r"\{([\w:-]+)\}", info)
        if directive and directive[1] not in CODE_DIRECTIVES:
            if directive[1] != "literalinclude" or fence.startswith(":"):
                open_fences.append(fence)
            else:
                code_fence = fence
            continue
        if fence.startswith(":"):
            if directive:  # :::{code-block}
                code_fence = fence
            else:
                continue  # a bare ::: is no fence
        else:
            code_fence = fence
        above = lines[number - 2].strip() if number > 1 else ""
        if above != MARKER and not generated:
            found.append(number)
    return found


def closes(match: re.Match[str], fence: str) -> bool:
    return (
        match["fence"][0] == fence[0]
        and len(match["fence"]) >= len(fence)
        and not match["info"].strip()
    )


def pages() -> list[Path]:
    return [
        path
        for path in sorted(DOCS.rglob("*.md"))
        if (name := path.relative_to(DOCS).as_posix()) not in SKIPPED
        and not name.startswith(SKIPPED_DIRS)
    ]


def test_every_code_block_in_the_docs_is_included_or_marked_illustrative() -> None:
    assert len(pages()) > 10
    found = {
        f"docs/{path.relative_to(DOCS).as_posix()}:{number}"
        for path in pages()
        for number in unmarked(path.read_text())
    }
    assert found == set(), f"mark these `{MARKER}` (the line above the fence) or include a file"


def test_the_rule() -> None:
    page = "\n".join(
        [
            "# A page",  # 1
            "```python",  # 2: unmarked
            "x = 1",
            "```",
            MARKER,
            "```python",  # 6: marked
            "````md",  # inside the block: not a fence of its own
            "```",
            "```{literalinclude} examples/settings_snippet.py",  # 9: a file a test runs
            "```",
            "```{note}",  # 11: a directive, whose body is Markdown
            "```sh",  # 12: unmarked, inside the note
            "ls",
            "```",
            "```",
            "",
            "```{code-block} sh",  # 17: a directive whose body is code
            "ls",
            "```",
            "- a list item",
            "",
            f"  {MARKER}",
            "  ```sh",  # 23: marked, indented like its fence
            "  ls",
            "  ```",
            BEGIN,
            "```",  # 27: the rendered layer map
            "```",
            END,
        ]
    )
    assert unmarked(page) == [2, 12, 17]
