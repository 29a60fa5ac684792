"""No peer's, model's or tool's text becomes HTML in the admin (issue 18,
item 1: a tool argument in the edit-then-approve form's help text ran script
in a reviewer's session).

Every admin page of a Task is rendered for Tasks whose every text field
holds the payloads of the corpus (tests/corpus/xss.py), and the HTML is
parsed: no element, attribute, handler, script or ``javascript:`` URL a
payload made survives. First all payloads at once; then (slow) one scene per
payload, so the columns that cut text short see each one at their start. The
same pages in chromium: tests/admin/test_browser_admin_xss.py."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from tests.corpus import xss
from tests.hostile_admin import (
    FIELDS,
    Scene,
    build,
    bulk_form,
    four_eyes,
    invalid_reply,
    list_pages,
    scene_pages,
    url,
)
from tests.utils import pending_id

pytestmark = pytest.mark.django_db

ALL = tuple(range(len(xss.PAYLOADS)))


def named(found: set[str]) -> list[str]:
    """``tnxpr03`` as "Request prompt (and status message), payload 3"."""
    return sorted(f"{FIELDS[m[3:5]]}, payload {int(m[5:])}" for m in found)


def sweep(scenes: list[Scene], root: Any) -> tuple[dict[str, list[str]], set[str]]:
    """Every admin page of the scenes, as ``root`` sees them: what survived
    as HTML on which page, and every marker shown (as text) anywhere."""
    client = Client()
    client.force_login(root)
    leaks: dict[str, list[str]] = {}
    shown: set[str] = set()

    def check(where: str, response: Any) -> None:
        assert response.status_code == 200, (where, response.status_code)
        body = response.content.decode()
        found = xss.survivors(body)
        if found:
            leaks[where] = named(found)
        shown.update(re.findall(r"tnx[a-z]{2}\d{2}", html.unescape(body)))

    for scene in scenes:
        for page in scene_pages(scene):
            check(page, client.get(page))
        review = url("awaitinghumantask_review", scene.waiting)
        # The answer forms with their errors, naming the hostile pattern and choice.
        check(f"{review} (errors)", client.post(review, invalid_reply(scene)))
        # Held by the hostile reviewer: the page asks to confirm, naming them...
        approve = {"_answer": "approve", "request_id": pending_id(scene.waiting)}
        check(f"{review} (confirm)", client.post(review, approve))
        # ... and a claim is refused, saying who holds it.
        claim = url("awaitinghumantask_hold", scene.waiting)
        check(f"{claim} (refused)", client.post(claim, follow=True))
    for page in list_pages(scenes):
        check(page, client.get(page))
    queue = reverse("admin:toolnexus_django_awaitinghumantask_changelist")
    check(f"{queue} (bulk)", client.post(queue, bulk_form(scenes)))
    return leaks, shown


def unseen(scenes: list[Scene], shown: set[str]) -> list[str]:
    """Fields of which some payload was on no page (so was never tried)."""
    return sorted({FIELDS[m[3:5]] for s in scenes for m in s.markers() if m not in shown})


@pytest.fixture
def root(django_user_model: Any) -> Any:
    return django_user_model.objects.create_superuser("root")


def test_no_payload_survives_as_html_on_any_admin_page_of_a_task(
    settings: Any, django_user_model: Any, root: Any
) -> None:
    four_eyes(settings, [ALL])
    scenes = [build(ALL, root, django_user_model)]
    leaks, shown = sweep(scenes, root)
    assert leaks == {}
    # Fields cut short (usernames, contextId, push ids) show their first payloads.
    cut = {"ow", "rv", "cx", "pc", "pn", "mt", "mc", "mr", "ci"}
    assert [f for f in unseen(scenes, shown) if f not in {FIELDS[c] for c in cut}] == []


@pytest.mark.slow  # ~350 admin pages
def test_each_payload_alone_survives_nowhere_even_where_text_is_cut_short(
    settings: Any, django_user_model: Any, root: Any
) -> None:
    payload_sets = [(i,) for i in ALL]
    four_eyes(settings, payload_sets)
    scenes = [build(indices, root, django_user_model) for indices in payload_sets]
    leaks, shown = sweep(scenes, root)
    assert leaks == {}
    assert unseen(scenes, shown) == []


def test_the_check_sees_every_payload_that_is_rendered_as_html() -> None:
    """The parse is not blind: each payload written into a page unescaped,
    in the context it breaks out of, is found (entities and template syntax
    are inert as HTML: they matter only if unescaped twice or evaluated)."""
    contexts = (
        "<div>{}</div>",
        '<div title="{}">x</div>',
        "<div title='{}'>x</div>",
        "<textarea>{}</textarea>",
        '<a href="{}">x</a>',
    )
    missed = [
        i
        for i in ALL
        if not any(
            xss.survivors(f"<body>{c.format(xss.payload('pr', i))}</body>") for c in contexts
        )
    ]
    assert missed == [14, 15]
    template = '{{ "tnxpr15"|add:"-evaluated" }}'
    evaluated = xss.payload("pr", 15).replace(template, "tnxpr15-evaluated")
    assert xss.survivors(f"<p>{evaluated}</p>") == {"tnxpr15"}
