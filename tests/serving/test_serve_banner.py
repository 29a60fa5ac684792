"""``toolnexus_serve``'s banner leads to the admin: its URL when the project
routes it, and ``python manage.py createsuperuser`` while nobody could sign
in — a database that cannot say never stops the server. The banner of a real
process: tests/serving/test_serve_command.py."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.db import models

from toolnexus_django.management.commands.toolnexus_serve import Command
from toolnexus_django.models import McpCall
from toolnexus_django.serving.server import (
    CREATESUPERUSER_HINT,
    ServeOptions,
    admin_url,
    superuser_hint,
)

BASE = "http://127.0.0.1:8000"


class UnmigratedUser(models.Model):
    """A user model whose table was never created: asking it is a real
    database error."""

    is_superuser = models.BooleanField(default=False)
    is_active = models.BooleanField(default=True)

    class Meta:
        app_label = "banner_tests"
        managed = False
        db_table = "tnx_banner_no_such_table"

    def __str__(self) -> str:
        return f"user {self.pk}"


def banner(hint: str | None) -> str:
    out = io.StringIO()
    command = Command(stdout=out, stderr=io.StringIO())
    command.admin_hint = hint
    command.banner(ServeOptions(host="127.0.0.1", port=8000))
    return out.getvalue()


def test_the_admin_url_is_where_the_project_routes_the_admin(settings: Any) -> None:
    assert admin_url(BASE) == f"{BASE}/admin/"
    assert admin_url(BASE + "/") == f"{BASE}/admin/"
    settings.ROOT_URLCONF = "tests.urls_root_mount"  # the app, no admin
    assert admin_url(BASE) is None


def test_no_admin_url_when_the_admin_is_not_installed(settings: Any) -> None:
    settings.INSTALLED_APPS = [a for a in settings.INSTALLED_APPS if a != "django.contrib.admin"]
    assert admin_url(BASE) is None


@pytest.mark.django_db
def test_the_hint_shows_until_an_active_superuser_exists(django_user_model: Any) -> None:
    assert "python manage.py createsuperuser" in CREATESUPERUSER_HINT
    assert superuser_hint() == CREATESUPERUSER_HINT
    django_user_model.objects.create_user("staff", is_staff=True)
    django_user_model.objects.create_superuser("gone", is_active=False)
    assert superuser_hint() == CREATESUPERUSER_HINT
    django_user_model.objects.create_superuser("root")
    assert superuser_hint() is None


@pytest.mark.django_db
def test_a_database_that_cannot_say_gives_no_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    import django.contrib.auth

    for user_model in (UnmigratedUser, McpCall):  # no table; no is_superuser field
        monkeypatch.setattr(django.contrib.auth, "get_user_model", lambda m=user_model: m)
        assert superuser_hint() is None


@pytest.mark.django_db
def test_the_banner_names_the_admin_and_the_hint(settings: Any) -> None:
    said = banner(superuser_hint())
    lines = said.splitlines()
    assert f"Admin: {BASE}/admin/" in lines
    assert CREATESUPERUSER_HINT in lines
    # After the card, before the model: where to go first, then what runs.
    assert lines.index(f"Admin: {BASE}/admin/") == lines.index(CREATESUPERUSER_HINT) - 1
    assert said.index("Agent Card: ") < said.index("Admin: ") < said.index("Model: ")

    assert CREATESUPERUSER_HINT not in banner(None)
    settings.ROOT_URLCONF = "tests.urls_root_mount"
    assert "Admin:" not in banner(CREATESUPERUSER_HINT)  # no admin routed: nothing to say
