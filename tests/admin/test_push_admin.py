"""Push notifications in the admin: each Task's page shows its configs and
recent deliveries (never a token or credentials), the config list filters and
re-enables configs ("Retry now", delivered for real to a receiver on
127.0.0.1), and the delivery log lists failing deliveries across Tasks."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from tests.conftest import wait_until
from tests.utils import task_in
from tests.webhooks import Receiver
from toolnexus_django.models import PushConfig, PushDelivery, TaskRecord
from toolnexus_django.push.secrets import seal
from toolnexus_django.stores import DjangoTaskStore

TOKEN = "tok-secret"
CREDENTIALS = "cred-secret"
HOSTILE = "<script>pwn()</script>"

CONFIGS = reverse("admin:toolnexus_django_pushconfig_changelist")
DELIVERIES = reverse("admin:toolnexus_django_pushdelivery_changelist")


def task_page(task_id: str) -> str:
    return reverse("admin:toolnexus_django_taskrecord_change", args=[task_id])


def new_task() -> str:
    return str(task_in("working", store=DjangoTaskStore())["id"])


def config(task_id: str, url: str = "https://hooks.example.com/a2a", **fields: Any) -> PushConfig:
    fields.setdefault("config_id", f"cfg-{PushConfig.objects.count() + 1}")
    return PushConfig.objects.create(
        task=TaskRecord.objects.get(pk=task_id),
        url=url,
        token=seal(TOKEN),
        auth_scheme="Bearer",
        credentials=seal(CREDENTIALS),
        **fields,
    )


def disabled(task_id: str, url: str = "https://down.example.com/hook", **fields: Any) -> PushConfig:
    """A config the delivery gave up on: MAX_ATTEMPTS failures, then disabled."""
    defaults = {
        "failures": 8,
        "delivered_seq": 1,
        "next_attempt_at": timezone.now() + timedelta(minutes=5),
        "disabled_at": timezone.now(),
        "disabled_reason": "8 deliveries failed in a row; the last: HTTP 503: busy",
    }
    return config(task_id, url, **{**defaults, **fields})


def attempt(row: PushConfig, notification_id: str, outcome: str, **fields: Any) -> PushDelivery:
    return PushDelivery.objects.create(
        config=row, seq=2, notification_id=notification_id, outcome=outcome, **fields
    )


def staff(django_user_model: Any, username: str, *perms: str) -> Client:
    user = django_user_model.objects.create_user(username, password="pw", is_staff=True)
    for perm in perms:
        user.user_permissions.add(Permission.objects.get(codename=perm))
    client = Client()
    client.force_login(user)
    return client


def retry_now(client: Client, *configs: PushConfig) -> Any:
    selected = [str(c.pk) for c in configs]
    return client.post(CONFIGS, {"action": "retry_now", "_selected_action": selected}, follow=True)


def secrets_of(row: PushConfig) -> list[str]:
    return [TOKEN, CREDENTIALS, row.token, row.credentials]


# -- a Task's page ----------------------------------------------------------------------------


@pytest.mark.django_db
def test_task_page_shows_configs_and_deliveries_but_never_secrets(admin_client: Client) -> None:
    task_id = new_task()
    row = disabled(task_id)
    attempt(row, "2.0", "delivered", status_code=200)
    attempt(row, "3.0", "retry", status_code=503, error="HTTP 503: busy", attempt=7)
    attempt(row, "3.0", "disabled", status_code=418, error="HTTP 418: teapot", attempt=8)

    page = admin_client.get(task_page(task_id)).content.decode()
    assert "push notifications" in page.lower()
    assert "https://down.example.com/hook" in page
    assert "8 deliveries failed in a row; the last: HTTP 503: busy" in page
    assert row.config_id in page and 'class="nowrap tnx-not-ok">8<' in page  # its failures
    for text in ("tnx-push-delivered", "tnx-push-retry", "tnx-push-disabled", ">503<", ">418<"):
        assert text in page, text
    assert "HTTP 418: teapot" in page
    for secret in secrets_of(row):
        assert secret not in page
    # The section links to the config and to the Task's (failing) deliveries.
    assert reverse("admin:toolnexus_django_pushconfig_change", args=[row.pk]) in page
    assert f"{DELIVERIES}?status=failing&amp;q={task_id}" in page


@pytest.mark.django_db
def test_a_task_without_configs_says_so(admin_client: Client) -> None:
    page = admin_client.get(task_page(new_task())).content.decode()
    assert "No push notification configs." in page


@pytest.mark.django_db
def test_the_config_and_delivery_pages_show_no_secrets_and_are_read_only(
    admin_client: Client,
) -> None:
    row = disabled(new_task())
    failed = attempt(row, "3.0", "retry", status_code=503, error="HTTP 503: busy")
    change = reverse("admin:toolnexus_django_pushconfig_change", args=[row.pk])
    detail = admin_client.get(change).content.decode()
    assert "https://down.example.com/hook" in detail and "HTTP 503: busy" in detail
    assert 'name="token"' not in detail and 'name="credentials"' not in detail
    for secret in secrets_of(row):
        assert secret not in detail
    delivery_page = admin_client.get(
        reverse("admin:toolnexus_django_pushdelivery_change", args=[failed.pk])
    ).content.decode()
    assert "HTTP 503: busy" in delivery_page
    for secret in secrets_of(row):
        assert secret not in delivery_page
    for listing in (CONFIGS, DELIVERIES):
        body = admin_client.get(listing).content.decode()
        assert all(secret not in body for secret in secrets_of(row))

    # Not addable, and a POST to a config's page changes nothing.
    assert admin_client.get(reverse("admin:toolnexus_django_pushconfig_add")).status_code == 403
    assert admin_client.get(reverse("admin:toolnexus_django_pushdelivery_add")).status_code == 403
    posted = admin_client.post(change, {"url": "https://evil.example.com/", "token": "x"})
    assert posted.status_code == 403
    row.refresh_from_db()
    assert row.url == "https://down.example.com/hook" and row.token != "x"


# -- the config list ------------------------------------------------------------------------


@pytest.mark.django_db
def test_config_list_filters_and_searches(admin_client: Client) -> None:
    first, second = new_task(), new_task()
    healthy = config(first, "https://ok.example.com/hook", config_id="healthy")
    failing = config(second, "https://flaky.example.com/hook", config_id="flaky", failures=2)
    down = disabled(second, config_id="down")

    def listed(**params: str) -> set[str]:
        body = admin_client.get(CONFIGS, params).content.decode()
        return {c.url for c in (healthy, failing, down) if c.url in body}

    everything = admin_client.get(CONFIGS).content.decode()
    assert task_page(first) in everything and task_page(second) in everything  # Task links
    assert listed() == {healthy.url, failing.url, down.url}
    assert listed(failing="yes") == {failing.url, down.url}
    assert listed(failing="no") == {healthy.url}
    assert listed(disabled="yes") == {down.url}
    assert listed(disabled="no") == {healthy.url, failing.url}
    assert listed(q=second) == {failing.url, down.url}
    assert listed(q="ok.example") == {healthy.url}


@pytest.mark.django_db(transaction=True)
def test_retry_now_re_enables_a_disabled_config_and_delivers_its_events(
    admin_client: Client, settings: Any
) -> None:
    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "PUSH": {"ALLOWED_HOSTS": ["127.0.0.1"]}}
    task_id = new_task()  # submitted, then working: two events to deliver
    with Receiver() as hook:
        row = disabled(task_id, hook.url, delivered_seq=0)
        page = retry_now(admin_client, row).content.decode()
        assert "1 push config re-enabled and scheduled for delivery." in page
        row.refresh_from_db()
        assert (row.disabled_at, row.disabled_reason, row.failures) == (None, "", 0)
        assert row.next_attempt_at is None

        got = hook.wait_for(1)
        assert got[0].headers["x-a2a-notification-token"] == TOKEN
        assert got[0].headers["authorization"] == f"Bearer {CREDENTIALS}"
        events = TaskRecord.objects.get(pk=task_id).event_seq
        wait_until(
            lambda: PushConfig.objects.get(pk=row.pk).delivered_seq == events,
            what="every event delivered",
        )
    assert set(row.deliveries.values_list("outcome", flat=True)) == {"delivered"}


@pytest.mark.django_db
def test_retry_now_needs_the_change_permission(django_user_model: Any) -> None:
    task_id = new_task()
    row = disabled(task_id)
    viewer = staff(django_user_model, "vera", "view_pushconfig", "view_taskrecord")
    listing = viewer.get(CONFIGS).content.decode()
    assert row.url in listing and "retry_now" not in listing  # no such action offered
    retry_now(viewer, row)
    row.refresh_from_db()
    assert row.disabled_at is not None and row.failures == 8

    # The Task's page shows push configs only to who may see them.
    plain = staff(django_user_model, "tom", "view_taskrecord")
    page = plain.get(task_page(task_id)).content.decode()
    assert task_id in page and row.url not in page
    assert plain.get(CONFIGS).status_code == 403

    editor = staff(django_user_model, "eddie", "change_pushconfig")
    assert "1 push config re-enabled" in retry_now(editor, row).content.decode()
    row.refresh_from_db()
    assert row.disabled_at is None and row.failures == 0


# -- the delivery log -----------------------------------------------------------------------


@pytest.mark.django_db
def test_the_delivery_log_lists_failing_deliveries_across_tasks(admin_client: Client) -> None:
    first, second = new_task(), new_task()
    one = config(first, "https://one.example.com/hook")
    two = disabled(second, "https://two.example.com/hook")
    attempt(one, "n-ok-1", "delivered", status_code=200)
    attempt(one, "n-retry-1", "retry", status_code=503, error="HTTP 503: busy")
    attempt(two, "n-refused-2", "refused", error="the URL is no longer allowed")
    attempt(two, "n-gave-up-2", "gave-up", status_code=404, error="HTTP 404")
    attempt(two, "n-ok-2", "delivered", status_code=204)
    ids = ("n-ok-1", "n-retry-1", "n-refused-2", "n-gave-up-2", "n-ok-2")

    def listed(**params: str) -> list[str]:
        body = admin_client.get(DELIVERIES, params).content.decode()
        return sorted(i for i in ids if f">{i}<" in body)

    failing = admin_client.get(DELIVERIES).content.decode()  # failing ones by default
    assert sorted(i for i in ids if f">{i}<" in failing) == [
        "n-gave-up-2",
        "n-refused-2",
        "n-retry-1",
    ]
    assert task_page(first) in failing and task_page(second) in failing
    assert reverse("admin:toolnexus_django_pushconfig_change", args=[two.pk]) in failing
    assert ">503<" in failing and "HTTP 503: busy" in failing
    assert listed(status="delivered") == ["n-ok-1", "n-ok-2"]
    assert listed(status="all") == sorted(ids)
    assert listed(status="failing", q=first) == ["n-retry-1"]
    assert listed(status="all", config=str(two.pk)) == ["n-gave-up-2", "n-ok-2", "n-refused-2"]
    # Newest first.
    everything = admin_client.get(DELIVERIES, {"status": "all"}).content.decode()
    assert everything.index(">n-ok-2<") < everything.index(">n-ok-1<")


# -- escaping -------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_hostile_url_reason_and_error_are_escaped_everywhere(admin_client: Client) -> None:
    task_id = new_task()
    row = disabled(task_id, f"https://x.example.com/{HOSTILE}", config_id=HOSTILE)
    PushConfig.objects.filter(pk=row.pk).update(disabled_reason=f"down {HOSTILE}")
    failed = attempt(row, "3.0", "retry", status_code=500, error=f"HTTP 500: {HOSTILE}")
    pages = [
        task_page(task_id),
        CONFIGS,
        reverse("admin:toolnexus_django_pushconfig_change", args=[row.pk]),
        DELIVERIES,
        reverse("admin:toolnexus_django_pushdelivery_change", args=[failed.pk]),
    ]
    for url in pages:
        body = admin_client.get(url).content.decode()
        assert HOSTILE not in body, url
        assert "&lt;script&gt;pwn()&lt;/script&gt;" in body, url
