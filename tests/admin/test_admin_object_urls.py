"""Every object URL of the app's admin answers a user who may not see the
object as it answers an id that names nothing (issue 29, item 9: a staff
user without permissions got 403 on an existing Task's history page and
Django's redirect to the index for an unknown id — so they learned which
Tasks exist).

The URLs are read from the admin site's own patterns (every ModelAdmin of the
app, Django's pages and the ones it adds), so a page added later is covered.
For each: the same status, Location, messages and body for an existing and an
unknown id, GET and POST — 403 for a user without the model's permissions;
"doesn't exist" for a user whose ModelAdmin scopes objects away from them.
With the view permission, existing objects still show."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.contrib import admin
from django.contrib.admin.utils import quote
from django.contrib.messages import get_messages
from django.db.models import Model
from django.test import Client
from django.urls import URLPattern, URLResolver, reverse
from django.utils import timezone

from tests.admin.test_review_admin import staff
from tests.review.test_review_team import waiting_expense
from tests.utils import task_in
from toolnexus_django.models import McpCall, PushConfig, PushDelivery, TaskDecision, TaskRecord
from toolnexus_django.stores import DjangoTaskStore

pytestmark = pytest.mark.django_db

APP = "toolnexus_django"
OBJECT_ID = "<path:object_id>"
#: An id of each model's kind that names nothing.
UNKNOWN = {"taskrecord": "no-such-task", "awaitinghumantask": "no-such-task"}
UNKNOWN_NUMBER = "987654"


def object_routes() -> Iterator[tuple[str, str]]:
    """(model name, URL with ``<path:object_id>``) of every object URL the
    admin site serves for the app's models, from the site's URL patterns."""
    index = reverse("admin:index")
    for entry in admin.site.get_urls():
        if not isinstance(entry, URLResolver) or not str(entry.pattern).startswith(f"{APP}/"):
            continue
        model_name = str(entry.pattern).split("/")[1]
        for pattern in entry.url_patterns:
            if isinstance(pattern, URLPattern) and "object_id" in pattern.pattern.converters:
                yield model_name, f"{index}{entry.pattern}{pattern.pattern}"


ROUTES = sorted(object_routes())
#: Each route's test id: the model and the page ("taskrecord/history").
ROUTE_IDS = [route.replace(f"/{OBJECT_ID}", "").split(f"/{APP}/")[1] for _, route in ROUTES]


def test_the_routes_cover_every_model_and_page_of_the_app() -> None:
    models = {m._meta.model_name for m in admin.site._registry if m._meta.app_label == APP}
    models.discard("taskdashboard")  # the dashboard's index entry: a page, no objects
    assert {name for name, _ in ROUTES} == models
    pages = {route.rstrip("/").rsplit("/", 1)[-1] for _, route in ROUTES}
    assert {"change", "delete", "history", "review", "hold", "release"} <= pages
    assert sum(route.endswith(f"{OBJECT_ID}/") for _, route in ROUTES) == len(models)


def existing_ids() -> dict[str, str]:
    """An existing object of each of the app's admin models, by model name."""
    waiting = waiting_expense("file my taxi")
    canceled = str(task_in("canceled", store=DjangoTaskStore())["id"])
    config = PushConfig.objects.create(
        task=TaskRecord.objects.get(pk=waiting), config_id="cfg-1", url="https://hooks.example/a"
    )
    delivery = PushDelivery.objects.create(
        config=config, seq=1, notification_id="n-1", outcome=PushDelivery.Outcome.RETRY,
        next_attempt_at=timezone.now() + timedelta(minutes=1),
    )  # fmt: skip
    call = McpCall.objects.create(
        at=timezone.now(), tool="file_expense", arguments_digest="0" * 64, duration_ms=1.0,
        outcome="ok",
    )  # fmt: skip
    decision: Model = TaskDecision.objects.filter(task_id=canceled).get()
    return {
        "taskrecord": canceled,
        "awaitinghumantask": waiting,
        "taskdecision": str(decision.pk),
        "pushconfig": str(config.pk),
        "pushdelivery": str(delivery.pk),
        "mcpcall": str(call.pk),
    }


