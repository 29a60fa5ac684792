from django.contrib import admin
from django.urls import include, path

from testproject.views import home
from toolnexus_django.urls import root_card

urlpatterns = [
    # Where to go from the origin: the admin, the Agent Card, the endpoint.
    path("", home, name="home"),
    # The card at the origin's root too, for clients that know only the origin.
    root_card(),
    path("agent/", include("toolnexus_django.urls")),
    path("admin/", admin.site.urls),
]
