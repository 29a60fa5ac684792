"""An expense claim, owned by the user who asked the agent to file it."""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

COST_CENTERS = ["travel", "equipment", "training", "other"]
#: The amounts a claim may have: a cent at least, and what ``amount``'s
#: ``max_digits=10, decimal_places=2`` holds at most (a larger one would be
#: stored by SQLite and break every page that reads it back).
MIN_AMOUNT = Decimal("0.01")
MAX_AMOUNT = Decimal("99999999.99")


class Expense(models.Model):
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="expenses"
    )
    amount = models.DecimalField(
        max_digits=10,
        decimal_places=2,
        validators=[MinValueValidator(MIN_AMOUNT), MaxValueValidator(MAX_AMOUNT)],
    )
    description = models.CharField(max_length=200)
    cost_center = models.CharField(
        max_length=20, choices=[(c, c.title()) for c in COST_CENTERS], default="other"
    )
    #: The reviewers who approved it, in order (comma-separated usernames).
    approved_by = models.CharField(max_length=300, blank=True)
    #: The agent Task that filed it.
    task_id = models.CharField("task", max_length=255, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"EXP-{self.pk}: {self.amount} for {self.description}"
