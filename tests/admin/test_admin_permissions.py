"""Every URL the app adds to the admin is behind the queue's permission
(issue 18, item 10: ``…/awaitinghumantask/next/`` redirected a staff user
without it to a waiting Task's review page, its id in the Location).

A staff user without the app's permissions gets the 403 the queue gives on
each of them — found by asking each ModelAdmin for its URLs, so one added
later is covered too — with no Task id in the body or a Location; with the
view permission they read, with ``answer_task`` they answer, as before."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib import admin
from django.test import Client
from django.urls import reverse

from tests.admin.test_review_admin import staff
from tests.review.test_review_team import waiting_expense
from tests.utils import task_in
from toolnexus_django.stores import DjangoTaskStore

pytestmark = pytest.mark.django_db

#: The URLs Django's ModelAdmin makes itself (their permission checks are Django's).
STOCK = ("_changelist", "_add", "_history", "_delete", "_change")


def added_urls(object_id: str) -> list[str]:
    """Every URL the app's ModelAdmins add through ``get_urls()``."""
    found = []
    for model, model_admin in admin.site._registry.items():
        if model._meta.app_label != "toolnexus_django":
            continue
        for pattern in model_admin.get_urls():
            name = getattr(pattern, "name", None)
            if not name or name.endswith(STOCK):
                continue
            kwargs = {key: object_id for key in pattern.pattern.converters}
            found.append(reverse(f"admin:{name}", kwargs=kwargs))
    return found


def client_for(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_app_adds_the_urls_this_test_covers() -> None:
    names = {url.rstrip("/").rsplit("/", 1)[-1] for url in added_urls("t-1")}
    assert names == {"next", "review", "hold", "release", "dashboard"}


def test_a_staff_user_without_the_permission_gets_403_and_no_task_id(
    django_user_model: Any,
) -> None:
    waiting = waiting_expense("file my taxi")
    done = str(task_in("completed", store=DjangoTaskStore())["id"])
    client = client_for(staff(django_user_model, "stan"))  # staff, no app permission
    queue = reverse("admin:toolnexus_django_awaitinghumantask_changelist")
    assert client.get(queue).status_code == 403  # what the queue gives
    urls = [
        *added_urls(waiting),
        *added_urls(done),
        *added_urls("no-such-task"),
        reverse("admin:toolnexus_django_awaitinghumantask_next") + f"?after={waiting}",
    ]
    for url in urls:
        for method in (client.get, client.post):
            response = method(url)
            assert response.status_code == 403, (method.__name__, url, response.status_code)
            shown = response.content.decode() + response.headers.get("Location", "")
            assert waiting not in shown.replace(url, "") and done not in shown.replace(url, "")


def test_with_the_view_permission_they_read_with_answer_task_they_answer(
    django_user_model: Any,
) -> None:
    waiting = waiting_expense("file my taxi")
    review = reverse("admin:toolnexus_django_awaitinghumantask_review", args=[waiting])
    claim = reverse("admin:toolnexus_django_awaitinghumantask_hold", args=[waiting])
    nxt = reverse("admin:toolnexus_django_awaitinghumantask_next")

    viewer = client_for(staff(django_user_model, "vic", "view_awaitinghumantask"))
    assert viewer.get(nxt)["Location"] == review
    assert viewer.get(review).status_code == 200
    assert viewer.post(claim).status_code == 403  # claiming is answering's

    reviewer = client_for(staff(django_user_model, "rita", "answer_task"))
    assert reviewer.get(nxt)["Location"] == review
    assert reviewer.get(review).status_code == 200
    assert reviewer.get(claim).status_code == 405  # a claim is a POST
    assert reviewer.post(claim)["Location"] == review
