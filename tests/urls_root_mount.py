"""A URLconf that mounts the app at the site root, after a view of the
project's own: the view keeps its path, every other path is the endpoint's."""

from django.http import HttpRequest, HttpResponse
from django.urls import include, path


def mine(request: HttpRequest) -> HttpResponse:
    return HttpResponse("the project's own")


urlpatterns = [
    path("mine/", mine),
    path("", include("toolnexus_django.urls")),
]
