"""No payload runs script in a real browser (issue 18, item 1): Debian's
chromium, logged into the admin as a superuser, opens every admin page of
Tasks whose every text field holds all the payloads of tests/corpus/xss.py
(tests/hostile_admin.py builds them), and submits the forms that bring a page
back with the hostile values in it (a refused reply, the claim warning, the
bulk confirmation).

Before any page script runs, the page's ``alert``/``confirm``/``prompt`` and
the payloads' own hook record what calls them, and so does setting
``document.title``; after each page has loaded and rendered two frames, the
test reads those records and the DOM the browser built: no script ran, no
attribute a payload made exists, no ``javascript:`` URL carrying a marker is
a link."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.browser import (  # noqa: F401 (fixtures: pytest looks them up by name in the module)
    MARKS,
    _orm_beside_playwright,
    browser,
    browser_context_args,
    browser_type,
    browser_type_launch_args,
    full_page_screenshot,
    log_in,
    playwright,
)
from tests.corpus import xss
from tests.hostile_admin import build, four_eyes, list_pages, scene_pages, url

pytestmark = MARKS

ALL = tuple(range(len(xss.PAYLOADS)))

#: Installed in every document (and frame) before its own scripts.
HOOKS = f"""
window.__tnxRan = [];
window.{xss.HOOK} = (m) => window.__tnxRan.push('hook:' + m);
for (const name of ['alert', 'confirm', 'prompt']) {{
  window[name] = (m) => {{ window.__tnxRan.push(name + ':' + m); return null; }};
}}
const title = Object.getOwnPropertyDescriptor(Document.prototype, 'title');
Object.defineProperty(Document.prototype, 'title', {{
  get() {{ return title.get.call(this); }},
  set(value) {{ window.__tnxRan.push('title:' + value); title.set.call(this, value); }},
}});
"""

#: What ran, and what a payload made of the DOM, once the page has rendered.
PROBE = r"""
async () => {
  await new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
  const marker = /tnx[a-z]{2}\d{2}/;
  const found = [...(window.__tnxRan || [])];
  for (const element of document.querySelectorAll('*')) {
    for (const attribute of element.attributes) {
      if (/^tnx[a-z]{2}\d{2}$/.test(attribute.name)) found.push('attribute:' + attribute.name);
      const followed = ['href', 'src', 'action', 'formaction', 'srcdoc'].includes(attribute.name);
      if (followed && marker.test(attribute.value)
          && (attribute.name === 'srcdoc'
              || /^javascript:/i.test(attribute.value.replace(/[\x00-\x20]/g, '')))) {
        found.push(attribute.name + ':' + attribute.value.slice(0, 80));
      }
    }
  }
  return found;
}
"""


def test_no_payload_runs_script_in_chromium_on_any_admin_page_of_a_task(
    page: Any, live_server: Any, settings: Any, django_user_model: Any, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    root = django_user_model.objects.create_superuser("root", password="root-pw")
    four_eyes(settings, [ALL])
    scene = build(ALL, root, django_user_model)
    base = live_server.url
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.add_init_script(HOOKS)
    log_in(page, base, "root", "root-pw")
    ran: dict[str, list[str]] = {}

    def probe(where: str) -> None:
        found = page.evaluate(PROBE)
        if found:
            ran[where] = found

    for path in [*scene_pages(scene), *list_pages([scene])]:
        response = page.goto(base + path)
        assert response is not None and response.status == 200, (path, response)
        probe(path)

    review = url("awaitinghumantask_review", scene.waiting)
    page.goto(base + review)
    full_page_screenshot(page, tmp_path / "review-hostile.png")
    # A reply the form refuses: the page comes back with the errors.
    reply = page.locator("#tnx-reply-form")
    reply.locator("#id_reply-why").fill("not what the pattern wants")
    reply.locator("button.tnx-reply").click()
    expect(reply.locator(".errorlist").first).to_be_visible()
    probe(f"{review} (errors)")
    # The Task is held by the hostile reviewer: approving asks to confirm, naming them.
    page.locator("#tnx-approve-form button.tnx-approve").click()
    expect(page.locator(".messagelist .warning")).to_be_visible()
    probe(f"{review} (confirm)")
    # Approve every reviewable Task in bulk: the confirmation page lists them.
    page.goto(base + url("awaitinghumantask_changelist"))
    for task_id in scene.reviewable:
        page.locator(f"#result_list input.action-select[value='{task_id}']").check()
    page.select_option("select[name=action]", "approve_selected")
    page.locator(".actions button[name=index]").click()
    expect(page.locator("#tnx-bulk-tasks tbody tr")).to_have_count(len(scene.reviewable))
    probe("bulk confirmation")

    assert ran == {}
    assert dialogs == []


#: Where a page puts text: as text, in attributes quoted both ways, in a
#: textarea, as a link's target.
CONTEXTS = (
    "<div>{}</div>",
    '<div title="{}">x</div>',
    "<div title='{}'>x</div>",
    "<textarea>{}</textarea>",
    '<a href="{}">x</a>',
)
PROBED = "http://probe.invalid/"
#: Harmless as HTML: entities (dangerous only unescaped twice) and template syntax.
INERT_AS_HTML = {14, 15}


@pytest.mark.slow  # starts chromium
def test_the_probe_sees_every_payload_that_is_rendered_as_html(page: Any) -> None:
    """The check above is not blind: each payload written into a page
    unescaped, in the context it breaks out of, is seen by the probe."""
    page.add_init_script(HOOKS)
    shown = {"body": ""}

    def serve(route: Any) -> None:  # the page, and a 404 for what it loads (img src=x)
        if route.request.url == PROBED:
            route.fulfill(body=shown["body"], content_type="text/html")
        else:
            route.fulfill(status=404, body="")

    page.route(f"{PROBED}**", serve)
    seen = {}
    for index in range(len(xss.PAYLOADS)):
        hostile = xss.payload("pr", index)
        found: list[str] = []
        for context in CONTEXTS:
            shown["body"] = f"<!doctype html><title>t</title><body>{context.format(hostile)}</body>"
            page.goto(PROBED)
            found += page.evaluate(PROBE)
        seen[index] = any(xss.marker("pr", index) in f for f in found)
    assert [i for i, yes in seen.items() if not yes] == sorted(INERT_AS_HTML)
