"""Every picture the docs show is taken by a test that does what the page
says, with the people and words the page prints (issue 35: the pictures
showed another claim, by another user, than the text walked through).

:data:`SHOTS` names, for each picture referenced from README.md or docs/, the
browser test that takes it (``UPDATE_SCREENSHOTS=1`` writes it into docs/:
tests/browser.py). These tests fail when a page shows a picture the table
does not list (or the table lists one no page shows), when the table names a
test that does not exist or does not take that picture, and when a picture
of a walk-through would show another claim than the one its page prints:
the generating test reads its claim from its page
(tests/docs/walkthroughs.py), and every page showing the picture must print
that same claim. For the other pictures, what the page says they show is
checked in the page and in the test's own code (``says``)."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from tests.docs.walkthroughs import WALKTHROUGHS, Claim, review_guide, tutorial

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

TUTORIAL = (
    "tests/admin/test_browser_tutorial.py::"
    "test_the_tutorials_claim_goes_through_the_admin_as_its_pictures_show"
)
REVIEW_GUIDE = (
    "tests/admin/test_browser_tutorial.py::"
    "test_the_review_guides_claim_goes_through_the_admin_as_its_pictures_show"
)
TEAM = "tests/admin/test_browser_review_team.py::"


@dataclass(frozen=True)
class Shot:
    #: The test that takes the picture: ``path::function``.
    test: str
    #: The walk-through the picture is of, read from its page by this function,
    #: which the test calls for its people and words.
    claim: Callable[[], Claim] | None = None
    #: What the pages say the picture shows, and the test enters or checks.
    says: tuple[str, ...] = ()


#: Each picture the docs show -> how it is taken.
SHOTS: dict[str, Shot] = {
    # README, docs/index.md, the tutorial, the review guide's index.
    "review-queue.png": Shot(TUTORIAL, tutorial),
    "review-page.png": Shot(TUTORIAL, tutorial),
    "decision-message.png": Shot(TUTORIAL, tutorial),
    "task-page.png": Shot(TUTORIAL, tutorial),
    "admin-index.png": Shot(TUTORIAL, tutorial, says=("Awaiting a human",)),
    # docs/howto/review.md's walk-through, and its read-only page.
    "review-guide-queue.png": Shot(REVIEW_GUIDE, review_guide),
    "review-guide-page.png": Shot(REVIEW_GUIDE, review_guide),
    "review-answered.png": Shot(
        TEAM + "test_an_answered_task_keeps_a_read_only_review_page", says=("Reviewed task",)
    ),
    # docs/howto/review-team.md.
    "review-held.png": Shot(
        TEAM + "test_a_claim_warns_the_second_reviewer_who_may_answer_anyway",
        says=("being reviewed by rita", "Answer anyway: rita is reviewing this task"),
    ),
    "review-bulk.png": Shot(TEAM + "test_bulk_approval_of_three_tasks_resumes_each_run"),
    "review-edit.png": Shot(
        TEAM + "test_edit_then_approve_runs_the_tool_with_the_edited_arguments",
        says=("Edit, then approve",),
    ),
    "review-four-eyes.png": Shot(
        TEAM + "test_four_eyes_needs_a_second_reviewer_before_the_tool_runs",
        says=("1 of 2 approvals: rita", "pay_supplier"),
    ),
    "review-history.png": Shot(
        TEAM + "test_recent_actions_and_the_tasks_history_show_the_decisions",
        says=("Approve an expense claim of 42.50", "rita"),
    ),
    # docs/howto/observability.md.
    "dashboard.png": Shot(
        "tests/admin/test_browser_dashboard.py::"
        "test_the_dashboard_draws_every_chart_from_a_workload"
    ),
}

IMAGE = re.compile(r"!\[[^\]]*\]\(\s*<?([^)\s>]+)")
FENCE = re.compile(r"^\s*(```|~~~)")


def pages() -> list[Path]:
    """README and every Markdown page of the docs site."""
    found = [ROOT / "README.md"]
    found += sorted(p for p in DOCS.rglob("*.md") if "_build" not in p.relative_to(DOCS).parts)
    return found


def shown(page: Path) -> list[tuple[str, str]]:
    """(section, picture name) of each picture of docs/ that ``page`` shows."""
    return list(pictures_in(page.read_text()))


def pictures_in(text: str) -> Iterator[tuple[str, str]]:
    """(section, file name) of each PNG a Markdown ``text`` shows, the section
    being its ``## `` heading ("" before the first); code is not a picture."""
    section, in_code = "", False
    for line in text.splitlines():
        if FENCE.match(line):
            in_code = not in_code
        elif in_code:
            continue
        elif line.startswith("## "):
            section = line[3:].strip()
        for target in IMAGE.findall(line):
            if target.endswith(".png"):
                yield section, target.rsplit("/", 1)[-1]


