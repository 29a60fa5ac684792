"""The expense claims the docs walk a reader through, read from the pages
themselves: who asks and with which password, the words they send, what the
Task then asks the reviewer, who reviews and how they answer, and what the
Task answers in the end.

The browser test that takes a walk-through's screenshots
(tests/admin/test_browser_tutorial.py) sends these very words and signs in as
these very people, and the fast test of the pictures
(tests/docs/test_screenshots.py) holds every page that shows a picture to the
claim it was taken of: a page reworded, the pictures are retaken or a test
fails — they cannot drift apart."""

from __future__ import annotations

import json
import re
import textwrap
from dataclasses import dataclass, field

from tests.docs.test_readme_blocks import FIRST_APPROVAL, README, ROOT, sections

DOCS = ROOT / "docs"
TUTORIAL = DOCS / "tutorial.md"
REVIEW_GUIDE = DOCS / "howto" / "review.md"
#: The script the tutorial's step 4 includes and tells the reader to run.
CLAIM_SCRIPT = DOCS / "examples" / "file_claim.sh"
#: review.md's section that walks through a claim.
REVIEW_WALKTHROUGH = "Walk-through with the demo"


@dataclass(frozen=True)
class Claim:
    """One walk-through's claim, as its page prints it. Two claims are equal
    when they show the same (who, what, answers): how a page types its
    commands is not part of it."""

    #: The shell lines that make the people (``manage.py`` commands), in order.
    people: tuple[str, ...] = field(compare=False)
    #: The shell script that sends the claim (a curl, to 127.0.0.1:8000 or ``$BASE``).
    send: str = field(compare=False)
    requester: str
    requester_password: str
    #: What the requester sends the agent.
    message: str
    #: What the waiting Task asks the reviewer.
    prompt: str
    reviewer: str
    reviewer_password: str
    #: The reviewer's reply under "Reply with data": field name -> value.
    reply: dict[str, str]
    #: The Task's answer once the claim is filed.
    answer: str
    #: The Expense row, as the admin lists it ("EXP-1: 42.00 for a taxi").
    expense: str


def found(pattern: str, text: str, what: str, flags: int = 0) -> re.Match[str]:
    """``pattern``'s first match in ``text``, or an error naming ``what`` is missing."""
    match = re.search(pattern, text, flags)
    if match is None:
        raise AssertionError(f"the page no longer prints {what} (looked for {pattern!r})")
    return match


def words(text: str) -> str:
    """``text`` as a reader sees it: a quote wrapped across lines is one line."""
    return " ".join(text.split())


#: A fenced block, also indented under a list item.
INDENTED_FENCE = re.compile(r"^([ \t]*)```[\w-]*\n(.*?)^\1```[ \t]*$", re.S | re.M)


def code_blocks(text: str) -> list[str]:
    """The fenced code blocks of ``text``, dedented, in order."""
    return [textwrap.dedent(m.group(2)) for m in INDENTED_FENCE.finditer(text)]


def sent_by_curl(script: str) -> tuple[str, str, str]:
    """(user, password, message text) of the first ``curl -u user:password ... -d '{json}'``
    in ``script``: the A2A message a walk-through sends."""
    user = found(r"curl [^\n]*-u (\w+):(\S+) ", script, "a curl signed in with -u")
    body = found(r"-d '(\{.*?\})'", script, "the curl's JSON body", re.S)
    message = json.loads(body.group(1))["params"]["message"]
    return user.group(1), user.group(2), str(message["parts"][0]["text"])


def superuser(lines: str) -> tuple[str, str]:
    """(username, password) of the ``createsuperuser --noinput`` line in ``lines``."""
    line = found(
        r"^DJANGO_SUPERUSER_PASSWORD=(\S+) .*createsuperuser .*$", lines, "a superuser", re.M
    )
    name = found(r"--username (\S+)", line.group(0), "the superuser's name")
    return name.group(1), line.group(1)


def manage_lines(block: str) -> tuple[str, ...]:
    """The lines of a shell block that run ``manage.py``."""
    return tuple(line for line in block.splitlines() if "manage.py " in line)


