from django.contrib import admin
from django.urls import include, path

from toolnexus_django.urls import root_card

urlpatterns = [
    # The card at the origin's root too, for clients that know only the origin.
    root_card(),
    path("agent/", include("toolnexus_django.urls")),
    path("admin/", admin.site.urls),
]
