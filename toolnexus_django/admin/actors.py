"""Who made a move, as a person reads it: a user by their username — linked
to their admin page for a viewer who may see users there — never by the id
a Task stores for its requester; an anonymous caller as such.

A Task's events name their actor two ways: the requester's own moves (its
``submit``, a ``cancel`` or an answer sent over A2A) store the owner's
primary key, as the Task does; a reviewer's moves store their username.
:class:`People` reads both back as the user's name."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from django.contrib.admin import AdminSite
from django.contrib.admin.utils import quote
from django.contrib.auth import get_user_model
from django.http import HttpRequest
from django.urls import NoReverseMatch, reverse
from django.utils.translation import gettext

__all__ = ["REQUESTER_KINDS", "People", "Person", "UserLink", "user_link"]

#: A user's admin page (or "" when there is none to show).
UserLink = Callable[[Any], str]

#: Event kinds only a Task's requester makes (the actor is the owner's id).
REQUESTER_KINDS = ("submit", "cancel")


@dataclass(frozen=True)
class Person:
    """An actor as a page shows it: a name, and where that user's admin page is."""

    name: str
    url: str = ""


def user_link(site: AdminSite, request: HttpRequest) -> UserLink | None:
    """Where a user's page is in ``site``, for a viewer who may see users
    there (the user admin's view permission, ``auth.view_user`` by default);
    None for anyone else, or when ``site`` has no page for users."""
    model = get_user_model()
    if not site.is_registered(model):
        return None
    if not site.get_model_admin(model).has_view_or_change_permission(request):
        return None
    name = f"{site.name}:{model._meta.app_label}_{model._meta.model_name}_change"

    def link(user: Any) -> str:
        try:
            return reverse(name, args=[quote(user.pk)], current_app=site.name)
        except NoReverseMatch:
            return ""

    return link


class People:
    """The users named by one Task's events, read in one query: ``owner``
    (the Task's, or None for an anonymous caller) and the ``usernames``
    reviewers were recorded under."""

    def __init__(self, owner: Any, usernames: Iterable[str], link: UserLink | None = None) -> None:
        self.owner = owner
        self.link = link
        model = get_user_model()
        wanted = {name for name in usernames if name}
        found = model._default_manager.filter(**{f"{model.USERNAME_FIELD}__in": wanted})
        self.by_name = {str(user.get_username()): user for user in found} if wanted else {}

    def person(self, user: Any) -> Person:
        return Person(str(user.get_username()), self.link(user) if self.link else "")

    def named(self, actor: str, *, requester: bool) -> Person:
        """The user an event's ``actor`` names: the Task's owner for a move
        of its ``requester`` (whose actor is the owner's id), else the user
        of that username. A name no user has any more stays as recorded."""
        if not actor:
            return Person(gettext("anonymous caller"))
        if requester:
            if self.owner is not None and actor == str(self.owner.pk):
                return self.person(self.owner)
            # The id of a user who is gone is no name to show.
            return Person(gettext("a user no longer known"))
        user = self.by_name.get(actor)
        return self.person(user) if user is not None else Person(actor)
