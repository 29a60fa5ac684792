"""The object pages of the app's ModelAdmins — change, delete, history, the
old ``<id>/`` redirect, and every page a ModelAdmin adds (the queue's review,
hold and release) — answer a user who may not see an object exactly as they
answer an id that names nothing: the trust model gives no word that a Task
(or its config, decision, delivery, MCP call) exists.

Two rules, neither depending on whether the id names a row:

* A user who may not see the model's objects at all (no view or change
  permission) gets 403 on every object URL, before anything is read. Django's
  change and delete pages did so already; its history page read the row
  first (403 for an existing Task, a redirect to the index for an unknown id).
* A user who may use the model, but whose ModelAdmin scopes this object away
  (``has_view_permission(request, obj)`` is False), is told it does not
  exist, as Django tells of an unknown id: ``get_object`` returns None.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, cast

from django.contrib.admin import AdminSite
from django.core.exceptions import PermissionDenied
from django.db.models import Model
from django.http import HttpRequest, HttpResponseBase
from django.urls import URLPattern, URLResolver

#: The URL parameter of Django's object pages (and of the pages the app adds).
OBJECT_ID = "object_id"


class ObjectPagesMixin:
    """A ModelAdmin mixin (before ``admin.ModelAdmin`` in the bases): every
    URL of ``urls`` with an ``object_id`` goes through :meth:`may_open_objects`
    first, and objects the user may not see are not found."""

    admin_site: AdminSite

    def may_open_objects(self, request: HttpRequest) -> bool:
        """May the user see any of this model's objects (whatever the id)?
        Deleting needs that too: Django's admin reaches a delete page only
        through the object's own."""
        admin: Any = self
        return bool(admin.has_view_or_change_permission(request))

    def may_see(self, request: HttpRequest, obj: Model) -> bool:
        admin: Any = self
        return bool(admin.has_view_or_change_permission(request, obj))

    def get_object(
        self, request: HttpRequest, object_id: str, from_field: str | None = None
    ) -> Any:
        obj = super().get_object(request, object_id, from_field)  # type: ignore[misc]
        if obj is not None and not self.may_see(request, obj):
            return None  # scoped away: what Django says of an unknown id follows
        return obj

    @property
    def urls(self) -> list[URLPattern]:
        # Here rather than in get_urls(): it guards what every get_urls() of
        # the class returns, a subclass's added pages included. (django-stubs
        # types them all URLPattern; an include() would be a URLResolver.)
        found: list[URLPattern | URLResolver] = self.get_urls()  # type: ignore[attr-defined]
        return cast(list[URLPattern], [self._guarded(pattern) for pattern in found])

    def _guarded(self, pattern: URLPattern | URLResolver) -> URLPattern | URLResolver:
        if not isinstance(pattern, URLPattern) or OBJECT_ID not in pattern.pattern.converters:
            return pattern
        view = self._checked(pattern.callback)
        return URLPattern(pattern.pattern, view, pattern.default_args, pattern.name)

    def _checked(self, view: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
        @wraps(view)
        def checked(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
            if not self.may_open_objects(request):
                raise PermissionDenied
            return view(request, *args, **kwargs)

        # Behind the admin's login first: a visitor who is not signed in is
        # sent to the login page, as on every admin page.
        return self.admin_site.admin_view(checked)