def name_of(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


@cache
def generator(test: str) -> ast.FunctionDef | None:
    """The ``path::function`` test's definition, or None."""
    path, name = test.split("::")
    tree = ast.parse((ROOT / path).read_text())
    return next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), None)


def strings_in(function: ast.FunctionDef) -> set[str]:
    return {
        n.value
        for n in ast.walk(function)
        if isinstance(n, ast.Constant) and isinstance(n.value, str)
    }


def test_every_picture_a_page_shows_is_in_the_table_and_in_docs() -> None:
    shown_anywhere = {picture for page in pages() for _, picture in shown(page)}
    assert "review-queue.png" in shown_anywhere, "the picture finder is broken?"
    assert sorted(shown_anywhere - set(SHOTS)) == [], "a picture no test is listed as taking"
    assert sorted(set(SHOTS) - shown_anywhere) == [], "a picture no page shows any more"
    assert [p for p in SHOTS if not (DOCS / p).is_file()] == []


def test_each_picture_is_taken_by_the_test_the_table_names() -> None:
    for picture, shot in SHOTS.items():
        function = generator(shot.test)
        assert function is not None, f"{picture}: no test {shot.test}"
        assert picture in strings_in(function), f"{shot.test} does not save {picture}"


def test_a_walkthroughs_picture_is_taken_with_the_words_its_page_prints() -> None:
    """The generating test reads its people and words from the page with the
    same reader; every page that shows the picture within a walk-through
    prints that same claim (README's first approval is the tutorial's)."""
    for shot in SHOTS.values():
        if shot.claim is None:
            continue
        function = generator(shot.test)
        assert function is not None
        calls = {
            n.func.id
            for n in ast.walk(function)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
        }
        assert shot.claim.__name__ in calls, f"{shot.test} does not read {shot.claim.__name__}()"
    taken_of = {picture: shot.claim() for picture, shot in SHOTS.items() if shot.claim}
    for page in pages():
        for section, picture in shown(page):
            reader = WALKTHROUGHS.get((name_of(page), "")) or WALKTHROUGHS.get(
                (name_of(page), section)
            )
            if reader is None:
                continue
            assert picture in taken_of, f"{name_of(page)} shows {picture} of no walk-through"
            assert taken_of[picture] == reader(), (
                f"{name_of(page)} prints another claim than {picture} shows"
            )


def test_what_a_page_says_a_picture_shows_is_what_its_test_enters() -> None:
    for picture, shot in SHOTS.items():
        if not shot.says:
            continue
        showing = [p for p in pages() if any(s == picture for _, s in shown(p))]
        text = " ".join(" ".join(p.read_text() for p in showing).split())
        function = generator(shot.test)
        assert function is not None
        entered = " ".join(strings_in(function))
        for said in shot.says:
            assert said in text, f"no page showing {picture} says {said!r}"
            assert said in entered, f"{shot.test} neither enters nor checks {said!r}"


def test_the_finder_sees_pictures_outside_code_only() -> None:
    text = (
        "![a](https://x.example/docs/a.png)\n## Two\n```md\n![b](b.png)\n```\n   ![c](../c.png)\n"
    )
    assert list(pictures_in(text)) == [("", "a.png"), ("Two", "c.png")]