def answer_of(user: Any, method: str, route: str, object_id: str) -> dict[str, Any]:
    """What the page answers ``user`` (signed in afresh: no message left from
    an earlier page), with the id in it written ``<id>``: the status,
    Location, the messages it leaves and the body."""
    url = route.replace(OBJECT_ID, quote(object_id))
    response = getattr(client_for(user), method)(url)
    said = [str(m) for m in get_messages(response.wsgi_request)]

    def blind(text: str) -> str:  # the id as a word ("1", not the 1 of "<h1>")
        for shown in {object_id, quote(object_id)}:
            text = re.sub(rf"(?<![\w-]){re.escape(shown)}(?![\w-])", "<id>", text)
        return text

    return {
        "status": response.status_code,
        "location": blind(response.headers.get("Location", "")),
        "messages": [blind(m) for m in said],
        "body": blind(response.content.decode()),
    }


def client_for(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize(("model_name", "route"), ROUTES, ids=ROUTE_IDS)
def test_no_permission_gets_one_answer_for_an_existing_and_an_unknown_id(
    django_user_model: Any, model_name: str, route: str
) -> None:
    existing = existing_ids()[model_name]
    unknown = UNKNOWN.get(model_name, UNKNOWN_NUMBER)
    stan = staff(django_user_model, "stan")  # staff, no permission at all
    for method in ("get", "post"):
        seen = answer_of(stan, method, route, existing)
        not_there = answer_of(stan, method, route, unknown)
        assert seen == not_there, (method, route)
        assert seen["status"] == 403, (method, route, seen["status"], seen["location"])


#: The permission that shows each model's objects.
VIEW = {
    "taskrecord": "view_taskrecord",
    "awaitinghumantask": "view_awaitinghumantask",
    "taskdecision": "view_taskdecision",
    "pushconfig": "view_pushconfig",
    "pushdelivery": "view_pushdelivery",
    "mcpcall": "view_mcpcall",
}


@pytest.mark.parametrize("model_name", sorted(VIEW))
def test_with_the_view_permission_existing_objects_show(
    django_user_model: Any, model_name: str
) -> None:
    existing = existing_ids()[model_name]
    client = client_for(staff(django_user_model, "vic", VIEW[model_name]))
    for page in ("change", "history"):
        url = reverse(f"admin:{APP}_{model_name}_{page}", args=[quote(existing)])
        response = client.get(url)
        assert response.status_code == 200, (url, response.status_code)
    gone = reverse(
        f"admin:{APP}_{model_name}_history", args=[UNKNOWN.get(model_name, UNKNOWN_NUMBER)]
    )
    assert client.get(gone)["Location"] == reverse("admin:index")  # Django's "doesn't exist"


@pytest.fixture
def scoped(monkeypatch: pytest.MonkeyPatch) -> Iterator[set[str]]:
    """The app's ModelAdmins scoped by object, as a project may scope them:
    an object whose primary key is in the returned set is not the user's to see."""
    hidden: set[str] = set()
    for model, model_admin in admin.site._registry.items():
        if model._meta.app_label != APP:
            continue
        own = model_admin.has_view_permission

        def scoped_view(request: Any, obj: Any = None, own: Any = own) -> bool:
            return own(request, obj) and (obj is None or str(obj.pk) not in hidden)

        monkeypatch.setattr(model_admin, "has_view_permission", scoped_view)
    yield hidden


@pytest.mark.parametrize(("model_name", "route"), ROUTES, ids=ROUTE_IDS)
def test_an_object_scoped_away_reads_as_an_unknown_id(
    django_user_model: Any, scoped: set[str], model_name: str, route: str
) -> None:
    ids = existing_ids()
    scoped.update(ids.values())
    unknown = UNKNOWN.get(model_name, UNKNOWN_NUMBER)
    perms = [VIEW[model_name], "answer_task"] if model_name == "awaitinghumantask" else []
    vic = staff(django_user_model, "vic", *(perms or [VIEW[model_name]]))
    for method in ("get", "post"):
        seen = answer_of(vic, method, route, ids[model_name])
        not_there = answer_of(vic, method, route, unknown)
        assert seen == not_there, (method, route)
