"""Admin pages of records only the app writes (the queue, decisions,
deliveries, MCP calls): nobody adds, edits or deletes them here. Their object
pages are guarded as all of the app's are (:mod:`.objectpages`)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from .objectpages import ObjectPagesMixin


class ReadOnlyAdmin(ObjectPagesMixin, admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
