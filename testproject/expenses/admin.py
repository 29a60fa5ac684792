from django.contrib import admin
from django.contrib.admin.utils import quote
from django.urls import reverse
from django.utils.html import format_html
from django.utils.text import Truncator

from .models import Expense


@admin.register(Expense)
class ExpenseAdmin(admin.ModelAdmin):
    list_display = [
        "__str__", "owner", "amount", "cost_center", "approved_by", "task_short", "created_at",
    ]  # fmt: skip
    list_filter = ["cost_center", "created_at"]
    search_fields = ["description", "owner__username", "approved_by", "task_id"]
    # The agent's Task filed the claim: its id is a record to follow, not to edit.
    fields = ["owner", "amount", "description", "cost_center", "approved_by", "task", "created_at"]
    readonly_fields = ["task", "created_at"]

    @admin.display(description="task")
    def task(self, obj: Expense) -> str:
        """The Task that filed the claim, linked to its admin page."""
        return self.task_link(obj, obj.task_id)

    @admin.display(description="task", ordering="task_id")
    def task_short(self, obj: Expense) -> str:
        return self.task_link(obj, Truncator(obj.task_id).chars(13))

    def task_link(self, obj: Expense, text: str) -> str:
        if not obj.task_id:
            return "-"
        url = reverse(
            f"{self.admin_site.name}:toolnexus_django_taskrecord_change", args=[quote(obj.task_id)]
        )
        return format_html('<a href="{}" title="{}">{}</a>', url, obj.task_id, text)
