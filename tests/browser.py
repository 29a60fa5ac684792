"""What the browser tests share: Debian's Chromium (never a downloaded one)
driven by pytest-playwright, with Playwright kept to one test module at a
time, and small helpers to log in and to save screenshots.

A browser test module imports the fixtures (they must be names in the module
for pytest to use them there: in tests/conftest.py they would start Playwright
for every module) and marks itself with :data:`MARKS`::

    from tests.browser import MARKS
    from tests.browser import (  # noqa: F401 (fixtures)
        _orm_beside_playwright, browser, browser_context_args, browser_type,
        browser_type_launch_args, playwright,
    )
    pytestmark = MARKS

Screenshots go to pytest's ``tmp_path``; ``UPDATE_SCREENSHOTS=1`` writes them
into docs/ instead (the committed ones), so a plain test run leaves the work
tree clean.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
DOCS = Path(__file__).resolve().parent.parent / "docs"
#: Apps the test settings install for the suite's workers (django-tasks-db,
#: django-rq), which a project set up as the docs say has not: their admin
#: hides from the docs' pictures (:func:`admin_as_documented`).
TEST_ONLY_APPS = ("django_tasks_database", "django_rq")

#: What every browser test module puts in its ``pytestmark``.
MARKS = [
    pytest.mark.django_db(transaction=True),
    # pytest-playwright 0.10's own base_url fixture trips a pytest 9 deprecation.
    pytest.mark.filterwarnings(
        "ignore:Session-scoped fixtures defined as instance methods:pytest.PytestRemovedIn10Warning"
    ),
    pytest.mark.skipif(
        not CHROMIUM.exists(),
        reason="needs Debian's chromium at /usr/bin/chromium (apt-get install chromium)",
    ),
]

__all__ = [
    "CHROMIUM",
    "DOCS",
    "MARKS",
    "TEST_ONLY_APPS",
    "_orm_beside_playwright",
    "admin_as_documented",
    "browser",
    "browser_context_args",
    "browser_type",
    "browser_type_launch_args",
    "full_page_screenshot",
    "log_in",
    "playwright",
    "screenshots",
]


@pytest.fixture(scope="module", autouse=True)
def _orm_beside_playwright() -> Iterator[None]:
    # Playwright's sync API runs an asyncio event loop in the test's thread,
    # and Django refuses ORM calls from a thread with a running loop. The ORM
    # calls here (creating the user, reading the Task) are ordinary blocking
    # test code. Set for the importing module only, so other tests keep the check.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    yield
    if previous is None:
        del os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"]
    else:
        os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


# pytest-playwright starts Playwright once per session, and while it runs the
# main thread counts as inside an event loop: every later test calling
# asyncio.run() would fail. Here it lives for the importing module only.
@pytest.fixture(scope="module")
def playwright(_pw_api_request_contexts: Any) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        if _pw_api_request_contexts:
            _pw_api_request_contexts.instrument(pw)
        yield pw


@pytest.fixture(scope="module")
def browser_type(playwright: Any, browser_name: str) -> Any:
    return getattr(playwright, browser_name or "chromium")


@pytest.fixture(scope="module")
def browser(browser_type: Any, browser_type_launch_args: dict[str, Any]) -> Iterator[Any]:
    browser = browser_type.launch(**browser_type_launch_args)
    yield browser
    browser.close()


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    return {
        **browser_type_launch_args,
        "executable_path": str(CHROMIUM),
        "args": [
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--disable-quic",
        ],
    }


@pytest.fixture(scope="module")
def browser_context_args() -> dict[str, Any]:
    # Not the plugin's: that one needs the session-wide Playwright.
    return {"viewport": {"width": 1280, "height": 900}}


# -- helpers ---------------------------------------------------------------------


def screenshots(tmp_path: Path) -> Path:
    """Where a test saves its screenshots: docs/ with ``UPDATE_SCREENSHOTS=1``,
    else the test's own ``tmp_path``."""
    return DOCS if os.environ.get("UPDATE_SCREENSHOTS") == "1" else tmp_path


def full_page_screenshot(page: Any, path: Path) -> None:
    """The whole page, in a viewport as tall as the page: the navigation
    sidebar (sticky) then reaches the bottom instead of floating mid-page."""
    viewport = page.viewport_size
    height = page.evaluate("document.documentElement.scrollHeight")
    page.set_viewport_size({"width": viewport["width"], "height": max(height, viewport["height"])})
    page.screenshot(path=str(path), full_page=True)
    page.set_viewport_size(viewport)


def log_in(page: Any, base_url: str, username: str, password: str) -> None:
    """Log ``page`` into the admin through its login form."""
    from playwright.sync_api import expect

    page.goto(f"{base_url}/admin/login/?next=/admin/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("input[type=submit]")
    expect(page.locator("#user-tools")).to_contain_text(username, ignore_case=True)


@contextmanager
def admin_as_documented() -> Iterator[None]:
    """The admin without the models of :data:`TEST_ONLY_APPS`, as a project
    set up the docs' way has it (the live server runs in this process, so it
    serves the same registry); everything registered again on the way out."""
    from django.contrib import admin

    hidden = {
        model: type(model_admin)
        for model, model_admin in list(admin.site._registry.items())
        if model._meta.app_label in TEST_ONLY_APPS
    }
    for model in hidden:
        admin.site.unregister(model)
    try:
        yield
    finally:
        for model, model_admin in hidden.items():
            admin.site.register(model, model_admin)
