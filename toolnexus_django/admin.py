"""A read-only view of Tasks in the admin (the review queue builds on it)."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from .models import TaskRecord


@admin.register(TaskRecord)
class TaskRecordAdmin(admin.ModelAdmin):
    list_display = ("id", "state", "context_id", "owner", "created_at", "updated_at")
    list_filter = ("state", "created_at", "updated_at")
    search_fields = ("id", "context_id")
    date_hierarchy = "created_at"
    list_select_related = ("owner",)
    show_full_result_count = False  # COUNT(*) over a million rows on every page is waste
    readonly_fields = (
        "id",
        "state",
        "context_id",
        "owner",
        "created_at",
        "updated_at",
        "task_json",
        "private_json",
    )
    fields = readonly_fields

    @admin.display(description=_("task"))
    def task_json(self, obj: TaskRecord) -> str:
        return format_html("<pre>{}</pre>", json.dumps(obj.task, indent=2, ensure_ascii=False))

    @admin.display(description=_("server-side data"))
    def private_json(self, obj: TaskRecord) -> str:
        return format_html("<pre>{}</pre>", json.dumps(obj.private, indent=2, ensure_ascii=False))

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
