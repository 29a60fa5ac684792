from django.contrib import admin

from .models import Expense


@admin.register(Expense)
class ExpenseAdmin(admin.ModelAdmin):
    list_display = ["__str__", "owner", "amount", "cost_center", "approved_by", "created_at"]
    list_filter = ["cost_center", "created_at"]
    search_fields = ["description", "owner__username", "approved_by", "task_id"]
    readonly_fields = ["created_at"]