def signed_in_as(text: str, who: tuple[str, str]) -> None:
    """The steps sign in as ``who``, the superuser the page makes."""
    said = found(r"sign in as `([^`]+)` / `([^`]+)`", text, "whom to sign in as")
    assert (said.group(1), said.group(2)) == who, (said.group(0), who)


def readme() -> Claim:
    """README's "Your first approval in 60 seconds"."""
    steps = sections(README.read_text())[FIRST_APPROVAL]
    people, send = code_blocks(steps)[:2]
    reviewer = superuser(people)
    signed_in_as(steps, reviewer)
    requester, password, message = sent_by_curl(send)
    return Claim(
        people=manage_lines(people),
        send=send,
        requester=requester,
        requester_password=password,
        message=message,
        prompt=found(r'asks\s+"(Approve [^"]+\?)"', steps, "the prompt").group(1),
        reviewer=reviewer[0],
        reviewer_password=reviewer[1],
        reply={"cost_center": found(r"cost center \*(\w+)\*", steps, "the reply").group(1)},
        answer=found(r'answer reads\s+"(Done\.[^"]+)"', steps, "the answer").group(1),
        expense=words(found(r'claim\s+"(EXP-\d+: [^"]+)"', steps, "the Expense row").group(1)),
    )


def tutorial() -> Claim:
    """docs/tutorial.md, steps 2 to 6 (its step 4 runs docs/examples/file_claim.sh)."""
    text = TUTORIAL.read_text()
    (people,) = code_blocks(sections(text)["2. Make the people"])
    reviewer = superuser(people)
    signed_in_as(text, reviewer)
    asks = sections(text)["4. Ask for an expense, as alice"]
    found(r"\{literalinclude\} examples/file_claim\.sh", asks, "the claim script")
    requester, password, message = sent_by_curl(CLAIM_SCRIPT.read_text())
    return Claim(
        people=manage_lines(people),
        send=CLAIM_SCRIPT.read_text(),
        requester=requester,
        requester_password=password,
        message=message,
        prompt=found(r"asking `(Approve [^`]+\?)`", asks, "the prompt").group(1),
        reviewer=reviewer[0],
        reviewer_password=reviewer[1],
        reply={"cost_center": found(r"cost center \*(\w+)\*", text, "the reply").group(1)},
        answer=found(r"the answer\s+`(Done\.[^`]+)`", text, "the answer").group(1),
        expense=words(found(r"lists\s+`(EXP-\d+: [^`]+)`", text, "the Expense row").group(1)),
    )


def review_guide() -> Claim:
    """docs/howto/review.md's "Walk-through with the demo": the demo's own
    people (``demo_users``), a reviewer who is not a superuser."""
    steps = sections(REVIEW_GUIDE.read_text())[REVIEW_WALKTHROUGH]
    people = found(r"`([^`]*manage\.py demo_users)`", steps, "the people's command").group(1)
    found(r"passwords `<name>-pw`", steps, "the demo's passwords")
    reviewer = found(r"admin/> as (\w+)", steps, "the reviewer").group(1)
    send = code_blocks(steps)[0]
    requester, password, message = sent_by_curl(send)
    reply = found(r"cost center \*(\w+)\*, approved amount \*([\d.]+)\*", steps, "the reply")
    return Claim(
        people=(people,),
        send=send,
        requester=requester,
        requester_password=password,
        message=message,
        prompt=found(r'asking "(Approve [^"]+\?)"', steps, "the prompt").group(1),
        reviewer=reviewer,
        reviewer_password=f"{reviewer}-pw",
        reply={"cost_center": reply.group(1), "approved_amount": reply.group(2)},
        answer=found(r"`(Done\. Filed [^`]+)`", steps, "the answer").group(1),
        expense=words(found(r"a row, `(EXP-\d+: [^`]+)`", steps, "the Expense row").group(1)),
    )


#: Each page's walk-through, by page (relative to the checkout) and the
#: section it is in ("" for a page that is the walk-through as a whole).
WALKTHROUGHS = {
    ("README.md", ""): readme,
    ("docs/tutorial.md", ""): tutorial,
    ("docs/howto/review.md", REVIEW_WALKTHROUGH): review_guide,
}
