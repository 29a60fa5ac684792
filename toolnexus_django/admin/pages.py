"""What the review queue's own pages share: each is a class-based view that
holds the queue's ModelAdmin — ``SomeView.as_view(model_admin=self)`` in
its ``get_urls()``, the way Django's ``AutocompleteJsonView`` holds its admin
site — so a page never imports the ModelAdmin back; and the URLs those pages
send a reviewer to."""

from __future__ import annotations

from typing import Any

from django.contrib.admin import ModelAdmin
from django.contrib.admin.utils import quote
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest
from django.urls import reverse
from django.views import View


class QueuePage(View):
    #: The queue's ModelAdmin; ``as_view(model_admin=...)`` sets it.
    model_admin: ModelAdmin[Any] | None = None

    @property
    def queue(self) -> ModelAdmin[Any]:
        if self.model_admin is None:
            raise ImproperlyConfigured(f"{type(self).__name__}.as_view(model_admin=...)")
        return self.model_admin

    def url(self, name: str, *args: str) -> str:
        """The admin URL ``name`` (say ``"awaitinghumantask_review"``) in
        this admin site, of the object ids ``args``."""
        site = self.queue.admin_site.name
        return reverse(f"{site}:toolnexus_django_{name}", args=[quote(a) for a in args])

    def queue_url(self) -> str:
        return self.url("awaitinghumantask_changelist")

    def review_url(self, task_id: str) -> str:
        return self.url("awaitinghumantask_review", task_id)

    def record_url(self, task_id: str) -> str:
        """The stored Task's own (read-only) page."""
        return self.url("taskrecord_change", task_id)

    def say(self, request: HttpRequest, message: str, level: int) -> None:
        self.queue.message_user(request, message, level)
