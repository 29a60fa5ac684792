"""``manage.py demo_users``: the people of the demo's walk-through.

Two requesters, alice and bob, who may file and list their own expense
claims (the ``Expense requesters`` group: ``expenses.add_expense`` and
``expenses.view_expense``), and a reviewer, rita, who answers Tasks in the
admin and sees the claims there (staff, the ``Reviewers`` group:
``toolnexus_django.answer_task`` and ``expenses.view_expense``). Run it again
to reset their passwords and groups; it never touches other users.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction

REQUESTERS = ("alice", "bob")
REVIEWER = "rita"

GROUPS: dict[str, tuple[str, ...]] = {
    "Expense requesters": ("expenses.add_expense", "expenses.view_expense"),
    "Reviewers": ("toolnexus_django.answer_task", "expenses.view_expense"),
}


def permission(name: str) -> Permission:
    app_label, codename = name.split(".")
    return Permission.objects.get(content_type__app_label=app_label, codename=codename)


class Command(BaseCommand):
    help = (
        "Make the demo's users: requesters alice and bob (file and list their expense "
        "claims) and reviewer rita (answers Tasks in the admin). Passwords: <name>-pw."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--password", help="one password for all three instead of <name>-pw")

    @transaction.atomic
    def handle(self, *args: Any, **options: Any) -> None:
        groups = {}
        for name, perms in GROUPS.items():
            group, _ = Group.objects.get_or_create(name=name)
            group.permissions.set([permission(p) for p in perms])
            groups[name] = group
        for username in (*REQUESTERS, REVIEWER):
            reviewer = username == REVIEWER
            user = self._user(username, options.get("password") or f"{username}-pw", reviewer)
            user.groups.add(groups["Reviewers" if reviewer else "Expense requesters"])
            role = "reviewer: the admin's review queue" if reviewer else "requester"
            self.stdout.write(f"{username}: {role}")
        self.stdout.write(
            "Demo passwords are <name>-pw unless --password was given: "
            "keep this database on your machine."
        )

    def _user(self, username: str, password: str, staff: bool) -> Any:
        model = get_user_model()
        user = model._default_manager.filter(username=username).first()
        if user is None:
            user = model(username=username)
        user.is_active = True
        user.is_staff = staff or user.is_staff
        user.set_password(password)
        user.save()
        return user
