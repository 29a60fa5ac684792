"""The app's URLconf, where projects include it: ``path("agent/",
include("toolnexus_django.urls"))`` and :func:`root_card` (the patterns live
in :mod:`toolnexus_django.serving.urls`)."""

from .serving.urls import OTHER_PATHS, REST_ROUTES, app_name, root_card, urlpatterns

__all__ = ["OTHER_PATHS", "REST_ROUTES", "app_name", "root_card", "urlpatterns"]
